#!/usr/bin/env python3
"""io_uring unavailable (here: kernel.io_uring_disabled=2, which makes
io_uring_setup fail with EPERM, as ENOSYS does on old kernels and qemu-user):
auto falls back to sockets, says so, and the counts are still exact."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import SKIP, Checks, Lab, PKTGEN, finish, result_record, start_rx

knob = "/proc/sys/kernel/io_uring_disabled"
if not os.path.exists(knob):
    print("SKIP: this kernel has no kernel.io_uring_disabled sysctl")
    sys.exit(SKIP)
c = Checks("uring_fallback")
old = open(knob).read().strip()
try:
    with open(knob, "w") as f:
        f.write("2")
    with tempfile.TemporaryDirectory() as tmp, Lab("u", subnet=5) as lab:
        rx_json = os.path.join(tmp, "rx.json")
        rx = start_rx(lab, ["--json", rx_json, "--quiet"])
        c.true("rx reports the fallback and why",
               "backend socket (fallback:" in rx.startup and "io_uring is disabled here (EPERM" in rx.startup, rx.startup)
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "uring", "--dst", lab.ip_b, "--count", "5000",
                             "--rate", "50k", "--quiet"], capture_output=True, text=True, timeout=30)
        c.eq("pktgen exit code", tx.returncode, 0)
        c.true("pktgen reports the fallback",
               "backend socket (fallback:" in tx.stdout and "io_uring is disabled here (EPERM" in tx.stdout, tx.stdout[:300])
        rc, out, err = finish(rx)
        r = result_record(rx_json, "rx")
        c.eq("rx backend", r["backend"], "socket")
        c.eq("received", r["received"], 5000)
        c.eq("lost", r["lost"], 0)
finally:
    with open(knob, "w") as f:
        f.write(old)
c.done()
