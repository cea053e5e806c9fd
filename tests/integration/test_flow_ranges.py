#!/usr/bin/env python3
"""Address ranges as flows: pktgen --dst A-B (every backend) and --src-ip A-B
(raw backends), crossed with --src-port ranges, in a netns/veth lab.

Side b owns four extra addresses (DSTS); side a routes them through b, and
b routes the source range (SRCS) back through a. Each shape sends an odd
--count, so flows cannot all be equal; checks:
- pktgen's per-stream sent, rx's per-stream received and tshark's count
  of data frames per (source address, destination address, source port) on
  b's veth are the same numbers, stream by stream, in the documented order
  (source port varies fastest, then source address, then destination);
- per-flow counts differ by at most one packet; rx lost 0;
- b's veth rx_packets delta == data packets + end markers;
- tshark finds both checksums right in every data frame.
Shapes: socket and uring senders with a --dst range and two source ports
(8 flows; flows of one port share a socket); afpacket, afxdp and xdp with
source x destination ranges (16 flows), into rx socket and rx afpacket;
destination port ranges (--port 9000-9003 x two source ports, 8 flows) from
afpacket and socket senders into rx afpacket, xdp and afxdp taking the same
range, tshark on side a where XDP takes the frames on b before any tap (rx
socket refuses a range: exit 2).
Destination MAC ranges (--dst-mac A-B x two source ports, 8 flows) from the
afpacket and xdp senders into rx afpacket: per (MAC, source port), tshark
== pktgen == rx.
Bad input: a reversed range, more than 4096 flows, a --src-ip or --dst-mac
range on a socket backend, fewer flows than --threads, a range with
--replay: one line, exit 2, nothing sent.

Under the sanitizer stage (RATELINE_SANITIZED) the socket and the afpacket
and xdp senders run (each sender's flow path once, instrumented); the uring
and afxdp shapes and the rx afpacket receiver are the main suite's.
"""
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(__file__))
from harness import (PKTGEN, RX, Checks, Lab, capture, finish, json_records, refused_usage, result_record, sh, start_rx,
                    tshark_rows)

SUBNET = 73
DSTS = [f"198.18.{SUBNET}.{h}" for h in range(8, 12)]
SRCS = [f"198.18.{SUBNET}.{h}" for h in range(16, 20)]
SANITIZED = os.environ.get("RATELINE_SANITIZED", "")  # set by tools/check.d/10-sanitize
SIZE = 40  # UDP length 48: end markers are longer, so tshark tells the data frames apart
c = Checks("flow_ranges")


def stop(cap):
    time.sleep(1.0)  # the capture ring hands over a part-filled block only after its timeout
    cap.send_signal(2)
    _, err = cap.communicate(timeout=10)
    c.true("tcpdump: no frame dropped by the kernel", "\n0 packets dropped by kernel" in "\n" + err, err.strip())


def shape(lab, tmp, tag, tx_args, rx_backend, ports, srcs, dsts, count, dst_ports=(9000,)):
    """One run; flows = ports x srcs x dst_ports x dsts (srcs None: the sender's own address)."""
    name = "".join(ch if ch.isalnum() else "_" for ch in tag)
    rx_json, tx_json, pcap = (os.path.join(tmp, f"{k}-{name}") for k in ("rx.json", "tx.json", "cap.pcap"))
    dev = ["--device", lab.if_b] if rx_backend != "socket" else []
    port_range = ["--port", f"{dst_ports[0]}-{dst_ports[-1]}"] if len(dst_ports) > 1 else []
    rx = start_rx(lab, ["--backend", rx_backend, *dev, *port_range, "--json", rx_json, "--quiet"], ready_timeout=30)
    # An XDP receiver takes frames before any tap on b: there, what a sends is the observer.
    cap = capture(lab, pcap, ("udp", "portrange", f"{dst_ports[0]}-{dst_ports[-1]}"),
                  side="a" if rx_backend in ("xdp", "afxdp") else "b")
    before = lab.counter("b", "rx_packets")
    src_range = ["--src-ip", f"{srcs[0]}-{srcs[-1]}"] if srcs else []
    dst = f"{dsts[0]}-{dsts[-1]}" if len(dsts) > 1 else dsts[0]
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, *tx_args, "--dst", dst,
                         *src_range, *port_range, "--src-port", f"{ports[0]}-{ports[-1]}", "--count", str(count), "--size",
                         str(SIZE), "--rate", "20k", "--burst", "7", "--json", tx_json, "--quiet"],
                        capture_output=True, text=True, timeout=60)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    if tx.returncode:
        rx.send_signal(2)  # no end markers will come
    rc, out, err = finish(rx, timeout=60)
    c.eq(f"{tag}: rx exit code", rc, 0 if not tx.returncode else rc)
    stop(cap)
    if tx.returncode or rc:
        print(tx.stderr[-800:] + err[-800:])
        return
    delta = lab.counter("b", "rx_packets") - before
    t, r = result_record(tx_json, "pktgen"), result_record(rx_json, "rx")
    srcs = srcs or [lab.ip_a]
    flows = [(s, d, p, q) for d in dsts for q in dst_ports for s in srcs for p in ports]  # stream id order
    sent = {s["stream"]: s["sent"] for s in t["streams"]}
    got = Counter()
    for s in r["streams"]:
        got[s["stream"]] += s["received"]
    rows = tshark_rows(pcap, ["ip.src", "ip.dst", "udp.srcport", "udp.dstport", "ip.checksum.status",
                              "udp.checksum.status"], ("-Y", f"udp.length == {SIZE + 8}"))
    wire = Counter((a, b, int(p), int(q)) for a, b, p, q, _, _ in rows)
    c.eq(f"{tag}: tshark: IPv4 and UDP checksums good on every data frame", sum(r[4:] == ["1", "1"] for r in rows), count)
    on_wire = [wire[f] for f in flows]
    print(f"     {tag}: pktgen {[sent.get(i, 0) for i in range(len(flows))]}, rx {[got[i] for i in range(len(flows))]}, "
          f"tshark {on_wire}", flush=True)
    c.eq(f"{tag}: pktgen streams", sorted(sent), list(range(len(flows))))
    c.eq(f"{tag}: rx received, lost", (r["received"], r["lost"]), (count, 0))
    c.eq(f"{tag}: rx per stream == pktgen per stream", [got[i] for i in range(len(flows))],
         [sent[i] for i in range(len(flows))])
    c.eq(f"{tag}: tshark per (source, destination, ports) == pktgen per stream", on_wire,
         [sent[i] for i in range(len(flows))])
    c.eq(f"{tag}: no data frame outside the flows", sum(wire.values()), count)
    c.true(f"{tag}: per-flow counts differ by at most 1", max(on_wire) - min(on_wire) <= 1, str(on_wire))
    c.true(f"{tag}: rx saw every source address", {s["from"].rsplit(":", 1)[0] for s in r["streams"]} == set(srcs),
           str({s["from"] for s in r["streams"]}))
    c.eq(f"{tag}: veth rx_packets delta == received + end markers", delta, r["received"] + r["end_markers"])


