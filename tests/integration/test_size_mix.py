#!/usr/bin/env python3
"""Size mixes (pktgen --size a,b,c --weights, --imix) on every backend that
sends them, in a netns/veth lab.

1. Every sender (socket, uring, afpacket, afxdp, xdp, dpdk on
   net_af_packet) into rx afpacket with --imix (64/594/1518 B frames, 7:4:1):
   N sent, N received, none lost or failing a check, equal to the receiving
   veth's rx_packets. tcpdump captures the receiving veth; tshark, an
   independent reader, counts the data frames of each length, with both
   checksums verified good: the counts equal what this file's own model of
   the cycle says (smooth weighted round robin, computed here) and pktgen's
   per-size JSON. N is not a multiple of the cycle, so the counts test the
   order, not only the weights.
2. A mix given in payload bytes with its own weights (--size 18,100,1000
   --weights 1,2,3) from afpacket into every receiver (socket, uring,
   afxdp, xdp, dpdk): N received, none lost or corrupt, rx's payload bytes
   equal to pktgen's; and from the xdp sender behind a VLAN tag and over
   IPv6, into rx afpacket, the same.
3. Bad input: one line on stderr, exit 2, nothing sent (the veth's
   tx_packets unchanged): weights that do not match the sizes, a weight of
   0, a size listed twice, a frame too small for the header, --imix with
   --size, --weights without a list, a mix with --gso.
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import (Checks, Lab, capture, hugepages_free, refused_usage, run_pair, sh,
                    tshark_rows)

N = 1000
c = Checks("size_mix")


def mix_counts(weights, n):
    """How many of the first n packets get each size: smooth weighted round
    robin, as docs/wire-format.md describes it (ties to the size listed first)."""
    total, credit, counts = sum(weights), [0] * len(weights), [0] * len(weights)
    for _ in range(n):
        for i, w in enumerate(weights):
            credit[i] += w
        best = max(range(len(weights)), key=lambda i: (credit[i], -i))
        credit[best] -= total
        counts[best] += 1
    return counts


def send(lab, tmp, tx_b, rx_b, mac_b, sizes_args, tag, rx_extra=(), dst=None, veth_count=True):
    t, r, delta = run_pair(lab, c, tmp, tx_b, rx_b, mac_b, ["--count", str(N), "--rate", "10k", *sizes_args], tag,
                           rx_extra, dst)
    c.eq(f"{tag}: pktgen sent", t["sent"], N)
    c.eq(f"{tag}: received, lost", (r["received"], r["lost"]), (N, 0))
    c.eq(f"{tag}: corrupt + malformed + bad UDP checksum", (r["corrupt"], r["malformed"], r.get("bad_udp_checksum")),
         (0, 0, 0))
    c.eq(f"{tag}: rx's payload bytes == pktgen's", r["payload_bytes"], t["payload_bytes"])
    c.eq(f"{tag}: pktgen's per-size payload bytes add up",
         sum(s["payload_bytes"] for s in t["sizes"]), t["payload_bytes"])
    c.true(f"{tag}: rx's settings say mix", r["settings"].endswith("-mix"), r["settings"])
    if rx_b != "xdp":  # the in-kernel counter keeps no per-size counts
        c.eq(f"{tag}: rx's per-size packets and bytes == pktgen's",
             {z["payload"]: (z["packets"], z["payload_bytes"]) for z in r["sizes"]},
             {z["payload"]: (z["sent"], z["payload_bytes"]) for z in t["sizes"]})
    if veth_count:
        c.eq(f"{tag}: veth rx_packets delta == received + end markers", delta, r["received"] + r["end_markers"])
    return t


with tempfile.TemporaryDirectory() as tmp, Lab("m", subnet=65) as lab:
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)  # NAPI on: a veth takes XDP-sent frames only then
    sh("ethtool", "-K", lab.if_a, "tx", "off", ns=lab.ns_a)  # socket senders: real checksums on the wire
    mac_b = Lab.mac(lab.ns_b, lab.if_b)
    dpdk = hugepages_free() >= 128
    if not dpdk:
        print("SKIP dpdk: fewer than 128 free hugepages (tools/check reserves them)", flush=True)

    # 1. --imix from every sender into rx afpacket, captured on the receiving veth.
    senders = ["socket", "uring", "afpacket", "afxdp", "xdp"] + (["dpdk"] if dpdk else [])
    want = dict(zip([60, 590, 1514], mix_counts([7, 4, 1], N)))  # frame lengths before the FCS
    pcap = os.path.join(tmp, "imix.pcap")
    cap = capture(lab, pcap)
    sent_by = {}
    for tx_b in senders:
        sent_by[tx_b] = send(lab, tmp, tx_b, "afpacket", mac_b, ["--imix"], f"imix {tx_b}->afpacket")
    time.sleep(1.0)  # the capture ring hands over a part-filled block only after its timeout
    cap.send_signal(2)
    _, cap_err = cap.communicate(timeout=10)
    c.true("tcpdump: no frame dropped by the kernel", "\n0 packets dropped by kernel" in "\n" + cap_err, cap_err.strip())
    # Data frames only: an end marker is as long as the largest size, so tell them by the header: "RLN1"
    # version 1 kind 1 (long form) or 'r' 0x11 (short form) is data.
    rows = tshark_rows(pcap, ["frame.len", "ip.checksum.status", "udp.checksum.status", "udp.payload"])
    data = [r for r in rows if r[3].startswith(("524c4e310101", "7211"))]
    seen = {}
    for r in data:
        seen[int(r[0])] = seen.get(int(r[0]), 0) + 1
    c.eq("tshark: data frames per length, all senders", seen, {k: v * len(senders) for k, v in want.items()})
    c.eq("tshark: data frames with both checksums verified good", sum(1 for r in data if r[1:3] == ["1", "1"]), len(data))
    for tx_b, t in sent_by.items():
        c.eq(f"imix {tx_b}: pktgen's per-size counts == the cycle's", [s["sent"] for s in t["sizes"]], list(want.values()))
        c.eq(f"imix {tx_b}: sizes as L2 frames", [s["l2"] for s in t["sizes"]], [64, 594, 1518])

    # 2. One sender's mix into every receiver.
    for rx_b in ["socket", "uring", "afxdp", "xdp"] + (["dpdk"] if dpdk else []):
        t = send(lab, tmp, "afpacket", rx_b, mac_b, ["--size", "18,100,1000", "--weights", "1,2,3"],
                 f"mix afpacket->{rx_b}")
        c.eq(f"mix afpacket->{rx_b}: per-size counts", [s["sent"] for s in t["sizes"]], mix_counts([1, 2, 3], N))

    # The xdp sender cuts each frame to its class in the kernel and rewrites the headers' lengths: behind an
    # 802.1Q tag, and over IPv6 (no IPv4 checksum; the length field is elsewhere), rx afpacket counts them exactly.
    t = send(lab, tmp, "xdp", "afpacket", mac_b, ["--size", "18,100,1000", "--weights", "1,2,3", "--vlan", "100"],
             "mix xdp vlan->afpacket")
    c.eq("mix xdp vlan->afpacket: per-size counts", [s["sent"] for s in t["sizes"]], mix_counts([1, 2, 3], N))
    # 3. Bad input.
    refused_usage(lab, c, ["--size", "64,594,1518", "--weights", "7,4"], "2 weights for 3 sizes", "weights short")
    refused_usage(lab, c, ["--size", "64,594", "--weights", "1,0"], "each weight is a whole number", "weight 0")
    refused_usage(lab, c, ["--size", "64,594,64"], "lists 64 twice", "size twice")
    refused_usage(lab, c, ["--size", "60,594", "--size-layer", "l2"], "rateline's header needs 18", "frame too small")
    refused_usage(lab, c, ["--imix", "--size", "100"], "give those or --imix", "imix and size")
    refused_usage(lab, c, ["--weights", "1,2"], "needs a size list", "weights alone")
    refused_usage(lab, c, ["--imix", "--backend", "socket", "--gso"], "cannot send a size mix", "gso mix")
    refused_usage(lab, c, ["--imix", "--ipv6", "--dst", "fd00::2"], "over IPv6", "imix over IPv6")
    refused_usage(lab, c, ["--size", "100,9000"], "does not fit the path MTU", "list beyond the MTU")
    refused_usage(lab, c, ["--size", "100,9000", "--backend", "afpacket", "--device", lab.if_a, "--dst-mac", mac_b],
            "does not fit the path MTU", "list beyond the MTU, afpacket")

    # Last: IPv6 on the veths brings the kernel's own frames (MLD reports), so side b's rx_packets is not
    # held to rx's count here, nor is "nothing sent" above.
    lab.add_ipv6("2001:db8:65::1", "2001:db8:65::2")
    t = send(lab, tmp, "xdp", "afpacket", mac_b, ["--size", "62,100,1000", "--weights", "1,2,3", "--ipv6"],
             "mix xdp ipv6->afpacket", rx_extra=("--ipv6",), dst="2001:db8:65::2", veth_count=False)
    c.eq("mix xdp ipv6->afpacket: per-size counts", [s["sent"] for s in t["sizes"]], mix_counts([1, 2, 3], N))

c.done()
