#!/usr/bin/env python3
"""One-way latency only from senders on rx's own clock.

pktgen stamps with CLOCK_MONOTONIC, which a time namespace offsets exactly as
another host's clock differs from ours (each counts from its own boot).
pktgen in side a sends 2000 packets over the veth to rx in side b:
1. plain: every stream's clock is "shared", latency_ns is there and its
   minimum is under 10 ms; the table prints the latency line;
2. pktgen in a time namespace whose monotonic clock is 3600 s ahead (every
   packet "arrives before it was sent"), and 3. one that is behind by half
   this host's uptime (at most 600 s; every packet "took" that long): rx
   counts them exactly as before, prints no one-way latency (JSON
   latency_ns null, every stream "unrelated", the table says "not shown"
   and names the sender), and still reports jitter;
4. both at once into one rx (--expect-senders 2): the plain sender's streams
   give the latency, the shifted one is named and left out;
5. 64 B frames (the short form's 48-bit stamp, extended near rx's clock)
   from the shifted sender: also "unrelated";
6. a sender whose clock is only 5 ms behind rx's (a time namespace set to
   the nanosecond by in_time_offset.py): its stamps look like one clock with
   5 ms of latency, which the stamp rule would believe. The clock ids in its
   end markers say otherwise: "unrelated", judged by "clock_id", on the
   socket and the XDP receivers (the BPF program reads the id too). The
   plain runs above are judged by clock id as well. The same 5 ms shift
   from the independent encoder (stamps, but no clock id in its markers)
   fools the stamp rule: "shared", with every latency 5 ms too long. That
   is the case the ids exist for, and proof that the shift is real.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import LAB_DIR, PKTGEN, Checks, Lab, finish, result_record, start_rx

N = 2000
c = Checks("clock_domains")


IN_TIME_OFFSET = os.path.join(os.path.dirname(__file__), "in_time_offset.py")
SHIFT_5MS = "-5ms"  # a shift given as a string: nanoseconds, through in_time_offset.py


def pktgen(lab, json_path, shift_s, size=200, src_port=5000):
    cmd = ["ip", "netns", "exec", lab.ns_a]
    if shift_s == SHIFT_5MS:
        cmd += [sys.executable, IN_TIME_OFFSET, "-5000000", "--"]
    elif shift_s:
        cmd += ["unshare", "--time", "--fork", "--monotonic", str(shift_s)]
    cmd += [PKTGEN, "--dst", lab.ip_b, "--count", str(N), "--rate", "20k", "--size", str(size), "--src-port", str(src_port),
            "--json", json_path, "--quiet"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# The independent encoder, stamping on its own clock, with end markers that
# carry the total where pktgen puts its clock id (no id given).
STAMPING_SENDER = """
import socket, struct, sys, time
sys.path.insert(0, sys.argv[3])
from inject_frames import payload
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
n = int(sys.argv[2])
for seq in range(n):
    s.sendto(payload(1, 0, seq, 200, sender=9, tx_ns=time.clock_gettime_ns(time.CLOCK_MONOTONIC)), (sys.argv[1], 9000))
    time.sleep(0.0002)
body = struct.pack(">QQQIHH", n, 0, n, 1, 1, 200)
for _ in range(3):
    s.sendto(payload(2, 0, n, 200, body, sender=9, tx_ns=time.clock_gettime_ns(time.CLOCK_MONOTONIC)), (sys.argv[1], 9000))
