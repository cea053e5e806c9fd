#!/usr/bin/env python3
"""802.1Q tags on send (pktgen --vlan ID[:PCP], QinQ outer,inner) in a
netns/veth lab.

1. Every raw sender (afpacket, afxdp, xdp, dpdk on net_af_packet) sends 64 B
   tagged frames (--size 18, VLAN 100, PCP 5) to rx afpacket: N sent, N
   received, none lost or failing a check, equal to the receiving veth's
   rx_packets. tshark, an independent reader of a capture on the receiving
   veth, sees every data frame 64 B long (60 + the tag, before the FCS)
   with VLAN id 100, priority 5 and both checksums right.
2. QinQ (--vlan 200,100:3) from afpacket and xdp: the capture holds an
   802.1ad S-tag 200 outside a C-tag 100, rx counts exactly. The xdp
   generator's frames are recycled pages that the receiving veth's tag
   popping rewrites; this checks the generator restores them.
3. Tagged frames into the other raw receivers (afxdp, xdp): exact counts.
4. Bad input: one line, exit 2, nothing sent: a VLAN id of 4095, a PCP of
   8, three tags, --vlan on the socket and uring backends (the kernel's IP
   stack cannot tag), --vlan with --replay.

Not here: a socket receiver behind a VLAN interface (this kernel has no
8021q support to make one).
"""
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, capture, hugepages_free, refused_usage, run_pair, sh, tshark_rows

N = 1000
c = Checks("vlan")
# A data packet's payload starts with "RLN1" version 1 kind 1 (long form) or 'r' 0x11 (short form).
DATA = ("524c4e310101", "7211")


def send(lab, tmp, tx_b, rx_b, mac_b, size, vlan, tag):
    t, r, delta = run_pair(lab, c, tmp, tx_b, rx_b, mac_b,
                           ["--count", str(N), "--rate", "10k", "--size", str(size), "--vlan", vlan], tag)
    c.eq(f"{tag}: pktgen sent", t["sent"], N)
    c.eq(f"{tag}: received, lost, duplicated", (r["received"], r["lost"], r["duplicated"]), (N, 0, 0))
    c.eq(f"{tag}: corrupt + malformed + foreign + bad UDP checksum",
         (r["corrupt"], r["malformed"], r["foreign"], r.get("bad_udp_checksum")), (0, 0, 0, 0))
    if rx_b == "afpacket":  # the XDP receivers take frames before the veth counts them
        c.eq(f"{tag}: veth rx_packets delta == received + end markers", delta, r["received"] + r["end_markers"])
    return t


def stop(cap):
    time.sleep(1.0)  # the capture ring hands over a part-filled block only after its timeout
    cap.send_signal(2)
    _, err = cap.communicate(timeout=10)
    c.true("tcpdump: no frame dropped by the kernel", "\n0 packets dropped by kernel" in "\n" + err, err.strip())


with tempfile.TemporaryDirectory() as tmp, Lab("v", subnet=71) as lab:
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)  # NAPI on: a veth takes XDP-sent frames only then
    mac_b = Lab.mac(lab.ns_b, lab.if_b)
    dpdk = hugepages_free() >= 128

    # 1. One tag from every raw sender, 64 B frames.
    senders = ["afpacket", "afxdp", "xdp"] + (["dpdk"] if dpdk else [])
    pcap = os.path.join(tmp, "vlan.pcap")
    cap = capture(lab, pcap)
    for tx_b in senders:
        send(lab, tmp, tx_b, "afpacket", mac_b, 18, "100:5", f"vlan {tx_b}->afpacket")
    stop(cap)
    rows = tshark_rows(pcap, ["frame.len", "vlan.id", "vlan.priority", "ip.checksum.status", "udp.checksum.status",
                              "udp.payload"])
    data = [r[:5] for r in rows if r[5].startswith(DATA)]
    c.eq("tshark: tagged 64 B data frames, VLAN 100 PCP 5, both checksums good, all senders",
         data.count(["64", "100", "5", "1", "1"]), N * len(senders))
    c.eq("tshark: no other data frames", len(data), N * len(senders))

    # 2. QinQ; the capture takes every frame (a port filter does not look past two tags).
    pcap = os.path.join(tmp, "qinq.pcap")
    cap = capture(lab, pcap, ())
    for tx_b in ("afpacket", "xdp"):
        send(lab, tmp, tx_b, "afpacket", mac_b, 100, "200,100:3", f"qinq {tx_b}->afpacket")
    stop(cap)
    rows = tshark_rows(pcap, ["eth.type", "ieee8021ad.id", "vlan.id", "vlan.priority", "udp.checksum.status",
                              "udp.payload"])
    data = [r[:5] for r in rows if r[5].startswith(DATA)]
    c.eq("tshark: QinQ data frames, S-tag 200 (802.1ad) outside C-tag 100 PCP 3, UDP checksum good",
         data.count(["0x88a8", "200", "100", "3", "1"]), 2 * N)
    c.eq("tshark: no other data frames", len(data), 2 * N)

    # 3. Tagged frames into the XDP receivers.
    for rx_b in ("afxdp", "xdp"):
        send(lab, tmp, "afpacket", rx_b, mac_b, 18, "100", f"vlan afpacket->{rx_b}")

    # 4. Bad input.
    raw = ["--backend", "afpacket", "--dst-mac", mac_b]
    refused_usage(lab, c, [*raw, "--vlan", "4095"], "from 0 to 4094", "VLAN id 4095")
    refused_usage(lab, c, [*raw, "--vlan", "10:8"], "PCP", "PCP 8")
    refused_usage(lab, c, [*raw, "--vlan", "1,2,3"], "at most two tags", "three tags")
    refused_usage(lab, c, [*raw, "--vlan", "ten"], "from 0 to 4094", "VLAN id not a number")
    refused_usage(lab, c, ["--backend", "socket", "--vlan", "10"], "cannot tag", "socket")
    refused_usage(lab, c, ["--backend", "uring", "--vlan", "10"], "cannot tag", "uring")
    refused_usage(lab, c, [*raw, "--replay", "/nonexistent.pcap", "--device", lab.if_a, "--vlan", "10"], "drop --vlan", "replay")

c.done()
