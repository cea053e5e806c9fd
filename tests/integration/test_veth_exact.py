#!/usr/bin/env python3
"""n sent == n received, 0 lost, and rx's count equals the receiving
interface's rx_packets delta and a tcpdump capture: three independent counts.

pktgen's in-burst rate (packets of a whole burst over the time from its start
to the return of its last send) is checked against a capture on the sender's
veth, whose taps see each packet as the send hands it to the device: the
capture's rate inside the same bursts (99 gaps of a burst of 100, over their
span) must agree within a factor of 2. Timing the wrong span (the whole
pacing period: ~50k pps here, or the fill alone: tens of Mpps) is far off."""
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, finish, result_record, sh, start_rx

N = 20000
BURST = 100
c = Checks("veth_exact")


def pcap_times_ns(path):
    """Per-frame timestamps (ns) of a pcap written with nanosecond precision."""
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic == 0xA1B23C4D, f"not a little-endian nanosecond pcap: {magic:#x}"
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        out.append(sec * 1_000_000_000 + frac)
        off += 16 + incl
    return out


def capture_in_burst_pps(times, burst):
    """(pps inside whole bursts, how many whole bursts): bursts split where a gap exceeds 1/4 of a typical inter-burst gap."""
    gaps = [b - a for a, b in zip(times, times[1:])]
    if not gaps:
        return 0.0
    big = sorted(gaps)[-max(1, len(times) // burst // 2)]  # a typical gap between bursts
    bursts, cur = [], [times[0]]
    for t, g in zip(times[1:], gaps):
        if g > big / 4:
            bursts.append(cur)
            cur = []
        cur.append(t)
    bursts.append(cur)
    whole = [b for b in bursts if len(b) == burst]
    span = sum(b[-1] - b[0] for b in whole)
    return (len(whole) * (burst - 1)) * 1e9 / span if span else 0.0, len(whole)
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
        pcap_tx = os.path.join(tmp, f"{backend}-tx.pcap")
        cap_tx = subprocess.Popen(["ip", "netns", "exec", lab.ns_a, "tcpdump", "-n", "-s", "64", "-B", "32768", "-i", lab.if_a,
                                   "--time-stamp-precision=nano", "-w", pcap_tx, "udp", "port", "9000"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lab.procs.append(cap_tx)
        cap_tx.stderr.readline()
        rx = start_rx(lab, ["--backend", backend.replace("-gso", ""), "--json", rx_json, "--quiet"])
        before = lab.counter("b", "rx_packets")
        tx_backend = ["--backend", "socket", "--gso"] if backend == "socket-gso" else ["--backend", backend]
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, *tx_backend, "--dst", lab.ip_b,
                             "--count", str(N), "--burst", str(BURST), "--rate", "50k", "--size", "1400", "--quiet",
                             "--json", tx_json], capture_output=True, text=True, timeout=60)
        c.eq(f"{backend}: pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        after = lab.counter("b", "rx_packets")
        time.sleep(1.5)  # a partly filled capture block is handed to tcpdump after its 1 s timeout
        cap.send_signal(2)
        cap_err = cap.communicate(timeout=10)[1]
        cap_tx.send_signal(2)
        cap_tx_err = cap_tx.communicate(timeout=10)[1]
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
        # In-burst rate vs the sender-side capture (data frames only: end markers are not in bursts).
        tx_times = pcap_times_ns(pcap_tx)
        c.true(f"{backend}: sender-side capture dropped nothing", "\n0 packets dropped by kernel" in "\n" + cap_tx_err, cap_tx_err)
        seen, whole = capture_in_burst_pps(tx_times[:N], BURST)
        ours = t.get("in_burst_pps") or 0
        c.true(f"{backend}: in-burst rate {ours:.0f} pps ~ the capture's {seen:.0f} pps over {whole} whole bursts (x0.5..x2)",
               whole >= N // BURST // 2 and 0.5 <= ours / seen <= 2.0 if seen else False,
               f"ratio {ours / seen if seen else 0:.2f}")
        c.true(f"{backend}: peak in-burst rate >= mean >= achieved rate",
               (t.get("in_burst_peak_pps") or 0) >= ours >= t["pps"], f'{t.get("in_burst_peak_pps")} {ours} {t["pps"]}')
        c.true(f"{backend}: table printed", "Settings(b,t,n,s)" in out and "100-0-20000-1400" in out, out[-400:])
c.done()
