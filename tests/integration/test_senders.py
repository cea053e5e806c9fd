#!/usr/bin/env python3
"""Several senders into one rx, and the verdicts a CI job reads.

- 2 and 4 pktgens (each run its own sender id; from two namespaces, from
  one, and from rx's own namespace over loopback) into one rx with 1 and 2
  threads, on socket, uring, afpacket and xdp (in-kernel counting, its
  streams keyed by sender too): every sender's received == its
  sent, 0 duplicated, 0 lost, and the receiving interfaces' rx_packets
  (the independent observer) == all packets + end markers sent.
- A sender restarted with the same source port is a second sender.
- Exit codes: 3 when --max-loss is exceeded (nftables drops an exact count,
  compared with rx's lost), 0 within it; 3 when --count or --expect-senders
  was given and nothing / too few arrived; 3 from pktgen when the OS refused
  packets (an nftables drop on output, compared with pktgen's failed); 2 for
  a bad --max-loss."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, RX, Checks, Lab, finish, result_record, sh, start_rx

c = Checks("senders")


def run_senders(lab, tmp, tag, backend, threads, senders, device=None):
    """senders: list of (ns, dst, pktgen --threads). Returns rx's result, pktgen results, rx rc."""
    rx_json = os.path.join(tmp, f"rx-{tag}.json")
    args = ["--backend", backend, "--threads", str(threads), "--json", rx_json, "--quiet",
            "--expect-senders", str(len(senders)), "--max-loss", "0", "--idle", "5"]
    if device:
        args += ["--device", device]
    rx = start_rx(lab, args)
    procs = []
    for i, (ns, dst, tx_threads) in enumerate(senders):
        tx_json = os.path.join(tmp, f"tx-{tag}-{i}.json")
        procs.append((lab.spawn(ns, [PKTGEN, "--dst", dst, "--count", str(20000 + 1000 * i), "--rate", "25k",
                                     "--threads", str(tx_threads), "--size", "300", "--quiet", "--json", tx_json]),
                      tx_json))
    txs = []
    for p, path in procs:
        out, err = p.communicate(timeout=60)
        c.eq(f"{tag}: pktgen exit code", p.returncode, 0)
        txs.append(result_record(path, "pktgen"))
    rc, out, err = finish(rx, timeout=60)
    return result_record(rx_json, "rx"), txs, rc, out


def check_exact(tag, r, txs, rc, arrived):
    c.eq(f"{tag}: rx exit code (--max-loss 0 met)", rc, 0)
    c.eq(f"{tag}: rx ended by", r["ended_by"], "end markers")
    c.eq(f"{tag}: senders heard", len(r["senders"]), len(txs))
    by_id = {(g["sender_id"]): g for g in r["senders"]}
    for t in txs:
        g = by_id.get(t["sender_id"], {})
        c.eq(f"{tag}: sender {t['sender_id']} received == its sent", g.get("received"), t["sent"])
        c.eq(f"{tag}: sender {t['sender_id']} sent (its end markers)", g.get("sent"), t["sent"])
        c.eq(f"{tag}: sender {t['sender_id']} lost", g.get("lost"), 0)
        c.eq(f"{tag}: sender {t['sender_id']} duplicated", g.get("duplicated"), 0)
    c.eq(f"{tag}: run received", r["received"], sum(t["sent"] for t in txs))
    c.eq(f"{tag}: run duplicated", r["duplicated"], 0)
    c.eq(f"{tag}: interface rx_packets == packets + end markers sent", arrived,
         sum(t["sent"] + t["end_markers"] for t in txs))


def rx_packets(ns, ifn):
    return int(sh("cat", f"/sys/class/net/{ifn}/statistics/rx_packets", ns=ns, capture=True))


