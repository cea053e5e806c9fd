#!/usr/bin/env python3
"""AF_XDP backend in a netns/veth lab: every pairing with afxdp on one side is
exact against the interface counters; loss injected before the wire (netdev
egress drop the sender cannot see) is counted exactly; the host keeps
working while rx steers our port (ping passes); no XDP program is left on
the interface after rx exits, after SIGINT, and after SIGKILL (bpf_link); a
link that goes down mid-run costs rx no CPU and it counts on when it is up."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import RX, Checks, Lab, PKTGEN, finish, link_flap, result_record, sh, start_rx

N = 20000
c = Checks("afxdp")


def xdp_on(lab):
    return " xdp" in sh("ip", "link", "show", "dev", lab.if_b, ns=lab.ns_b, capture=True)


def run(lab, tmp, tx_backend, rx_backend, tag):
    rx_json = os.path.join(tmp, f"rx-{tag}.json")
    rx = start_rx(lab, ["--backend", rx_backend, "--device", lab.if_b, "--json", rx_json, "--quiet"])
    before = lab.counter("b", "rx_packets")
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", tx_backend, "--dst", lab.ip_b,
                         "--count", str(N), "--rate", "60k", "--size", "700", "--quiet"], capture_output=True, text=True,
                        timeout=60)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    rc, out, err = finish(rx)
    c.eq(f"{tag}: rx exit code", rc, 0)
    c.true(f"{tag}: no XDP program left after rx exited", not xdp_on(lab))
    return result_record(rx_json, "rx"), lab.counter("b", "rx_packets") - before


with tempfile.TemporaryDirectory() as tmp, Lab("z", subnet=12) as lab:
    for tx_b, rx_b in (("afxdp", "socket"), ("socket", "afxdp"), ("afxdp", "afxdp"), ("afpacket", "afxdp")):
        tag = f"{tx_b}->{rx_b}"
        r, delta = run(lab, tmp, tx_b, rx_b, tag)
        c.eq(f"{tag}: received", r["received"], N)
        c.eq(f"{tag}: lost", r["lost"], 0)
        c.eq(f"{tag}: sent (end markers)", r["sent"], N)
        c.eq(f"{tag}: corrupt", r["corrupt"], 0)
        c.eq(f"{tag}: interface rx_packets delta", delta, r["received"] + r["end_markers"])

    # Loss before the wire: netdev egress drop on the sender's veth, unseen by the sender.
    rules = ("table netdev rltest {\n chain eg { type filter hook egress device %s priority 0; policy accept;\n"
             "  udp dport 9000 @th,104,8 1 numgen inc mod 11 0 counter drop\n }\n}\n" % lab.if_a)
    path = os.path.join(tmp, "eg.nft")
    open(path, "w").write(rules)
    sh("nft", "-f", path, ns=lab.ns_a)
    r, delta = run(lab, tmp, "socket", "afxdp", "socket->afxdp, every 11th dropped")
    ruleset = json.loads(sh("nft", "-j", "list", "table", "netdev", "rltest", ns=lab.ns_a, capture=True))
    exprs = [e["rule"]["expr"] for e in ruleset["nftables"] if "rule" in e][0]
    dropped = [x["counter"]["packets"] for x in exprs if "counter" in x][0]
    c.true("nft dropped every 11th", dropped in (N // 11, N // 11 + 1), str(dropped))
    c.eq("afxdp rx lost == nft drop counter", r["lost"], dropped)
    c.eq("afxdp rx received", r["received"], N - dropped)
    sh("nft", "delete", "table", "netdev", "rltest", ns=lab.ns_a)

    # The host keeps working: other traffic passes the steering program.
    rx = start_rx(lab, ["--backend", "afxdp", "--device", lab.if_b, "--idle", "0", "--quiet"])
    c.true("XDP program attached while rx runs", xdp_on(lab))
    ping = subprocess.run(["ip", "netns", "exec", lab.ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "1", lab.ip_b],
                          capture_output=True, text=True, timeout=20)
    c.eq("ping through the steering program", ping.returncode, 0)
    rx.send_signal(signal.SIGINT)
    rc, out, err = finish(rx)
    c.eq("rx exit code after SIGINT", rc, 0)
    c.true("no XDP program after SIGINT", not xdp_on(lab))

    # SIGKILL: no cleanup code runs, the kernel drops the bpf_link with the process.
    rx = start_rx(lab, ["--backend", "afxdp", "--device", lab.if_b, "--idle", "0", "--quiet"])
    c.true("XDP program attached before SIGKILL", xdp_on(lab))
    rx.kill()
    rx.wait(timeout=10)
    for _ in range(50):
        if not xdp_on(lab):
            break
        time.sleep(0.1)
    c.true("no XDP program after SIGKILL", not xdp_on(lab))
    clean = subprocess.run(["ip", "netns", "exec", lab.ns_b, RX, "--xdp-cleanup", lab.if_b], capture_output=True,
                           text=True, timeout=10)
    c.eq("rx --xdp-cleanup on a clean interface: exit code", clean.returncode, 0)
    c.true("rx --xdp-cleanup says there is none", "no XDP program" in clean.stdout, clean.stdout)

    # The link goes down mid-run: rx waits (no busy poll of a dead ring) and counts on once it is up.
    link_flap(lab, c, tmp, "afxdp", "afxdp")
c.done()
