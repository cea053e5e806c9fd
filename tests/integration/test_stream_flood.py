#!/usr/bin/env python3
"""Memory known before it is spent: a flood of streams (every datagram from a
new source port) into rx --max-streams 1000 makes 1000 streams and counts
the rest as unknown_stream, and rx's resident memory grows by no more than
the stream state it printed at start; a large --max-streams costs nothing
until streams appear; a setting whose worst case the host cannot hold is
refused with one line and exit 2. The XDP counter's in-kernel table (a hash
keyed by sender and stream) fills the same way: 1000 streams, the rest
unknown_stream."""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import LAB_DIR, RX, Checks, Lab, finish, read_until, result_record, start_rx  # noqa: E402
from inject_frames import frame, payload  # noqa: E402

FLOOD = 20000
MAX_STREAMS = 1000
c = Checks("stream_flood")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


INJECT = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
from inject_frames import payload, raw_udp_sender
send = raw_udp_sender(*sys.argv[2:6])
data = payload(1, 0, 0, 64, sender=1)
for i in range(int(sys.argv[6])):
    send(data, 10000 + i, 9000)
    if i % 500 == 499:
        time.sleep(0.005)  # let the receiver keep up: this test is about memory, not drops
'''


def flood(lab, tag):
    """FLOOD datagrams into rx, each from a new source port."""
    inj = lab.spawn(lab.ns_a, [sys.executable, "-c", INJECT, LAB_DIR, lab.if_a,
                               lab.ip_a, lab.ip_b, lab.mac(lab.ns_b, lab.if_b), str(FLOOD)])
    inj.communicate(timeout=60)
    c.eq(f"{tag}: injector exit code", inj.returncode, 0)


def check_flooded(rx, rx_json, tag):
    """rx kept MAX_STREAMS streams, each from its own port, and counted the rest unknown_stream."""
    rc, out, err = finish(rx)
    r = result_record(rx_json, "rx")
    c.eq(f"{tag}: rx exit code", rc, 0)
    c.eq(f"{tag}: streams kept", len(r["streams"]), MAX_STREAMS)
    c.eq(f"{tag}: the rest counted as unknown_stream", r["unknown_stream"], FLOOD - MAX_STREAMS)
    c.eq(f"{tag}: received (one packet per kept stream)", r["received"], MAX_STREAMS)
    c.eq(f"{tag}: every kept stream from its own source port", len({s["from"] for s in r["streams"]}), MAX_STREAMS)


with tempfile.TemporaryDirectory() as tmp, Lab("m", subnet=14) as lab:
    rx_json = os.path.join(tmp, "rx.json")
    rx = start_rx(lab, ["--backend", "uring", "--max-streams", str(MAX_STREAMS), "--idle", "1", "--json", rx_json,
                        "--quiet"])
    rx.startup += read_until(rx, "rx: stream state")[1]  # printed after the receive buffer line
    m = re.search(r"stream state: at most (\d+) .*?, (\d+) MiB", rx.startup)
    c.true("rx prints its stream-state bound at start", m is not None, rx.startup)
    bound_mib = int(m.group(2)) if m else 0
    before = rss_kib(rx.pid)
    flood(lab, "uring")
    time.sleep(0.3)
    grown_kib = rss_kib(rx.pid) - before
    check_flooded(rx, rx_json, "uring")
    # The bound plus 4 MiB for the allocator's own rounding and the JSON being built.
    c.true(f"RSS grew by at most the printed bound ({bound_mib} MiB) + 4 MiB", grown_kib <= (bound_mib + 4) * 1024,
           f"grew {grown_kib} KiB")
    print(f"flood of {FLOOD} streams into --max-streams {MAX_STREAMS}: RSS +{grown_kib} KiB (bound {bound_mib} MiB)")

    # Reserved, not touched: 65536 streams cost their state only when streams appear.
    def idle_rss(max_streams):
        rx = start_rx(lab, ["--max-streams", str(max_streams), "--idle", "1", "--duration", "1", "--quiet"])
        rx.startup += read_until(rx, "rx: stream state")[1]
        kib = rss_kib(rx.pid)
        finish(rx)
        return kib, rx.startup

    few_kib, _ = idle_rss(1)
    idle_kib, startup = idle_rss(65536)
    m = re.search(r"(\d+) MiB for all workers", startup)
    c.true("--max-streams 65536: bound printed", m is not None and int(m.group(1)) > 100, startup)
    # The sanitizer stage's runtime alone is tens of MiB: there the absolute
    # check measures ASan; the difference from --max-streams 1 is checked in both.
    if not os.environ.get("RATELINE_SANITIZED"):
        c.true("--max-streams 65536: resident memory well below the bound", idle_kib < 64 * 1024, f"{idle_kib} KiB")
    c.true("--max-streams 65536 vs 1: at most 16 MiB more resident", idle_kib - few_kib < 16 * 1024,
           f"{idle_kib} KiB against {few_kib} KiB")

    # The same flood into the XDP counter: its table is the kernel's, preallocated to --max-streams.
    rx_json = os.path.join(tmp, "rx-xdp.json")
    rx = start_rx(lab, ["--backend", "xdp", "--device", lab.if_b, "--max-streams", str(MAX_STREAMS), "--idle", "1",
                        "--json", rx_json, "--quiet"])
    flood(lab, "xdp")
    check_flooded(rx, rx_json, "xdp")

    p = subprocess.run(["ip", "netns", "exec", lab.ns_b, RX, "--threads", "64", "--max-streams", "65536"],
                       capture_output=True, text=True, timeout=10)
    c.eq("--threads 64 --max-streams 65536: refused, exit 2", p.returncode, 2)
    c.eq("--threads 64 --max-streams 65536: one line", len(p.stderr.strip().splitlines()), 1)
    c.true("the line names the memory", "MiB" in p.stderr, p.stderr.strip())
c.done()
