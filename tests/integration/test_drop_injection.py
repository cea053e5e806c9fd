#!/usr/bin/env python3
"""Loss injected with an exact count: nftables drops every 7th data packet
(numgen) in the receiver's namespace; rx's lost must equal the rule's counter,
and the interface's rx_packets must equal received + lost + end markers."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, finish, result_record, sh, start_rx

N = 30000
c = Checks("drop_injection")


def nft_dropped(lab):
    ruleset = json.loads(sh("nft", "-j", "list", "table", "inet", "rltest", ns=lab.ns_b, capture=True))
    exprs = [e["rule"]["expr"] for e in ruleset["nftables"] if "rule" in e][0]
    return [x["counter"]["packets"] for x in exprs if "counter" in x][0]


with tempfile.TemporaryDirectory() as tmp, Lab("d", subnet=1) as lab:
    # Payload byte 5 is the kind (1 = data): match it so end markers always pass.
    # th = UDP header; payload starts 64 bits in; kind is at bit 64 + 5*8 = 104.
    rules = (
        "table inet rltest {\n"
        " chain pre { type filter hook prerouting priority -300; policy accept;\n"
        "  udp dport 9000 @th,104,8 1 numgen inc mod 7 0 counter drop\n"
        " }\n"
        "}\n"
    )
    path = os.path.join(tmp, "rules.nft")
    open(path, "w").write(rules)
    sh("nft", "-f", path, ns=lab.ns_b)
    for backend in ("socket", "uring"):
        dropped_before = nft_dropped(lab)
        rx_json = os.path.join(tmp, f"rx-{backend}.json")
        rx = start_rx(lab, ["--backend", backend, "--json", rx_json, "--quiet"])
        before = lab.counter("b", "rx_packets")
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", backend, "--dst", lab.ip_b,
                             "--count", str(N), "--rate", "60k", "--size", "512", "--quiet"],
                            capture_output=True, text=True, timeout=60)
        c.eq(f"{backend}: pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        after = lab.counter("b", "rx_packets")
        r = result_record(rx_json, "rx")
        dropped = nft_dropped(lab) - dropped_before
        # numgen's phase carries over between runs, so the count is N/7 rounded either way.
        c.true(f"{backend}: nft dropped every 7th of {N}", dropped in (N // 7, N // 7 + 1), str(dropped))
        c.eq(f"{backend}: rx lost == nft drop counter", r["lost"], dropped)
        c.eq(f"{backend}: rx received", r["received"], N - dropped)
        c.eq(f"{backend}: rx sent (end markers)", r["sent"], N)
        c.eq(f"{backend}: rx_packets delta == received + lost + end markers", after - before,
             r["received"] + r["lost"] + r["end_markers"])
        c.eq(f"{backend}: socket drops", r["socket_drops"], 0)
c.done()
