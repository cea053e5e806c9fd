#!/usr/bin/env python3
"""No datagram can steer the count: while rx counts a real pktgen stream,
forge_frames.py sends, as that very stream (spoofed address, port and sender
id), end markers claiming 5 and 10^15 packets and data with sequences
2^64 - 2 and 10^12; and from other ports of the same host, a lone end marker
claiming 2^64 - 1 and a prefill of the stream's own sequence numbers.

On every receiver (socket, uring, afpacket, afxdp, and xdp, whose counting
runs in the kernel) the real stream
must come out exact: received == pktgen sent, lost 0, duplicated 0, its
believed total == what pktgen sent, the run not cut short by the forged
marker (the prefill never ends, so --idle ends the run), and every forgery named: 2 implausible
sequences, 3 end markers not believed, the prefill a stream of its own. The
interface counter of the receiving veth is the independent observer of what
arrived: pktgen's packets + markers + every forged frame."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, Checks, Lab, finish, result_record, start_rx

SPORT = 6200
PREFILL = 5000
here = os.path.dirname(os.path.abspath(__file__))
c = Checks("forgery")
with tempfile.TemporaryDirectory() as tmp, Lab("f", subnet=12) as lab:
    for backend in ("socket", "uring", "afpacket", "afxdp", "xdp"):
        rx_json, tx_json = os.path.join(tmp, f"rx-{backend}.json"), os.path.join(tmp, f"tx-{backend}.json")
        rx = start_rx(lab, ["--backend", backend, "--device", lab.if_b, "--json", rx_json, "--quiet", "--idle", "2"])
        rx_before = lab.counter("b", "rx_packets")
        forger = lab.spawn(lab.ns_a, [sys.executable, os.path.join(here, "forge_frames.py"), lab.if_a, lab.ip_a,
                                      lab.ip_b, lab.mac(lab.ns_b, lab.if_b), "9000", str(SPORT),
                                      "--prefill", str(PREFILL)])
        c.eq(f"{backend}: forger ready", forger.stdout.readline().strip(), "ready")
        tx = lab.spawn(lab.ns_a, [PKTGEN, "--backend", "socket", "--dst", lab.ip_b, "--src-port", str(SPORT),
                                  "--rate", "20k", "--count", "30000", "--size", "200", "--quiet", "--json", tx_json])
        fout, ferr = forger.communicate(timeout=30)
        c.eq(f"{backend}: forger exit code", forger.returncode, 0)
        forged = json.loads(fout.strip().splitlines()[-1]) if forger.returncode == 0 else {}
        tout, terr = tx.communicate(timeout=30)
        c.eq(f"{backend}: pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        c.eq(f"{backend}: rx exit code", rc, 0)
        t = result_record(tx_json, "pktgen")
        r = result_record(rx_json, "rx")
        arrived = lab.counter("b", "rx_packets") - rx_before
        forged_frames = 2 + 2 + 1 + PREFILL
        c.eq(f"{backend}: veth rx_packets == pktgen's packets + markers + forged frames", arrived,
             t["sent"] + t["end_markers"] + forged_frames)
        # The prefill is a stream that never ends (no marker): only --idle ends the run,
        # and the forged marker of 5 never did, before pktgen had sent all.
        c.eq(f"{backend}: rx ended by", r["ended_by"], "idle timeout")
        c.eq(f"{backend}: forger saw pktgen's sender id", forged.get("sender"), t["sender_id"])
        real = [s for s in r["streams"] if s["from"] == f"{lab.ip_a}:{SPORT}" and s["sender_id"] == t["sender_id"]]
        c.eq(f"{backend}: one row for the real stream", len(real), 1)
        s = real[0] if real else {}
        c.eq(f"{backend}: real stream received == pktgen sent", s.get("received"), t["sent"])
        c.eq(f"{backend}: real stream believed total == pktgen sent", s.get("sent"), t["sent"])
        c.eq(f"{backend}: real stream lost", s.get("lost"), 0)
        c.eq(f"{backend}: real stream duplicated", s.get("duplicated"), 0)
        c.eq(f"{backend}: real stream stale", s.get("stale"), 0)
        c.eq(f"{backend}: real stream implausible sequences (2^64-2, 10^12)", s.get("implausible"), 2)
        c.eq(f"{backend}: real stream markers not believed (5, 10^15)", s.get("implausible_markers"), 2)
        prefill = [x for x in r["streams"] if x["from"] == f"{lab.ip_a}:{SPORT + 2}"]
        c.eq(f"{backend}: the prefill is a stream of its own", [x.get("received") for x in prefill], [PREFILL])
        c.eq(f"{backend}: run lost (summary == sum of rows)", r["lost"], sum(x["lost"] for x in r["streams"]))
        c.eq(f"{backend}: run lost", r["lost"], 0)
        c.eq(f"{backend}: run received", r["received"], t["sent"] + PREFILL)
        c.eq(f"{backend}: markers not believed in all (incl. the lone one)", r["implausible_markers"], 3)
        c.true(f"{backend}: no absurd number in the report", all(v < 10**12 for v in (r["lost"], r["received"])))
c.done()
