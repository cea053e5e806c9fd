#!/usr/bin/env python3
"""pktgen --pcap-out and --replay, in a netns/veth lab.

1. pktgen --pcap-out FILE --count 1000 in namespace A (towards B: the
   kernel's MACs), --size 18 and 1400, paced at 100 kpps: tshark, an
   independent reader, finds 1000 data frames of 60 / 1442 B and 3 end
   markers, every IP and UDP checksum good. The payloads, decoded here with
   the test's own encoder (inject_frames.py), are stream 0, sequences
   0..999 in order (the short form compared byte for byte, the long form by
   its checksum); each record's time is the packet's send stamp (record time
   minus stamp is one constant) and the stamps show the pacing.
2. pktgen --replay FILE --backend afpacket --device A (and the 1400 B file
   on afxdp, and on dpdk through a net_af_packet port on A, too) into rx
   --backend afpacket on B: rx counts 1000 received, 0 lost; tcpdump on B's veth
   captures exactly the file's frames, byte for byte, in order; A's veth
   tx_packets grew by the file's frame count. --count 2500 on the null
   backend sends 2500 frames (the file looped).
3. pktgen --replay FILE --replay-stamp: a capture of someone else's UDP
   (two flows to port 9000, payloads of 18, 64, 200 and 1400 B with random
   bytes, an ARP frame and 10-byte datagrams between them) into rx afpacket:
   rx counts two streams, 600 each (every frame with room for a stamp), 0
   lost, their end markers believed; tcpdump on B sees every frame of the
   file with its own length and headers, the stamped ones with good UDP
   checksums, the rest byte for byte, plus 3 end markers per flow.
4. Bad inputs, each one line on stderr, exit 2, A's tx_packets unchanged:
   an empty file, a truncated one, a text file, a pcapng, a frame longer
   than the MTU + 14, a socket backend, --pcap-out without --count.
"""
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, Checks, Lab, finish, hugepages_free, result_record, sh, start_rx
from collections import Counter
from inject_frames import frame, payload_checksum, pcap_records, short_payload, write_pcap

N = 1000
c = Checks("pcap")


def tshark_rows(pcap, fields, extra=()):
    out = sh("tshark", "-r", pcap, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", *extra,
             "-T", "fields", *[a for f in fields for a in ("-e", f)], capture=True, timeout=120)
    return [line.split("\t") for line in out.splitlines() if line.strip()]


def write_capture(lab, tmp, size):
    path = os.path.join(tmp, f"out-{size}.pcap")
    json_path = os.path.join(tmp, f"out-{size}.json")
    r = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--pcap-out", path, "--dst", lab.ip_b, "--count", str(N),
                        "--size", str(size), "--rate", "100k", "--burst", "10", "--quiet", "--json", json_path],
                       capture_output=True, text=True, timeout=60)
    c.eq(f"--pcap-out size {size}: exit code", r.returncode, 0)
    if r.returncode:
        print(r.stdout[-1500:], r.stderr[-1500:])
        return path
    res = result_record(json_path, "pktgen")
    c.eq(f"--pcap-out size {size}: sent, end markers, frames in the file",
         (res["sent"], res["end_markers"], res["pcap_frames"]), (N, 3, N + 3))

    data_len = 42 + size
    rows = tshark_rows(path, ["frame.len", "ip.checksum.status", "udp.checksum.status"])
    # Data payloads by their first bytes: the short form's tag 'r', or the long form's kind 1 (end markers: 2).
    data = tshark_rows(path, ["frame.len"], ["-Y", "udp.payload[0:1] == 72" if size < 32 else "udp.payload[5:1] == 01"])
    c.eq(f"tshark size {size}: frames in the file", len(rows), N + 3)
    c.eq(f"tshark size {size}: data frames", len(data), N)
    c.eq(f"tshark size {size}: data frame lengths", sorted({r[0] for r in data}), [str(max(data_len, 60))])
    c.eq(f"tshark size {size}: frames with IP and UDP checksums verified good",
         sum(1 for r in rows if r[1:3] == ["1", "1"]), N + 3)

    records = pcap_records(path)
    mac_b = bytes.fromhex(lab.mac(lab.ns_b, lab.if_b).replace(":", ""))
    c.eq(f"size {size}: destination MAC is B's (the kernel's neighbour entry)", {f[:6] for _, f in records}, {mac_b})
    seqs, offsets, bad, stamps = [], set(), 0, []
    for t_ns, f in records[:N]:
        p = f[42:42 + size]
        if size < 32:
            seq = int.from_bytes(p[6:12], "big")
            sender = int.from_bytes(p[2:4], "big")
            tx48 = int.from_bytes(p[12:18], "big")
            bad += p != short_payload(0, seq, size, sender=sender, tx_ns=tx48)
            offsets.add((t_ns - tx48) % (1 << 48))
            stamps.append(tx48)
        else:
            magic, _, kind, stream, seq, tx_ns = struct.unpack(">IBBHQQ", p[:24])
            bad += (magic, kind, stream) != (0x524C4E31, 1, 0) or payload_checksum(p) != struct.unpack(">I", p[28:32])[0]
            offsets.add(t_ns - tx_ns)
            stamps.append(tx_ns)
        seqs.append(seq)
    c.true(f"size {size}: sequences 0..{N - 1}, in file order", seqs == list(range(N)),
           f"{len(seqs)} sequences, first out of place at {next((i for i, q in enumerate(seqs) if q != i), None)}")
    c.eq(f"size {size}: payloads that differ from the test's own encoder / fail its checksum", bad, 0)
    c.eq(f"size {size}: record time - send stamp takes one value (record times are the send stamps)", len(offsets), 1)
    span_ms = (stamps[-1] - stamps[0]) / 1e6
    c.true(f"size {size}: stamps show the pacing (1000 at 100 kpps: ~10 ms)", 9.0 < span_ms < 200, f"{span_ms:.2f} ms")
    return path


