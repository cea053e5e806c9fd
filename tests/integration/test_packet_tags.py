#!/usr/bin/env python3
"""--key-file on both ends: on a network where strangers send to rx's port,
only the keyed sender is counted at all.

On every receiver that counts in user space (socket, uring, afpacket,
afxdp; dpdk on net_af_packet), rx --key-file K gets, in this order:
- a pktgen without a key and a pktgen with another key (other source ports),
  each a whole run with its end markers;
- the keyed pktgen's run (socket, uring, afpacket, afxdp senders), and during
  it (socket senders) forge_frames.py's forgeries as that
  very stream (its address, port, sender id, and the tag of a captured
  packet): end markers claiming 5 and 10^15, sequences 2^64 - 2 and 10^12, a
  lone marker and a prefill of the stream's own sequences from other ports.
The keyed stream must come out exact (received == sent, lost 0, duplicated
0, ended by its own end markers) and be the only stream; everything else is
`unauthenticated`, exactly what the strangers and the forger sent. The
receiving veth's rx_packets is the independent observer: keyed packets +
markers + unauthenticated. Then the round trip with a key (rx --reflect,
pktgen --rtt), and the refusals: a BPF sender or receiver, no room for the
tag, a key file others can read. Under the sanitizer stage
(RATELINE_SANITIZED) the socket and afxdp receivers with the forger and
the afpacket and afxdp senders run; uring and the socket-sent afpacket
shape are the main suite's."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, RX, Checks, Lab, finish, hugepages_free, refused_usage, result_record, rx_args, start_rx

SPORT = 6300
PREFILL = 3000
here = os.path.dirname(os.path.abspath(__file__))
c = Checks("packet_tags")
SANITIZED = os.environ.get("RATELINE_SANITIZED", "")


def key_file(path, mode=0o600):
    with open(path, "wb") as f:
        f.write(os.urandom(32))
    os.chmod(path, mode)
    return path


def pktgen(lab, args, json_path):
    return subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--dst", lab.ip_b, "--quiet", "--json", json_path,
                           *args], capture_output=True, text=True, timeout=60)


with tempfile.TemporaryDirectory() as tmp, Lab("k", subnet=14) as lab:
    key, other_key = key_file(os.path.join(tmp, "key")), key_file(os.path.join(tmp, "other"))
    mac_b = lab.mac(lab.ns_b, lab.if_b)
    # (receiver, sender, keyed --size, forge): the sender's backend writes the tag (and, raw, the UDP
    # checksum over it). The forger learns the stream from a socket sender's frames on their way out (a raw
    # sender's bypass the taps) and reads the long header (40 B with the tag: the smallest).
    cases = [("socket", "socket", 40, True), ("uring", "uring", 200, True), ("afpacket", "socket", 64, True),
             ("afxdp", "socket", 1400, True), ("afpacket", "afpacket", 64, False), ("afxdp", "afxdp", 26, False)]
    if hugepages_free() >= 128 and not SANITIZED:
        cases.append(("dpdk", "socket", 100, True))
    if SANITIZED:  # each receiver's and each raw sender's tag path once, instrumented; the rest is the main suite's
        cases = [cases[i] for i in (0, 3, 4, 5)]
    for rx_b, tx_b, size, forge in cases:
        tag = f"{rx_b} <- {tx_b} {size} B"
        raw_tx = [] if tx_b in ("socket", "uring") else ["--device", lab.if_a, "--dst-mac", mac_b]
        name = f"{rx_b}-{tx_b}-{size}"
        rx_json = os.path.join(tmp, f"rx-{name}.json")
        rx = start_rx(lab, rx_args(lab, rx_b, rx_json, ["--key-file", key]), ready_timeout=30)
        before = lab.counter("b", "rx_packets")
        strangers = 0
        for i, extra in enumerate(([], ["--key-file", other_key])):
            sj = os.path.join(tmp, f"stranger-{name}-{i}.json")
            p = pktgen(lab, ["--backend", "socket", "--src-port", str(SPORT + 1 + i), "--count", "2000", "--rate", "20k",
                             "--size", "200", *extra], sj)
            c.eq(f"{tag}: stranger {i} exit code", p.returncode, 0)
            s = result_record(sj, "pktgen")
            strangers += s["sent"] + s["end_markers"]
        if forge:
            forger = lab.spawn(lab.ns_a, [sys.executable, os.path.join(here, "forge_frames.py"), lab.if_a, lab.ip_a,
                                          lab.ip_b, mac_b, "9000", str(SPORT), "--prefill", str(PREFILL),
                                          "--tag-bytes", "8"])
            c.eq(f"{tag}: forger ready", forger.stdout.readline().strip(), "ready")
        tx_json = os.path.join(tmp, f"tx-{name}.json")
        tx = lab.spawn(lab.ns_a, [PKTGEN, "--backend", tx_b, *raw_tx, "--dst", lab.ip_b, "--src-port", str(SPORT),
                                  "--rate", "20k", "--count", "40000", "--size", str(size), "--key-file", key,
                                  "--quiet", "--json", tx_json])
        forged_frames = 0
        if forge:
            fout, ferr = forger.communicate(timeout=30)
            c.eq(f"{tag}: forger exit code", forger.returncode, 0)
            forged = json.loads(fout.strip().splitlines()[-1]) if forger.returncode == 0 else {}
            forged_frames = 2 + 2 + 1 + PREFILL
        tout, terr = tx.communicate(timeout=60)
        c.eq(f"{tag}: keyed pktgen exit code", tx.returncode, 0)
        rc, out, err = finish(rx)
        c.eq(f"{tag}: rx exit code", rc, 0)
        t = result_record(tx_json, "pktgen")
        r = result_record(rx_json, "rx")
        arrived = lab.counter("b", "rx_packets") - before
        if forge:
            c.eq(f"{tag}: forger saw the keyed sender's id", forged.get("sender"), t["sender_id"])
        c.eq(f"{tag}: veth rx_packets == keyed packets + markers + strangers' + forged", arrived,
             t["sent"] + t["end_markers"] + strangers + forged_frames)
        c.eq(f"{tag}: unauthenticated == strangers' packets and markers + forged frames", r["unauthenticated"],
             strangers + forged_frames)
        c.eq(f"{tag}: rx received == keyed pktgen sent", r["received"], t["sent"])
        c.eq(f"{tag}: lost, duplicated", (r["lost"], r["duplicated"]), (0, 0))
        c.eq(f"{tag}: believed total == sent", r["sent"], t["sent"])
        c.eq(f"{tag}: ended by the keyed sender's markers", r["ended_by"], "end markers")
        c.eq(f"{tag}: the only stream is the keyed sender's", [(s["from"], s["sender_id"]) for s in r["streams"]],
             [(f"{lab.ip_a}:{SPORT}", t["sender_id"])])
        c.eq(f"{tag}: nothing else classified", (r["foreign"], r["malformed"], r["corrupt"], r["implausible"],
                                               r["implausible_markers"], r["unknown_stream"]), (0, 0, 0, 0, 0, 0))
        c.eq(f"{tag}: keyed payload bytes (tag included)", r["payload_bytes"], t["sent"] * size)
        c.true(f"{tag}: table names them", f"unauthenticated: {r['unauthenticated']} datagrams" in out, out[-600:])

    # The round trip with a key, short form (26 B: a 72 B frame): the reflected packet keeps its tag, pktgen checks it.
    rx_json, tx_json = os.path.join(tmp, "rx-rtt.json"), os.path.join(tmp, "tx-rtt.json")
    rx = start_rx(lab, rx_args(lab, "socket", rx_json, ["--key-file", key, "--reflect"]))
    p = pktgen(lab, ["--backend", "socket", "--count", "5000", "--rate", "20k", "--size", "26", "--key-file", key,
                     "--rtt"], tx_json)
    c.eq("rtt with a key: pktgen exit code", p.returncode, 0)
    rc, out, err = finish(rx)
    t, r = result_record(tx_json, "pktgen"), result_record(rx_json, "rx")
    c.eq("rtt with a key: rx received == sent", r["received"], t["sent"])
    c.eq("rtt with a key: replies timed == rx reflected", t["rtt"]["replies"], r["reflected"])
    c.true("rtt with a key: most came back", r["reflected"] >= t["sent"] - r["reflect_failed"] and r["reflected"] > 0,
           json.dumps(t["rtt"]))
    c.eq("rtt with a key: nothing unauthenticated either way", (t["rtt"]["unauthenticated"], r["unauthenticated"]), (0, 0))

    # Refusals: one line, exit 2, nothing sent.
    loose = key_file(os.path.join(tmp, "loose"), 0o644)
    refused_usage(lab, c, ["--backend", "xdp", "--device", lab.if_a, "--key-file", key], "BPF program", "pktgen xdp")
    refused_usage(lab, c, ["--size", "25", "--key-file", key], "needs 18 (--size 26 or more: a 72 B frame)", "no room")
    refused_usage(lab, c, ["--key-file", loose], "chmod 600", "loose key file")
    refused_usage(lab, c, ["--key-file", os.path.join(tmp, "missing")], "No such file", "missing key file")
    p = subprocess.run(["ip", "netns", "exec", lab.ns_b, RX, "--backend", "xdp", "--device", lab.if_b, "--key-file", key],
                       capture_output=True, text=True, timeout=30)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    c.eq("rx xdp --key-file: exit code", p.returncode, 2)
    c.true("rx xdp --key-file: one line", len(lines) == 1 and "counts in a BPF program" in lines[0], p.stderr)
c.done()
