#!/usr/bin/env python3
"""XDP-native backend (--backend xdp) in a netns/veth lab.

Every pairing with xdp on one side is exact against the interface counters
(xdp->xdp, xdp->socket, socket->xdp, afpacket->xdp, and several streams from
two threads); frames the in-kernel generator writes pass tshark's IP/UDP
checksum checks and an independent check of our payload (checksum and
pattern, in Python); loss injected where neither end can see it is counted
exactly (netdev egress drop on the sender for socket->xdp, netdev ingress drop
on the receiver for xdp->socket); the independent encoder's corrupt,
duplicate and foreign frames are classified; --layers under overload counts
everything at the driver and sent - socket drops at the sockets; no XDP
program is left on either veth after any run, Ctrl-C or SIGKILL (bpf_link).

A veth delivers XDP frames (what pktgen --backend xdp sends) only to a peer
that has NAPI on: an XDP program there (rx --backend xdp) or GRO. For
xdp->socket the receiving veth gets GRO on (UDP is not aggregated without
UDP_GRO on the socket, so every datagram stays one packet).
"""
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import LAB_DIR, RX, Checks, Lab, PKTGEN, finish, link_flap, result_record, sh, start_rx
from inject_frames import M64, STEP, pattern_seed, payload_checksum, pcap_frames

N = 20000
c = Checks("xdp")


def xdp_on(lab, side):
    ns, ifn = (lab.ns_a, lab.if_a) if side == "a" else (lab.ns_b, lab.if_b)
    return " xdp" in sh("ip", "link", "show", "dev", ifn, ns=ns, capture=True)


def no_xdp_left(lab, tag):
    for _ in range(50):  # a killed process's links go when its files are closed
        if not xdp_on(lab, "a") and not xdp_on(lab, "b"):
            break
        time.sleep(0.1)
    c.true(f"{tag}: no XDP program left on either veth", not xdp_on(lab, "a") and not xdp_on(lab, "b"))


def pktgen(lab, tx_backend, args, dst=None, timeout=60):
    return subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", tx_backend, "--dst", dst or lab.ip_b]
                          + args, capture_output=True, text=True, timeout=timeout)


def run(lab, tmp, tx_backend, rx_backend, tag, tx_args=None, rx_args=None, dst=None):
    rx_json = os.path.join(tmp, f"rx-{tag}.json".replace(" ", "_").replace(">", ""))
    tx_json = rx_json.replace("rx-", "tx-")
    rx = start_rx(lab, ["--backend", rx_backend, "--device", lab.if_b, "--json", rx_json, "--quiet"] + (rx_args or []))
    before = lab.counter("b", "rx_packets")
    tx = pktgen(lab, tx_backend, (tx_args or ["--count", str(N), "--rate", "60k", "--size", "700"])
                + ["--quiet", "--json", tx_json], dst=dst)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    if tx.returncode:
        print(tx.stdout, tx.stderr)
    rc, out, err = finish(rx)
    c.eq(f"{tag}: rx exit code", rc, 0)
    if rc:
        print(out, err)
    no_xdp_left(lab, tag)
    return result_record(rx_json, "rx"), result_record(tx_json, "pktgen"), lab.counter("b", "rx_packets") - before


