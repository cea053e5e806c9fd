#!/usr/bin/env python3
"""AF_PACKET backend in a netns/veth lab: for every sender/receiver pairing
with afpacket on one side, n sent == n received == the interface counters, 0
lost; frames pktgen builds itself carry valid IP and UDP checksums (tshark
checks them); loss injected with nftables where the receiver can see it is
counted exactly; a receiver whose link goes down waits (no busy loop) and counts
on once it is up; without CAP_NET_RAW the error names the capability."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, finish, link_flap, result_record, sh, start_rx

N = 20000
c = Checks("afpacket")


def run(lab, tmp, tx_backend, rx_backend, tag, extra_tx=()):
    rx_json = os.path.join(tmp, f"rx-{tag}.json")
    rx = start_rx(lab, ["--backend", rx_backend, "--device", lab.if_b, "--json", rx_json, "--quiet"])
    before = lab.counter("b", "rx_packets")
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", tx_backend, "--dst", lab.ip_b,
                         "--count", str(N), "--rate", "60k", "--size", "700", "--quiet"] + list(extra_tx),
                        capture_output=True, text=True, timeout=60)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    c.true(f"{tag}: pktgen used {tx_backend}", f"backend {tx_backend}" in tx.stdout, tx.stdout[:200])
    rc, out, err = finish(rx)
    c.eq(f"{tag}: rx exit code", rc, 0)
    return result_record(rx_json, "rx"), lab.counter("b", "rx_packets") - before


with tempfile.TemporaryDirectory() as tmp, Lab("f", subnet=6) as lab:
    for tx_b, rx_b in (("afpacket", "socket"), ("socket", "afpacket"), ("afpacket", "afpacket"), ("afpacket", "uring")):
        tag = f"{tx_b}->{rx_b}"
        r, delta = run(lab, tmp, tx_b, rx_b, tag)
        c.eq(f"{tag}: received", r["received"], N)
        c.eq(f"{tag}: lost", r["lost"], 0)
        c.eq(f"{tag}: sent (end markers)", r["sent"], N)
        c.eq(f"{tag}: corrupt", r["corrupt"], 0)
        c.eq(f"{tag}: interface rx_packets delta", delta, r["received"] + r["end_markers"])

    # Checksums of frames we build: capture on the receiver and let tshark verify
    # (tshark status: 0 bad, 1 good, 2 unverified).
    pcap = os.path.join(tmp, "afp.pcap")
    cap = subprocess.Popen(["ip", "netns", "exec", lab.ns_b, "tcpdump", "-n", "-s", "0", "-B", "16384", "-i", lab.if_b,
                            "-w", pcap, "udp", "port", "9000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    lab.procs.append(cap)
    cap.stderr.readline()
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "afpacket", "--dst", lab.ip_b,
                         "--count", "500", "--rate", "20k", "--size", "1000", "--quiet"], capture_output=True, text=True,
                        timeout=30)
    time.sleep(1.5)
    cap.send_signal(2)
    cap.communicate(timeout=10)
    fields = sh("tshark", "-r", pcap, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-T", "fields",
                "-e", "ip.checksum.status", "-e", "udp.checksum.status", capture=True, timeout=60)
    rows = [l.split("\t") for l in fields.splitlines() if l.strip()]
    c.eq("tshark: frames captured", len(rows), 503)
    c.eq("tshark: frames with a bad IP or UDP checksum", sum(1 for r in rows if "0" in r), 0)
    c.eq("tshark: frames whose checksums were verified good", sum(1 for r in rows if r == ["1", "1"]), 503)

    # Loss the AF_PACKET receiver can see: dropped on the sender's interface
    # (netdev egress hook, after the socket layer, so the sender is not told:
    # a frame lost on the way). The receiver's netfilter would be too late:
    # AF_PACKET taps frames ahead of it.
    rules = ("table netdev rltest {\n chain eg { type filter hook egress device %s priority 0; policy accept;\n"
             "  udp dport 9000 @th,104,8 1 numgen inc mod 9 0 counter drop\n }\n}\n" % lab.if_a)
    path = os.path.join(tmp, "eg.nft")
    open(path, "w").write(rules)
    sh("nft", "-f", path, ns=lab.ns_a)
    r, delta = run(lab, tmp, "socket", "afpacket", "socket->afpacket, every 9th dropped")
    ruleset = json.loads(sh("nft", "-j", "list", "table", "netdev", "rltest", ns=lab.ns_a, capture=True))
    exprs = [e["rule"]["expr"] for e in ruleset["nftables"] if "rule" in e][0]
    dropped = [x["counter"]["packets"] for x in exprs if "counter" in x][0]
    c.true("nft dropped every 9th", dropped in (N // 9, N // 9 + 1), str(dropped))
    c.eq("afpacket rx lost == nft drop counter", r["lost"], dropped)
    c.eq("afpacket rx received", r["received"], N - dropped)
    c.eq("interface rx_packets delta == received + end markers", delta, r["received"] + r["end_markers"])
    sh("nft", "delete", "table", "netdev", "rltest", ns=lab.ns_a)

    # The receiver's link goes down and comes back mid-run: while it is down rx sleeps (the socket's
    # ENETDOWN is read, not left pending to make every poll return at once), and afterwards it counts on.
    link_flap(lab, c, tmp, "afpacket", "afpacket")

    # Without CAP_NET_RAW: the capability is named, and the socket fallback.
    nopriv = subprocess.run(["ip", "netns", "exec", lab.ns_a, "setpriv", "--reuid=65534", "--regid=65534",
                             "--clear-groups", "--inh-caps=-all", PKTGEN, "--backend", "afpacket", "--dst", lab.ip_b,
                             "--count", "10"], capture_output=True, text=True, timeout=30)
    c.eq("unprivileged --backend afpacket: exit code", nopriv.returncode, 1)
    c.true("unprivileged: names CAP_NET_RAW and the fallback",
           "CAP_NET_RAW" in nopriv.stderr and "--backend socket" in nopriv.stderr, nopriv.stderr)
    auto = subprocess.run(["ip", "netns", "exec", lab.ns_a, "setpriv", "--reuid=65534", "--regid=65534",
                           "--clear-groups", "--inh-caps=-all", PKTGEN, "--dst", lab.ip_b, "--count", "10", "--quiet"],
                          capture_output=True, text=True, timeout=30)
    c.eq("unprivileged auto: exit code", auto.returncode, 0)
    c.true("unprivileged auto: says why afpacket was skipped", "afpacket skipped: AF_PACKET needs CAP_NET_RAW" in auto.stdout,
           auto.stdout[:300])
c.done()
