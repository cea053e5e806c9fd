#!/usr/bin/env python3
"""Raw receivers hold their port, so the host never answers with ICMP.

The raw receivers (afpacket, afxdp, xdp) take our frames below the stack; what
reaches the stack anyway (AF_PACKET's copy of every frame, the fragments the
XDP programs pass on) must find a socket on the port, or the host answers
each datagram with ICMP port unreachable: traffic we did not send, on the link
we measure. Per backend, while rx runs, side a sends 100 UDP datagrams of
3000 B to rx's port with fragmentation allowed (3 fragments each over the
1500 B MTU), then a pktgen stream of 2000 packets:
- side b's veth sends nothing at all (tx_packets delta 0: no ICMP);
- the stack of side b reassembled the 100 datagrams (Ip ReasmOKs);
- rx counts the stream exactly, and afpacket (which sees every frame) counts
  the 300 fragments as fragments; the XDP programs of afxdp and xdp pass
  fragments on to the stack, so there rx counts none.
"""
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from netlab import PKTGEN, Checks, Lab, finish, result_record, start_rx  # noqa: E402

DATAGRAMS, N = 100, 2000
SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: the kernel fragments
for i in range(int(sys.argv[2])):
    s.sendto(b"x" * 3000, (sys.argv[1], 9000))
"""
c = Checks("raw_guard")


def reassembled(lab):
    """Side b's Ip ReasmOKs: datagrams its stack put together from fragments."""
    lines = [l.split() for l in open(f"/proc/{lab.procs[-1].pid}/net/snmp") if l.startswith("Ip:")]
    return int(lines[1][lines[0].index("ReasmOKs")])

with tempfile.TemporaryDirectory() as tmp, Lab("g", subnet=79) as lab:
    mac_b = lab.mac(lab.ns_b, lab.if_b)
    for backend in ("afpacket", "afxdp", "xdp"):
        rx_json = os.path.join(tmp, f"rx-{backend}.json")
        rx = start_rx(lab, ["--backend", backend, "--device", lab.if_b, "--json", rx_json, "--quiet"], ready_timeout=30)
        before, reasm_before = lab.counter("b", "tx_packets"), reassembled(lab)
        s = subprocess.run(["ip", "netns", "exec", lab.ns_a, sys.executable, "-c", SENDER, lab.ip_b, str(DATAGRAMS)],
                           capture_output=True, text=True, timeout=30)
        c.eq(f"{backend}: fragment sender exit code", s.returncode, 0)
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "afpacket", "--dst-mac", mac_b,
                             "--dst", lab.ip_b, "--count", str(N), "--rate", "20k", "--size", "200", "--quiet"],
                            capture_output=True, text=True, timeout=60)
        c.eq(f"{backend}: pktgen exit code", tx.returncode, 0)
        reasm = reassembled(lab) - reasm_before
        rc, out, err = finish(rx, timeout=60)
        c.eq(f"{backend}: rx exit code", rc, 0)
        r = result_record(rx_json, "rx")
        c.eq(f"{backend}: side b's veth sent nothing (no ICMP port unreachable)", lab.counter("b", "tx_packets") - before, 0)
        c.eq(f"{backend}: received, lost", (r["received"], r["lost"]), (N, 0))
        c.eq(f"{backend}: side b's stack reassembled every datagram", reasm, DATAGRAMS)
        c.eq(f"{backend}: fragments rx counted", r["fragments"], 3 * DATAGRAMS if backend == "afpacket" else 0)

c.done()
