#!/usr/bin/env python3
"""tools/ceiling: the RFC 2544 search, its drop ledger and its control protocol.

1. Known bottleneck. The local lab's sender veth is shaped with
   `tbf rate 20mbit burst 32kbit latency 30ms`. tbf meters qdisc_pkt_len(skb),
   which at a veth's egress is the Ethernet frame without FCS (no preamble,
   no gap): payload + 8 UDP + 20 IPv4 + 14 Ethernet = payload + 42 bytes. The
   test checks that from tc's own Sent bytes/packets, then expects
   NDR = 20e6 / (8 * (payload + 42)) pps, within 2% (reported, not checked,
   under the sanitizer stage's instrumented build), for two sizes (1400 B
   payload and the RFC 2544 512 B frame, 466 B payload). Why 30 ms and 3 s
   trials: the queue (rate * latency + burst = 79 KB) absorbs that many bytes
   of excess, so a T-second trial passes up to (79 KB / T) / 2.5 MB/s = 1.05%
   above the rate; the 1% resolution bounds the other side. The queue is that
   deep because it must also ride out this VM's stalls: with a 10 ms queue, a
   CI run lost 13 packets in the qdisc at 89% of the shaped rate (tbf did not
   dequeue for ~21 ms; the sender was 1.2% short, i.e. it slipped too); 79 KB rides
   out ~45 ms at 1400 B. (64 B frames are not
   used here: 34k pps of small frames through tbf and a veth is more than this
   shared 2-core VM carries, so the measured ceiling there is the host's.)
   Every rate is judged over up to two trials at a goal exceed ratio of 0.5
   (--rate-trials 2 --exceed-ratio 0.5, MLRsearch): it fails only when both
   lose. Why: a vCPU of this VM away for longer than the queue drops a few
   packets in tbf far under its rate with the sender on schedule (a CI run:
   1400 B NDR -7.85%, one such trial set the upper bound); two in a row at one
   rate have not been seen. Each rate's trials must follow that rule, and the
   lossy trials inside the NDR are at most one per rate.
   ceiling sets aside (and runs again) a trial that lost packets while pktgen
   slipped; each set-aside trial must show both. The in-burst peak at the NDR
   must be above its average. The drops at the first failing rate must be in the qdisc line of the
   ledger, none unattributed. The back-to-back burst must match what the tbf
   holds: (queue + bucket) / frame. CSV, JSON lines and the SVG (rendered
   with rsvg-convert to a PNG of sane size) are checked too, and the lab must
   be gone afterwards. Under the sanitizer stage (RATELINE_SANITIZED) the same
   search runs with 0.5 s trials: its job there is memory errors on every path
   (search, set-aside, confirmations, ledger, back-to-back, outputs), and the
   NDR, reported and not checked there, would need the 3 s (0.5 s lets the
   queue pass 6.3% above the rate). Every other check above stands.
2. Throttled receiver, across the control protocol over TCP (two-host mode
   between two namespaces): rx with a 16 KiB receive buffer and the test aid
   --test-slow-us (the agent runs with --serve-allow-test-aids); every missing
   packet must be a socket drop in the ledger. Resolution 5%: the rate found
   is not checked (only that there is one, and where the losses were), and
   this noisy receiver took ~40 trials to close a 1% bracket.
   Plain rx must print the same attribution at the end of its own run.
3. The control protocol: malformed, oversized and out-of-order requests get
   ERR, a second client gets ERR busy, and the server keeps serving.
4. Every backend. Receivers (rx --backend uring, afpacket, afxdp, xdp, dpdk on
   net_af_packet) behind the same tbf, in shorter searches (1 s trials, first
   trial at 1.15x the shaped rate, 5% resolution, the same two-trial rule): NDR within -10%..+5% of the shaped rate
   (1 s trials let the 79 KB queue pass 3.2% above it; below, a host stall
   longer than the queue drops in tbf with the sender on schedule: a CI run
   lost 14 packets at 2% under the rate, NDR -3.1%; precision is part 1's
   business), drops in the qdisc line, none unattributed. Senders (pktgen --backend uring, afpacket, afxdp, xdp,
   dpdk) unshaped, from 200 kpps, at most four trials each: afpacket, afxdp,
   xdp and dpdk bypass the qdisc, so the ceiling there is this host's own. Each trial of each run is
   checked against the veths' own counters: a lossless trial's sent + end
   markers - qdisc drops (an end marker can be one) == the sender veth's
   tx_packets delta, and received + end markers == the receiver veth's
   rx_packets delta; the backend that ran is the one
   asked for (no silent fallback).
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, RX, finish, json_records, require_root, result_record, sh, start_rx

CEILING = os.environ.get("CEILING", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PKTGEN))), "tools",
                                                 "ceiling", "ceiling"))
SHAPE_MBIT = 20
SHAPE = f"tbf rate {SHAPE_MBIT}mbit burst 32kbit latency 30ms"
TBF_LIMIT = SHAPE_MBIT * 1e6 / 8 * 0.030 + 4000  # bytes: rate * latency + burst (how tc computes limit)
TBF_BUCKET = 4000                                # 32 kbit
SANITIZED = os.environ.get("RATELINE_SANITIZED", "")  # set by tools/check.d/10-sanitize
# Part 1's trial length: 3 s where the NDR is checked against the shaper (see above); 0.5 s under the
# sanitizers, where it is reported only and the same paths run in a third of the time (120 -> 40 s).
SHAPED_TRIAL = "0.5s" if SANITIZED else "3s"


def protocol_client(host, port):
    """Runs inside the server's namespace (re-executed by the test); prints one JSON object of replies."""
    out = {}

    def conn():
        s = socket.create_connection((host, port), timeout=10)
        return s, s.makefile("rb")

    def ask(s, f, line):
        s.sendall(line if isinstance(line, bytes) else (line + "\n").encode())
        return f.readline().decode(errors="replace").strip()

    s, f = conn()
    out["lowercase"] = ask(s, f, "hello version=1")
    out["trial_before_hello"] = ask(s, f, "TRIAL id=1 size=1400 port=9000")
    out["oversized"] = ask(s, f, b"PING " + b"x" * 5000 + b"\n")
    out["ping_after_oversized"] = ask(s, f, "PING")
    out["binary"] = ask(s, f, b"\x00\xff\xfe\n")
    out["hello"] = ask(s, f, "HELLO version=1")
    out["hello_again"] = ask(s, f, "HELLO version=1")
    out["stop_no_trial"] = ask(s, f, "STOP id=5")
    out["unknown_verb"] = ask(s, f, "FROB a=1")
    out["bad_port"] = ask(s, f, "TRIAL id=2 size=1400 port=80")
    out["bad_backend"] = ask(s, f, "TRIAL id=3 size=1400 port=9000 backend=..")
    out["path_backend"] = ask(s, f, "TRIAL id=3 size=1400 port=9000 backend=/bin/sh")
    out["bad_size"] = ask(s, f, "TRIAL id=4 size=abc port=9000")
    out["unknown_field"] = ask(s, f, "TRIAL id=4 size=1400 port=9000 cmd=ls")
    out["dup_field"] = ask(s, f, "TRIAL id=4 size=1400 size=1400 port=9000")
    out["trial"] = ask(s, f, "TRIAL id=7 size=1400 port=9000 idle_ms=200 backend=socket")
    out["trial_while_running"] = ask(s, f, "TRIAL id=8 size=1400 port=9001")
    out["stop_other"] = ask(s, f, "STOP id=8")
    # A second client while this session runs.
    try:
        s2, f2 = conn()
        out["second_client"] = f2.readline().decode().strip()
        f2.close()
        s2.close()
    except OSError as e:
        out["second_client"] = f"connect failed: {e}"
    out["stop"] = ask(s, f, "STOP id=7")  # -> RESULT id=7 {...}
    out["bye"] = ask(s, f, "BYE")
    f.close()
    s.close()
    # An oversized request with no newline at all, then hang up mid-line.
    s, f = conn()
    s.sendall(b"TRIAL " + b"9" * 3000)
    out["oversized_no_newline"] = f.readline().decode().strip()
    f.close()  # (the makefile holds the socket open too)
    s.close()
    time.sleep(0.3)
    # The server still serves.
    s, f = conn()
    out["hello_after"] = ask(s, f, "HELLO version=1")
    out["ping_after"] = ask(s, f, "PING")
    s.close()
    print(json.dumps(out))


