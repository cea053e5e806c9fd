"""Helpers of the integration tests: start rx and wait until it listens, run a pktgen -> rx pair across a
lab, read JSON results, capture with tcpdump and read with tshark, collect named checks.

The lab itself (namespaces, veth pairs, taps, static neighbours, cleanup) is tools/lab/netlab.py, shared with
the benches and scripts; `Lab` here is its two-namespace Pair. tools/lab also holds inject_frames.py, the
tests' own encoder of the wire format.
"""
import json
import os
import subprocess
import sys
import time

LAB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab")
sys.path.insert(0, LAB_DIR)
from netlab import SKIP, Lab as NetLab, Pair as Lab, require_root, sh  # noqa: E402,F401 (re-exported to the tests)

BUILD = os.environ.get("RATELINE_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
PKTGEN = os.environ.get("PKTGEN", os.path.join(BUILD, "pktgen", "pktgen"))
RX = os.environ.get("RX", os.path.join(BUILD, "rx", "rx"))


def hugepages_free():
    """Free hugepages of the default size (DPDK runs need some: tools/check reserves them)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
    return 0


def read_until(p, prefix, timeout=10):
    """Reads p's stdout lines until one starts with prefix: (found, text read)."""
    deadline = time.time() + timeout
    lines = []
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return True, "".join(lines)
    return False, "".join(lines)


def start_rx(lab, args, ns=None, ready_timeout=10):
    """Starts rx in the receiver namespace and waits until it listens."""
    p = lab.spawn(ns or lab.ns_b, [RX] + list(args))
    found, text = read_until(p, "rx: receive buffer", ready_timeout)
    if found:
        p.startup = text
        return p
    p.kill()
    out, err = p.communicate()
    raise RuntimeError(f"rx did not start: {text}{out}{err}")


def finish(p, timeout=30):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, getattr(p, "startup", "") + out, err


def json_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def result_record(path, tool):
    recs = [r for r in json_records(path) if r.get("type") == "result" and r.get("tool") == tool]
    if len(recs) != 1:
        raise AssertionError(f"{path}: expected one {tool} result record, got {len(recs)}")
    return recs[0]


class Checks:
    """Collects named checks; prints each and exits non-zero if any failed."""

    def __init__(self, name):
        self.name = name
        self.failed = 0
        self.passed = 0

    def eq(self, what, got, want):
        ok = got == want
        self._report(ok, f"{what}: got {got}, want {want}")

    def true(self, what, cond, detail=""):
        self._report(bool(cond), f"{what}{': ' + detail if detail else ''}")

    def _report(self, ok, text):
        print(("ok   " if ok else "FAIL ") + text, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def done(self):
        print(f"{self.name}: {self.passed} checks passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)


# ---- Pairs across a lab's veth: one backend's arguments on each side ----

def rx_args(lab, backend, json_path, extra=()):
    """rx's arguments to receive on the lab's side b with `backend` (dpdk: net_af_packet on the veth)."""
    if backend == "dpdk":
        return ["--backend", "dpdk", "--cores", "1", "--json", json_path, "--quiet", *extra, "--", "--no-pci",
                f"--vdev=net_af_packet0,iface={lab.if_b},framecnt=16384,blocksz=65536", "--log-level=*:error"]
    dev = ["--device", lab.if_b] if backend not in ("socket", "uring") else []
    return ["--backend", backend, *dev, "--json", json_path, "--quiet", *extra]


def tx_args(lab, backend, mac_b):
    if backend == "dpdk":
        return ["--backend", "dpdk", "--cores", "0", "--dst-mac", mac_b]
    return ["--backend", backend] + (["--dst-mac", mac_b] if backend not in ("socket", "uring") else [])


def tx_eal(lab, backend):
    return ["--", "--no-pci", f"--vdev=net_af_packet0,iface={lab.if_a}", "--log-level=*:error"] if backend == "dpdk" else []


def capture(lab, pcap, expr=("udp", "port", "9000"), side="b"):
    """tcpdump on side b's veth (UDP port 9000, or expr; () for every frame) into pcap; stop it with SIGINT.
    side "a": what side a's veth sends (where an XDP receiver on b takes frames before any tap there)."""
    ns, ifn, where = (lab.ns_b, lab.if_b, []) if side == "b" else (lab.ns_a, lab.if_a, ["-Q", "out"])
    cap = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-n", "-U", "-s", "0", "-B", "16384", "-i", ifn, *where,
                            "-w", pcap, *expr], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    lab.procs.append(cap)
    cap.stderr.readline()  # "listening on ..."
    return cap


def tshark_rows(pcap, fields, extra=()):
    out = sh("tshark", "-r", pcap, "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", *extra,
             "-T", "fields", *[a for f in fields for a in ("-e", f)], capture=True, timeout=120)
    return [line.split("\t") for line in out.splitlines() if line.strip()]


def run_pair(lab, c, tmp, tx_b, rx_b, mac_b, tx_extra, tag, rx_extra=(), dst=None):
    """pktgen (tx_b, in side a) -> rx (rx_b, side b) with tx_extra (and rx_extra) added; checks both exit 0.

    Returns (pktgen's result, rx's result, packets side b's veth counted)."""
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in tag)
    rx_json = os.path.join(tmp, f"rx-{name}.json")
    tx_json = os.path.join(tmp, f"tx-{name}.json")
    rx = start_rx(lab, rx_args(lab, rx_b, rx_json, rx_extra), ready_timeout=30)
    before = lab.counter("b", "rx_packets")
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, *tx_args(lab, tx_b, mac_b), "--dst", dst or lab.ip_b,
                         *tx_extra, "--quiet", "--json", tx_json, *tx_eal(lab, tx_b)],
                        capture_output=True, text=True, timeout=90)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    if tx.returncode:
        print(tx.stderr[-1200:])
    rc, out, err = finish(rx, timeout=60)
    c.eq(f"{tag}: rx exit code", rc, 0)
    if rc:
        print(err[-1200:])
    delta = lab.counter("b", "rx_packets") - before
    return result_record(tx_json, "pktgen"), result_record(rx_json, "rx"), delta