def mac_shape(lab, tmp, backend, macs, ports, count):
    """--dst-mac A-B x --src-port range from a raw sender into rx afpacket on b (a packet socket takes frames
    for any MAC): per (destination MAC, source port), tshark's data frames == pktgen's and rx's per stream,
    in the documented order (source port fastest, MAC slowest)."""
    tag = f"{backend} --dst-mac range x {len(ports)} ports -> rx afpacket"
    rx_json, tx_json, pcap = (os.path.join(tmp, f"{k}-mac-{backend}") for k in ("rx.json", "tx.json", "cap.pcap"))
    rx = start_rx(lab, ["--backend", "afpacket", "--device", lab.if_b, "--json", rx_json, "--quiet"], ready_timeout=30)
    cap = capture(lab, pcap)
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", backend, "--device", lab.if_a,
                         "--dst", lab.ip_b, "--dst-mac", f"{macs[0]}-{macs[-1]}", "--src-port", f"{ports[0]}-{ports[-1]}",
                         "--count", str(count), "--size", str(SIZE), "--rate", "20k", "--burst", "7", "--json", tx_json,
                         "--quiet"], capture_output=True, text=True, timeout=60)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    if tx.returncode:
        rx.send_signal(2)
    rc, out, err = finish(rx, timeout=60)
    stop(cap)
    if tx.returncode or rc:
        print(tx.stderr[-800:] + err[-800:])
        c.eq(f"{tag}: rx exit code", rc, 0)
        return
    t, r = result_record(tx_json, "pktgen"), result_record(rx_json, "rx")
    flows = [(m, p) for m in macs for p in ports]
    sent = {s["stream"]: s["sent"] for s in t["streams"]}
    got = Counter()
    for s in r["streams"]:
        got[s["stream"]] += s["received"]
    rows = tshark_rows(pcap, ["eth.dst", "udp.srcport", "udp.checksum.status"], ("-Y", f"udp.length == {SIZE + 8}"))
    wire = Counter((m, int(p)) for m, p, _ in rows)
    on_wire = [wire[f] for f in flows]
    print(f"     {tag}: pktgen {[sent.get(i, 0) for i in range(len(flows))]}, tshark {on_wire}", flush=True)
    start = [x for x in json_records(tx_json) if x.get("type") == "start"]
    c.eq(f"{tag}: JSON names the MAC range", start[0]["flows"]["dst_macs"] if start else None, [macs[0], macs[-1]])
    c.eq(f"{tag}: tshark per (MAC, source port) == pktgen per stream", on_wire, [sent.get(i) for i in range(len(flows))])
    c.eq(f"{tag}: rx per stream == pktgen per stream", [got[i] for i in range(len(flows))],
         [sent.get(i) for i in range(len(flows))])
    c.eq(f"{tag}: rx received, lost", (r["received"], r["lost"]), (count, 0))
    c.eq(f"{tag}: UDP checksums good", sum(x[2] == "1" for x in rows), count)
    c.true(f"{tag}: per-flow counts differ by at most 1", max(on_wire) - min(on_wire) <= 1, str(on_wire))


