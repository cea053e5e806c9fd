#!/usr/bin/env python3
"""64-byte frames (RFC 2544's smallest: 18 B of UDP payload under IPv4, the
short header of docs/wire-format.md) on every backend, in a netns/veth lab.

1. Every sender (socket, uring, afpacket, afxdp, xdp, dpdk on net_af_packet)
   into rx afpacket: N sent, N received, none lost or failing a check, equal
   to the receiving veth's rx_packets. tcpdump on the receiving veth and
   tshark, an independent reader, see every data frame at 60 B (64 with the
   FCS) with correct IPv4 and UDP checksums (the socket senders' veth has its
   checksum offload off, so the kernel fills them in before the capture).
2. rx afpacket's sender into every receiver (socket, uring, afxdp, xdp,
   dpdk): N received, none lost, equal to rx_packets.
3. A capture built by an independent encoder (inject_frames.py) and replayed
   with tcpreplay: 200 short frames of 24 B, of which 20 have a pad byte
   flipped after the UDP checksum was computed (checksum now wrong) and 20 a
   pad byte flipped with the checksum computed after it (checksum right, pad
   wrong). tshark confirms the 20 bad checksums in the file. Raw receivers
   (afpacket, afxdp, xdp, dpdk) count exactly 20 bad UDP checksums and 20
   corrupt; on the socket path the kernel drops the 20 (rx's drop ledger shows
   Udp InCsumErrors +20) and rx counts 20 corrupt. Every receiver: 160
   received, 40 lost (the end markers say 200 were sent).
4. ceiling --frame-sizes 64 (a lab of its own): the 64 row is sent as 64 B
   frames (18 B payload), no longer raised to pktgen's old minimum.
"""
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import (PKTGEN, RX, Checks, Lab, capture, finish, hugepages_free, json_records, result_record, run_pair, rx_args, sh,
                    start_rx, tshark_rows)
from inject_frames import frame, payload, short_payload, write_pcap

CEILING = os.environ.get("CEILING", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PKTGEN))), "tools",
                                                 "ceiling", "ceiling"))

N = 3000
SIZE = 18
c = Checks("short_frames")


def pair(lab, tmp, tx_b, rx_b, mac_b, rate="30k"):
    tag = f"{tx_b}->{rx_b}"
    t, r, delta = run_pair(lab, c, tmp, tx_b, rx_b, mac_b, ["--count", str(N), "--rate", rate, "--size", str(SIZE)],
                           tag)
    c.eq(f"{tag}: pktgen sent", t["sent"], N)
    c.true(f"{tag}: pktgen's stamp lead, 0 < mean <= max", t["stamp_lead_mean_ns"] is not None and
           0 < t["stamp_lead_mean_ns"] <= t["stamp_lead_max_ns"], f"{t['stamp_lead_mean_ns']} {t['stamp_lead_max_ns']}")
    c.eq(f"{tag}: received", r["received"], N)
    c.eq(f"{tag}: lost", r["lost"], 0)
    c.eq(f"{tag}: corrupt + malformed + bad UDP checksum",
         (r["corrupt"], r["malformed"], r.get("bad_udp_checksum")), (0, 0, 0))
    c.eq(f"{tag}: payload length", r["payload_len"], SIZE)
    c.eq(f"{tag}: veth rx_packets delta == received + end markers", delta, r["received"] + r["end_markers"])
    return r


def replay_capture(lab, tmp, mac_a, mac_b):
    """200 short frames of stream 5 (24 B payload), 20 with a wrong UDP
    checksum, 20 with a wrong pad byte, then 3 end markers (total 200)."""
    size, total = 24, 200
    src, dst = bytes(map(int, lab.ip_a.split("."))), bytes(map(int, lab.ip_b.split(".")))
    smac, dmac = bytes.fromhex(mac_a.replace(":", "")), bytes.fromhex(mac_b.replace(":", ""))
    frames, bad_csum, bad_pad = [], 0, 0
    now = time.monotonic_ns()
    for seq in range(total):
        p = bytearray(short_payload(5, seq, size, sender=77, tx_ns=now))
        if seq % 10 == 7:  # pad byte wrong, checksum computed over it: passes UDP, fails our pad check
            p[18 + seq % 6] ^= 0x20
            bad_pad += 1
        f = bytearray(frame(smac, dmac, src, dst, 40000, 9000, bytes(p)))
        if seq % 10 == 3:  # flipped after the checksum: the UDP checksum is wrong
            f[42 + 18 + seq % 6] ^= 0x20
            bad_csum += 1
        frames.append(bytes(f))
    body = struct.pack(">QQQIHH", total, 0, total, 1, 1, size)
    for _ in range(3):
        frames.append(frame(smac, dmac, src, dst, 40000, 9000, payload(2, 5, total, 64, body, sender=77, tx_ns=now)))
    path = os.path.join(tmp, "short-edited.pcap")
    write_pcap(path, frames)
    return path, total, bad_csum, bad_pad


