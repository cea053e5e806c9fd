#!/usr/bin/env python3
"""Port sets (--device a,b): one worker set per port, each port's counts apart, both ways at once.

Two namespaces A and B joined by two veth pairs (ports 1 and 2, each its own /30). At the
same time:
- A -> B: pktgen --device a1,a2 --dst b1,b2 (socket backend, SO_BINDTODEVICE per port) into
  rx --backend afpacket --device b1,b2 on UDP port 9000. nftables in A drops every 10th data
  packet leaving a2 (numgen, data packets only): port 1 must lose nothing, port 2 exactly the
  rule's counter, and pktgen's port 2 says the OS refused exactly those (sendmmsg's EPERM:
  exit 3, a CI job must not read that as clean).
- B -> A: pktgen --backend afpacket --device b1,b2 --dst a1,a2 into rx --backend afpacket
  --device a1,a2 on UDP port 9001 (two-port bidirectional, as TRex and Pktgen-DPDK run).
Then DPDK ports (one EAL shared by the set): pktgen --backend dpdk --device net_af_packet0,net_af_packet1
on vdevs over a1, a2 into rx --backend dpdk on vdevs over b1, b2: each port's counts, DPDK's own
opackets/ipackets, and the veths' counters.
Each port's numbers are checked against its own interface counters (/sys/class/net/*/statistics):
rx's received + end markers = the receiving veth's rx_packets delta, pktgen's sent + markers -
dropped = the sending veth's tx_packets delta. Every JSON record names its port's device; the
"ports" record sums the ports. Usage errors of port sets exit 2 with one line.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, RX, json_records, sh

N = 3000
c = Checks("port_set")


def usage_errors():
    for what, argv, words in (
            ("rx: a port set without --backend", [RX, "--device", "lo,lo2"], ("--backend afpacket",)),
            ("rx: a socket receiver", [RX, "--device", "a,b", "--backend", "socket"], ("raw receiver", "one rx per port")),
            ("rx: a device twice", [RX, "--device", "a,a", "--backend", "afpacket"], ("twice",)),
            ("rx: --metrics", [RX, "--device", "a,b", "--backend", "afpacket", "--metrics", "0"], ("--metrics",)),
            ("pktgen: no --dst", [PKTGEN, "--device", "a,b"], ("--dst x,y",)),
            ("pktgen: 3 destinations for 2 ports", [PKTGEN, "--device", "a,b", "--dst", "10.0.0.1,10.0.0.2,10.0.0.3"],
             ("one destination per",)),
            ("pktgen: a list without a port set", [PKTGEN, "--dst", "10.0.0.1,10.0.0.2"], ("--device a,b",)),
            ("pktgen: the pcap backend", [PKTGEN, "--device", "a,b", "--dst", "10.0.0.1", "--backend", "pcap",
                                          "--pcap-out", "/dev/null"], ("interfaces or DPDK ports",)),
            ("pktgen: an empty name", [PKTGEN, "--device", "a,", "--dst", "10.0.0.1"], ("empty name",))):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        lines = r.stderr.strip().splitlines()
        c.true(f"refused: {what}: exit 2, one line naming {', '.join(words)}",
               r.returncode == 2 and len(lines) == 1 and all(w in r.stderr for w in words),
               f"rc {r.returncode}: {r.stderr.strip()}")


def counter(ns, ifn, name):
    return int(sh("cat", f"/sys/class/net/{ifn}/statistics/{name}", ns=ns, capture=True))


def nft_dropped(ns):
    ruleset = json.loads(sh("nft", "-j", "list", "table", "inet", "rlports", ns=ns, capture=True))
    exprs = [e["rule"]["expr"] for e in ruleset["nftables"] if "rule" in e][0]
    return [x["counter"]["packets"] for x in exprs if "counter" in x][0]


def listening_lines(p, ports):
    """Reads rx's stdout until each port said it listens (or rx ended): how many did."""
    seen = 0
    while seen < ports:
        line = p.stdout.readline()
        if not line:
            break
        seen += line.startswith("rx: listening on")
    return seen


def by_device(recs, kind, tool):
    return {r.get("device"): r for r in recs if r.get("type") == kind and r.get("tool") == tool}


