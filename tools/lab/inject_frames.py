#!/usr/bin/env python3
"""Builds rateline test frames with an independent implementation of the wire
format (Python, sharing nothing with src/), and sends them on an interface through
an AF_PACKET raw socket: valid packets, packets with a byte flipped after the
checksum was computed, duplicates and foreign UDP. The UDP checksum is always
made correct, so the kernel delivers every frame and only rateline's own
payload checksum can tell the corrupt ones.

usage: inject_frames.py IFACE SRC_IP DST_IP DST_MAC PORT STREAM VALID CORRUPT DUPLICATES FOREIGN SIZE
"""
import socket
import struct
import sys

MAGIC = 0x524C4E31
M64 = (1 << 64) - 1


def payload_checksum(p):
    acc = 0
    padded = p + b"\0" * (-len(p) % 8)
    for i in range(len(padded) // 8):
        w = int.from_bytes(padded[8 * i:8 * i + 8], "little")
        if i == 3:
            w &= 0xFFFFFFFF  # bytes 28..31 hold the checksum itself: read as zero
        acc = (acc + w * (2 * i + 1)) & M64
    return (acc ^ (acc >> 32)) & 0xFFFFFFFF


def payload(kind, stream, seq, size, body=b"", sender=0, tx_ns=0):
    """Header: magic, version, kind, stream, seq, tx stamp, sender id, length, checksum."""
    head = struct.pack(">IBBHQQHHI", MAGIC, 1, kind, stream, seq, tx_ns, sender, size, 0)
    filler = bytes((seq * 7 + i) & 0xFF for i in range(size - len(head) - len(body)))
    p = bytearray(head + body + filler)
    p[28:32] = struct.pack(">I", payload_checksum(bytes(p)))
    return bytes(p)


STEP = 0xD1B54A32D192ED03


def pattern_seed(stream, seq):
    z = (seq + 0x9E3779B97F4A7C15 * (stream + 1)) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def short_payload(stream, seq, size, sender=0, tx_ns=0):
    """The short form (18..31 bytes): 'r', 0x11, sender, stream, 48-bit seq,
    the send time's low 48 bits, then pad byte j = byte j % 8 of the
    little-endian word seed + (j // 8) * step."""
    assert 18 <= size < 32
    head = struct.pack(">BBHH", 0x72, 0x11, sender, stream) + (seq & (1 << 48) - 1).to_bytes(6, "big") \
        + (tx_ns & (1 << 48) - 1).to_bytes(6, "big")
    seed = pattern_seed(stream, seq)
    pad = bytes((((seed + (j // 8) * STEP) & M64) >> (8 * (j % 8))) & 0xFF for j in range(18, size))
    return head + pad


def write_pcap(path, frames):
    """A classic pcap file (microsecond stamps, Ethernet) that tcpreplay and tshark read."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1, i, len(fr), len(fr)) + fr)


def pcap_records(path):
    """(time in ns, frame) per record of a classic pcap file: either byte
    order, microsecond (tcpdump -w) or nanosecond stamps."""
    data = open(path, "rb").read()
    magic_le = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic_le in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    unit = 1 if struct.unpack(endian + "I", data[:4])[0] == 0xA1B23C4D else 1000
    off, records = 24, []
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        records.append((sec * 10**9 + frac * unit, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return records


def pcap_frames(path):
    """The frames of a classic pcap file (what tcpdump -w writes)."""
    return [f for _, f in pcap_records(path)]


def ones(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def frame(src_mac, dst_mac, src_ip, dst_ip, sport, dport, data):
    udp_len = 8 + len(data)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0, src_ip, dst_ip)
    ip = ip[:10] + struct.pack("!H", 0xFFFF - ones(ip)) + ip[12:]
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 17, udp_len)
    udp = struct.pack("!HHHH", sport, dport, udp_len, 0)
    csum = 0xFFFF - ones(pseudo + udp + data) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", csum)
    return dst_mac + src_mac + b"\x08\x00" + ip + udp + data


def raw_udp_sender(iface, src, dst, dst_mac):
    """send(data, sport, dport): a UDP/IPv4 frame from src to dst (dotted
    quads) out of iface through an AF_PACKET socket, checksums correct."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    src_mac = s.getsockname()[4]
    dmac = bytes.fromhex(dst_mac.replace(":", ""))
    sip, dip = socket.inet_aton(src), socket.inet_aton(dst)
    return lambda data, sport, dport: s.send(frame(src_mac, dmac, sip, dip, sport, dport, data))


def main():
    iface, src, dst, dst_mac, port, stream, valid, corrupt, dups, foreign, size = sys.argv[1:12]
    port, stream, valid, corrupt, dups, foreign, size = map(int, (port, stream, valid, corrupt, dups, foreign, size))
    raw_send = raw_udp_sender(iface, src, dst, dst_mac)
    send = lambda data, sport=40000: raw_send(data, sport, port)
    for seq in range(valid):
        send(payload(1, stream, seq, size))
        if seq < dups:
            send(payload(1, stream, seq, size))  # replayed sequence: a duplicate
        if seq < corrupt:
            bad = bytearray(payload(1, stream, seq + valid, size))
            bad[40 + seq % (size - 40)] ^= 0x5A  # flipped after the checksum was computed
            send(bytes(bad))
    for i in range(foreign):
        send(b"not rateline %d" % i, sport=41000)
    body = struct.pack(">QQQIHH", valid, 0, valid, 1, 1, size)
    for _ in range(3):
        send(payload(2, stream, valid, max(size, 64), body))


if __name__ == "__main__":
    main()