def write_capture_threads(lab, tmp):
    """--pcap-out with --threads 2 and four flows: one file, records in send-stamp order, every stream's
    sequences in order, per-stream counts == pktgen's, data + end markers == pcap_frames."""
    path, json_path = os.path.join(tmp, "threads.pcap"), os.path.join(tmp, "threads.json")
    count = 10001
    r = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--pcap-out", path, "--dst", lab.ip_b, "--threads", "2",
                        "--src-port", "5000-5003", "--count", str(count), "--size", "200", "--rate", "100k", "--quiet",
                        "--json", json_path], capture_output=True, text=True, timeout=60)
    c.eq("--pcap-out --threads 2: exit code", r.returncode, 0)
    if r.returncode:
        print(r.stdout[-1500:], r.stderr[-1500:])
        return
    res = result_record(json_path, "pktgen")
    c.eq("--pcap-out --threads 2: sent, end markers, frames in the file", (res["sent"], res["end_markers"], res["pcap_frames"]),
         (count, 12, count + 12))
    rows = tshark_rows(path, ["udp.srcport", "ip.checksum.status", "udp.checksum.status"], ["-Y", "udp.payload[5:1] == 01"])
    c.eq("tshark --threads 2: data frames, checksums good", (len(rows), sum(x[1:] == ["1", "1"] for x in rows)), (count, count))
    sent = {5000 + s["stream"]: s["sent"] for s in res["streams"]}
    c.eq("tshark --threads 2: data frames per source port == pktgen per stream", dict(Counter(int(x[0]) for x in rows)), sent)
    records = pcap_records(path)
    times = [t for t, _ in records]
    c.true("--threads 2: records in time order", all(a <= b for a, b in zip(times, times[1:])),
           f"first out of order at {next((i for i in range(1, len(times)) if times[i] < times[i - 1]), None)}")
    seqs = {}
    for _, f in records:
        p = f[42:]
        if struct.unpack(">I", p[:4])[0] == 0x524C4E31 and p[5] == 1:
            seqs.setdefault(struct.unpack(">H", f[34:36])[0], []).append(struct.unpack(">Q", p[8:16])[0])
    c.true("--threads 2: every stream's sequences 0.. in file order",
           all(q == list(range(len(q))) for q in seqs.values()) and len(seqs) == 4, str({k: len(v) for k, v in seqs.items()}))


