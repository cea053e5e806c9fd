#!/usr/bin/env python3
"""n sent == n received, 0 lost, and rx's count equals the receiving
interface's rx_packets delta and a tcpdump capture: three independent counts."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from netlab import Checks, Lab, PKTGEN, finish, result_record, sh, start_rx

N = 20000
c = Checks("veth_exact")
with tempfile.TemporaryDirectory() as tmp, Lab("x") as lab:
    # With --gso the kernel cuts one send into datagrams; with the veth's own
    # UDP segmentation offload off, that happens before the veth counts them.
    sh("ethtool", "-K", lab.if_a, "tx-udp-segmentation", "off", ns=lab.ns_a)
    for backend in ("socket", "uring", "socket-gso"):
        rx_json = os.path.join(tmp, f"rx-{backend}.json")
        tx_json = os.path.join(tmp, f"tx-{backend}.json")
        pcap = os.path.join(tmp, f"{backend}.pcap")
        cap = subprocess.Popen(["ip", "netns", "exec", lab.ns_b, "tcpdump", "-n", "-s", "128", "-B", "32768", "-i", lab.if_b, "-w", pcap,
                                "udp", "port", "9000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lab.procs.append(cap)
        cap.stderr.readline()  # "listening on ..." once the capture is armed
        rx = start_rx(lab, ["--backend", backend.replace("-gso", ""), "--json", rx_json, "--quiet"])
        before = lab.counter("b", "rx_packets")
        tx_backend = ["--backend", "socket", "--gso"] if backend == "socket-gso" else ["--backend", backend]
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, *tx_backend, "--dst", lab.ip_b,
                             "--count", str(N), "--burst", "100", "--rate", "50k", "--size", "1400", "--quiet",
                             "--json", tx_json], capture_output=True, text=True, timeout=60)
        c.eq(f"{backend}: pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        after = lab.counter("b", "rx_packets")
        time.sleep(1.5)  # a partly filled capture block is handed to tcpdump after its 1 s timeout
        cap.send_signal(2)
        cap_err = cap.communicate(timeout=10)[1]
        c.true(f"{backend}: tcpdump itself dropped nothing", "\n0 packets dropped by kernel" in "\n" + cap_err, cap_err)
        c.eq(f"{backend}: rx exit code", rc, 0)
        t = result_record(tx_json, "pktgen")
        r = result_record(rx_json, "rx")
        c.eq(f"{backend}: pktgen sent", t["sent"], N)
        c.eq(f"{backend}: rx received", r["received"], N)
        c.eq(f"{backend}: rx lost", r["lost"], 0)
        c.eq(f"{backend}: rx lost basis", r["lost_basis"], "end_markers")
        c.eq(f"{backend}: rx sent (from end markers)", r["sent"], N)
        c.eq(f"{backend}: rx corrupt", r["corrupt"], 0)
        c.eq(f"{backend}: rx duplicated", r["duplicated"], 0)
        # Every frame on the interface is ours: data + the end markers that arrived.
        c.eq(f"{backend}: interface rx_packets delta", after - before, r["received"] + r["end_markers"])
        captured = sh("tcpdump", "-n", "-r", pcap, capture=True).count("\n")
        c.eq(f"{backend}: tcpdump frames", captured, r["received"] + r["end_markers"])
        c.true(f"{backend}: table printed", "Settings(b,t,n,s)" in out and "100-0-20000-1400" in out, out[-400:])
c.done()
