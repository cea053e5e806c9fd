#!/usr/bin/env python3
"""--rate is met: for every paced sender (socket, uring, afpacket, afxdp, xdp,
dpdk on net_af_packet) pktgen --rate 20k over 5 s delivers 20 kpps within 1%
at the receiving veth's rx_packets counter, sampled over a 3.5 s window in
the middle of the run; pktgen's own asked and achieved rates agree with it;
and the counter's total equals what pktgen says it sent, end markers included.

The counter is read from /proc/<pid>/net/dev of a process inside the
receiving namespace (a file read, ~50 us, not a process spawn), with the
monotonic clock read around it: over a 3.5 s window the sampling error is
far below the 1% checked.

A run that misses 1% while pktgen reports pace slips (the OS kept it off the
CPU for more than 8 pacing periods; the pacer rebases instead of bursting to
catch up) measured the VM's scheduler, not the pacer: it is run again, at most
twice, and the 1% checks are made on the last run. The exact checks are made
on every run.

Under the sanitizer stage (RATELINE_SANITIZED) the instrumented senders' rate
measures this shared VM, not the pacer: the two 1% checks are reported, not
checked (the main suite enforces them), and each sender runs 1.5 s (a 0.75 s
window) instead of 5 s: every paced sender's code still runs instrumented,
and every other check stands, the exact counts among them."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, Checks, Lab, hugepages_free, result_record, sh

SANITIZED = os.environ.get("RATELINE_SANITIZED", "")  # set by tools/check.d/10-sanitize
RATE = 20_000
RUN_S, LEAD_S, WINDOW_S = (1.5, 0.25, 0.75) if SANITIZED else (5, 0.5, 3.5)
COUNT = int(RUN_S * RATE)
c = Checks("rate")


def rx_packets(pid, ifn):
    """The interface's rx_packets as its namespace sees it, and when it was read."""
    with open(f"/proc/{pid}/net/dev") as f:
        text = f.read()
    t = time.monotonic()
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == ifn:
            return int(rest.split()[1]), t
    raise AssertionError(f"{ifn} not in /proc/{pid}/net/dev")


with tempfile.TemporaryDirectory() as tmp, Lab("r", subnet=60) as lab:
    # NAPI on the receiving veth: it takes XDP-sent frames only then (test_xdp.py).
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)
    watcher = lab.spawn(lab.ns_b, ["sleep", "600"])
    mac_b = Lab.mac(lab.ns_b, lab.if_b)
    cases = {
        "socket": ["--backend", "socket"],
        "uring": ["--backend", "uring"],
        "afpacket": ["--backend", "afpacket"],
        "afxdp": ["--backend", "afxdp"],
        "xdp": ["--backend", "xdp"],
        "dpdk net_af_packet": ["--backend", "dpdk", "--cores", "0", "--dst-mac", mac_b],
    }
    def run_case(name, backend):
        """One paced run of `name`: the exact checks are made here; returns the
        two 1% checks and pktgen's pace slips (None when the case was skipped)."""
        js = os.path.join(tmp, f"{name.split()[0]}.json")
        eal = ["--", "--no-pci", f"--vdev=net_af_packet0,iface={lab.if_a}", "--log-level=*:error"] \
            if name.startswith("dpdk") else []
        base, _ = rx_packets(watcher.pid, lab.if_b)
        tx = lab.spawn(lab.ns_a, [PKTGEN, *backend, "--dst", lab.ip_b, "--rate", "20k", "--burst", "10",
                                  "--count", str(COUNT), "--size", "200", "--quiet", "--json", js, *eal])
        # The window starts LEAD_S after the first packets arrive and ends 1 s (0.5 s sanitized) before the last should.
        deadline = time.monotonic() + 20
        while rx_packets(watcher.pid, lab.if_b)[0] - base < 100 and tx.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(LEAD_S)
        c0, t0 = rx_packets(watcher.pid, lab.if_b)
        time.sleep(WINDOW_S)
        c1, t1 = rx_packets(watcher.pid, lab.if_b)
        running = tx.poll() is None
        out, err = tx.communicate(timeout=60)
        if tx.returncode and name == "xdp" and "Operation not permitted" in err and os.geteuid() == 0:
            print(f"SKIP {name}: the host refuses BPF_PROG_RUN live frames: {err.strip().splitlines()[-1]}", flush=True)
            return None
        c.eq(f"{name}: pktgen exit code", tx.returncode, 0)
        c.true(f"{name}: pktgen still sending through the window", running, err[-300:])
        if tx.returncode:
            print(err[-600:])
            return None
        time.sleep(0.2)  # the last frames through the veth
        total = rx_packets(watcher.pid, lab.if_b)[0] - base
        r = result_record(js, "pktgen")
        window_pps = (c1 - c0) / (t1 - t0)
        c.eq(f"{name}: pktgen reports the rate asked", round(r["rate_pps_asked"]), RATE)
        c.eq(f"{name}: pktgen sent --count", r["sent"], COUNT)
        c.eq(f"{name}: counter total == sent + end markers", total, r["sent"] + r["end_markers"])
        return [
            (f"{name}: rate at the receiving counter within 1% of asked", abs(window_pps / RATE - 1) <= 0.01,
             f"{window_pps:.0f} pps against {RATE}; pace slips {r['pace_slips']}"),
            (f"{name}: pktgen's achieved rate agrees with the counter within 1%", abs(r["pps"] / window_pps - 1) <= 0.01,
             f"pktgen {r['pps']:.0f} pps, counter {window_pps:.0f} pps"),
        ], r["pace_slips"]

    for name, backend in cases.items():
        if name.startswith("dpdk") and hugepages_free() < 64:
            print(f"SKIP {name}: fewer than 64 free hugepages (tools/check reserves them)", flush=True)
            continue
        # A sender the OS kept off the CPU for more than 8 pacing periods is
        # rebased, never bursts to catch up: its pace slips say so, and such a
        # run says nothing about the pacer. It is run again (at most twice);
        # the 1% checks hold for a run the OS left alone, or the test fails.
        for attempt in range(3):
            outcome = run_case(name, backend)
            if outcome is None:
                break
            precision, slips = outcome
            if SANITIZED:
                for what, ok, detail in precision:
                    print(f"info {what}: {'yes' if ok else 'no'}, {detail} (not checked under {SANITIZED})", flush=True)
                break
            if all(ok for _, ok, _ in precision) or not slips or attempt == 2:
                for what, ok, detail in precision:
                    c.true(what, ok, detail)
                break
            print(f"info {name}: off the 1% with {slips} pace slip(s) (the OS kept pktgen off the CPU): "
                  f"{'; '.join(d for _, ok, d in precision if not ok)}; run again", flush=True)
c.done()
