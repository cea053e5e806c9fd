#!/usr/bin/env python3
"""Frames built by an independent implementation of the wire format and sent
through a raw socket: valid ones are counted as data (the formats agree),
ones with a byte flipped after their checksum are counted corrupt, replays as
duplicates, other UDP as foreign; nothing is lost."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import LAB_DIR, Checks, Lab, finish, result_record, start_rx

VALID, CORRUPT, DUPS, FOREIGN = 2000, 150, 40, 25
c = Checks("corruption")
with tempfile.TemporaryDirectory() as tmp, Lab("c", subnet=2) as lab:
    for backend in ("socket", "uring"):
        rx_json = os.path.join(tmp, f"rx-{backend}.json")
        rx = start_rx(lab, ["--backend", backend, "--json", rx_json, "--quiet"])
        inj = subprocess.run(["ip", "netns", "exec", lab.ns_a, sys.executable, os.path.join(LAB_DIR, "inject_frames.py"),
                              lab.if_a, lab.ip_a, lab.ip_b, lab.mac(lab.ns_b, lab.if_b), "9000", "5", str(VALID),
                              str(CORRUPT), str(DUPS), str(FOREIGN), "300"], capture_output=True, text=True, timeout=60)
        c.eq(f"{backend}: injector exit code", inj.returncode, 0)
        rc, out, err = finish(rx)
        r = result_record(rx_json, "rx")
        c.eq(f"{backend}: received (independent encoder agrees)", r["received"], VALID)
        c.eq(f"{backend}: corrupt", r["corrupt"], CORRUPT)
        c.eq(f"{backend}: duplicated", r["duplicated"], DUPS)
        c.eq(f"{backend}: foreign", r["foreign"], FOREIGN)
        c.eq(f"{backend}: lost", r["lost"], 0)
        c.eq(f"{backend}: ended by", r["ended_by"], "end markers")
c.done()