def replay(lab, tmp, path, tag, backend="afpacket"):
    rx_json = os.path.join(tmp, f"rx-{tag}.json")
    cap_path = os.path.join(tmp, f"wire-{tag}.pcap")
    file_frames = [f for _, f in pcap_records(path)]
    # -c: tcpdump ends by itself once it has written them all (a kill could cut its buffer short).
    cap = subprocess.Popen(["ip", "netns", "exec", lab.ns_b, "tcpdump", "-n", "-s", "0", "-B", "16384", "-i", lab.if_b,
                            "-c", str(len(file_frames)), "-w", cap_path, "udp", "port", "9000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    lab.procs.append(cap)
    cap.stderr.readline()  # "listening on ..."
    rx = start_rx(lab, ["--backend", "afpacket", "--device", lab.if_b, "--json", rx_json, "--quiet"])
    before = lab.counter("a", "tx_packets")
    # DPDK sends through a net_af_packet port on A's veth (its own EAL arguments, no --device).
    on = (["--backend", "dpdk", "--cores", "0", "--", "--no-pci", f"--vdev=net_af_packet0,iface={lab.if_a}"]
          if backend == "dpdk" else ["--backend", backend, "--device", lab.if_a])
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--replay", path, "--rate", "20k", "--quiet", *on],
                        capture_output=True, text=True, timeout=60)
    c.eq(f"replay {tag}: pktgen exit code", tx.returncode, 0)
    if tx.returncode:
        print(tx.stdout[-1500:], tx.stderr[-1500:])
    rc, out, err = finish(rx, timeout=60)
    c.eq(f"replay {tag}: rx exit code", rc, 0)
    if rc:
        print(out[-1500:], err[-1500:])
    sent = lab.counter("a", "tx_packets") - before
    try:
        _, cap_err = cap.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        cap.terminate()
        _, cap_err = cap.communicate(timeout=30)
    r = result_record(rx_json, "rx")
    c.eq(f"replay {tag}: rx received, lost", (r["received"], r["lost"]), (N, 0))
    c.eq(f"replay {tag}: corrupt + malformed + bad UDP checksum",
         (r["corrupt"], r["malformed"], r.get("bad_udp_checksum")), (0, 0, 0))
    c.eq(f"replay {tag}: A's tx_packets delta", sent, len(file_frames))
    c.true(f"replay {tag}: tcpdump dropped nothing", "\n0 packets dropped by kernel" in "\n" + cap_err, cap_err.strip())
    wire = [f for _, f in pcap_records(cap_path)]
    c.eq(f"replay {tag}: frames on the wire", len(wire), len(file_frames))
    c.true(f"replay {tag}: the wire's frames are the file's, byte for byte, in order", wire == file_frames,
           f"first difference at frame {next((i for i, (a, b) in enumerate(zip(wire, file_frames)) if a != b), None)}")


def replay_stamped(lab, tmp):
    rng = random.Random(7)
    mac_a = bytes.fromhex(lab.mac(lab.ns_a, lab.if_a).replace(":", ""))
    mac_b = bytes.fromhex(lab.mac(lab.ns_b, lab.if_b).replace(":", ""))
    ip_a, ip_b = socket.inet_aton(lab.ip_a), socket.inet_aton(lab.ip_b)
    arp = mac_b + mac_a + b"\x08\x06" + bytes(28)
    frames, stamped, as_is = [], Counter(), []
    for i in range(1200):
        sport, size = (5000, (18, 64, 1400)[i % 3]) if i % 2 == 0 else (5001, 200)
        frames.append(frame(mac_a, mac_b, ip_a, ip_b, sport, 9000, bytes(rng.randrange(256) for _ in range(size))))
        stamped[sport] += 1
        if i % 200 == 0:
            as_is += [len(frames), len(frames) + 1]
            frames.append(arp)
            frames.append(frame(mac_a, mac_b, ip_a, ip_b, 5002, 9000, b"0123456789"))
    path = os.path.join(tmp, "foreign.pcap")
    write_pcap(path, frames)
    rx_json, cap_path = os.path.join(tmp, "rx-stamped.json"), os.path.join(tmp, "wire-stamped.pcap")
    want_on_wire = len(frames) + 3 * 2
    cap = subprocess.Popen(["ip", "netns", "exec", lab.ns_b, "tcpdump", "-n", "-s", "0", "-B", "16384", "-i", lab.if_b,
                            "-c", str(want_on_wire), "-w", cap_path, "ether", "src", lab.mac(lab.ns_a, lab.if_a)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lab.procs.append(cap)
    cap.stderr.readline()
    rx = start_rx(lab, ["--backend", "afpacket", "--device", lab.if_b, "--json", rx_json, "--quiet"])
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--replay", path, "--replay-stamp", "--backend",
                         "afpacket", "--device", lab.if_a, "--rate", "20k", "--quiet"], capture_output=True, text=True,
                        timeout=60)
    c.eq("replay-stamp: pktgen exit code", tx.returncode, 0)
    if tx.returncode:
        print(tx.stdout[-1500:], tx.stderr[-1500:])
    rc, out, err = finish(rx, timeout=60)
    c.eq("replay-stamp: rx exit code", rc, 0)
    try:
        cap.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        cap.terminate()
        cap.communicate(timeout=30)
    r = result_record(rx_json, "rx")
    rows = sorted((int(s["from"].rsplit(":", 1)[1]), s["received"], s["sent"], s["lost"]) for s in r["streams"])
    c.eq("replay-stamp: rx streams (source port, received, sent by its end marker, lost)", rows,
         [(5000, stamped[5000], stamped[5000], 0), (5001, stamped[5001], stamped[5001], 0)])
    c.eq("replay-stamp: rx ended by its end markers", r["ended_by"], "end markers")
    c.eq("replay-stamp: corrupt, malformed, bad UDP checksum", (r["corrupt"], r["malformed"], r["bad_udp_checksum"]),
         (0, 0, 0))
    wire = [f for _, f in pcap_records(cap_path)]
    c.eq("replay-stamp: frames on the wire (the file's + 3 end markers per flow)", len(wire), want_on_wire)
    c.eq("replay-stamp: the file's frames in order: those whose length or headers (up to the UDP checksum) differ",
         [i for i, (w, f) in enumerate(zip(wire, frames)) if len(w) != len(f) or w[:40] != f[:40]], [])
    c.eq("replay-stamp: the frames without room for a stamp (ARP, 10 B datagrams) byte for byte",
         [wire[i] == frames[i] for i in as_is if i < len(wire)], [True] * len(as_is))
    good = tshark_rows(cap_path, ["udp.checksum.status"], ("-Y", "udp"))
    c.eq("replay-stamp: tshark: every UDP checksum good", sum(r_ == ["1"] for r_ in good), len(good))


def bad_inputs(lab, tmp, good):
    empty = os.path.join(tmp, "empty.pcap")
    open(empty, "wb").close()
    truncated = os.path.join(tmp, "truncated.pcap")
    with open(good, "rb") as f:
        open(truncated, "wb").write(f.read()[:24 + 16 + 60 + 16 + 30])  # the second record cut in its frame
    text = os.path.join(tmp, "text.pcap")
    open(text, "w").write("this is not a capture\n")
    ng = os.path.join(tmp, "capture.pcapng")
    sh("editcap", "-F", "pcapng", good, ng)
    long_frame = os.path.join(tmp, "long.pcap")
    src, dst = bytes(map(int, lab.ip_a.split("."))), bytes(map(int, lab.ip_b.split(".")))
    smac = bytes.fromhex(lab.mac(lab.ns_a, lab.if_a).replace(":", ""))
    dmac = bytes.fromhex(lab.mac(lab.ns_b, lab.if_b).replace(":", ""))
    write_pcap(long_frame, [frame(smac, dmac, src, dst, 40000, 9000, bytes(1500 - 28 + 1))])  # IP 1501 B > MTU 1500
    replay_on = ["--backend", "afpacket", "--device", lab.if_a]
    cases = [
        ("empty file", ["--replay", empty, *replay_on], "empty"),
        ("truncated file", ["--replay", truncated, *replay_on], "truncated"),
        ("not a pcap", ["--replay", text, *replay_on], "not a pcap"),
        ("pcapng", ["--replay", ng, *replay_on], "pcapng not supported, convert with editcap -F pcap"),
        ("frame longer than MTU + 14", ["--replay", long_frame, *replay_on], "MTU"),
        ("socket backend", ["--replay", good, "--backend", "socket", "--dst", lab.ip_b], "cannot"),
        ("--pcap-out without --count", ["--pcap-out", os.path.join(tmp, "endless.pcap")], "--count or --duration"),
    ]
    for what, args, says in cases:
        before = lab.counter("a", "tx_packets")
        r = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, *args, "--quiet"], capture_output=True, text=True,
                           timeout=30)
        lines = r.stderr.strip().splitlines()
        c.eq(f"{what}: exit code", r.returncode, 2)
        c.true(f"{what}: one line on stderr saying why", len(lines) == 1 and says in lines[0], r.stderr.strip())
        c.eq(f"{what}: nothing sent (A's tx_packets delta)", lab.counter("a", "tx_packets") - before, 0)
    c.true("--pcap-out without --count: no file made", not os.path.exists(os.path.join(tmp, "endless.pcap")))


