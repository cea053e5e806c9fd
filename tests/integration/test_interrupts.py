#!/usr/bin/env python3
"""SIGINT / SIGTERM at random moments, to pktgen (20 trials) and to rx (20
trials): every time both programs exit 0 and write their final table and a
complete JSON result record; when rx saw the end markers, rx received + lost
== the end markers' total == pktgen's JSON "sent"; nothing is left behind
(namespaces, files, processes).

The moments, signals, backends and thread counts come from one seeded random
generator: the seed is printed, and RATELINE_SEED=<seed> replays the run.
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, RX, finish, json_records, sh, start_rx

TRIALS = 20
seed = int(os.environ.get("RATELINE_SEED", random.SystemRandom().randrange(1 << 32)))
print(f"seed {seed} (replay: RATELINE_SEED={seed})", flush=True)
rnd = random.Random(seed)
c = Checks("interrupts")

PKTGEN_KEYS = {"sent", "time_s", "interrupted", "end_markers", "streams", "errors", "settings", "pps"}
RX_KEYS = {"received", "lost", "lost_basis", "sent", "ended_by", "interrupted", "streams", "settings", "corrupt"}


def result(path, tool, keys, what):
    """The one complete result record of `tool` in a JSON-lines file, or None."""
    try:
        recs = json_records(path)  # every line must parse
    except (OSError, ValueError) as e:
        c.true(f"{what}: {tool} JSON parses", False, str(e))
        return None
    res = [r for r in recs if r.get("type") == "result" and r.get("tool") == tool]
    c.true(f"{what}: {tool} JSON has one result record", len(res) == 1, f"{len(res)} in {len(recs)} records")
    if len(res) != 1:
        return None
    missing = keys - res[0].keys()
    c.true(f"{what}: {tool} result record complete", not missing, f"missing {sorted(missing)}")
    return res[0]


def table_row(out, header_word):
    """The row under the udp_bench table header, split into columns."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Settings(b,t,n,s)") and header_word in line and i + 1 < len(lines):
            return lines[i + 1].split()
    return None


def wait_started(p, prefix, timeout=10):
    """Reads pktgen's stdout up to its first line: by then its signal handlers are installed."""
    deadline = time.time() + timeout
    seen = ""
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen += line
        if line.startswith(prefix):
            p.startup = seen
            return True
    p.startup = seen
    return False


def run_trial(lab, tmp, n, target):
    sig = rnd.choice((signal.SIGINT, signal.SIGTERM))
    delay = rnd.uniform(0.05, 0.8)
    backend = rnd.choice(("socket", "uring"))
    threads = rnd.choice((1, 2))
    bounded = rnd.random() < 0.5
    what = f"{target} #{n} {signal.Signals(sig).name} at {delay:.2f}s ({backend}, {threads} thread(s)" + \
           (", --count 30000)" if bounded else ")")
    rx_json, tx_json = os.path.join(tmp, f"rx{n}.json"), os.path.join(tmp, f"tx{n}.json")
    rx = start_rx(lab, ["--backend", backend, "--threads", str(threads), "--json", rx_json, "--idle", "5"])
    tx_args = [PKTGEN, "--dst", lab.ip_b, "--rate", "20k", "--size", "200", "--backend", backend,
               "--threads", str(threads), "--json", tx_json]
    if threads > 1:
        tx_args += ["--src-port", "7000-7001"]
    if bounded:
        tx_args += ["--count", "30000"]
    tx = lab.spawn(lab.ns_a, tx_args, cwd=tmp)
    ok = wait_started(tx, "pktgen: ")
    c.true(f"{what}: pktgen started", ok, "" if ok else tx.startup)

    victim = tx if target == "pktgen" else rx
    time.sleep(delay)
    signalled = victim.poll() is None
    victim.send_signal(sig)
    if target == "rx":
        rc, rout, rerr = finish(rx, timeout=20)
        if tx.poll() is None:
            tx.send_signal(signal.SIGINT)  # the run is over: stop the sender too
        tout, terr = tx.communicate(timeout=20)
    else:
        tout, terr = tx.communicate(timeout=20)
        rc, rout, rerr = finish(rx, timeout=20)
    tout = tx.startup + tout

    c.eq(f"{what}: pktgen exit code", tx.returncode, 0)
    c.eq(f"{what}: rx exit code", rc, 0)
    c.true(f"{what}: nothing on stderr", not terr.strip() and not rerr.strip(), (terr + rerr)[-300:])
    trow, rrow = table_row(tout, "Sent"), table_row(rout, "Lost")
    ok = trow is not None and "end markers:" in tout
    c.true(f"{what}: pktgen final table", ok, "" if ok else tout[-300:])
    ok = rrow is not None and "loss:" in rout and "ended by:" in rout
    c.true(f"{what}: rx final table", ok, "" if ok else rout[-300:])
    t = result(tx_json, "pktgen", PKTGEN_KEYS, what)
    r = result(rx_json, "rx", RX_KEYS, what)
    if not (t and r and trow and rrow):
        return
    c.eq(f"{what}: pktgen table Sent == JSON sent", int(trow[2]), t["sent"])
    c.eq(f"{what}: rx table Received == JSON received", int(rrow[4]), r["received"])
    c.eq(f"{what}: rx table Lost == JSON lost", int(rrow[2]), r["lost"])
    if signalled:
        c.true(f"{what}: {target} JSON says interrupted", (t if target == "pktgen" else r)["interrupted"] is True)
    if target == "rx" and signalled:
        c.eq(f"{what}: rx ended by", r["ended_by"], "signal")
    if r["lost_basis"] == "end_markers":
        c.eq(f"{what}: rx received + lost == end markers' total", r["received"] + r["lost"], r["sent"])
        c.eq(f"{what}: end markers' total == pktgen sent", r["sent"], t["sent"])
        c.eq(f"{what}: lost on a clean veth", r["lost"], 0)
    else:
        # rx stopped before the end markers: it saw a prefix of each stream.
        c.true(f"{what}: rx received + lost <= pktgen sent", r["received"] + r["lost"] <= t["sent"],
               f"{r['received']} + {r['lost']} > {t['sent']}")
    if target == "pktgen":
        c.eq(f"{what}: rx ended by", r["ended_by"], "end markers")


start = time.time()
with tempfile.TemporaryDirectory(prefix="rl-interrupts-") as tmp:
    os.environ["TMPDIR"] = tmp  # a temp file either program made would show up here
    lab = Lab("i", subnet=10)
    with lab:
        trials = ["pktgen"] * TRIALS + ["rx"] * TRIALS
        rnd.shuffle(trials)
        for n, target in enumerate(trials):
            run_trial(lab, tmp, n, target)
        c.true("every process we started has exited", all(p.poll() is not None for p in lab.procs))
    expected = {f"{k}{n}.json" for n in range(len(trials)) for k in ("rx", "tx")}
    left = set(os.listdir(tmp)) - expected
    c.true("no file besides the JSON we asked for", not left, str(sorted(left)))
c.true("temp directory removed", not os.path.exists(tmp))
names = sh("ip", "netns", "list", capture=True)
c.true("namespaces deleted", lab.ns_a not in names and lab.ns_b not in names, names)
print(f"{2 * TRIALS} trials in {time.time() - start:.1f}s (seed {seed})")
c.done()