def raw_refused(lab, backend, mac_b):
    p = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", backend, "--dst-mac", mac_b, "--dst",
                        lab.ip_b, "--count", "10", "--quiet"], capture_output=True, text=True, timeout=30)
    return p.stderr.strip().splitlines()[-1] if p.returncode else ""


with tempfile.TemporaryDirectory() as tmp, Lab("f", subnet=SUBNET) as lab:
    for ip in DSTS:
        sh("ip", "addr", "add", f"{ip}/32", "dev", lab.if_b, ns=lab.ns_b)
    sh("ip", "route", "add", f"{DSTS[0]}/30", "via", lab.ip_b, ns=lab.ns_a)
    sh("ip", "route", "add", f"{SRCS[0]}/30", "via", lab.ip_a, ns=lab.ns_b)
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)  # NAPI on: a veth takes XDP-sent frames only then
    sh("ethtool", "-K", lab.if_a, "tx", "off", ns=lab.ns_a)  # socket senders: real checksums in the capture
    mac_b = Lab.mac(lab.ns_b, lab.if_b)

    for backend in ("socket",) if SANITIZED else ("socket", "uring"):
        shape(lab, tmp, f"{backend} dst range x 2 ports", ["--backend", backend], "socket", [5000, 5001], None, DSTS, 4001)
    raw_shapes = (("afpacket", "socket"), ("afpacket", "afpacket"), ("afxdp", "socket"), ("xdp", "socket"))
    for backend, rx_backend in raw_shapes[0::3] if SANITIZED else raw_shapes:
        why = raw_refused(lab, backend, mac_b)
        if why:
            print(f"SKIP {backend}: {why}", flush=True)
            continue
        shape(lab, tmp, f"{backend} src x dst ranges -> rx {rx_backend}", ["--backend", backend, "--dst-mac", mac_b],
              rx_backend, [6000], SRCS, DSTS, 8003)

    # Destination MAC ranges (a switch's MAC table, a NIC's MAC filters), across a byte boundary.
    macs = ["02:00:00:00:00:fe", "02:00:00:00:00:ff", "02:00:00:00:01:00", "02:00:00:00:01:01"]
    for backend in ("afpacket",) if SANITIZED else ("afpacket", "xdp"):
        mac_shape(lab, tmp, backend, macs, [5000, 5001], 4003)

    # Destination port ranges (RSS spreads flows by port): 2 source x 4 destination ports into raw
    # receivers that take the whole range on their device.
    # (An AF_PACKET sender bypasses the qdisc and the taps on a: its frames are captured on b, so into afpacket.)
    port_shapes = ((["--backend", "afpacket", "--dst-mac", mac_b], "afpacket"), (["--backend", "socket"], "xdp"),
                   (["--backend", "socket"], "afxdp"))
    for tx_args, rx_backend in port_shapes[0::2] if SANITIZED else port_shapes:
        shape(lab, tmp, f"{tx_args[1]} --port 9000-9003 -> rx {rx_backend} --port 9000-9003", tx_args, rx_backend,
              [5000, 5001], None, [lab.ip_b], 4003, dst_ports=[9000, 9001, 9002, 9003])
    p = subprocess.run(["ip", "netns", "exec", lab.ns_b, RX, "--backend", "socket", "--port", "9000-9003"],
                       capture_output=True, text=True, timeout=10)
    c.eq("rx socket --port range: exit 2", p.returncode, 2)
    c.true("rx socket --port range: one line naming the raw receivers",
           p.stderr.count("\n") == 1 and "afpacket, afxdp, xdp or dpdk" in p.stderr, p.stderr)

    raw = ["--backend", "afpacket", "--dst-mac", mac_b]
    refused_usage(lab, c, [*raw, "--port", "0"], "is not a port", "port 0")
    refused_usage(lab, c, [*raw, "--dst", f"{DSTS[-1]}-{DSTS[0]}"], "from the lower address", "reversed range")
    refused_usage(lab, c, [*raw, "--dst", "198.18.0.0-198.18.15.255", "--src-port", "5000-5001"], "at most 4096",
                  "8192 flows")
    refused_usage(lab, c, ["--backend", "socket", "--src-ip", f"{SRCS[0]}-{SRCS[-1]}"], "needs a raw backend",
                  "source range on socket")
    refused_usage(lab, c, [*raw, "--dst", f"{DSTS[0]}-{DSTS[1]}", "--threads", "3"], "give each thread at least one flow",
                  "2 flows, 3 threads")
    refused_usage(lab, c, ["--backend", "socket", "--dst-mac", f"{macs[0]}-{macs[1]}"], "picks the MAC",
                  "MAC range on socket")
    refused_usage(lab, c, [*raw[:2], "--dst-mac", f"{macs[1]}-{macs[0]}"], "from the lower MAC", "reversed MAC range")
    refused_usage(lab, c, [*raw, "--replay", "/nonexistent.pcap", "--device", lab.if_a, "--dst", f"{DSTS[0]}-{DSTS[1]}"],
                  "drop the address ranges", "range with --replay")

c.done()
