#!/usr/bin/env python3
"""Hostile traffic: while rx counts a pktgen stream, the same port also gets a
flood of foreign UDP, datagrams with our magic that are too short, lie about
their length, version or kind, or fail the checksum, datagrams cut by
--max-size, and byte-exact replays of pktgen's own frames
(hostile_frames.py). rx keeps running, counts the stream exactly (received ==
pktgen sent, lost 0) and puts everything else in the right counter: on the
socket receivers and on the raw ones (afpacket, afxdp, xdp, dpdk on net_af_packet)."""
import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, Checks, Lab, finish, hugepages_free, result_record, rx_args, start_rx

SPORT = 6100         # pktgen's source port: the one whose frames are replayed
MIX = {"replay": 300, "foreign": 20000, "short": 200, "bad-length": 150, "bad-version": 100, "bad-kind": 100,
       "bad-checksum": 250, "oversize": 50}
here = os.path.dirname(os.path.abspath(__file__))
c = Checks("hostile")
SANITIZED = os.environ.get("RATELINE_SANITIZED", "")  # set by tools/check.d/10-sanitize
with tempfile.TemporaryDirectory() as tmp, Lab("h", subnet=11) as lab:
    # The raw receivers too (frames from below the stack, the same verdicts); pktgen sends with sockets for them.
    raw = ["afpacket", "afxdp", "xdp"] + (["dpdk"] if hugepages_free() >= 128 and not SANITIZED else [])
    for backend in ["socket", "uring"] + raw:
        rx_json, tx_json = os.path.join(tmp, f"rx-{backend}.json"), os.path.join(tmp, f"tx-{backend}.json")
        rx = start_rx(lab, rx_args(lab, backend, rx_json, ["--max-size", "1000"]), ready_timeout=30)
        args = [sys.executable, os.path.join(here, "hostile_frames.py"), lab.if_a, lab.ip_a, lab.ip_b,
                lab.mac(lab.ns_b, lab.if_b), "9000", str(SPORT), "--oversize-bytes", "1400", "--spread", "0.8"]
        for k, v in MIX.items():
            args += [f"--{k}", str(v)]
        inj = lab.spawn(lab.ns_a, args)
        c.eq(f"{backend}: injector ready", inj.stdout.readline().strip(), "ready")
        # pktgen runs until the injector is done, then Ctrl-C: its end markers
        # come after every hostile frame, so rx has counted them all when it ends.
        tx = lab.spawn(lab.ns_a, [PKTGEN, "--backend", backend if backend in ("socket", "uring") else "socket",
                                  "--dst", lab.ip_b, "--src-port", str(SPORT),
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
