#!/usr/bin/env python3
"""ceiling's local lab picks its sender: without --tx-backend (and without
--shape) it probes xdp, afxdp and afpacket with a 100-frame pktgen run each
and takes the first that sends them all.

1. No --tx-backend: the run says which sender it took (one of those three),
   and every trial's pktgen ran that backend (the trial records' tx_backend,
   which is what pktgen itself reported).
2. --tx-backend socket: no probe, every trial on socket.
3. --shape: no probe (raw senders pass the qdisc by), pktgen's own choice.
Short searches (1518 B frames, 0.5 s trials, at most 3 trials): the rate
found and the counts are not checked here (test_ceiling checks both per
backend, each trial against the veths' counters).
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, RX, Checks, json_records, require_root

CEILING = os.environ.get("CEILING", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PKTGEN))), "tools",
                                                 "ceiling", "ceiling"))
c = Checks("ceiling_sender")


def search(tmp, tag, extra):
    js = os.path.join(tmp, f"{tag}.json")
    p = subprocess.run([CEILING, "--frame-sizes", "1518", "--tests", "throughput", "--trial", "0.5s", "--max-trials", "3",
                        "--json", js, "--rx", RX, "--pktgen", PKTGEN, *extra], capture_output=True, text=True, timeout=240)
    c.true(f"{tag}: ceiling exit 0", p.returncode == 0,
           f"exit {p.returncode}: {p.stderr.strip()[-600:]}")
    trials = [r for r in json_records(js) if r.get("type") == "trial"] if os.path.exists(js) else []
    c.true(f"{tag}: at least one trial", len(trials) >= 1, p.stdout[-600:])
    return p.stdout, trials


def main():
    require_root()
    if not os.path.exists(CEILING):
        print(f"SKIP: {CEILING} not built")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        out, trials = search(tmp, "default", [])
        m = re.search(r"^ceiling: sender (\w+): the fastest pktgen backend that works here", out, re.M)
        c.true("default: the run names the sender it took", m is not None, out[:800])
        if m:
            c.true("default: the sender is xdp, afxdp or afpacket", m.group(1) in ("xdp", "afxdp", "afpacket"), m.group(1))
            c.eq("default: every trial's pktgen ran it", sorted({t["tx_backend"] for t in trials}), [m.group(1)])

        out, trials = search(tmp, "socket", ["--tx-backend", "socket"])
        c.true("--tx-backend socket: no probe", "the fastest pktgen backend" not in out, out[:800])
        c.eq("--tx-backend socket: every trial on socket", sorted({t["tx_backend"] for t in trials}), ["socket"])

        out, trials = search(tmp, "shaped", ["--shape", "tbf rate 20mbit burst 32kbit latency 30ms"])
        c.true("--shape: no probe", "the fastest pktgen backend" not in out, out[:800])
    c.done()


main()