def dpdk_ports(lab, tmp, ports):
    """Both ends on DPDK: one EAL per program, two net_af_packet ports each."""
    probe = subprocess.run([PKTGEN, "--backend", "dpdk", "--count", "1", "--", "--no-pci"], capture_output=True,
                           text=True, timeout=60)
    if "built without DPDK" in probe.stderr:
        print("SKIP (DPDK phase): built without DPDK")
        return
    def eal(side):
        return " ".join(["--no-pci"] + [f"--vdev=net_af_packet{i},iface={p[side]}" for i, p in enumerate(ports)])
    names = "net_af_packet0,net_af_packet1"
    before = {(ns, p[k], key): counter(ns, p[k], key) for p in ports
              for ns, k, key in ((lab.ns_a, 0, "tx_packets"), (lab.ns_b, 1, "rx_packets"))}
    jr, jt = os.path.join(tmp, "dpdk-rx.json"), os.path.join(tmp, "dpdk-tx.json")
    rx = lab.spawn(lab.ns_b, [RX, "--backend", "dpdk", "--device", names, "--dpdk-args", eal(1), "--json", jr,
                              "--idle", "3s", "--quiet"])
    c.eq("dpdk rx: both ports listening", listening_lines(rx, 2), 2)
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "dpdk", "--device", names,
                         "--dpdk-args", eal(0), "--dst", ",".join(p[2] for p in ports), "--count", str(N), "--size",
                         "1000", "--rate", "20k", "--json", jt, "--quiet"], capture_output=True, text=True, timeout=60)
    c.eq("dpdk pktgen, two ports in one EAL: exit code", tx.returncode, 0)
    out, err = rx.communicate(timeout=60)
    c.eq("dpdk rx, two ports in one EAL: exit code", rx.returncode, 0)
    if tx.returncode or rx.returncode:
        print(tx.stdout[-800:], tx.stderr[-800:], out[-800:], err[-800:])
    tx_res = by_device(json_records(jt), "result", "pktgen") if os.path.exists(jt) else {}
    rx_res = by_device(json_records(jr), "result", "rx") if os.path.exists(jr) else {}
    for i, (dev_tx, dev_rx, _) in enumerate(ports):
        name = f"net_af_packet{i}"
        t, r = tx_res.get(name, {}), rx_res.get(name, {})
        sent_wire = counter(lab.ns_a, dev_tx, "tx_packets") - before[(lab.ns_a, dev_tx, "tx_packets")]
        got_wire = counter(lab.ns_b, dev_rx, "rx_packets") - before[(lab.ns_b, dev_rx, "rx_packets")]
        c.eq(f"dpdk port {i + 1} ({name} on {dev_tx} -> {dev_rx}): sent; received, lost",
             (t.get("sent"), r.get("received"), r.get("lost")), (N, N, 0))
        c.eq(f"dpdk port {i + 1}: DPDK opackets = {dev_tx} tx_packets = sent + end markers",
             (t.get("dpdk", {}).get("opackets"), sent_wire), (N + 3, N + 3))
        c.eq(f"dpdk port {i + 1}: DPDK ipackets = {dev_rx} rx_packets = received + end markers",
             (r.get("dpdk", {}).get("ipackets"), got_wire), (N + 3, N + 3))