"""


def run(lab, tmp, tag, shifts, size=200, backend="socket"):
    rx_json = os.path.join(tmp, f"rx-{tag}.json")
    device = ["--device", lab.if_b] if backend != "socket" else []
    rx = start_rx(lab, ["--backend", backend, *device, "--json", rx_json, "--expect-senders", str(len(shifts))])
    txs = [pktgen(lab, os.path.join(tmp, f"tx-{tag}-{i}.json"), s, size, 5000 + i) for i, s in enumerate(shifts)]
    for i, tx in enumerate(txs):
        _, err = tx.communicate(timeout=60)
        c.eq(f"{tag}: pktgen {i} exit code", tx.returncode, 0)
        if tx.returncode:
            print(err[-600:])
    rc, out, err = finish(rx, timeout=60)
    c.eq(f"{tag}: rx exit code", rc, 0)
    r = result_record(rx_json, "rx")
    c.eq(f"{tag}: received, lost, duplicated", (r["received"], r["lost"], r["duplicated"]), (N * len(shifts), 0, 0))
    by_port = {}
    for s in r["streams"]:
        by_port.setdefault(int(s["from"].rsplit(":", 1)[1]), []).append(s)
    return r, out, by_port


with tempfile.TemporaryDirectory() as tmp, Lab("c", subnet=75) as lab:
    with open("/proc/uptime") as f:
        behind = -min(600, int(float(f.read().split()[0]) / 2))

    r, out, ports = run(lab, tmp, "plain", [0])
    c.eq("plain: every stream on rx's clock", [s["clock"] for s in r["streams"]], ["shared"])
    c.true("plain: latency_ns there, minimum under 10 ms", r["latency_ns"] is not None and r["latency_ns"]["min"] < 10e6,
           str(r["latency_ns"]))
    c.true("plain: the table prints the latency line", "latency (same-host clock" in out, out[-800:])
    c.true("plain: no 'not shown' line", "latency: not shown" not in out, out[-800:])
    c.eq("plain: judged by the clock ids", [s["clock_judged_by"] for s in r["streams"]], ["clock_id"])

    for tag, shift in (("ahead 3600 s", 3600), (f"behind {-behind} s", behind)):
        r, out, ports = run(lab, tmp, tag, [shift])
        c.eq(f"{tag}: every stream unrelated", [s["clock"] for s in r["streams"]], ["unrelated"])
        c.eq(f"{tag}: no latency in the JSON", (r["latency_ns"], r["streams"][0]["latency_ns"]), (None, None))
        c.eq(f"{tag}: streams_clock_unrelated", r["streams_clock_unrelated"], 1)
        c.true(f"{tag}: the table prints no latency line", "latency (same-host clock" not in out, out[-800:])
        c.true(f"{tag}: the table says why and names the sender",
               "latency: not shown for 1 stream(s) of 1 sender(s)" in out and lab.ip_a in out, out[-800:])
        c.true(f"{tag}: jitter still reported", r["jitter_ns"] > 0 and "jitter (RFC 3550)" in out, str(r["jitter_ns"]))

    r, out, ports = run(lab, tmp, "mixed", [0, 3600])
    c.eq("mixed: the plain sender's stream shared, the shifted one's unrelated",
         ([s["clock"] for s in ports[5000]], [s["clock"] for s in ports[5001]]), (["shared"], ["unrelated"]))
    c.true("mixed: latency from the plain sender only (samples == its packets)",
           r["latency_ns"] is not None and r["latency_ns"]["samples"] == N and r["latency_ns"]["max"] < 3600e9,
           str(r["latency_ns"]))
    c.true("mixed: both lines printed", "latency (same-host clock" in out and "latency: not shown for 1 stream(s)" in out,
           out[-900:])

    r, out, ports = run(lab, tmp, "short frames ahead", [3600], size=18)
    c.eq("short frames ahead: every stream unrelated", [s["clock"] for s in r["streams"]], ["unrelated"])
    c.eq("short frames ahead: no latency", r["latency_ns"], None)

    for backend in ("socket", "xdp"):
        tag = f"5 ms behind, {backend}"
        r, out, ports = run(lab, tmp, tag, [SHIFT_5MS], backend=backend)
        c.eq(f"{tag}: unrelated, judged by the clock ids",
             [(s["clock"], s["clock_judged_by"]) for s in r["streams"]], [("unrelated", "clock_id")])
        c.eq(f"{tag}: no latency in the JSON", r["latency_ns"], None)
        c.true(f"{tag}: the table says why and names the sender",
               "latency: not shown for 1 stream(s) of 1 sender(s)" in out and lab.ip_a in out, out[-800:])
        r, out, ports = run(lab, tmp, f"plain, {backend}", [0], backend=backend)
        c.eq(f"plain, {backend}: shared, judged by the clock ids",
             [(s["clock"], s["clock_judged_by"]) for s in r["streams"]], [("shared", "clock_id")])

    rx_json = os.path.join(tmp, "rx-no-id.json")
    rx = start_rx(lab, ["--backend", "socket", "--json", rx_json, "--count", "500"])
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, sys.executable, IN_TIME_OFFSET, "-5000000", "--",
                         sys.executable, "-c", STAMPING_SENDER, lab.ip_b, "500", LAB_DIR],
                        capture_output=True, text=True, timeout=60)
    c.eq("5 ms behind, no clock id: sender exit code", tx.returncode, 0)
    rc, out, err = finish(rx, timeout=30)
    r = result_record(rx_json, "rx")
    c.eq("5 ms behind, no clock id: received, lost", (r["received"], r["lost"]), (500, 0))
    c.eq("5 ms behind, no clock id: the stamp rule judges it, and is fooled",
         [(s["clock"], s["clock_judged_by"]) for s in r["streams"]], [("shared", "stamps")])
    c.true("5 ms behind, no clock id: every 'latency' carries the 5 ms",
           r["latency_ns"] is not None and r["latency_ns"]["min"] >= 5_000_000, str(r["latency_ns"]))

c.done()
