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
- rx counts the stream exactly and counts the 300 fragments as fragments
  (afpacket sees every frame; the XDP programs of afxdp and xdp count them
  and pass them on to the stack).
Then 100 datagrams of our own, fragmented on the way, with end markers: a
socket receives them whole; the raw receivers lose them all, and their drop
ledger puts every one on its fragments line.
"""
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import LAB_DIR, PKTGEN, Checks, Lab, finish, result_record, sh, start_rx  # noqa: E402

DATAGRAMS, N = 100, 2000
SENDER = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_MTU_DISCOVER = IP_PMTUDISC_DONT: the kernel fragments
for i in range(int(sys.argv[2])):
    s.sendto(b"x" * 3000, (sys.argv[1], 9000))
"""
OURS_FRAGMENTED = r"""
import socket, struct, sys, time
sys.path.insert(0, sys.argv[1])
from inject_frames import payload
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 0)  # IP_PMTUDISC_DONT
n = int(sys.argv[3])
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
for seq in range(n):
    s.sendto(payload(1, 0, seq, 3000, sender=7, tx_ns=now), (sys.argv[2], 9000))
body = struct.pack(">QQQIHH", n, 0, n, 1, 1, 3000)  # total_sent, delay_ns, count, burst, stream_count, data_size
for _ in range(3):
    s.sendto(payload(2, 0, n, 200, body, sender=7, tx_ns=now), (sys.argv[2], 9000))
"""
c = Checks("raw_guard")


def reassembled(lab):
    """Side b's Ip ReasmOKs: datagrams its stack put together from fragments.

    Read from inside the namespace, not through rx's /proc/PID/net: rx ends by the end markers and may be
    gone by the time this is read."""
    lines = [l.split() for l in sh("cat", "/proc/net/snmp", ns=lab.ns_b, capture=True).splitlines()
             if l.startswith("Ip:")]
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
        c.eq(f"{backend}: fragments rx counted", r["fragments"], 3 * DATAGRAMS)

    # Our own datagrams, fragmented on the way (3000 B payloads sent with fragmentation allowed), then
    # three end markers claiming them: a socket receives them whole; a raw receiver sees only fragments,
    # and its ledger puts every missing packet on the fragments line.
    for backend in ("socket", "afpacket", "afxdp", "xdp"):
        rx_json = os.path.join(tmp, f"rx-frag-{backend}.json")
        dev = ["--device", lab.if_b] if backend != "socket" else []
        rx = start_rx(lab, ["--backend", backend, *dev, "--json", rx_json, "--quiet"], ready_timeout=30)
        s = subprocess.run(["ip", "netns", "exec", lab.ns_a, sys.executable, "-c", OURS_FRAGMENTED,
                            LAB_DIR, lab.ip_b, str(DATAGRAMS)],
                           capture_output=True, text=True, timeout=30)
        c.eq(f"fragmented {backend}: sender exit code", s.returncode, 0)
        rc, out, err = finish(rx, timeout=60)
        c.eq(f"fragmented {backend}: rx exit code", rc, 0)
        r = result_record(rx_json, "rx")
        if backend == "socket":
            c.eq("fragmented socket: received whole, lost", (r["received"], r["lost"]), (DATAGRAMS, 0))
        else:
            lines = {x["layer"]: x["attributed"] for x in r["ledger"]["lines"]}
            c.eq(f"fragmented {backend}: lost, fragments", (r["received"], r["lost"], r["fragments"]),
                 (0, DATAGRAMS, 3 * DATAGRAMS))
            c.eq(f"fragmented {backend}: the ledger's fragments line holds them all, nothing unattributed",
                 (lines.get("fragments"), r["ledger"]["unattributed"]), (DATAGRAMS, 0))
            c.true(f"fragmented {backend}: the table says so", "fragments" in out, out[-600:])

c.done()
