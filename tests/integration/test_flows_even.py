#!/usr/bin/env python3
"""Flow ranges share the packets evenly: pktgen --src-port 5000-5003 with an
odd --count, over several burst/batch/thread shapes, on the socket backend
over loopback and on afpacket over a veth pair (and, where this host lets
them run, io_uring over loopback, afxdp and xdp over the veth; dpdk is
checked in test_dpdk). rx's per-stream counts (its JSON) end at most 1
apart and match pktgen's per-stream sent, and an independent observer
agrees: tcpdump on the receiving interface, counted per source port by
tshark (data frames only: their UDP length differs from the end markers'),
and the interface's rx_packets counter.

Under the sanitizer stage (RATELINE_SANITIZED) one shape per backend runs
(plus --flows-random with threads): its job there is memory errors on each
backend's path; the burst/batch variants of the same path are the main
suite's and FlowSchedule's unit tests'."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, finish, result_record, sh, start_rx

SANITIZED = os.environ.get("RATELINE_SANITIZED", "")  # set by tools/check.d/10-sanitize
SHAPES_SANITIZED = {"socket lo burst 100 batch 32", "socket lo --flows-random 2 threads",
                    "afpacket veth burst 100 batch 32", "uring lo burst 100 batch 32", "afxdp veth burst 7 batch 64",
                    "xdp veth burst 100"}
PORTS = (5000, 5003)
FLOWS = PORTS[1] - PORTS[0] + 1
SIZE = 40  # UDP length 48; end markers carry at least 64 B of payload, so tshark tells them apart
BOUND = 1  # with --count: per-flow counts differ by at most one packet
c = Checks("flows_even")


def capture(lab, ns, ifn, pcap):
    cap = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-n", "-U", "-s", "96", "-B", "16384", "-i", ifn, "-w", pcap,
                            "udp", "dst", "port", "9000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lab.procs.append(cap)
    cap.stderr.readline()  # "listening on ...": the capture is open
    return cap


def stop_capture(cap):
    time.sleep(1.0)  # the capture ring hands over a part-filled block only after its timeout
    cap.send_signal(signal.SIGINT)
    _, err = cap.communicate(timeout=10)
    dropped = [int(l.split()[0]) for l in err.splitlines() if "dropped by kernel" in l]
    return dropped[0] if dropped else None


def per_port(pcap):
    """Data frames per source port, and whether one sender's turns (runs of
    one source port) came round in port order throughout."""
    out = sh("tshark", "-r", pcap, "-Y", f"udp.length == {SIZE + 8}", "-T", "fields", "-e", "udp.srcport", capture=True,
             timeout=60)
    ports = [int(p) for p in out.split()]
    counts = [ports.count(p) for p in range(PORTS[0], PORTS[1] + 1)]
    turns = [p for i, p in enumerate(ports) if i == 0 or p != ports[i - 1]]
    in_order = all(b - PORTS[0] == (a - PORTS[0] + 1) % FLOWS for a, b in zip(turns, turns[1:]))
    return counts, in_order


def refused(ns, backend, dst):
    """Why pktgen cannot send with this backend here ("" if it can): io_uring
    off (ENOSYS, io_uring_disabled), or a BPF policy refusing XDP live frames
    or AF_XDP. Their own tests check them where they work; here the case is
    skipped, saying why."""
    tx = subprocess.run(["ip", "netns", "exec", ns, PKTGEN, "--backend", backend, "--dst", dst, "--count", "10",
                         "--quiet"], capture_output=True, text=True, timeout=30)
    return tx.stderr.strip().splitlines()[-1] if tx.returncode else ""


def run(lab, tmp, tag, ns_tx, ns_rx, dst, rx_args, tx_args, cap_if, count):
    if SANITIZED and tag not in SHAPES_SANITIZED:
        print(f"not under the sanitizer stage: {tag} (a shape of a path that runs instrumented above)", flush=True)
        return
    rx_json, tx_json = os.path.join(tmp, f"rx-{tag}.json"), os.path.join(tmp, f"tx-{tag}.json")
    pcap = os.path.join(tmp, f"{tag}.pcap")
    rx = start_rx(lab, ["--json", rx_json, "--quiet"] + rx_args, ns=ns_rx)
    cap = capture(lab, ns_rx, cap_if, pcap)
    before = sh("cat", f"/sys/class/net/{cap_if}/statistics/rx_packets", ns=ns_rx, capture=True)
    tx = subprocess.run(["ip", "netns", "exec", ns_tx, PKTGEN, "--dst", dst, "--src-port", f"{PORTS[0]}-{PORTS[1]}",
                         "--count", str(count), "--size", str(SIZE), "--json", tx_json, "--quiet"] + tx_args,
                        capture_output=True, text=True, timeout=60)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    rc, out, err = finish(rx)
    c.eq(f"{tag}: rx exit code", rc, 0)
    delta = int(sh("cat", f"/sys/class/net/{cap_if}/statistics/rx_packets", ns=ns_rx, capture=True)) - int(before)
    c.eq(f"{tag}: tcpdump dropped", stop_capture(cap), 0)
    if tx.returncode or rc:
        print(tx.stdout[-400:] + tx.stderr[-400:] + out[-400:] + err[-400:])
        return
    r, t = result_record(rx_json, "rx"), result_record(tx_json, "pktgen")
    got = [0] * FLOWS
    for s in r["streams"]:
        got[s["stream"]] = s["received"]
    sent = [0] * FLOWS
    for s in t["streams"]:
        sent[s["stream"]] = s["sent"]
    seen, in_order = per_port(pcap)
    print(f"     {tag}: rx per stream {got}, pktgen per stream {sent}, tcpdump per source port {seen}", flush=True)
    c.eq(f"{tag}: rx received", r["received"], count)
    c.eq(f"{tag}: rx lost", r["lost"], 0)
    c.eq(f"{tag}: rx streams", sorted(s["stream"] for s in r["streams"]), list(range(FLOWS)))
    c.true(f"{tag}: rx per-stream counts differ by at most {BOUND}", max(got) - min(got) <= BOUND, str(got))
    c.eq(f"{tag}: rx per stream == pktgen per stream", got, sent)
    c.eq(f"{tag}: tcpdump per source port == rx per stream", seen, got)
    c.true(f"{tag}: stream i comes from port {PORTS[0]}+i",
           all(s["from"].endswith(f":{PORTS[0] + s['stream']}") for s in r["streams"]),
           str([s["from"] for s in r["streams"]]))
    c.eq(f"{tag}: interface rx_packets delta == data + end markers", delta, r["received"] + r["end_markers"])
    if "--threads" not in tx_args:  # one sender: the capture shows its turns in order
        c.eq(f"{tag}: turns in port order on the wire", in_order, "--flows-random" not in tx_args)


with tempfile.TemporaryDirectory() as tmp, Lab("e", subnet=14) as lab:
    # Socket backend over the receiver namespace's loopback.
    for tag, count, extra in (("socket lo burst 100 batch 32", 10001, ["--burst", "100", "--batch", "32"]),
                              ("socket lo burst 7 batch 64", 9999, ["--burst", "7", "--batch", "64"]),
                              ("socket lo burst 1 batch 32", 4003, ["--burst", "1", "--batch", "32"]),
                              ("socket lo burst 128 batch 1", 8191, ["--burst", "128", "--batch", "1"]),
                              ("socket lo 3 threads", 10001, ["--threads", "3", "--burst", "100", "--batch", "32"]),
                              ("socket lo --flows-random", 10001, ["--flows-random", "7", "--burst", "100", "--batch", "32"]),
                              ("socket lo --flows-random 2 threads", 10001, ["--flows-random", "7", "--threads", "2"])):
        run(lab, tmp, tag, lab.ns_b, lab.ns_b, "127.0.0.1", ["--backend", "socket", "--bind", "127.0.0.1"],
            ["--backend", "socket", "--rate", "50k"] + extra, "lo", count)
    # AF_PACKET (pktgen builds whole frames) over the veth pair.
    for tag, count, extra in (("afpacket veth burst 100 batch 32", 10001, ["--burst", "100", "--batch", "32"]),
                              ("afpacket veth burst 7 batch 64", 9999, ["--burst", "7", "--batch", "64"]),
                              ("afpacket veth 2 threads", 10001, ["--threads", "2", "--burst", "128", "--batch", "32"])):
        run(lab, tmp, tag, lab.ns_a, lab.ns_b, lab.ip_b, ["--backend", "socket", "--device", lab.if_b],
            ["--backend", "afpacket", "--rate", "50k"] + extra, lab.if_b, count)
    # The other backends, where this host lets them run: io_uring over lo, AF_XDP and the XDP
    # generator (turns of one kernel call, a burst when paced) over the veth; paced, as XDP
    # transmit has no backpressure. A veth passes XDP frames only to a peer with NAPI on: GRO
    # on the receiving side.
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)
    for tag, backend, ns_tx, dst, rx_args, cap_if, extra in (
            ("uring lo burst 100 batch 32", "uring", lab.ns_b, "127.0.0.1", ["--backend", "socket", "--bind", "127.0.0.1"],
             "lo", ["--burst", "100", "--batch", "32"]),
            ("afxdp veth burst 7 batch 64", "afxdp", lab.ns_a, lab.ip_b, ["--backend", "socket", "--device", lab.if_b],
             lab.if_b, ["--burst", "7", "--batch", "64"]),
            ("xdp veth burst 100", "xdp", lab.ns_a, lab.ip_b, ["--backend", "socket", "--device", lab.if_b],
             lab.if_b, ["--burst", "100"]),
            ("xdp veth burst 128 2 threads", "xdp", lab.ns_a, lab.ip_b, ["--backend", "socket", "--device", lab.if_b],
             lab.if_b, ["--burst", "128", "--threads", "2"])):
        why = refused(ns_tx, backend, dst)
        if why:
            print(f"SKIP {tag}: {why}", flush=True)
            continue
        run(lab, tmp, tag, ns_tx, lab.ns_b, dst, rx_args, ["--backend", backend, "--rate", "50k"] + extra, cap_if, 10001)

c.done()