def png_size(path):
    with open(path, "rb") as fh:
        head = fh.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def records(path, kind):
    return [r for r in json_records(path) if r.get("type") == kind and r.get("tool") == "ceiling"]


def shaped_search(c, tmp):
    j, svg, csv, csv_t = (os.path.join(tmp, n) for n in ("c.json", "c.svg", "c.csv", "ct.csv"))
    t0 = time.time()
    p = subprocess.Popen([CEILING, "--frame-sizes", "512", "--size", "1400", "--trial", SHAPED_TRIAL, "--resolution", "1%",
                          "--rate-trials", "2", "--exceed-ratio", "0.5",
                          "--tests", "throughput,back-to-back", "--b2b-repeats", "2", "--tx-backend", "socket",
                          "--rx-backend", "socket", "--shape", SHAPE, "--json", j, "--svg", svg, "--csv", csv,
                          "--csv-trials", csv_t, "--pktgen", PKTGEN, "--rx", RX],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=360)
    print(out[-2500:])
    print(f"(shaped search, {SHAPED_TRIAL} trials, took {time.time() - t0:.0f} s)")
    c.eq("ceiling exit code", p.returncode, 0)
    if p.returncode != 0:
        print(err[-2000:])
    left = sh("ip", "netns", "list", capture=True)
    c.true("lab namespaces removed", f"rlc{p.pid}a" not in left and f"rlc{p.pid}b" not in left, left)
    c.true("table printed", "NDR pps" in out and "drops at the first failing rate" in out, out[-500:])
    results = {r["payload"]: r for r in records(j, "result")}
    trials = records(j, "trial")
    c.eq("result records", sorted(results), [466, 1400])
    c.true("every trial ran", trials and all(t["ok"] for t in trials), str([t.get("error") for t in trials if not t["ok"]]))
    aside = [t for t in trials if t.get("set_aside")]
    c.true(f"set-aside trials ({len(aside)}) all lost packets with the sender off its schedule",
           all(t["lost"] > 0 and t["pace_slips"] > 0 for t in aside),
           str([(t["k"], t["lost"], t["pace_slips"]) for t in aside]))
    c.eq("set-aside count in the results", sum(r["set_aside_trials"] for r in results.values()), len(aside))
    two_trial_rule(c, "shaped search", trials, results.values())
    for payload, r in sorted(results.items()):
        # tbf's byte count per packet, from tc -s itself (sender-side qdisc counters of each trial).
        qb = qp = 0
        for t in trials:
            if t["payload"] != payload or not t["ok"]:
                continue
            for d in (t["ledger"]["counters"]["sender"] or {}).get("devices", []):
                if "qdisc" in d:
                    qb += d["qdisc"]["bytes"]
                    qp += d["qdisc"]["packets"]
        per_packet = qb / qp if qp else 0
        c.true(f"{payload} B: tbf counts payload + 42 B a packet (L2 without FCS)", abs(per_packet - (payload + 42)) < 1.0,
               f"{per_packet:.2f} B/packet from tc")
        expect = SHAPE_MBIT * 1e6 / (8 * (payload + 42))
        ndr = r["ndr"]
        got = ndr["rate"]["pps"] if ndr["rate"] else 0
        c.true(f"{payload} B: NDR search converged", ndr["state"] == "converged", ndr["state"])
        what = f"{payload} B: NDR {got:.0f} pps within 2% of the shaped {expect:.0f} pps"
        detail = f"{(got - expect) / expect * 100:+.2f}% (achieved {ndr['achieved']['pps'] if ndr['rate'] else 0:.0f})"
        if SANITIZED:
            # Instrumented binaries on a shared VM: the precision is the host's; the main suite checks it.
            print(f"info {what}: {detail} (not checked under {SANITIZED})")
        else:
            c.true(what, abs(got - expect) <= 0.02 * expect, detail)
        c.true(f"{payload} B: NDR confirmed by a repeat", ndr["confirmed"])
        # Offered rate as asked, as achieved, and at its peak inside a burst (auto bursts of ~1 ms here).
        peak = ndr.get("in_burst_peak_pps") or 0
        c.true(f"{payload} B: NDR in-burst peak {peak:.0f} pps above the achieved average",
               ndr["rate"] is not None and peak > ndr["achieved"]["pps"], str(peak))
        ff = ndr.get("first_fail")
        c.true(f"{payload} B: a failing rate above the NDR", ff is not None)
        if ff:
            lg = ff["ledger"]
            c.true(f"{payload} B: drops at the first failing rate are qdisc drops",
                   lg["missing"] > 0 and lg["unattributed"] == 0 and
                   sum(x["attributed"] for x in lg["lines"] if x["layer"] == "qdisc") == lg["missing"],
                   json.dumps(lg["lines"]))
        # Every lossy trial's loss is explained, and by the qdisc.
        lossy = [t for t in trials if t["payload"] == payload and t["ok"] and t["lost"]]
        c.true(f"{payload} B: no lossy trial has unattributed drops", all(t["ledger"]["unattributed"] == 0 for t in lossy),
               str([t["ledger"]["unattributed"] for t in lossy]))
        b2b = r["back_to_back"]["longest_burst"]
        holds = (TBF_LIMIT + TBF_BUCKET) / (payload + 42)
        c.true(f"{payload} B: back-to-back {b2b} ~ what tbf holds ({holds:.0f})", abs(b2b - holds) <= 0.2 * holds + 2,
               str(b2b))
    # Outputs.
    lines = open(csv).read().splitlines()
    c.true("CSV: header + one row per size", len(lines) == 3 and lines[0].startswith("requested_frame,frame,payload"), str(lines[:1]))
    tl = open(csv_t).read().splitlines()
    c.eq("trials CSV rows", len(tl) - 1, len(trials))
    doc = open(svg).read()
    c.true("SVG document", doc.startswith("<?xml") and "<svg" in doc and doc.rstrip().endswith("</svg>"))
    png = os.path.join(tmp, "c.png")
    r = subprocess.run(["rsvg-convert", "-o", png, svg], capture_output=True, text=True)
    c.eq("rsvg-convert renders the SVG", r.returncode, 0)
    size = png_size(png) if r.returncode == 0 else None
    c.true("PNG of sane size", size is not None and 300 <= size[0] <= 4000 and 200 <= size[1] <= 4000 and
           os.path.getsize(png) > 5000, f"{size}, {os.path.getsize(png) if os.path.exists(png) else 0} bytes")


