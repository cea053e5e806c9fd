#!/usr/bin/env python3
"""Hostile traffic: while rx counts a pktgen stream, the same port also gets a
flood of foreign UDP, datagrams with our magic that are too short, lie about
their length, version or kind, or fail the checksum, datagrams cut by
--max-size, and byte-exact replays of pktgen's own frames
(hostile_frames.py). rx keeps running, counts the stream exactly (received ==
pktgen sent, lost 0) and puts everything else in the right counter."""
import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from netlab import Checks, Lab, PKTGEN, finish, result_record, start_rx

SPORT = 6100         # pktgen's source port: the one whose frames are replayed
MIX = {"replay": 300, "foreign": 20000, "short": 200, "bad-length": 150, "bad-version": 100, "bad-kind": 100,
       "bad-checksum": 250, "oversize": 50}
here = os.path.dirname(os.path.abspath(__file__))
c = Checks("hostile")
with tempfile.TemporaryDirectory() as tmp, Lab("h", subnet=11) as lab:
    for backend in ("socket", "uring"):
        rx_json, tx_json = os.path.join(tmp, f"rx-{backend}.json"), os.path.join(tmp, f"tx-{backend}.json")
        rx = start_rx(lab, ["--backend", backend, "--max-size", "1000", "--json", rx_json, "--quiet"])
        args = [sys.executable, os.path.join(here, "hostile_frames.py"), lab.if_a, lab.ip_a, lab.ip_b,
                lab.mac(lab.ns_b, lab.if_b), "9000", str(SPORT), "--oversize-bytes", "1400", "--spread", "0.8"]
        for k, v in MIX.items():
            args += [f"--{k}", str(v)]
        inj = lab.spawn(lab.ns_a, args)
        c.eq(f"{backend}: injector ready", inj.stdout.readline().strip(), "ready")
        # pktgen runs until the injector is done, then Ctrl-C: its end markers
        # come after every hostile frame, so rx has counted them all when it ends.
        tx = lab.spawn(lab.ns_a, [PKTGEN, "--backend", backend, "--dst", lab.ip_b, "--src-port", str(SPORT),
                                  "--rate", "20k", "--size", "200", "--quiet", "--json", tx_json])
        iout, ierr = inj.communicate(timeout=30)
        c.eq(f"{backend}: injector exit code", inj.returncode, 0)
        sent = json.loads(iout.strip().splitlines()[-1]) if inj.returncode == 0 else {}
        c.eq(f"{backend}: injector replayed what it was asked", sent.get("replayed"), MIX["replay"])
        time.sleep(0.2)
        tx.send_signal(signal.SIGINT)
        tout, terr = tx.communicate(timeout=30)
        c.eq(f"{backend}: pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        c.eq(f"{backend}: rx exit code (kept running)", rc, 0)
        t = result_record(tx_json, "pktgen")
        r = result_record(rx_json, "rx")
        c.true(f"{backend}: pktgen sent a stream", t["sent"] >= 10000, str(t["sent"]))
        c.eq(f"{backend}: rx received == pktgen sent", r["received"], t["sent"])
        c.eq(f"{backend}: rx lost", r["lost"], 0)
        c.eq(f"{backend}: rx ended by", r["ended_by"], "end markers")
        c.eq(f"{backend}: rx sent (end markers) == pktgen sent", r["sent"], t["sent"])
        c.eq(f"{backend}: duplicated (replays)", r["duplicated"], MIX["replay"])
        c.eq(f"{backend}: foreign", r["foreign"], MIX["foreign"])
        c.eq(f"{backend}: malformed (short, bad length/version/kind, cut by --max-size)", r["malformed"],
             MIX["short"] + MIX["bad-length"] + MIX["bad-version"] + MIX["bad-kind"] + MIX["oversize"])
        c.eq(f"{backend}: corrupt", r["corrupt"], MIX["bad-checksum"])
        c.eq(f"{backend}: unknown stream", r["unknown_stream"], 0)
        c.eq(f"{backend}: socket drops", r["socket_drops"], 0)
        ok = f"foreign {MIX['foreign']}, malformed {r['malformed']}" in out
        c.true(f"{backend}: table shows the other traffic", ok, "" if ok else out[-500:])
        print(f"{backend}: injector took {sent.get('seconds')} s; pktgen {t['time_s']:.2f} s")
c.done()
