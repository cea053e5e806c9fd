#!/usr/bin/env python3
"""Bad input: one clear line on stderr, exit code 2, nothing else."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, PKTGEN, RX

c = Checks("cli_errors")
bad = [
    (PKTGEN, ["--burst", "0"]),
    (PKTGEN, ["--burst", "lots"]),
    (PKTGEN, ["--delay", "5parsecs"]),
    (PKTGEN, ["--delay", "-1"]),
    (PKTGEN, ["--size", "8"]),
    (PKTGEN, ["--size", "17"]),  # one below the 64 B IPv4 frame
    (PKTGEN, ["--size", "70000"]),
    (PKTGEN, ["--count", "1.5"]),
    (PKTGEN, ["--count", "99999999999999999999999"]),
    (PKTGEN, ["--rate", "fast"]),
    (PKTGEN, ["--rate", "10k", "--delay", "1"]),
    (PKTGEN, ["--port", "0"]),
    (PKTGEN, ["--port", "65536"]),
    (PKTGEN, ["--src-port", "9-3"]),
    (PKTGEN, ["--threads", "2", "--src-port", "5000"]),
    (PKTGEN, ["--threads", "0"]),
    (PKTGEN, ["--backend", "carrier-pigeon"]),
    (PKTGEN, ["--no-such-flag"]),
    (PKTGEN, ["--duration", "0"]),
    (RX, ["--count", "zero"]),
    (RX, ["--rcvbuf", "huge"]),
    (RX, ["--idle", "soon"]),
    (RX, ["--port", "-5"]),
    (RX, ["--max-streams", "0"]),
    (RX, ["extra-argument"]),
    # Every bound, both ends (hardening review).
    (PKTGEN, ["--burst", "1000001"]),
    (PKTGEN, ["--delay", "3601s"]),
    (PKTGEN, ["--count", "0"]),
    (PKTGEN, ["--count", "1", "--threads", "2"]),
    (PKTGEN, ["--duration", "600000min"]),
    (PKTGEN, ["--size", "65508"]),
    (PKTGEN, ["-6", "--size", "65528"]),
    (PKTGEN, ["--size", "1.5"]),
    (PKTGEN, ["--rate", "0"]),
    (PKTGEN, ["--rate", "99999T"]),
    (PKTGEN, ["--rate", "0.0000000001"]),
    (PKTGEN, ["--rate", "1bit"]),
    (PKTGEN, ["--rate-layer", "l3"]),
    (PKTGEN, ["--port", "99999999999"]),
    (PKTGEN, ["--src-port", "0"]),
    (PKTGEN, ["--src-port", "1-5000"]),
    (PKTGEN, ["--flows-random", "seven"]),
    (PKTGEN, ["--flows-random", "-1"]),
    (PKTGEN, ["--flows-random", "99999999999999999999"]),
    (PKTGEN, ["--threads", "-1"]),
    (PKTGEN, ["--threads", "65"]),
    (PKTGEN, ["--threads", "99999999999999999999"]),
    (PKTGEN, ["--batch", "0"]),
    (PKTGEN, ["--batch", "1025"]),
    (PKTGEN, ["--sndbuf", "1k"]),
    (PKTGEN, ["--sndbuf", "2G"]),
    (PKTGEN, ["--end-markers", "101"]),
    (PKTGEN, ["--cores", "abc"]),
    (PKTGEN, ["--cores", "1-999999"]),
    (RX, ["--count", "0"]),
    (RX, ["--count", "2000000000000000000"]),
    (RX, ["--rcvbuf", "2G"]),
    (RX, ["--idle", "1441min"]),
    (RX, ["--duration", "0"]),
    (RX, ["--duration", "600000min"]),
    (RX, ["--max-size", "63"]),
    (RX, ["--max-size", "65536"]),
    (RX, ["--max-streams", "65537"]),
    (RX, ["--batch", "0"]),
    (RX, ["--batch", "1025"]),
    (RX, ["--threads", "65"]),
    (RX, ["--port", "65536"]),
    (RX, ["--cores", "abc"]),
    (RX, ["--cores", "5-3"]),
    # --metrics [ADDR:]PORT: checked before any socket exists (a taken port: test_prometheus.py).
    (PKTGEN, ["--metrics", "99999"]),
    (PKTGEN, ["--metrics", "nohost:80"]),
    (RX, ["--metrics", "99999"]),
    (RX, ["--metrics", "nohost:80"]),
    (RX, ["--metrics", "127.0.0.1:"]),
    (RX, ["--metrics-linger", "5"]),  # linger without a server to linger with
    (RX, ["--metrics", "0", "--metrics-linger", "soon"]),
]
for prog, args in bad:
    r = subprocess.run([prog] + args, capture_output=True, text=True, timeout=10)
    name = f"{os.path.basename(prog)} {' '.join(args)}"
    lines = r.stderr.strip().splitlines()
    c.eq(f"{name}: exit code", r.returncode, 2)
    c.true(f"{name}: one line on stderr", len(lines) == 1, repr(r.stderr))
    c.true(f"{name}: names the program", bool(lines) and lines[0].startswith(os.path.basename(prog) + ": "), repr(r.stderr))
    c.eq(f"{name}: nothing on stdout", r.stdout, "")

# A bad address is bad usage too (test_cli_edges.py: and nothing is sent).
r = subprocess.run([PKTGEN, "--dst", "not-an-address", "--count", "1"], capture_output=True, text=True, timeout=10)
c.eq("pktgen bad --dst: exit code", r.returncode, 2)
c.true("pktgen bad --dst: says why", "not a numeric IPv4 or IPv6 address" in r.stderr, r.stderr)
for prog in (PKTGEN, RX):
    r = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=10)
    c.eq(f"{os.path.basename(prog)} --help exit code", r.returncode, 0)
c.done()
