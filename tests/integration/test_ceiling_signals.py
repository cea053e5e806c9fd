#!/usr/bin/env python3
"""tools/ceiling's local lab under signals, at any moment.

1. SIGINT or SIGTERM (alternately) at 50 random moments (20 outside the sanitizer stage; seeded, the seed is
   printed) from 0 to 2 s, or to 90% of a whole run's length where a run takes less (measured first, with
   and without the sender probe), after ceiling's handlers are in (its first statement; before that no
   program can catch a signal): lab set-up, the sender probe (every other run lets ceiling pick its
   sender), the trials and the report. Each run must end by itself within 20 s with exit 0 or 1 (never a
   signal's death or a sanitizer report), leave no lab namespace and no pktgen, rx or ceiling of its
   own running, and leave a whole JSON file (every line parses) with its start record.
2. A SIGKILLed ceiling cannot remove its lab: the next ceiling removes those namespaces (their
   pid is gone), says so, and runs.
"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, PKTGEN, RX, require_root, sh

CEILING = os.environ.get("CEILING", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PKTGEN))), "tools",
                                                 "ceiling", "ceiling"))
# 50 in tools/check's sanitizer stage, where a crash or a leak shows best; 20 in the main suite.
MOMENTS = 50 if os.environ.get("RATELINE_SANITIZED") else 20
c = Checks("ceiling_signals")


def ours_running():
    """PIDs of processes running our pktgen, rx or ceiling binaries."""
    exes = {os.path.realpath(p) for p in (PKTGEN, RX, CEILING)}
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            exe = os.readlink(f"/proc/{pid}/exe").removesuffix(" (deleted)")
        except OSError:
            continue
        if os.path.realpath(exe) in exes:
            found.append(int(pid))
    return found


def handlers_in(pid, timeout=10):
    """Waits until the process catches SIGINT and SIGTERM (/proc/PID/status SigCgt): a signal before
    that (exec, the dynamic loader, a sanitizer's start-up) kills any program; "any moment" starts here."""
    want = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/status") as f:
                caught = int(next(ln for ln in f if ln.startswith("SigCgt:")).split()[1], 16)
            if caught & want == want:
                return True
        except (OSError, StopIteration):
            return False
        time.sleep(0.002)
    return False


def lab_namespaces(pid):
    return [n.split()[0] for n in sh("ip", "netns", "list", capture=True).splitlines() if n.startswith(f"rlc{pid}")]


def wait_gone(pid, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        left, procs = lab_namespaces(pid), ours_running()
        if not left and not procs:
            return [], []
        time.sleep(0.1)
    return left, procs


def main():
    require_root()
    if not os.path.exists(CEILING):
        print(f"SKIP: {CEILING} not built")
        sys.exit(77)
    c.eq("no pktgen, rx or ceiling of ours running before", ours_running(), [])
    seed = int(os.environ.get("RATELINE_SIGNAL_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    print(f"seed {seed} (RATELINE_SIGNAL_SEED to repeat)")
    base = [CEILING, "--frame-sizes", "none", "-s", "1000", "--tests", "throughput", "--pktgen", PKTGEN, "--rx", RX]
    # 1 s trials: a run is the lab, the sender probe, one or more trials and the report (a quicker search
    # than the measured one can end before its moment: exit 0, counted apart).
    searching = ["--trial", "1s", "--max-trials", "8"]
    bad, codes = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        # How long a whole run takes here, with and without the sender probe (the shorter of two each, looked
        # at for at most 2.5 s): a run quicker than 2 s gets its moments from 0 to 90% of its length, so most
        # of them fall inside it on a fast host too. A run still going at 2.5 s is stopped by SIGINT like the
        # others below.
        span = {}
        for key, sender in (("probe", []), ("afpacket", ["--tx-backend", "afpacket"])):
            lengths = []
            for k in range(2):
                t0 = time.monotonic()
                p = subprocess.Popen(base + searching + sender + ["--json", os.path.join(tmp, f"whole-{key}{k}.json")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    p.wait(timeout=2.5)
                    lengths.append(time.monotonic() - t0)
                except subprocess.TimeoutExpired:
                    p.send_signal(signal.SIGINT)
                    p.wait(timeout=20)
                    lengths.append(2.5)
                c.true(f"a calibration run ({key}): exit 0 or 1", p.returncode in (0, 1), str(p.returncode))
                wait_gone(p.pid)
            span[key] = min(2.0, 0.9 * min(lengths))
        print("moments are drawn from 0 to " + ", ".join(f"{v:.2f} s ({k})" for k, v in span.items()))
        for i in range(MOMENTS):
            sig = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
            probe = i % 4 < 2  # half let ceiling probe for its sender
            sender = [] if probe else ["--tx-backend", "afpacket"]
            at = rng.uniform(0.0, span["probe" if probe else "afpacket"])
            j = os.path.join(tmp, f"run{i}.json")
            p = subprocess.Popen(base + searching + sender + ["--json", j], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
            if not handlers_in(p.pid):
                bad.append(f"run {i}: ceiling never caught SIGINT and SIGTERM")
            time.sleep(at)
            p.send_signal(sig)
            try:
                out, err = p.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                bad.append(f"run {i}: {sig.name} at {at:.2f} s: still running 20 s later")
                continue
            codes[p.returncode] = codes.get(p.returncode, 0) + 1
            if p.returncode == 1 and "interrupted" not in out and "interrupted" not in err:
                bad.append(f"run {i}: exit 1 without saying it was interrupted: {err.strip()[-300:]}")
            what = f"run {i}: {sig.name} at {at:.2f} s"
            if p.returncode not in (0, 1):
                bad.append(f"{what}: exit {p.returncode}: {err.strip()[-300:]}")
            if "Sanitizer" in err or "runtime error" in err:
                bad.append(f"{what}: sanitizer report: {err[-500:]}")
            left, procs = wait_gone(p.pid)
            if left or procs:
                bad.append(f"{what}: left behind: namespaces {left}, processes {procs}")
                for pid in procs:
                    os.kill(pid, signal.SIGKILL)
                for ns in left:
                    sh("ip", "netns", "del", ns, check=False)
            try:
                recs = [json.loads(line) for line in open(j) if line.strip()]
                if not any(r.get("type") == "start" for r in recs):
                    bad.append(f"{what}: JSON without its start record")
            except (OSError, ValueError) as e:
                bad.append(f"{what}: JSON not whole: {e}; stdout {out[-300:]!r}")
    print(f"exit codes: {codes} (0: the search ended before its moment)")
    for b in bad:
        print("  " + b)
    c.eq(f"{MOMENTS} signals at random moments: every run ended by itself, exit 0/1, nothing left, JSON whole",
         len(bad), 0)
    c.true(f"most moments fell inside a run ({codes.get(1, 0)} of {MOMENTS} interrupted)", codes.get(1, 0) >= MOMENTS * 0.7)

    # 2. SIGKILL: the lab stays; the next ceiling removes it.
    p = subprocess.Popen(base + ["--tx-backend", "afpacket", "--trial", "2s"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 10
    while time.time() < deadline and len(lab_namespaces(p.pid)) < 2:
        time.sleep(0.05)
    time.sleep(0.3)
    p.kill()
    p.communicate()
    stale = lab_namespaces(p.pid)
    c.eq("a SIGKILLed ceiling leaves its two lab namespaces", len(stale), 2)
    r = subprocess.run(base + ["--tx-backend", "afpacket", "--trial", "0.2s", "--max-trials", "2"], capture_output=True,
                       text=True, timeout=60)
    c.eq("the next ceiling runs", r.returncode, 0)
    c.true("... and removes them, saying so",
           all(re.search(rf"removed {ns}, a lab namespace left by a killed ceiling", r.stderr) for ns in stale) and stale,
           r.stderr[-400:])
    c.eq("... none of them is left", lab_namespaces(p.pid), [])
    left, procs = wait_gone(p.pid)
    for pid in procs:
        os.kill(pid, signal.SIGKILL)
    c.eq("no pktgen, rx or ceiling of ours running after", procs, [])
    c.done()


if __name__ == "__main__":
    main()