def throttled_receiver(c, tmp):
    with Lab("q", subnet=6) as lab:
        # Plain rx: its own ledger at the end of the run.
        rx_json = os.path.join(tmp, "rx-slow.json")
        rx = start_rx(lab, ["--backend", "socket", "--rcvbuf", "16k", "--test-slow-us", "2000", "--json", rx_json, "--quiet"])
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "socket", "--dst", lab.ip_b, "--count",
                             "6000", "--rate", "12k", "--burst", "12", "--size", "1400", "--quiet"],
                            capture_output=True, text=True, timeout=60)
        c.eq("pktgen into the slow rx", tx.returncode, 0)
        rc, out, err = finish(rx)
        r = result_record(rx_json, "rx")
        lg = r["ledger"]
        c.true("slow rx lost packets", r["lost"] > 0, str(r["lost"]))
        c.true("rx prints the drop ledger", "drop ledger:" in out and "\n  socket " in out, out[-600:])
        c.true("rx ledger: the loss is socket drops, none unattributed",
               lg["unattributed"] == 0 and sum(x["attributed"] for x in lg["lines"] if x["layer"] == "socket") == r["lost"],
               json.dumps(lg["lines"]))

        # ceiling across the TCP control channel, receiver agent in its own namespace.
        # --rx-test-slow-us reaches this agent as slow_us, a test aid it takes only when told to.
        # An agent on a non-loopback address takes only clients that hold its key.
        key = os.path.join(tmp, "agent.key")
        c.eq("ceiling --make-key", subprocess.run([CEILING, "--make-key", key], capture_output=True).returncode, 0)
        srv = lab.spawn(lab.ns_b, [CEILING, "--serve", f"{lab.ip_b}:7710", "--rx-bind", lab.ip_b, "--rx", RX,
                                   "--serve-allow-test-aids", "--key-file", key])
        time.sleep(0.5)
        j = os.path.join(tmp, "remote.json")
        t0 = time.time()
        p = subprocess.run(["ip", "netns", "exec", lab.ns_a, CEILING, "--remote", f"{lab.ip_b}:7710", "--dst", lab.ip_b,
                            "--key-file", key,
                            "--frame-sizes", "none", "--size", "1400", "--trial", "0.5s", "--max-trials", "16",
                            "--resolution", "5%",
                            # A 16 KB buffer rides out a 4 ms stall of this VM at most: a rate
                            # that lost gets a second trial (one run found no NDR in 10 trials).
                            "--rate-trials", "2", "--exceed-ratio", "0.5",
                            "--tests", "throughput", "--rx-rcvbuf", "16k", "--rx-test-slow-us", "2000",
                            "--rx-backend", "socket", "--tx-backend", "socket", "--json", j, "--pktgen", PKTGEN],
                           capture_output=True, text=True, timeout=180)
        print(p.stdout[-1500:])
        print(f"(remote search took {time.time() - t0:.0f} s)")
        c.eq("remote ceiling exit code", p.returncode, 0)
        trials = records(j, "trial")
        lossy = [t for t in trials if t["ok"] and t["lost"] > 0]
        c.true("some trials lost packets at the slow receiver", len(lossy) > 0, str(len(trials)))
        c.true("every lossy trial: all missing packets are socket drops",
               all(t["ledger"]["unattributed"] == 0 and
                   sum(x["attributed"] for x in t["ledger"]["lines"] if x["layer"] == "socket") == t["lost"] for t in lossy),
               json.dumps([t["ledger"]["lines"] for t in lossy][:2]))
        res = records(j, "result")
        c.true("remote run reports an NDR", res and res[0]["ndr"]["rate"] is not None, json.dumps(res)[:300])
        c.true("server still up after the session", srv.poll() is None)
        srv.terminate()
        srv.wait(timeout=10)
        c.eq("server exits cleanly on SIGTERM", srv.returncode, 0)