def check_payloads(frames, size):
    """Our payload, checked without rateline's code: the checksum, and for
    data packets the pattern seed + i * step, seed = pattern_seed(stream, seq)."""
    bad_sum = bad_pattern = 0
    seqs = set()
    for f in frames:
        p = f[42:]  # Ethernet + IPv4 + UDP
        magic, _, kind, stream, seq, _, length, csum = struct.unpack(">IBBHQQII", p[:32])
        if payload_checksum(p[:28] + b"\0\0\0\0" + p[32:]) != csum:
            bad_sum += 1
        if kind != 1:
            continue
        seqs.add(seq)
        seed = pattern_seed(stream, seq)
        padded = p + b"\0" * (-len(p) % 8)
        for i in range(4, len(padded) // 8):
            want = (seed + i * STEP) & M64
            got = int.from_bytes(padded[8 * i:8 * i + 8], "little")
            if i == len(p) // 8:  # the partial last word: only its bytes
                want &= (1 << (8 * (len(p) % 8))) - 1
            if got != want:
                bad_pattern += 1
                break
    return bad_sum, bad_pattern, seqs


def nft_counter(lab, ns, table):
    ruleset = json.loads(sh("nft", "-j", "list", "table", "netdev", table, ns=ns, capture=True))
    exprs = [e["rule"]["expr"] for e in ruleset["nftables"] if "rule" in e][0]
    return [x["counter"]["packets"] for x in exprs if "counter" in x][0]


def xdp_tx_refused(lab):
    """Why the kernel refuses the in-kernel generator to root, or "". Some
    hosts (a BPF LSM policy in a sandbox) answer BPF_PROG_RUN with live frames
    EPERM whatever the capabilities: the generator's parts are then skipped,
    saying so, and the receiving parts still run."""
    tx = pktgen(lab, "xdp", ["--count", "10", "--quiet"])
    if tx.returncode and "Operation not permitted" in tx.stderr and os.geteuid() == 0:
        return tx.stderr.strip().splitlines()[-1]
    return ""


def skip(what):
    print(f"SKIP {what}: {XDP_TX_REFUSED}", flush=True)


with tempfile.TemporaryDirectory() as tmp, Lab("x", subnet=20) as lab:
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)  # NAPI on the receiving veth: see the docstring
    XDP_TX_REFUSED = xdp_tx_refused(lab)
    no_xdp_left(lab, "probe")

    for tx_b, rx_b in (("xdp", "xdp"), ("xdp", "socket"), ("socket", "xdp"), ("afpacket", "xdp")):
        tag = f"{tx_b}->{rx_b}"
        if tx_b == "xdp" and XDP_TX_REFUSED:
            skip(tag)
            continue
        r, t, delta = run(lab, tmp, tx_b, rx_b, tag)
        c.eq(f"{tag}: pktgen sent", t["sent"], N)
        c.eq(f"{tag}: pktgen failed (refused by the driver)", t["failed"], 0)
        c.eq(f"{tag}: received", r["received"], N)
        c.eq(f"{tag}: lost", r["lost"], 0)
        c.eq(f"{tag}: sent (end markers)", r["sent"], N)
        c.eq(f"{tag}: corrupt", r["corrupt"], 0)
        c.eq(f"{tag}: interface rx_packets delta", delta, r["received"] + r["end_markers"])
        if rx_b == "xdp":
            c.eq(f"{tag}: backend in the record", r["backend"], "xdp")
            # Timed in the kernel: sequences 0, 16, 32, ... (the rest counted and checked, not timed).
            c.true(f"{tag}: latency measured in the kernel, for every 16th sequence",
                   r["latency_ns"] and r["latency_ns"]["samples"] == (N + 15) // 16,
                   f'samples {(r["latency_ns"] or {}).get("samples")} of {(N + 15) // 16}; stamps ahead of the kernel clock: '
                   f'{sum(x.get("clock_behind", 0) for x in r.get("streams", []))}')

    # Several streams from two threads, every one exact (per-stream state, per-stream lock).
    if XDP_TX_REFUSED:
        skip("xdp->xdp, 2 threads x 2 streams")
    else:
        r, t, delta = run(lab, tmp, "xdp", "xdp", "xdp->xdp, 2 threads x 2 streams",
                          tx_args=["--count", str(N), "--rate", "80k", "--size", "333", "--threads", "2",
                                   "--src-port", "5000-5003"])
        c.eq("4 streams: received", r["received"], N)
        c.eq("4 streams: lost", r["lost"], 0)
        c.eq("4 streams: streams reported", sorted(s["stream"] for s in r["streams"]), [0, 1, 2, 3])
        c.eq("4 streams: per-stream received == sent", [s["received"] for s in sorted(r["streams"], key=lambda s: s["stream"])],
             [s["sent"] for s in sorted(t["streams"], key=lambda s: s["stream"])])
        c.eq("4 streams: interface rx_packets delta", delta, r["received"] + r["end_markers"])
        got = [s["received"] for s in r["streams"]]
        c.true("4 streams: per-stream counts at most 1 apart", max(got) - min(got) <= 1, str(got))

    # Frames the kernel generated, checked by tshark (IP and UDP checksums) and by Python (our payload).
    if XDP_TX_REFUSED:
        skip("tshark checks of the generator's frames")
    else:
        pcap = os.path.join(tmp, "xdp.pcap")
        cap = subprocess.Popen(["ip", "netns", "exec", lab.ns_b, "tcpdump", "-n", "-s", "0", "-B", "16384", "-i", lab.if_b,
                                "-w", pcap, "udp", "port", "9000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
        lab.procs.append(cap)
        cap.stderr.readline()
        for size in ("1000", "37"):  # 37: a partial last pattern word
            tx = pktgen(lab, "xdp", ["--count", "500", "--rate", "20k", "--size", size, "--quiet"])
            c.eq(f"tshark run, --size {size}: pktgen exit code", tx.returncode, 0)
        time.sleep(1.0)
        cap.send_signal(signal.SIGINT)
        cap.communicate(timeout=10)
        fields = sh("tshark", "-r", pcap, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-T", "fields",
                    "-e", "ip.checksum.status", "-e", "udp.checksum.status", capture=True, timeout=60)
        rows = [l.split("\t") for l in fields.splitlines() if l.strip()]
        c.eq("tshark: frames captured", len(rows), 1006)
        c.eq("tshark: frames with a bad IP or UDP checksum", sum(1 for r in rows if "0" in r), 0)
        c.eq("tshark: frames whose checksums were verified good", sum(1 for r in rows if r == ["1", "1"]), 1006)
        bad_sum, bad_pattern, seqs = check_payloads(pcap_frames(pcap), 1000)
        c.eq("payload checksum (independent check): bad frames", bad_sum, 0)
        c.eq("pattern seed + i*step, seed = pattern_seed(stream, seq): bad frames", bad_pattern, 0)
        c.true("sequences seen: exactly 0..499", seqs == set(range(500)), f"{len(seqs)} distinct, {min(seqs)}..{max(seqs)}")

    # Loss before the wire, which the xdp receiver cannot see (netdev egress on the sender).
    rules = ("table netdev rltest {\n chain eg { type filter hook egress device %s priority 0; policy accept;\n"
             "  udp dport 9000 @th,104,8 1 numgen inc mod 11 0 counter drop\n }\n}\n" % lab.if_a)
    path = os.path.join(tmp, "eg.nft")
    open(path, "w").write(rules)
    sh("nft", "-f", path, ns=lab.ns_a)
    r, t, delta = run(lab, tmp, "socket", "xdp", "socket->xdp, every 11th dropped")
    dropped = nft_counter(lab, lab.ns_a, "rltest")
    sh("nft", "delete", "table", "netdev", "rltest", ns=lab.ns_a)
    c.true("egress: nft dropped every 11th", dropped in (N // 11, N // 11 + 1), str(dropped))
    c.eq("egress: xdp rx lost == nft drop counter", r["lost"], dropped)
    c.eq("egress: xdp rx received", r["received"], N - dropped)

    # Loss after the wire, behind the kernel-made frames (netdev ingress on the receiver, after
    # the veth, before the socket): the xdp sender's sequence is exact.
    if XDP_TX_REFUSED:
        skip("xdp->socket, every 13th dropped")
    else:
        rules = ("table netdev rltest {\n chain in { type filter hook ingress device %s priority 0; policy accept;\n"
                 "  udp dport 9000 @th,104,8 1 numgen inc mod 13 0 counter drop\n }\n}\n" % lab.if_b)
        open(path, "w").write(rules)
        sh("nft", "-f", path, ns=lab.ns_b)
        r, t, delta = run(lab, tmp, "xdp", "socket", "xdp->socket, every 13th dropped")
        dropped = nft_counter(lab, lab.ns_b, "rltest")
        sh("nft", "delete", "table", "netdev", "rltest", ns=lab.ns_b)
        c.true("ingress: nft dropped every 13th", dropped in (N // 13, N // 13 + 1), str(dropped))
        c.eq("ingress: socket rx lost == nft drop counter", r["lost"], dropped)
        c.eq("ingress: socket rx received", r["received"], N - dropped)

    # An independent encoder's valid, corrupt, duplicate and foreign frames.
    VALID, CORRUPT, DUPS, FOREIGN = 2000, 150, 40, 25
    rx_json = os.path.join(tmp, "rx-inject.json")
    rx = start_rx(lab, ["--backend", "xdp", "--device", lab.if_b, "--json", rx_json, "--quiet"])
    inj = subprocess.run(["ip", "netns", "exec", lab.ns_a, sys.executable, os.path.join(LAB_DIR, "inject_frames.py"),
                          lab.if_a, lab.ip_a, lab.ip_b, lab.mac(lab.ns_b, lab.if_b), "9000", "5", str(VALID),
                          str(CORRUPT), str(DUPS), str(FOREIGN), "300"], capture_output=True, text=True, timeout=60)
    c.eq("injector exit code", inj.returncode, 0)
    rc, out, err = finish(rx)
    r = result_record(rx_json, "rx")
    c.eq("injected: received (independent encoder agrees)", r["received"], VALID)
    c.eq("injected: corrupt", r["corrupt"], CORRUPT)
    c.eq("injected: duplicated", r["duplicated"], DUPS)
    c.eq("injected: foreign", r["foreign"], FOREIGN)
    c.eq("injected: lost", r["lost"], 0)
    c.eq("injected: ended by", r["ended_by"], "end markers")

    # --layers under overload: a 64k socket buffer behind a fast in-kernel sender.
    if XDP_TX_REFUSED:
        skip("--layers overload (needs the in-kernel sender)")
    else:
        LN = 200000
        r, t, delta = run(lab, tmp, "xdp", "xdp", "--layers overload", rx_args=["--layers", "--rcvbuf", "64k"],
                          tx_args=["--count", str(LN), "--size", "1000"])
        layers = r.get("layers", {})
        c.eq("layers: pktgen sent", t["sent"], LN)
        c.eq("layers: driver layer received == sent", layers.get("driver_received"), LN)
        c.eq("layers: driver layer lost", layers.get("driver", {}).get("lost"), 0)
        driver_markers = layers.get("driver", {}).get("end_markers", 0)
        # sk_drops counts every datagram the full buffer refused, end markers included.
        data_drops = r["socket_drops"] - (driver_markers - r["end_markers"])
        c.true("layers: the socket buffer overflowed", data_drops > 0, str(r["socket_drops"]))
        c.eq("layers: application received == sent - socket drops", r["received"], LN - data_drops)
        c.eq("layers: application lost == socket drops", r["lost"], data_drops)
        c.eq("layers: difference == socket drops", layers.get("difference"), data_drops)
        c.eq("layers: end markers the sockets missed", layers.get("end_markers_difference"), driver_markers - r["end_markers"])
        c.eq("layers: interface rx_packets delta", delta, LN + driver_markers)

    # The host keeps working while rx counts: other traffic passes.
    rx = start_rx(lab, ["--backend", "xdp", "--device", lab.if_b, "--idle", "0", "--quiet"])
    c.true("XDP program attached while rx runs", xdp_on(lab, "b"))
    ping = subprocess.run(["ip", "netns", "exec", lab.ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "1", lab.ip_b],
                          capture_output=True, text=True, timeout=20)
    c.eq("ping passes the counting program", ping.returncode, 0)
    rx.send_signal(signal.SIGINT)
    rc, out, err = finish(rx)
    c.eq("rx exit code after SIGINT", rc, 0)
    no_xdp_left(lab, "after SIGINT")

    # SIGKILL: no cleanup code runs; the kernel drops the bpf_links with the process.
    if XDP_TX_REFUSED:
        skip("SIGKILL of rx and the generator")
    else:
        rx = start_rx(lab, ["--backend", "xdp", "--device", lab.if_b, "--idle", "0", "--quiet"])
        gen = lab.spawn(lab.ns_a, [PKTGEN, "--backend", "xdp", "--dst", lab.ip_b, "--duration", "30", "--rate", "50k",
                                   "--size", "200", "--quiet"])
        time.sleep(1.0)
        c.true("both programs attached before SIGKILL (counter on b, dispatcher pin on a)",
               xdp_on(lab, "b") and xdp_on(lab, "a"))
        gen.kill()
        rx.kill()
        gen.wait(timeout=10)
        rx.wait(timeout=10)
        no_xdp_left(lab, "after SIGKILL of rx and pktgen")

    # Where the driver cannot take XDP frames, the sender says so: GRO off, no program on the peer.
    if XDP_TX_REFUSED:
        skip("no NAPI on the peer")
    else:
        sh("ethtool", "-K", lab.if_b, "gro", "off", ns=lab.ns_b)
        tx = pktgen(lab, "xdp", ["--count", "1000", "--rate", "10k", "--size", "100", "--quiet"])
        c.eq("no NAPI on the peer: pktgen exit code", tx.returncode, 1)
        c.true("no NAPI on the peer: says why and what to do", "ethtool -K PEER gro on" in tx.stderr, tx.stderr[-400:])
        sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)
        no_xdp_left(lab, "refused run")

    # IPv6: the generator's IPv6 UDP checksum is accepted by the receiving stack; rx xdp parses IPv6.
    if XDP_TX_REFUSED:
        skip("IPv6 from the generator")
    else:
        a6, b6 = "2001:db8:2545::1", "2001:db8:2545::2"
        lab.add_ipv6(a6, b6)
        time.sleep(0.2)
        for rx_b in ("socket", "xdp"):
            r, t, delta = run(lab, tmp, "xdp", rx_b, f"IPv6 xdp->{rx_b}", dst=b6, rx_args=["--ipv6"],
                              tx_args=["--ipv6", "--count", "10000", "--rate", "50k", "--size", "1001"])
            c.eq(f"IPv6 xdp->{rx_b}: received", r["received"], 10000)
            c.eq(f"IPv6 xdp->{rx_b}: lost", r["lost"], 0)

    # The link goes down mid-run: the program stays attached, rx's reader sleeps, and counting goes on.
    link_flap(lab, c, tmp, "xdp", "xdp")
c.done()