def refused_usage(lab, c, args, want, tag):
    """pktgen (side a, towards side b unless args give --dst) with bad args: exit 2, one line saying want, nothing sent."""
    before = lab.counter("a", "tx_packets")
    dst = [] if "--dst" in args else ["--dst", lab.ip_b]
    p = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, *dst, "--count", "10", *args],
                       capture_output=True, text=True, timeout=30)
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    c.eq(f"bad input {tag}: exit code", p.returncode, 2)
    c.true(f"bad input {tag}: one line saying '{want}'", len(lines) == 1 and want in lines[0], p.stderr.strip())
    c.eq(f"bad input {tag}: nothing sent", lab.counter("a", "tx_packets") - before, 0)


def cpu_seconds(pid):
    """utime + stime of a process so far, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def link_flap(lab, c, tmp, rx_backend, tag):
    """rx `rx_backend` on side b while its link goes down for 1 s between two runs of 1000 packets: it
    must wait, not spin, while down (under 0.3 s of CPU), and count both runs (2000, count reached)."""
    flap_json = os.path.join(tmp, f"rx-flap-{tag}.json")
    rx = start_rx(lab, ["--backend", rx_backend, "--device", lab.if_b, "--count", "2000", "--idle", "0",
                        "--json", flap_json, "--quiet"])
    send = ["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "socket", "--dst", lab.ip_b, "--count", "1000",
            "--rate", "20k", "--size", "500", "--quiet"]
    first = subprocess.run(send + ["--end-markers", "0"], capture_output=True, text=True, timeout=30)
    c.eq(f"{tag} link flap: first 1000 sent", first.returncode, 0)
    time.sleep(0.3)
    sh("ip", "link", "set", lab.if_b, "down", ns=lab.ns_b)
    t0 = cpu_seconds(rx.pid)
    time.sleep(1.0)
    spent = cpu_seconds(rx.pid) - t0
    c.true(f"{tag} link down for 1 s: rx waits instead of spinning ({spent:.2f} s of CPU)", spent < 0.3)
    sh("ip", "link", "set", lab.if_b, "up", ns=lab.ns_b)
    time.sleep(0.5)
    second = subprocess.run(send, capture_output=True, text=True, timeout=30)
    c.eq(f"{tag} link flap: 1000 more sent once it is up", second.returncode, 0)
    rc, out, err = finish(rx)
    c.eq(f"{tag} link flap: rx exit code", rc, 0)
    flap = result_record(flap_json, "rx")
    c.eq(f"{tag} link flap: rx counted both runs, before and after (received, ended by)",
         (flap["received"], flap["ended_by"]), (2000, "count reached"))