with tempfile.TemporaryDirectory() as tmp, Lab("s", subnet=13) as lab:
    ns_c, if_c, ip_c, ip_bc = lab.add_sender(1)
    if_bc = [l.split(":")[1].strip().split("@")[0] for l in
             sh("ip", "-o", "link", "show", ns=lab.ns_b, capture=True).splitlines() if lab.if_b not in l and "lo:" not in l][0]
    links = [(lab.ns_b, lab.if_b), (lab.ns_b, if_bc)]
    for backend in ("socket", "uring"):
        for threads, senders in ((1, [(lab.ns_a, lab.ip_b, 1), (ns_c, ip_bc, 1)]),
                                 (2, [(lab.ns_a, lab.ip_b, 1), (lab.ns_a, lab.ip_b, 2), (ns_c, ip_bc, 1), (ns_c, ip_bc, 1)])):
            tag = f"{backend} x{threads}, {len(senders)} senders from 2 namespaces"
            before = sum(rx_packets(*l) for l in links)
            r, txs, rc, out = run_senders(lab, tmp, tag.replace(" ", "_").replace(",", ""), backend, threads, senders)
            check_exact(tag, r, txs, rc, sum(rx_packets(*l) for l in links) - before)
    # AF_PACKET and XDP tap one interface: their senders share it. (xdp's
    # counting is the kernel's, on every CPU: it takes no --threads.)
    for backend, threads, n in (("afpacket", 1, 2), ("afpacket", 2, 4), ("xdp", 1, 2), ("xdp", 1, 4)):
        tag = f"{backend} x{threads}, {n} senders from one namespace"
        before = rx_packets(lab.ns_b, lab.if_b)
        r, txs, rc, out = run_senders(lab, tmp, f"{backend}{threads}-{n}", backend, threads,
                                      [(lab.ns_a, lab.ip_b, 1)] * n, device=lab.if_b)
        check_exact(tag, r, txs, rc, rx_packets(lab.ns_b, lab.if_b) - before)
    # The same host: pktgens in rx's own namespace, over loopback.
    tag = "uring x2, 4 senders on loopback"
    before = rx_packets(lab.ns_b, "lo")
    r, txs, rc, out = run_senders(lab, tmp, "loopback", "uring", 2, [(lab.ns_b, "127.0.0.1", 1)] * 4)
    check_exact(tag, r, txs, rc, rx_packets(lab.ns_b, "lo") - before)

    # A sender restarted on the same source port is a new sender.
    rx_json = os.path.join(tmp, "rx-restart.json")
    rx = start_rx(lab, ["--backend", "uring", "--json", rx_json, "--quiet", "--expect-senders", "2", "--idle", "5"])
    tx_results = []
    for i in range(2):
        tx_json = os.path.join(tmp, f"tx-restart-{i}.json")
        p = lab.spawn(lab.ns_a, [PKTGEN, "--dst", lab.ip_b, "--src-port", "7000", "--count", "20000", "--rate", "40k",
                                 "--size", "300", "--quiet", "--json", tx_json])
        p.communicate(timeout=30)
        tx_results.append(result_record(tx_json, "pktgen"))
    rc, out, err = finish(rx)
    r = result_record(rx_json, "rx")
    c.eq("restart: rx exit code", rc, 0)
    c.eq("restart: two senders on one source port", len(r["senders"]), 2)
    c.eq("restart: rows from port 7000", sorted(s["received"] for s in r["streams"] if s["from"].endswith(":7000")),
         [20000, 20000])
    c.eq("restart: duplicated", r["duplicated"], 0)
    c.eq("restart: lost", r["lost"], 0)
    c.true("restart: two sender ids", tx_results[0]["sender_id"] != tx_results[1]["sender_id"])

    # Verdicts. An exact, known drop: every 50th datagram to port 9000 in B.
    def rx_once(extra, count=20000, pktgen_ns=None):
        rx_json = os.path.join(tmp, "rx-verdict.json")
        rx = start_rx(lab, ["--json", rx_json, "--quiet", "--idle", "1"] + extra)
        if count:
            subprocess.run(["ip", "netns", "exec", pktgen_ns or lab.ns_a, PKTGEN, "--dst", lab.ip_b, "--count",
                            str(count), "--rate", "40k", "--quiet"], timeout=30, capture_output=True)
        rc, out, err = finish(rx)
        return rc, result_record(rx_json, "rx"), out

    def nft_counter(ns):
        text = sh("nft", "list", "table", "inet", "rlverdict", ns=ns, capture=True)
        return int(text.split("packets ")[1].split()[0])

    sh("nft", "add", "table", "inet", "rlverdict", ns=lab.ns_b)
    sh("nft", "add", "chain", "inet", "rlverdict", "in", "{ type filter hook input priority 0 ; }", ns=lab.ns_b)
    sh("nft", "add", "rule", "inet", "rlverdict", "in", "udp", "dport", "9000", "numgen", "inc", "mod", "50", "==", "0",
       "counter", "drop", ns=lab.ns_b)
    rc, r, out = rx_once(["--max-loss", "0"])
    dropped = nft_counter(lab.ns_b)
    c.eq("verdict: --max-loss 0 with drops: exit 3", rc, 3)
    c.true("verdict: nftables dropped some", dropped > 0, str(dropped))
    # The rule drops end markers too: rx's lost is the data packets it dropped.
    c.eq("verdict: rx lost == nftables drops of data packets", r["lost"], dropped - (3 - r["end_markers"]))
    c.true("verdict: the table says FAILED", "verdict: FAILED: loss" in out, out[-300:])
    c.eq("verdict: JSON verdict", r["verdict"]["passed"], False)
    rc, r, out = rx_once(["--max-loss", "5"])
    c.eq("verdict: --max-loss 5 with 2% drops: exit 0", rc, 0)
    c.true("verdict: passed line", "verdict: passed" in out, out[-300:])
    sh("nft", "delete", "table", "inet", "rlverdict", ns=lab.ns_b)
    rc, r, out = rx_once(["--count", "1000", "--duration", "1"], count=0)
    c.eq("verdict: --count and nothing arrived: exit 3", rc, 3)
    rc, r, out = rx_once(["--expect-senders", "2"])
    c.eq("verdict: --expect-senders 2, one sender: exit 3", rc, 3)
    c.true("verdict: names the senders heard", "1 sender(s) heard" in out, out[-300:])
    rc, r, out = rx_once([])
    c.eq("verdict: no verdict asked, clean run: exit 0", rc, 0)
    for bad in ("150", "abc", "-1"):
        p = subprocess.run(["ip", "netns", "exec", lab.ns_b, RX, "--max-loss", bad], capture_output=True, text=True,
                           timeout=10)
        c.eq(f"verdict: --max-loss {bad}: exit 2", p.returncode, 2)
        c.eq(f"verdict: --max-loss {bad}: one line", len(p.stderr.strip().splitlines()), 1)

    # pktgen: packets the OS refused (nftables drop on output -> EPERM) make it exit 3.
    sh("nft", "add", "table", "inet", "rlverdict", ns=lab.ns_a)
    sh("nft", "add", "chain", "inet", "rlverdict", "out", "{ type filter hook output priority 0 ; }", ns=lab.ns_a)
    sh("nft", "add", "rule", "inet", "rlverdict", "out", "udp", "dport", "9000", "numgen", "inc", "mod", "100", "==",
       "0", "counter", "drop", ns=lab.ns_a)
    tx_json = os.path.join(tmp, "tx-refused.json")
    p = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "socket", "--dst", lab.ip_b, "--count",
                        "10000", "--rate", "40k", "--quiet", "--json", tx_json], capture_output=True, text=True,
                       timeout=30)
    t = result_record(tx_json, "pktgen")
    c.eq("pktgen: OS refused packets: exit 3", p.returncode, 3)
    c.eq("pktgen: failed == nftables drops on output", t["failed"], nft_counter(lab.ns_a))
    sh("nft", "delete", "table", "inet", "rlverdict", ns=lab.ns_a)
c.done()
