#!/usr/bin/env python3
"""Forged rateline datagrams for test_forgery.py, sent through an AF_PACKET
raw socket on IFACE while a real pktgen stream from SPORT is running.

It first captures one of pktgen's data frames on the way out, to learn the
stream's identity (source port, sender id, stream id), then sends, as that
very stream (a spoofed source: the worst case without --key-file):
- an end marker claiming 5 packets, mid-run (below what already arrived);
- an end marker claiming 10^15 packets (one copy against pktgen's several);
- data packets with sequences 2^64 - 2 and 10^12 (lone far jumps);
and from other source ports of the same address (strangers to the stream):
- an end marker alone, claiming 2^64 - 1 packets, for a stream never seen;
- PREFILL data packets numbered 0.. of the same stream id and sender id
  (before: they made the real packets look like duplicates and hid loss).
With --tag-bytes 8 (pktgen --key-file) the stream's packets start with a
tag; every forgery then carries the captured packet's tag, as a forger
without the key can at best do.
Prints "ready", then one JSON line with what it sent and the identity it saw.

usage: forge_frames.py IFACE SRC_IP DST_IP DST_MAC PORT SPORT [--prefill N] [--tag-bytes N]
"""
import argparse
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
from hostile_frames import capture, open_raw  # noqa: E402
from inject_frames import frame, payload  # noqa: E402


def end_body(total, stream_count=1):
    # total_sent, delay_ns, count, burst, stream_count, data_size
    return struct.pack(">QQQIHH", total, 0, total, 100, stream_count, 200)


def main():
    ap = argparse.ArgumentParser()
    for a in ("iface", "src", "dst", "dst_mac"):
        ap.add_argument(a)
    ap.add_argument("port", type=int)
    ap.add_argument("sport", type=int)
    ap.add_argument("--prefill", type=int, default=5000)
    ap.add_argument("--wait", type=float, default=0.3, help="seconds into the stream before forging")
    ap.add_argument("--tag-bytes", type=int, default=0, help="pktgen --key-file's tag before the header")
    o = ap.parse_args()

    tx, sniff, src_mac = open_raw(o.iface)
    dmac = bytes.fromhex(o.dst_mac.replace(":", ""))
    sip, dip = socket.inet_aton(o.src), socket.inet_aton(o.dst)
    print("ready", flush=True)

    got = capture(sniff, o.sport, o.port, 1, tag_bytes=o.tag_bytes)
    sniff.close()
    if not got:
        print(json.dumps({"error": "no pktgen frame captured"}), flush=True)
        return 1
    f = got[0]
    tagged = f[14 + (f[14] & 0x0F) * 4 + 8:]
    tag, body = tagged[:o.tag_bytes], tagged[o.tag_bytes:]
    stream, = struct.unpack(">H", body[6:8])
    sender, = struct.unpack(">H", body[24:26])
    time.sleep(o.wait)

    def send(sport, data):
        tx.send(frame(src_mac, dmac, sip, dip, sport, o.port, tag + data))

    now_ns = time.monotonic_ns()
    # As the stream itself (spoofed address, port and sender id).
    send(o.sport, payload(2, stream, 5, 200, end_body(5), sender=sender, tx_ns=now_ns))
    send(o.sport, payload(2, stream, 10**15, 200, end_body(10**15), sender=sender, tx_ns=now_ns))
    send(o.sport, payload(1, stream, (1 << 64) - 2, 200, sender=sender, tx_ns=now_ns))
    send(o.sport, payload(1, stream, 10**12, 200, sender=sender, tx_ns=now_ns))
    # Strangers: other source ports.
    send(o.sport + 1, payload(2, stream + 1, (1 << 64) - 1, 200, end_body((1 << 64) - 1), sender=sender, tx_ns=now_ns))
    for q in range(o.prefill):
        send(o.sport + 2, payload(1, stream, q, 200, sender=sender, tx_ns=now_ns))
    print(json.dumps({"stream": stream, "sender": sender, "spoofed_markers": 2, "spoofed_far": 2,
                      "lone_marker": 1, "prefill": o.prefill}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
