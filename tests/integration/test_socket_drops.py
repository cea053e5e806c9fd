#!/usr/bin/env python3
"""A receiver that cannot keep up: rx's lost equals its socket drops
(sk_drops via SO_MEMINFO), and both equal the kernel's own UDP RcvbufErrors
delta in the receiver's namespace (/proc/net/snmp), an independent observer.

A receiver that is slow but has room for everything: its worker sleeps 150 ms
after each batch (--test-slow-us), and --idle is 100 ms. Idle means nothing
arrived for that long as the worker saw it, so rx reads every queued packet
(received 400, lost 0) and ends by the end markers; judged by the clock alone,
it would end at the first sleep and leave the queue unread, counted nowhere."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, finish, result_record, sh, start_rx

c = Checks("socket_drops")


def rcvbuf_errors(ns):
    lines = [l.split() for l in sh("cat", "/proc/net/snmp", ns=ns, capture=True).splitlines() if l.startswith("Udp:")]
    head, vals = lines[0], lines[1]
    return int(vals[head.index("RcvbufErrors")])


with tempfile.TemporaryDirectory() as tmp, Lab("k", subnet=15) as lab:
    for backend in ("socket", "uring"):
        rx_json = os.path.join(tmp, f"rx-{backend}.json")
        # A tiny buffer and big datagrams: the queue overflows within the first burst.
        rx = start_rx(lab, ["--backend", backend, "--rcvbuf", "16k", "--json", rx_json, "--quiet"])
        before = rcvbuf_errors(lab.ns_b)
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--dst", lab.ip_b, "--count", "50000",
                             "--burst", "1000", "--size", "1400", "--quiet"], capture_output=True, text=True, timeout=60)
        c.eq(f"{backend}: pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        after = rcvbuf_errors(lab.ns_b)
        r = result_record(rx_json, "rx")
        c.true(f"{backend}: the receiver dropped some", r["socket_drops"] > 0, str(r["socket_drops"]))
        if r["lost_basis"] == "end_markers":
            # sk_drops also counts end markers that found the queue full (3 were sent).
            c.eq(f"{backend}: lost == socket drops - end markers dropped", r["lost"],
                 r["socket_drops"] - (3 - r["end_markers"]))
            c.eq(f"{backend}: received + lost == sent", r["received"] + r["lost"], 50000)
        else:  # all three end markers dropped too: only the gap count is known
            c.true(f"{backend}: lost <= socket drops", r["lost"] <= r["socket_drops"])
        c.eq(f"{backend}: socket drops == UDP RcvbufErrors delta", r["socket_drops"], after - before)

    for backend in ("socket", "afpacket"):
        rx_json = os.path.join(tmp, f"rx-slow-{backend}.json")
        dev = ["--device", lab.if_b] if backend == "afpacket" else []
        rx = start_rx(lab, ["--backend", backend, *dev, "--batch", "64", "--test-slow-us", "150000", "--idle", "100ms",
                            "--json", rx_json, "--quiet"])
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "afpacket", "--dst-mac",
                             lab.mac(lab.ns_b, lab.if_b), "--dst", lab.ip_b, "--count", "400", "--burst", "400",
                             "--size", "200", "--quiet"], capture_output=True, text=True, timeout=60)
        c.eq(f"slow {backend}: pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        c.eq(f"slow {backend}: rx exit code", rc, 0)
        r = result_record(rx_json, "rx")
        c.eq(f"slow {backend}: every queued packet read, ended by the end markers",
             (r["received"], r["lost"], r["socket_drops"], r["ended_by"]), (400, 0, 0, "end markers"))
c.done()