def replay(lab, tmp, rx_b, pcap, total, bad_csum, bad_pad):
    tag = f"tcpreplay->{rx_b}"
    rx_json = os.path.join(tmp, f"rx-replay-{rx_b}.json")
    rx = start_rx(lab, rx_args(lab, rx_b, rx_json, ["--max-loss", "0"]), ready_timeout=30)
    sh("tcpreplay", "-q", "-i", lab.if_a, "--pps", "5000", pcap, ns=lab.ns_a, timeout=60)
    rc, out, err = finish(rx, timeout=60)
    c.eq(f"{tag}: rx exit code (--max-loss 0 with loss: 3)", rc, 3)
    r = result_record(rx_json, "rx")
    good = total - bad_csum - bad_pad
    c.eq(f"{tag}: received", r["received"], good)
    c.eq(f"{tag}: lost (end markers say {total} sent)", r["lost"], bad_csum + bad_pad)
    c.eq(f"{tag}: corrupt (pad byte wrong, UDP checksum right)", r["corrupt"], bad_pad)
    csum_errors = r["ledger"]["counters"]["receiver"].get("udp", {}).get("InCsumErrors")
    if rx_b == "socket":
        c.eq(f"{tag}: bad UDP checksum seen by rx (the kernel drops them first)", r["bad_udp_checksum"], 0)
        c.eq(f"{tag}: ledger Udp InCsumErrors", csum_errors, bad_csum)
    else:
        c.eq(f"{tag}: bad UDP checksum counted by rx", r["bad_udp_checksum"], bad_csum)
        if rx_b in ("afpacket", "dpdk"):  # net_af_packet too: a packet socket taps, the kernel's UDP sees them as well
            c.eq(f"{tag}: ledger Udp InCsumErrors (the kernel, an independent check, agrees)", csum_errors, bad_csum)
        else:  # AF_XDP and XDP take the frames before the kernel's stack
            c.eq(f"{tag}: ledger Udp InCsumErrors (the kernel's UDP never saw them)", csum_errors, 0)


with tempfile.TemporaryDirectory() as tmp, Lab("f", subnet=64) as lab:
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)  # NAPI on: a veth takes XDP-sent frames only then
    sh("ethtool", "-K", lab.if_a, "tx", "off", ns=lab.ns_a)  # socket senders: real checksums on the wire
    mac_a, mac_b = Lab.mac(lab.ns_a, lab.if_a), Lab.mac(lab.ns_b, lab.if_b)
    dpdk = hugepages_free() >= 128
    if not dpdk:
        print("SKIP dpdk: fewer than 128 free hugepages (tools/check reserves them)", flush=True)

    # 1. Every sender into rx afpacket, captured on the receiving veth.
    senders = ["socket", "uring", "afpacket", "afxdp", "xdp"] + (["dpdk"] if dpdk else [])
    pcap = os.path.join(tmp, "short.pcap")
    cap = capture(lab, pcap)
    for tx_b in senders:
        pair(lab, tmp, tx_b, "afpacket", mac_b, rate="10k")  # slow enough for tcpdump to keep every frame
    time.sleep(1.0)  # the capture ring hands over a part-filled block only after its timeout
    cap.send_signal(2)
    _, cap_err = cap.communicate(timeout=10)
    c.true("tcpdump: no frame dropped by the kernel", "\n0 packets dropped by kernel" in "\n" + cap_err, cap_err.strip())
    rows = tshark_rows(pcap, ["frame.len", "ip.checksum.status", "udp.checksum.status"], ["-Y", "udp.length == 26"])
    c.eq("tshark: 64 B data frames captured", len(rows), N * len(senders))
    c.eq("tshark: their lengths (60 B on the wire before the FCS)", sorted({r[0] for r in rows}), ["60"])
    c.eq("tshark: data frames with both checksums verified good", sum(1 for r in rows if r[1:] == ["1", "1"]), len(rows))

    # 2. One sender into every receiver.
    for rx_b in ["socket", "uring", "afxdp", "xdp"] + (["dpdk"] if dpdk else []):
        pair(lab, tmp, "afpacket", rx_b, mac_b)

    # 3. A capture edited frame by frame, replayed.
    path, total, bad_csum, bad_pad = replay_capture(lab, tmp, mac_a, mac_b)
    rows = tshark_rows(path, ["udp.checksum.status"], ["-Y", "udp.length == 32"])
    c.eq("edited capture: short frames in it", len(rows), total)
    c.eq("edited capture: tshark's bad UDP checksums", sum(1 for r in rows if r == ["0"]), bad_csum)
    for rx_b in ["socket", "afpacket", "afxdp", "xdp"] + (["dpdk"] if dpdk else []):
        replay(lab, tmp, rx_b, path, total, bad_csum, bad_pad)

# 4. ceiling's 64 B row.
with tempfile.TemporaryDirectory() as tmp:
    j = os.path.join(tmp, "ceiling.json")
    p = subprocess.run([CEILING, "--frame-sizes", "64", "--size", "18", "--trial", "0.3s", "--max-rate", "20k",
                        "--max-trials", "3", "--tests", "throughput", "--json", j, "--pktgen", PKTGEN, "--rx", RX,
                        "--quiet"], capture_output=True, text=True, timeout=120)
    c.eq("ceiling --frame-sizes 64: exit code", p.returncode, 0)
    res = [r for r in json_records(j) if r.get("type") == "result"]
    c.eq("ceiling: one result, the 64 B frame with 18 B of payload",
         [(r.get("requested_frame"), r.get("frame"), r.get("payload")) for r in res], [(64, 64, 18)])
    c.true("ceiling: the 64 B row has an NDR", res and res[0]["ndr"].get("rate"), p.stdout[-600:] + p.stderr[-600:])
    rows = [line for line in p.stdout.splitlines() if line.split()[:2] == ["64", "18"]]
    c.eq("ceiling: its table's 64 row reads '64 18'", len(rows), 1)

c.done()