with tempfile.TemporaryDirectory() as tmp, Lab("p", subnet=50) as lab:
    usage_errors()
    # Port 2: a second veth pair between the same namespaces.
    a2, b2 = lab.if_a[:-1] + "2a", lab.if_b[:-1] + "2b"
    ip_a2, ip_b2 = "198.18.51.1", "198.18.51.2"
    sh("ip", "link", "add", a2, "netns", lab.ns_a, "type", "veth", "peer", "name", b2, "netns", lab.ns_b)
    for ns, ifn, ip in ((lab.ns_a, a2, ip_a2), (lab.ns_b, b2, ip_b2)):
        sh("ip", "addr", "add", f"{ip}/30", "dev", ifn, ns=ns)
        sh("ip", "link", "set", ifn, "up", ns=ns)
    sh("ip", "neigh", "replace", ip_b2, "lladdr", lab.mac(lab.ns_b, b2), "dev", a2, "nud", "permanent", ns=lab.ns_a)
    sh("ip", "neigh", "replace", ip_a2, "lladdr", lab.mac(lab.ns_a, a2), "dev", b2, "nud", "permanent", ns=lab.ns_b)
    ports_ab = [(lab.if_a, lab.if_b, lab.ip_b), (a2, b2, ip_b2)]
    ports_ba = [(lab.if_b, lab.if_a, lab.ip_a), (b2, a2, ip_a2)]
    # Every 10th data packet (payload byte 5, the kind, = 1) leaving a2 towards port 9000; markers pass.
    rules = os.path.join(tmp, "rules.nft")
    with open(rules, "w") as f:
        f.write("table inet rlports {\n chain out { type filter hook output priority 0; policy accept;\n"
                f'  oifname "{a2}" udp dport 9000 @th,104,8 1 numgen inc mod 10 0 counter drop\n }}\n}}\n')
    sh("nft", "-f", rules, ns=lab.ns_a)

    before = {(ns, ifn, k): counter(ns, ifn, k) for ns, ifs in ((lab.ns_a, (lab.if_a, a2)), (lab.ns_b, (lab.if_b, b2)))
              for ifn in ifs for k in ("rx_packets", "tx_packets")}
    j = {k: os.path.join(tmp, f"{k}.json") for k in ("rx_b", "rx_a", "tx_a", "tx_b")}
    rx_b = lab.spawn(lab.ns_b, [RX, "--backend", "afpacket", "--device", f"{lab.if_b},{b2}", "--port", "9000",
                                "--json", j["rx_b"], "--idle", "3s", "--quiet"])
    rx_a = lab.spawn(lab.ns_a, [RX, "--backend", "afpacket", "--device", f"{lab.if_a},{a2}", "--port", "9001",
                                "--json", j["rx_a"], "--idle", "3s", "--quiet"])
    # Both listening (each port's start line), then both senders at once.
    for p in (rx_b, rx_a):
        c.eq("rx: a start line per port", listening_lines(p, 2), 2)
    common = ["--count", str(N), "--size", "1000", "--burst", "10", "--rate", "20k", "--quiet"]
    tx_a = lab.spawn(lab.ns_a, [PKTGEN, "--backend", "socket", "--device", f"{lab.if_a},{a2}",
                                "--dst", f"{lab.ip_b},{ip_b2}", "--port", "9000", "--json", j["tx_a"]] + common)
    tx_b = lab.spawn(lab.ns_b, [PKTGEN, "--backend", "afpacket", "--device", f"{lab.if_b},{b2}",
                                "--dst", f"{lab.ip_a},{ip_a2}", "--port", "9001", "--json", j["tx_b"]] + common)
    outs = {}
    for name, p in (("tx_a", tx_a), ("tx_b", tx_b), ("rx_b", rx_b), ("rx_a", rx_a)):
        out, err = p.communicate(timeout=60)
        outs[name] = out
        c.eq(f"{name}: exit code" + (" (3: the OS refused port 2's dropped packets)" if name == "tx_a" else ""),
             p.returncode, 3 if name == "tx_a" else 0)
        if p.returncode not in (0, 3):
            print(out[-1500:], err[-1500:])
    print(outs["rx_b"][-1200:])
    dropped = nft_dropped(lab.ns_a)
    c.eq("nftables dropped every 10th data packet leaving port 2 (A -> B)", dropped, N // 10)
    delta = {k: counter(*k) - v for k, v in before.items()}

    for direction, tx_key, rx_key, ns_tx, ns_rx, ports, drops in (
            ("A -> B", "tx_a", "rx_b", lab.ns_a, lab.ns_b, ports_ab, {1: dropped}),
            ("B -> A", "tx_b", "rx_a", lab.ns_b, lab.ns_a, ports_ba, {})):
        tx_recs, rx_recs = json_records(j[tx_key]), json_records(j[rx_key])
        tx_res, rx_res = by_device(tx_recs, "result", "pktgen"), by_device(rx_recs, "result", "rx")
        c.eq(f"{direction}: pktgen: one result per port, named by device", sorted(tx_res), sorted(p[0] for p in ports))
        c.eq(f"{direction}: rx: one result per port, named by device", sorted(rx_res), sorted(p[1] for p in ports))
        c.true(f"{direction}: every record names its port", all("device" in r for r in tx_recs + rx_recs
                                                                  if r.get("type") in ("start", "result", "progress")))
        for i, (dev_tx, dev_rx, dst) in enumerate(ports):
            t, r = tx_res.get(dev_tx, {}), rx_res.get(dev_rx, {})
            lost = drops.get(i, 0)
            c.eq(f"{direction} port {i + 1} ({dev_tx} -> {dev_rx}): pktgen sent, refused by the OS",
                 (t.get("sent"), t.get("failed")), (N, lost))
            c.eq(f"{direction} port {i + 1}: rx received, lost (the rule's count on port 2 A -> B, else 0)",
                 (r.get("received"), r.get("lost")), (N - lost, lost))
            c.eq(f"{direction} port {i + 1}: rx duplicated, reordered, corrupt, foreign",
                 [r.get(k) for k in ("duplicated", "reordered", "corrupt", "foreign")], [0, 0, 0, 0])
            c.eq(f"{direction} port {i + 1}: {dev_rx} rx_packets = rx's received + end markers",
                 delta[(ns_rx, dev_rx, "rx_packets")], (r.get("received") or 0) + (r.get("end_markers") or 0))
            c.eq(f"{direction} port {i + 1}: {dev_tx} tx_packets = pktgen's sent + end markers - dropped",
                 delta[(ns_tx, dev_tx, "tx_packets")], (t.get("sent") or 0) + (t.get("end_markers") or 0) - lost)
        tot_tx = [x for x in tx_recs if x.get("type") == "ports"]
        tot_rx = [x for x in rx_recs if x.get("type") == "ports"]
        c.true(f"{direction}: pktgen's ports record sums its ports",
               len(tot_tx) == 1 and tot_tx[0]["sent"] == sum(x["sent"] for x in tx_res.values()), str(tot_tx))
        c.true(f"{direction}: rx's ports record sums its ports",
               len(tot_rx) == 1 and tot_rx[0]["received"] == sum(x["received"] for x in rx_res.values()) and
               tot_rx[0]["lost"] == sum(x["lost"] for x in rx_res.values()), str(tot_rx))
    c.true("rx's table: one per port, then the sum", outs["rx_b"].count("\nport ") == 2 and "all 2 ports:" in outs["rx_b"],
           outs["rx_b"][-400:])
    dpdk_ports(lab, tmp, [(lab.if_a, lab.if_b, lab.ip_b), (a2, b2, ip_b2)])
c.done()