def main():
    with Lab("pc") as lab, tempfile.TemporaryDirectory() as tmp:
        # The lab's static neighbour entries alone: no ARP or IPv6 chatter in the captures.
        short = write_capture(lab, tmp, 18)
        long_ = write_capture(lab, tmp, 1400)
        write_capture_threads(lab, tmp)
        shapes = [(short, "18", "afpacket"), (long_, "1400", "afpacket"), (long_, "1400-afxdp", "afxdp")]
        if hugepages_free() >= 128 and not os.environ.get("RATELINE_SANITIZED"):
            shapes.append((long_, "1400-dpdk", "dpdk"))
        else:
            print("SKIP replay on dpdk: needs 128 free hugepages and no sanitizer", flush=True)
        for path, tag, backend in shapes:
            if os.path.exists(path):
                replay(lab, tmp, path, tag, backend)
        loop_json = os.path.join(tmp, "loop.json")
        r = subprocess.run([PKTGEN, "--replay", short, "--backend", "null", "--count", "2500", "--quiet", "--json",
                            loop_json], capture_output=True, text=True, timeout=30)
        c.eq("replay --count 2500 (null backend): exit code", r.returncode, 0)
        if r.returncode == 0:
            c.eq("replay --count 2500: frames sent (the file looped)", result_record(loop_json, "pktgen")["sent"], 2500)
        replay_stamped(lab, tmp)
        bad_inputs(lab, tmp, short)
    c.done()


if __name__ == "__main__":
    main()
