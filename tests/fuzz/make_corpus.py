#!/usr/bin/env python3
"""Writes the seed corpus for the fuzz targets into tests/fuzz/corpus/<target>/.

The frames come from the independent wire-format encoder the integration tests
use (tools/lab/inject_frames.py), so the seeds do not share code with
what they test. Deterministic: running it again gives the same files.

usage: tests/fuzz/make_corpus.py [OUT_DIR]   (default: tests/fuzz/corpus)
"""
import hashlib
import os
import random
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tools", "lab"))
from inject_frames import frame, payload  # noqa: E402

SRC_MAC, DST_MAC = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")
SRC_IP, DST_IP = bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])


def v4(data, dport=9000):
    return frame(SRC_MAC, DST_MAC, SRC_IP, DST_IP, 40000, dport, data)


def v6(data, dport=9000):
    udp = struct.pack("!HHHH", 40000, dport, 8 + len(data), 0) + data
    ip = struct.pack("!IHBB", 0x60000000, len(udp), 17, 64) + b"\x20\x01\x0d\xb8" + b"\0" * 11 + b"\1" \
        + b"\x20\x01\x0d\xb8" + b"\0" * 11 + b"\2"
    return DST_MAC + SRC_MAC + b"\x86\xdd" + ip + udp


def vlan(f, tags):
    head, rest = f[:12], f[12:]
    for tpid, vid in tags:
        head += struct.pack("!HH", tpid, vid)
    return head + rest


def end_marker(stream, total, size=64):
    body = struct.pack(">QQQIHH", total, 0, total, 100, 1, size)
    return payload(2, stream, total, max(size, 64), body)


def frames():
    data = payload(1, 0, 0, 64)
    big = payload(1, 3, 12345, 1400)
    corrupt = bytearray(payload(1, 0, 7, 200))
    corrupt[100] ^= 0x40
    bad_version = bytearray(data)
    bad_version[4] = 9
    bad_len = bytearray(data)
    bad_len[24:28] = struct.pack(">I", 65)
    f = v4(data)
    frag = bytearray(f)
    frag[20:22] = b"\x20\x00"  # MF set
    bad_ihl = bytearray(f)
    bad_ihl[14] = 0x43
    tcp = bytearray(f)
    tcp[23] = 6
    lying = bytearray(f)
    lying[16:18] = b"\xff\xff"  # IP total length beyond the frame
    return {
        "v4_data": f,
        "v4_big": v4(big),
        "v4_end": v4(end_marker(0, 1)),
        "v4_corrupt": v4(bytes(corrupt)),
        "v4_bad_version": v4(bytes(bad_version)),
        "v4_bad_length": v4(bytes(bad_len)),
        "v4_foreign": v4(b"not rateline at all"),
        "v4_other_port": v4(data, dport=53),
        "v6_data": v6(data),
        "vlan_data": vlan(f, [(0x8100, 42)]),
        "qinq_data": vlan(f, [(0x88A8, 7), (0x8100, 42)]),
        "fragment": bytes(frag),
        "bad_ihl": bytes(bad_ihl),
        "tcp": bytes(tcp),
        "lying_length": bytes(lying),
        "truncated": f[:30],
        "runt": f[:10],
        "arp": DST_MAC + SRC_MAC + b"\x08\x06" + b"\0" * 28,
        "empty": b"",
    }


UNITS = ["250us", "1.5ms", "2s", "0", "10", "2min", "100000", "100k", "1M", "1G", "8", "4k", "4KiB", "1MiB",
         "1GiB", "10kpps", "1.5Mpps", "100Mbit", "1Gbps", "500kbit/s", "1G bit/s", "5000", "5000-5007",
         "65535", "9-3", "0-1", "", " ", "-1", "1e5", "nan", "inf", "1.2.3", ".", "99999999999999999999",
         "18446744073709551615", "9300000000000000000", "1.5", " 7 ", "10T", "5parsecs", "1 - 2"]


def rx_scripts():
    # fuzz_rx reads a FuzzedDataProvider script: any bytes are valid input.
    # A few fixed random strings of different lengths give it a start.
    rnd = random.Random(20240601)
    return {f"script{n}": bytes(rnd.getrandbits(8) for _ in range(n)) for n in (8, 64, 256, 1024, 4096)}


def write(out, target, items):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    for name, blob in items.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(blob)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus")
    fr = frames()
    write(out, "fuzz_frame", fr)
    # The payloads alone too: decode() sees those from socket backends.
    write(out, "fuzz_frame", {"payload_data": payload(1, 0, 0, 64), "payload_end": end_marker(1, 5)})
    write(out, "fuzz_units", {f"u{hashlib.sha1(u.encode()).hexdigest()[:8]}": u.encode() for u in UNITS})
    write(out, "fuzz_rx", rx_scripts())
    print(f"seed corpus written to {out}")


if __name__ == "__main__":
    main()
