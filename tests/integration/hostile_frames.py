#!/usr/bin/env python3
"""Hostile traffic for test_hostile.py, sent through an AF_PACKET raw socket
on IFACE while a real pktgen stream goes out of the same interface:

- replays: the first REPLAY data frames pktgen sends from SPORT, captured on
  the way out and sent again byte for byte (duplicates at the receiver);
- foreign UDP: a flood of payloads without our magic, from 0 to 200 bytes;
- short: our magic, then fewer bytes than a header (4..31);
- bad length / bad version / bad kind: a header that lies, checksum correct;
- bad checksum: a well-formed packet with one payload byte flipped afterwards;
- oversize: well-formed packets longer than the receiver's --max-size, so the
  receiver gets them cut (a truncated datagram).

The frames use the independent encoder of inject_frames.py. The UDP checksum
is always right, so the kernel delivers every one and only rx can judge them.
Prints "ready" once its sockets are open, then, when done, one JSON line with
what it sent.

usage: hostile_frames.py IFACE SRC_IP DST_IP DST_MAC PORT SPORT [--replay N] [--foreign N] [--short N]
       [--bad-length N] [--bad-version N] [--bad-kind N] [--bad-checksum N] [--oversize N] [--stream ID]
       [--spread S]
"""
import argparse
import json
import os
import random
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
from inject_frames import MAGIC, frame, ones, payload  # noqa: E402

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def capture(sniff, sport, port, n, timeout=10, tag_bytes=0):
    """The first n rateline data frames from sport to port, as they left
    (tag_bytes: a pktgen --key-file tag before our header)."""
    got = []
    deadline = time.time() + timeout
    sniff.settimeout(0.2)
    while len(got) < n and time.time() < deadline:
        try:
            data, addr = sniff.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] != PACKET_OUTGOING or len(data) < 42 + tag_bytes + 32 or data[12:14] != b"\x08\x00" or data[23] != 17:
            continue
        ihl = (data[14] & 0x0F) * 4
        udp = 14 + ihl
        s, d = struct.unpack("!HH", data[udp:udp + 4])
        body = data[udp + 8 + tag_bytes:]
        if s == sport and d == port and struct.unpack(">I", body[:4])[0] == MAGIC and body[5] == 1:
            got.append(data)
    return got


def with_udp_checksum(f):
    """The captured frame with its UDP checksum filled in. A socket's frames
    leave with checksum offload (only the pseudo-header sum in the field);
    a NIC would finish it on the wire, so a replay must carry the final one."""
    ihl = (f[14] & 0x0F) * 4
    udp = 14 + ihl
    udp_len = struct.unpack("!H", f[udp + 4:udp + 6])[0]
    seg = bytearray(f[udp:udp + udp_len])
    seg[6:8] = b"\0\0"
    pseudo = f[26:30] + f[30:34] + struct.pack("!BBH", 0, 17, udp_len)
    csum = 0xFFFF - ones(pseudo + bytes(seg)) or 0xFFFF
    return f[:udp + 6] + struct.pack("!H", csum) + f[udp + 8:]


def open_raw(iface):
    """A sending and a sniffing AF_PACKET socket on iface, and iface's MAC."""
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((iface, 0))
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniff.bind((iface, 0))
    return tx, sniff, tx.getsockname()[4]


def main():
    ap = argparse.ArgumentParser()
    for a in ("iface", "src", "dst", "dst_mac"):
        ap.add_argument(a)
    ap.add_argument("port", type=int)
    ap.add_argument("sport", type=int, help="pktgen's source port (whose frames are replayed)")
    for a in ("replay", "foreign", "short", "bad-length", "bad-version", "bad-kind", "bad-checksum", "oversize"):
        ap.add_argument("--" + a, type=int, default=0)
    ap.add_argument("--stream", type=int, default=0, help="stream id of the forged headers")
    ap.add_argument("--oversize-bytes", type=int, default=2000)
    ap.add_argument("--spread", type=float, default=0.5, help="seconds to spread the hostile frames over")
    ap.add_argument("--seed", type=int, default=1)
    o = ap.parse_args()

    rnd = random.Random(o.seed)
    tx, sniff, src_mac = open_raw(o.iface)
    dmac = bytes.fromhex(o.dst_mac.replace(":", ""))
    sip, dip = socket.inet_aton(o.src), socket.inet_aton(o.dst)
    # Source ports of our own: never pktgen's, so the capture never takes ours.
    send = lambda data, sport=41000: tx.send(frame(src_mac, dmac, sip, dip, sport, o.port, data))  # noqa: E731
    # Forged headers use sequences far from pktgen's (its stream runs from 0):
    # only their verdict counts, never their sequence.
    base = 1 << 40
    hostile = []
    for i in range(o.foreign):
        n = rnd.randrange(0, 201)
        body = rnd.randbytes(n)
        if body[:4] == struct.pack(">I", MAGIC):
            body = b"X" + body[1:]
        hostile.append(body)
    good = payload(1, o.stream, base, 200)
    for i in range(o.short):
        hostile.append(good[:4 + i % 28])
    for i in range(o.bad_length):
        p = bytearray(payload(1, o.stream, base + i, 200))
        p[24:28] = struct.pack(">I", rnd.choice((0, 32, 199, 201, 65535)))
        hostile.append(bytes(p))
    for i in range(o.bad_version):
        p = bytearray(payload(1, o.stream, base + i, 200))
        p[4] = rnd.choice((0, 2, 255))
        hostile.append(bytes(p))
    for i in range(o.bad_kind):
        p = bytearray(payload(1, o.stream, base + i, 200))
        p[5] = rnd.choice((0, 3, 255))
        hostile.append(bytes(p))
    for i in range(o.bad_checksum):
        p = bytearray(payload(1, o.stream, base + i, 200))
        p[32 + i % 168] ^= 0x5A
        hostile.append(bytes(p))
    for i in range(o.oversize):
        hostile.append(payload(1, o.stream, base + i, o.oversize_bytes))
    rnd.shuffle(hostile)

    print("ready", flush=True)

    t0 = time.time()
    replays = capture(sniff, o.sport, o.port, o.replay) if o.replay else []
    sniff.close()
    for f in replays:
        tx.send(with_udp_checksum(f))

    # Spread over --spread seconds in small chunks, interleaved with pktgen's stream.
    chunks = max(1, int(o.spread / 0.005))
    per = -(-len(hostile) // chunks) if hostile else 0
    for k in range(chunks):
        for body in hostile[k * per:(k + 1) * per]:
            send(body)
        time.sleep(o.spread / chunks)
    print(json.dumps({"replayed": len(replays), "foreign": o.foreign, "short": o.short, "bad_length": o.bad_length,
                      "bad_version": o.bad_version, "bad_kind": o.bad_kind, "bad_checksum": o.bad_checksum,
                      "oversize": o.oversize, "seconds": round(time.time() - t0, 3)}), flush=True)


if __name__ == "__main__":
    main()
