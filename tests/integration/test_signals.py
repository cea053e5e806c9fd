#!/usr/bin/env python3
"""Ctrl-C / SIGTERM: the final table and the JSON result are still written.
An unbounded pktgen stopped by SIGINT sends its end markers, so rx ends on
them with exact counts; rx stopped by SIGTERM mid-stream still reports."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, finish, result_record, start_rx

c = Checks("signals")
with tempfile.TemporaryDirectory() as tmp, Lab("s", subnet=3) as lab:
    # 1. pktgen with no --count, interrupted.
    rx_json, tx_json = os.path.join(tmp, "rx1.json"), os.path.join(tmp, "tx1.json")
    rx = start_rx(lab, ["--json", rx_json, "--quiet"])
    tx = lab.spawn(lab.ns_a, [PKTGEN, "--dst", lab.ip_b, "--rate", "20k", "--size", "200", "--json", tx_json])
    time.sleep(1.5)
    tx.send_signal(signal.SIGINT)
    out, err = tx.communicate(timeout=20)
    c.eq("pktgen exit code after SIGINT", tx.returncode, 0)
    c.true("pktgen final table after SIGINT", "Settings(b,t,n,s)" in out and "interrupted by signal" in out, out[-300:])
    t = result_record(tx_json, "pktgen")
    c.true("pktgen JSON says interrupted", t["interrupted"] is True)
    c.true("pktgen sent some", t["sent"] > 1000, str(t["sent"]))
    rc, rout, rerr = finish(rx)
    r = result_record(rx_json, "rx")
    c.eq("rx ended by", r["ended_by"], "end markers")
    c.eq("rx received == pktgen sent", r["received"], t["sent"])
    c.eq("rx lost", r["lost"], 0)
    c.eq("rx sent from end markers", r["sent"], t["sent"])

    # 2. rx stopped by SIGTERM while packets still arrive.
    rx_json, tx_json = os.path.join(tmp, "rx2.json"), os.path.join(tmp, "tx2.json")
    rx = start_rx(lab, ["--json", rx_json])
    tx = lab.spawn(lab.ns_a, [PKTGEN, "--dst", lab.ip_b, "--rate", "20k", "--size", "200", "--duration", "4",
                              "--quiet", "--json", tx_json])
    time.sleep(1.5)
    rx.send_signal(signal.SIGTERM)
    rc, rout, rerr = finish(rx)
    c.eq("rx exit code after SIGTERM", rc, 0)
    c.true("rx final table after SIGTERM", "Settings(b,t,n,s)" in rout and "ended by: signal" in rout, rout[-300:])
    r = result_record(rx_json, "rx")
    c.true("rx JSON says interrupted", r["interrupted"] is True)
    c.true("rx received some", r["received"] > 1000, str(r["received"]))
    c.eq("rx lost (gap-based, none)", r["lost"], 0)
    tx.communicate(timeout=20)
    c.eq("pktgen exit code", tx.returncode, 0)
c.done()