def protocol(c):
    with Lab("p", subnet=7) as lab:
        srv = lab.spawn(lab.ns_b, [CEILING, "--serve", "127.0.0.1:7711", "--rx-bind", "127.0.0.1", "--rx", RX])
        time.sleep(0.5)
        r = subprocess.run(["ip", "netns", "exec", lab.ns_b, sys.executable, os.path.abspath(__file__), "--protocol-client",
                            "127.0.0.1", "7711"], capture_output=True, text=True, timeout=60)
        c.eq("protocol client ran", r.returncode, 0)
        if r.returncode != 0:
            print(r.stderr[-2000:])
            return
        o = json.loads(r.stdout.strip().splitlines()[-1])
        for k, v in o.items():
            print(f"     {k}: {v[:160]}")

        def err(key, code):
            c.true(f"{key}: ERR code={code}", o[key].startswith(f"ERR code={code}"), o[key])

        err("lowercase", "malformed")
        err("trial_before_hello", "out-of-order")
        err("oversized", "too-long")
        c.eq("PING after an oversized line", o["ping_after_oversized"], "PONG")
        err("binary", "malformed")
        c.eq("HELLO", o["hello"], "OK version=1")
        err("hello_again", "out-of-order")
        err("stop_no_trial", "out-of-order")
        err("unknown_verb", "unknown-verb")
        err("bad_port", "bad-value")
        err("bad_backend", "bad-value")
        err("path_backend", "malformed")
        err("bad_size", "bad-value")
        err("unknown_field", "bad-value")
        err("dup_field", "malformed")
        c.eq("TRIAL starts rx", o["trial"], "READY id=7")
        err("trial_while_running", "out-of-order")
        err("stop_other", "out-of-order")
        err("second_client", "busy")
        c.true("STOP ends the trial with its RESULT", o["stop"].startswith("RESULT id=7 {"), o["stop"][:100])
        if o["stop"].startswith("RESULT id=7 "):
            res = json.loads(o["stop"][len("RESULT id=7 "):])
            c.true("RESULT carries rx's record and ledger", res.get("type") == "result" and "ledger" in res and
                   res.get("received") == 0, str(res)[:200])
        c.eq("BYE", o["bye"], "OK bye")
        err("oversized_no_newline", "too-long")
        c.eq("HELLO on a new session", o["hello_after"], "OK version=1")
        c.eq("PING on a new session", o["ping_after"], "PONG")
        c.true("server kept running throughout", srv.poll() is None)
        srv.terminate()
        srv.wait(timeout=10)


