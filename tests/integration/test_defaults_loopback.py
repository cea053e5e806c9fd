#!/usr/bin/env python3
"""The embedded default: rx and pktgen with no flags at all on one host
(loopback, plain defaults) work together; pktgen runs until Ctrl-C.

Then --csv beside --json: one CSV row per progress record and one for the
result, every value the JSON's own; pktgen stopped by Ctrl-C still writes
its CSV whole."""
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, NetLab, PKTGEN, RX, require_root

require_root()
c = Checks("defaults_loopback")
ns = f"rltdef{os.getpid() % 100000}"
lab = NetLab()
lab.namespace(ns)  # lo up, IPv6 off
try:
    rx = subprocess.Popen(["ip", "netns", "exec", ns, RX], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = rx.stdout.readline()
    c.true("rx says where it listens", "listening on 0.0.0.0:9000" in line, line)
    rx.stdout.readline()
    tx = subprocess.Popen(["ip", "netns", "exec", ns, PKTGEN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    tx.send_signal(signal.SIGINT)
    tout, terr = tx.communicate(timeout=20)
    rout, rerr = rx.communicate(timeout=20)
    c.eq("pktgen exit code", tx.returncode, 0)
    c.eq("rx exit code", rx.returncode, 0)
    c.true("pktgen default settings 100-0-?-1400 to 127.0.0.1:9000", "100-0---1400 -> 127.0.0.1:9000" in tout, tout[:300])
    sent = [l for l in tout.splitlines() if l.startswith("100-0---1400")]
    got = [l for l in rout.splitlines() if l.startswith("100-0---1400")]
    c.true("both printed their table row", sent and got, tout[-300:] + rout[-300:])
    if sent and got:
        n_sent = int(sent[0].split()[2])
        n_lost, n_recv = int(got[0].split()[2]), int(got[0].split()[4])
        c.eq("rx received + lost == pktgen sent", n_recv + n_lost, n_sent)
        c.true("rx ended on the end markers", "ended by: end markers" in rout, rout[-200:])

    def flat(d, prefix=""):
        out = {}
        for k, v in d.items():
            if isinstance(v, dict):
                out.update(flat(v, prefix + k + "."))
            elif not isinstance(v, list):
                out[prefix + k] = v
        return out

    def same(csv_text, value):
        if value is None:
            return csv_text == ""
        if isinstance(value, bool):
            return csv_text == ("true" if value else "false")
        if isinstance(value, (int, float)):
            return float(csv_text) == float(value)
        return csv_text == str(value)

    def check_csv(tool, json_path, csv_path):
        records = [json.loads(l) for l in open(json_path) if l.strip()]
        rows = list(csv.DictReader(open(csv_path, newline="")))
        want = [r for r in records if r["type"] in ("progress", "result")]
        c.eq(f"{tool} --csv: rows == progress + result records", [r["type"] for r in rows], [r["type"] for r in want])
        c.true(f"{tool} --csv: at least one progress row", any(r["type"] == "progress" for r in rows))
        bad = [(k, row[k], fr.get(k)) for row, rec in zip(rows, want) for fr in [flat(rec)] for k in row
               if not same(row[k], fr.get(k))]
        c.eq(f"{tool} --csv: cells differing from the JSON", bad, [])
        c.true(f"{tool} --csv: result columns cover every scalar JSON field",
               set(flat(want[-1])) <= set(rows[-1].keys()), str(set(flat(want[-1])) - set(rows[-1].keys())))

    tmp = tempfile.mkdtemp()
    paths = {t: (os.path.join(tmp, f"{t}.json"), os.path.join(tmp, f"{t}.csv")) for t in ("pktgen", "rx")}
    rx = subprocess.Popen(["ip", "netns", "exec", ns, RX, "--json", paths["rx"][0], "--csv", paths["rx"][1]],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rx.stdout.readline()
    rx.stdout.readline()
    tx = subprocess.Popen(["ip", "netns", "exec", ns, PKTGEN, "--rate", "20k", "--json", paths["pktgen"][0],
                           "--csv", paths["pktgen"][1]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.6)
    tx.send_signal(signal.SIGINT)
    tx.communicate(timeout=20)
    rx.communicate(timeout=20)
    c.eq("--csv run: exit codes", (tx.returncode, rx.returncode), (0, 0))
    for tool in ("pktgen", "rx"):
        check_csv(tool, *paths[tool])
    for p in paths.values():
        for f in p:
            os.remove(f)
    os.rmdir(tmp)
finally:
    lab.close()
c.done()