def two_trial_rule(c, what, trials, results):
    """--rate-trials 2 --exceed-ratio 0.5: a second trial at a rate only after the first lost packets; a rate
    with a clean trial passes, so the reported NDR holds at most one lossy trial per rate."""
    loads = {}
    for t in trials:
        if t["ok"] and not t.get("set_aside") and t.get("rate_load") is not None:
            loads.setdefault((t["payload"], t["rate_load"]), []).append(t)
    bad = [(k, [(t["k"], t["lost"]) for t in ts]) for k, ts in loads.items() if len(ts) > 2 or (len(ts) == 2 and not ts[0]["lost"])]
    c.true(f"{what}: {len(loads)} rates, each judged by the two-trial rule", loads and not bad, str(bad)[:400])
    for r in results:
        ndr = r["ndr"]
        c.eq(f"{what}: {r['payload']} B: load policy in the result", r.get("load_policy"), {"trials": 2, "exceed_ratio": 0.5})
        c.true(f"{what}: {r['payload']} B: at most one lossy trial per rate inside the NDR "
               f"({ndr.get('lossy_trials_at_rate')} of {ndr.get('trials_at_rate')})",
               ndr.get("trials_at_rate", 0) >= 1 and 2 * ndr.get("lossy_trials_at_rate", 99) <= ndr["trials_at_rate"])


def veth_cross_checks(c, what, trials):
    """Each lossless trial against the interface counters both ends read (sysfs, not our counts)."""
    bad = []
    for t in trials:
        if not t["ok"] or t["lost"]:
            continue
        cnt = t["ledger"]["counters"]
        tx_dev = [d for d in (cnt["sender"] or {}).get("devices", []) if d["name"].startswith("rlc")]
        rx_dev = [d for d in (cnt["receiver"] or {}).get("devices", []) if d["name"].startswith("rlc")]
        em = t["end_markers"]
        # A lossless trial can still lose an end marker in the qdisc (they go out back to back, after the data).
        qdrops = sum((d.get("qdisc") or {}).get("drops", 0) for d in tx_dev)
        if len(tx_dev) != 1 or tx_dev[0]["tx_packets"] != t["sent"] + em["sent"] - qdrops:
            bad.append((t["k"], "tx", t["sent"], em["sent"], qdrops, [d["tx_packets"] for d in tx_dev]))
        if len(rx_dev) != 1 or rx_dev[0]["rx_packets"] != t["received"] + em["received"]:
            bad.append((t["k"], "rx", t["received"], em["received"], [d["rx_packets"] for d in rx_dev]))
    n = sum(1 for t in trials if t["ok"] and not t["lost"])
    c.true(f"{what}: {n} lossless trial(s) == both veths' packet counters", n > 0 and not bad, str(bad[:3]))


def have_dpdk():
    probe = subprocess.run([PKTGEN, "--backend", "dpdk", "--count", "1", "--", "--no-pci"], capture_output=True, text=True,
                           timeout=60)
    return "built without DPDK" not in probe.stderr


def every_backend(c, tmp):
    payload = 1400
    expect = SHAPE_MBIT * 1e6 / (8 * (payload + 42))
    dpdk = have_dpdk()
    if not dpdk:
        print("info: built without DPDK: the dpdk receiver and sender are not tried")
    for role in ("rx", "tx"):
        for backend in ("uring", "afpacket", "afxdp", "xdp", "dpdk"):
            if backend == "dpdk" and not dpdk:
                continue
            j = os.path.join(tmp, f"{role}-{backend}.json")
            if role == "rx":
                # Resolution 5%: what is checked here is -10%..+5% (precision is part 1's); the 1% bracket took
                # three more failing rates, two trials each, per backend.
                args = ["--shape", SHAPE, "--trial", "1s", "--max-rate", f"{expect * 1.15:.0f}", "--max-trials", "10",
                        "--resolution", "5%", "--rate-trials", "2", "--exceed-ratio", "0.5",
                        "--tx-backend", "socket", "--rx-backend", backend]
            else:
                # First trial at 200 kpps: in reach of the socket receiver (~300 kpps at 1400 B here), so an NDR comes
                # within the budget whatever the sender's own top speed.
                args = ["--trial", "0.5s", "--max-rate", "200k", "--max-trials", "4", "--resolution", "1%",
                        "--tx-backend", backend, "--rx-backend", "socket"]
            t0 = time.time()
            p = subprocess.run([CEILING, "--frame-sizes", "none", "--size", str(payload), "--tests", "throughput",
                                "--json", j, "--pktgen", PKTGEN, "--rx", RX, "--quiet"] + args,
                               capture_output=True, text=True, timeout=240)
            what = f"{role} {backend}"
            print(f"-- {what} ({time.time() - t0:.0f} s): " + " | ".join(
                l.strip() for l in p.stdout.splitlines() if l.strip().startswith(("1446", "drops at")) or "ledger" in l))
            c.eq(f"{what}: ceiling exit code", p.returncode, 0)
            if p.returncode != 0:
                print(p.stdout[-1500:] + p.stderr[-1500:])
                continue
            trials = records(j, "trial")
            res = records(j, "result")
            c.true(f"{what}: every trial ran", trials and all(t["ok"] for t in trials),
                   str([t.get("error") for t in trials if not t["ok"]])[:400])
            key = "rx_backend" if role == "rx" else "tx_backend"
            c.true(f"{what}: every trial ran on {backend}", all(t.get(key) == backend for t in trials if t["ok"]),
                   str(sorted({t.get(key) for t in trials})))
            lossy = [t for t in trials if t["ok"] and t["lost"]]
            c.true(f"{what}: no lossy trial has unattributed drops", all(t["ledger"]["unattributed"] == 0 for t in lossy),
                   str([(t["k"], t["ledger"]["lines"]) for t in lossy if t["ledger"]["unattributed"]])[:600])
            veth_cross_checks(c, what, trials)
            if role == "rx":
                two_trial_rule(c, what, trials, res)
            ndr = res[0]["ndr"] if res else {}
            c.true(f"{what}: an NDR", bool(ndr.get("rate")), json.dumps(ndr)[:300])
            if role == "rx" and ndr.get("rate"):
                got = ndr["rate"]["pps"]
                line = f"{what}: NDR {got:.0f} pps within -10%..+5% of the shaped {expect:.0f} pps"
                if SANITIZED:
                    print(f"info {line}: {(got - expect) / expect * 100:+.2f}% (not checked under {SANITIZED})")
                else:
                    c.true(line, -0.10 * expect <= got - expect <= 0.05 * expect, f"{(got - expect) / expect * 100:+.2f}%")
                c.true(f"{what}: lossy trials lost in the qdisc",
                       all(sum(x["attributed"] for x in t["ledger"]["lines"] if x["layer"] == "qdisc") == t["lost"]
                           for t in lossy),
                       str([(t["k"], t["ledger"]["lines"]) for t in lossy])[:600])


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--protocol-client":
        protocol_client(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    require_root()
    for tool in (CEILING, "rsvg-convert", "tc"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            print(f"SKIP: {tool} not found (tools/lib/common.sh installs librsvg2-bin and iproute2)")
            sys.exit(77)
    c = Checks("ceiling")
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        protocol(c)
        throttled_receiver(c, tmp)
        shaped_search(c, tmp)
        if SANITIZED:
            # The search, ledger, protocol and outputs ran instrumented above; part 4 adds the
            # backends' own code, which their own tests run under the sanitizers (test_afpacket,
            # test_afxdp, test_xdp, test_dpdk), and ~2 minutes that CI's budget has not to spare.
            print(f"info part 4 (every backend) left to the main suite under {SANITIZED}")
        else:
            every_backend(c, tmp)
    print(f"(test_ceiling took {time.time() - start:.0f} s)")
    c.done()
