#!/usr/bin/env python3
"""DPDK backend on virtual ports in netns labs, each count checked against an
observer outside DPDK:
  1. pktgen (net_tap) -> the tap's kernel side: sent == the tap's rx_packets
     delta == the DPDK port's opackets; a kernel socket rx behind it gets all.
  2. kernel socket sender -> rx (net_tap): received == sent, 0 lost, == the
     tap's tx_packets delta and DPDK's ipackets.
  3. pktgen (DPDK) -> rx (DPDK) over net_af_packet on a veth pair between two
     namespaces: n sent, n received, 0 lost, == the veth's rx_packets delta;
     the same over net_af_xdp, whose XDP programs must be gone afterwards;
     net_af_packet's kernel ring overflowing (a tiny ring, a slow worker):
     rx's lost == the PMD sockets' drops == the veth's delta - ipackets.
  4. loss on the kernel path between them (two taps, the kernel forwarding,
     an nft numgen rule dropping every 9th): rx's lost == the rule's counter.
Also: auto says why it skipped DPDK; a port that cannot come up is a clear
error; no hugepage file and no EAL runtime directory is left behind.
Taps are created here (persistent, so their counters outlive the DPDK
process that drives them) and deleted with their namespaces."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, RX, SKIP, Checks, Lab, NetLab, require_root, result_record, sh

N = 20000
c = Checks("dpdk")
require_root()


def run(cmd, ns, timeout=90, env=None):
    return subprocess.run(["ip", "netns", "exec", ns] + cmd, capture_output=True, text=True, timeout=timeout, env=env)


def tx_dpdk(ns, vdev, args, json_path, cores="0", env=None):
    return run([PKTGEN, "--backend", "dpdk", "--cores", cores, "--quiet", "--json", json_path] + args +
               ["--", "--no-pci", "--vdev=" + vdev], ns, env=env)


class RxProc:
    """rx in a namespace, started and waited for until it listens."""

    def __init__(self, ns, args, env=None):
        self.p = subprocess.Popen(["ip", "netns", "exec", ns, RX] + args, text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env)
        self.startup = ""
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line:
                break
            self.startup += line
            if line.startswith("rx: receive buffer"):
                return
        self.p.kill()
        out, err = self.p.communicate()
        raise RuntimeError(f"rx did not start: {self.startup}{out}{err}")

    def finish(self, timeout=60):
        out, err = self.p.communicate(timeout=timeout)
        return self.p.returncode, self.startup + out, err

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class TapNs(NetLab):
    """A namespace with persistent multi-queue taps for net_tap to attach to."""

    def __init__(self, tag):
        super().__init__()
        self.ns = f"rlt{os.getpid() % 100000}q{tag}"

    def __enter__(self):
        self.namespace(self.ns)
        return self

    def tap(self, name, cidr):
        return super().tap(self.ns, name, cidr)

    def counter(self, tap, name):
        return int(sh("cat", f"/sys/class/net/{tap}/statistics/{name}", ns=self.ns, capture=True))

    def mac(self, tap):
        return sh("cat", f"/sys/class/net/{tap}/address", ns=self.ns, capture=True).strip()


def nft_counter(ns, family, table):
    ruleset = json.loads(sh("nft", "-j", "list", "table", family, table, ns=ns, capture=True))
    for e in ruleset["nftables"]:
        for x in e.get("rule", {}).get("expr", []):
            if "counter" in x:
                return x["counter"]["packets"]
    raise AssertionError("no counter in nft table " + table)


def first_line(text, prefix):
    return next((l for l in text.splitlines() if l.startswith(prefix)), "")


def dpdk_over_veth(lab, tmp, tag, rx_vdev, tx_vdev, tx_extra):
    """pktgen (DPDK, tx_vdev) -> rx (DPDK, rx_vdev) across the lab's veth: N sent, N received, 0 lost, == the veth."""
    env = None
    if "net_af_xdp" in rx_vdev:
        # Under ASan: DPDK's net_af_xdp leaks libxdp's UMEM struct at close (see the file); these two processes only.
        env = dict(os.environ, LSAN_OPTIONS="suppressions=" + os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                           "lsan_dpdk_af_xdp.supp"))
    rx_json = os.path.join(tmp, f"rx-{tag}.json")
    rx = RxProc(lab.ns_b, ["--backend", "dpdk", "--cores", "1", "--json", rx_json, "--quiet", "--", "--no-pci",
                           f"--vdev={rx_vdev}"], env=env)
    lab.procs.append(rx.p)
    before = lab.counter("b", "rx_packets")
    tx_json = os.path.join(tmp, f"tx-{tag}.json")
    tx = tx_dpdk(lab.ns_a, tx_vdev, ["--dst", lab.ip_b, "--count", str(N), "--rate", "20k", "--size", "1000"] + tx_extra,
                 tx_json, env=env)
    pmd = tx_vdev.split("0,")[0]
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    if tx.returncode != 0:
        print(tx.stderr[-1500:])
    c.true(f"{tag}: pktgen on {pmd}", f"({pmd}, virtual)" in tx.stdout,
           first_line(tx.stdout, "pktgen: DPDK port") or tx.stdout[:400] + tx.stderr[-400:])
    rc, out, err = rx.finish()
    c.eq(f"{tag}: rx exit code", rc, 0)
    if rc != 0:
        print(err[-1500:])
    r = result_record(rx_json, "rx")
    delta = lab.counter("b", "rx_packets") - before
    c.eq(f"{tag}: sent", result_record(tx_json, "pktgen")["sent"], N)
    c.eq(f"{tag}: received", r["received"], N)
    c.eq(f"{tag}: lost", r["lost"], 0)
    c.eq(f"{tag}: corrupt", r["corrupt"], 0)
    c.eq(f"{tag}: veth rx_packets delta == received + end markers", delta, r["received"] + r["end_markers"])
    c.eq(f"{tag}: DPDK ipackets == veth rx_packets delta", r["dpdk"]["ipackets"], delta)


def leftovers():
    return sorted(glob.glob("/dev/hugepages/*rateline*") + glob.glob("/var/run/dpdk/rateline-*"))


before_leftovers = leftovers()
# --no-pci: never let a probe near the host's own (kernel-driven) NICs.
probe = subprocess.run([PKTGEN, "--backend", "dpdk", "--count", "1", "--", "--no-pci"], capture_output=True, text=True,
                       timeout=60)
if "built without DPDK" in probe.stderr:
    print("SKIP: built without DPDK (-Ddpdk=disabled or libdpdk-dev missing)")
    sys.exit(SKIP)

with tempfile.TemporaryDirectory() as tmp:
    # 0. Setup errors and auto's note.
    c.eq("no port: exit code", probe.returncode, 1)
    c.true("no port: says how to give one", "DPDK found no port" in probe.stderr and "--vdev" in probe.stderr,
           probe.stderr[-300:])
    auto = subprocess.run([PKTGEN, "--count", "10", "--quiet"], capture_output=True, text=True, timeout=30)
    c.true("auto says why it skipped dpdk", "dpdk skipped: it needs a dedicated port" in auto.stdout, auto.stdout[:300])
    bad = subprocess.run([PKTGEN, "--backend", "dpdk", "--count", "10", "--", "--no-pci", "--vdev=net_nosuch0"],
                         capture_output=True, text=True, timeout=60)
    c.eq("unknown vdev: exit code", bad.returncode, 1)
    c.true("unknown vdev: names EAL and the arguments", "Couldn't initialise DPDK" in bad.stderr and
           "net_nosuch0" in bad.stderr, bad.stderr[-300:])

    # 1. pktgen on net_tap -> the tap's kernel side (and a socket rx behind it).
    with TapNs("1") as t:
        tap = t.tap(f"rltq{os.getpid() % 100000}a", "198.18.40.1/30")
        rx_json = os.path.join(tmp, "rx1.json")
        rx = RxProc(t.ns, ["--backend", "socket", "--bind", "198.18.40.1", "--json", rx_json, "--quiet"])
        t.procs.append(rx.p)
        before = t.counter(tap, "rx_packets")
        tx_json = os.path.join(tmp, "tx1.json")
        # Four flows: a prebuilt mbuf carries one flow's headers and is rewritten when it comes round for another.
        tx = tx_dpdk(t.ns, f"net_tap0,iface={tap}", ["--dst", "198.18.40.1", "--src-ip", "198.18.40.2",
                                                     "--src-port", "5000-5003", "--count", str(N), "--rate", "30k",
                                                     "--size", "700"], tx_json)
        c.eq("tap tx: pktgen exit code", tx.returncode, 0)
        c.true("tap tx: backend dpdk on net_tap", "backend dpdk" in tx.stdout and "(net_tap, virtual)" in tx.stdout,
               first_line(tx.stdout, "pktgen: DPDK port") or tx.stdout[:400] + tx.stderr[-400:])
        c.true("tap tx: link speed marked nominal", "(nominal: virtual device)" in tx.stdout,
               first_line(tx.stdout, "pktgen: link"))
        rc, out, err = rx.finish()
        r = result_record(tx_json, "pktgen")
        delta = t.counter(tap, "rx_packets") - before
        c.eq("tap tx: sent", r["sent"], N)
        c.eq("tap tx: tap rx_packets delta == sent + end markers", delta, r["sent"] + r["end_markers"])
        c.eq("tap tx: DPDK opackets == tap rx_packets delta", r["dpdk"]["opackets"], delta)
        c.eq("tap tx: DPDK oerrors", r["dpdk"]["oerrors"], 0)
        rr = result_record(rx_json, "rx")
        c.eq("tap tx: socket rx exit code", rc, 0)
        c.eq("tap tx: socket rx received", rr["received"], N)
        c.eq("tap tx: socket rx lost", rr["lost"], 0)
        c.eq("tap tx: socket rx corrupt", rr["corrupt"], 0)
        c.eq("tap tx: four streams", len(rr["streams"]), 4)
        got = [s["received"] for s in rr["streams"]]
        c.true("tap tx: per-stream counts at most 1 apart", got and max(got) - min(got) <= 1, str(got))

    # 2. kernel socket sender -> rx on net_tap.
    with TapNs("2") as t:
        tap = t.tap(f"rltq{os.getpid() % 100000}b", "198.18.41.1/30")
        # The tap's queue towards DPDK holds txqueuelen frames: room for the rx worker to lose its CPU to
        # others for a while on a small shared machine (a full queue shows as the tap's tx_dropped).
        sh("ip", "link", "set", tap, "txqueuelen", "20000", ns=t.ns)
        rx_json = os.path.join(tmp, "rx2.json")
        rx = RxProc(t.ns, ["--backend", "dpdk", "--cores", "1", "--json", rx_json, "--quiet", "--",
                           "--no-pci", f"--vdev=net_tap0,iface={tap}"])
        t.procs.append(rx.p)
        c.true("tap rx: port summary printed", "DPDK port 0 net_tap0 (net_tap" in rx.startup,
               first_line(rx.startup, "rx: receive buffer") or rx.startup)
        # The DPDK side answers no ARP: a static neighbour (after the port started: that replays the MAC and
        # flushes the tap's neighbour table).
        sh("ip", "neigh", "replace", "198.18.41.2", "lladdr", "02:00:00:00:00:02", "dev", tap, "nud", "permanent", ns=t.ns)
        before = t.counter(tap, "tx_packets")
        tx = run([PKTGEN, "--backend", "socket", "--dst", "198.18.41.2", "--count", str(N), "--rate", "20k",
                  "--size", "1000", "--quiet"], t.ns)
        c.eq("tap rx: socket pktgen exit code", tx.returncode, 0)
        rc, out, err = rx.finish()
        c.eq("tap rx: rx exit code", rc, 0)
        r = result_record(rx_json, "rx")
        delta = t.counter(tap, "tx_packets") - before
        c.eq("tap rx: received", r["received"], N)
        c.eq("tap rx: tap tx_dropped (its queue towards DPDK full)", t.counter(tap, "tx_dropped"), 0)
        c.eq("tap rx: lost", r["lost"], 0)
        c.eq("tap rx: sent (end markers)", r["sent"], N)
        c.eq("tap rx: corrupt", r["corrupt"], 0)
        c.eq("tap rx: tap tx_packets delta == received + end markers", delta, r["received"] + r["end_markers"])
        c.eq("tap rx: DPDK ipackets == tap tx_packets delta", r["dpdk"]["ipackets"], delta)
        c.eq("tap rx: DPDK imissed", r["dpdk"]["imissed"], 0)
        c.true("tap rx: DPDK counters printed", "dpdk: ipackets" in out, first_line(out, "dpdk: ") or out[-600:])

    # 3. pktgen (DPDK) -> rx (DPDK) over net_af_packet on a veth pair.
    with Lab("q", subnet=42) as lab:
        # The receiving stack sees the frames too (AF_PACKET taps them): drop them at its input so it answers
        # nothing (no ICMP, no ARP) and the veth counters hold our frames alone.
        path = os.path.join(tmp, "in.nft")
        open(path, "w").write("table inet rlquiet {\n chain in { type filter hook input priority 0; policy accept;\n"
                              "  udp dport 9000 drop\n }\n}\n")
        sh("nft", "-f", path, ns=lab.ns_b)
        # A deep PMD ring (16k frames): the PMD does not report its kernel ring's drops.
        dpdk_over_veth(lab, tmp, "af_packet", f"net_af_packet0,iface={lab.if_b},framecnt=16384,blocksz=65536",
                       f"net_af_packet0,iface={lab.if_a}", [])
        # 3b. The same over net_af_xdp (its XDP program on each veth; a veth takes XDP frames with NAPI on,
        # which the receiver's program gives it). The af_packet run above flapped the links and flushed the
        # neighbours: the destination MAC is given.
        dpdk_over_veth(lab, tmp, "af_xdp", f"net_af_xdp0,iface={lab.if_b}", f"net_af_xdp0,iface={lab.if_a}",
                       ["--dst-mac", Lab.mac(lab.ns_b, lab.if_b)])
        for ns, ifn in ((lab.ns_a, lab.if_a), (lab.ns_b, lab.if_b)):
            link = subprocess.run(["ip", "-n", ns, "link", "show", ifn], capture_output=True, text=True).stdout
            c.true(f"af_xdp: no XDP program left on {ifn}", " xdp" not in link and "prog/xdp" not in link, link)
        # 3c. net_af_packet's own ring overflowing: a 64-frame ring and an rx worker that sleeps 5 ms after
        # every batch. The PMD does not count these drops (imissed stays 0); rx reads them from the PMD's
        # kernel sockets, and they must equal what the veth took and the PMD never got.
        rx_json = os.path.join(tmp, "rx-ring.json")
        rx = RxProc(lab.ns_b, ["--backend", "dpdk", "--cores", "1", "--test-slow-us", "5000", "--idle", "3",
                               "--json", rx_json, "--", "--no-pci",
                               f"--vdev=net_af_packet0,iface={lab.if_b},blocksz=4096,framesz=2048,framecnt=64"])
        lab.procs.append(rx.p)
        before = lab.counter("b", "rx_packets")
        # 20 end markers 2 ms apart: the ring has room again before the last ones arrive.
        tx = tx_dpdk(lab.ns_a, f"net_af_packet0,iface={lab.if_a}",
                     ["--dst", lab.ip_b, "--count", "5000", "--rate", "20k", "--size", "1000", "--end-markers", "20",
                      "--dst-mac", Lab.mac(lab.ns_b, lab.if_b)], os.path.join(tmp, "tx-ring.json"))
        c.eq("ring overflow: pktgen exit code", tx.returncode, 0)
        rc, out, err = rx.finish()
        c.eq("ring overflow: rx exit code", rc, 0)
        r = result_record(rx_json, "rx")
        took = lab.counter("b", "rx_packets") - before
        pmd = r["dpdk"].get("pmd_socket_drops")
        lines = {x["layer"]: x["attributed"] for x in r["ledger"]["lines"]}
        c.eq("ring overflow: ended by the end markers", r["ended_by"], "end markers")
        c.true("ring overflow: the small ring lost packets", r["lost"] > 0, str(r["lost"]))
        c.eq("ring overflow: DPDK imissed (22.11's net_af_packet does not count these)", r["dpdk"]["imissed"], 0)
        c.eq("ring overflow: veth rx_packets delta - DPDK ipackets == PMD socket ring drops", took - r["dpdk"]["ipackets"],
             pmd)
        c.eq("ring overflow: rx lost == PMD socket ring drops - end markers dropped",
             r["lost"], pmd - (20 - r["end_markers"]) if pmd is not None else None)
        c.eq("ring overflow: the ledger's socket line holds the loss, nothing unattributed",
             (lines.get("socket"), r["ledger"]["unattributed"]), (r["lost"], 0))
        c.true("ring overflow: the table says so", "PMD socket ring drops" in out, first_line(out, "dpdk: ") or out[-600:])

    # 4. Loss on the kernel path between two DPDK ports: tap A -> kernel forwarding -> tap B, nft drops every 9th.
    with TapNs("4") as t:
        uid = os.getpid() % 100000
        tap_a = t.tap(f"rltq{uid}c", "198.18.43.1/30")
        tap_b = t.tap(f"rltq{uid}d", "198.18.43.5/30")
        sh("ip", "link", "set", tap_b, "txqueuelen", "20000", ns=t.ns)  # as in 2.
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=t.ns)  # this namespace only: it holds the two taps alone
        path = os.path.join(tmp, "fw.nft")
        open(path, "w").write("table inet rltest {\n chain fw { type filter hook forward priority 0; policy accept;\n"
                              "  udp dport 9000 @th,104,8 1 numgen inc mod 9 0 counter drop\n }\n}\n")
        sh("nft", "-f", path, ns=t.ns)
        rx_json = os.path.join(tmp, "rx4.json")
        rx = RxProc(t.ns, ["--backend", "dpdk", "--cores", "1", "--json", rx_json, "--quiet", "--", "--no-pci",
                           f"--vdev=net_tap0,iface={tap_b}"])
        t.procs.append(rx.p)
        sh("ip", "neigh", "replace", "198.18.43.6", "lladdr", "02:00:00:00:00:06", "dev", tap_b, "nud", "permanent",
           ns=t.ns)
        before = t.counter(tap_b, "tx_packets")
        tx_json = os.path.join(tmp, "tx4.json")
        tx = tx_dpdk(t.ns, f"net_tap0,iface={tap_a}", ["--dst", "198.18.43.6", "--src-ip", "198.18.43.2",
                                                       "--count", str(N), "--rate", "20k", "--size", "500"], tx_json)
        c.eq("loss: pktgen exit code", tx.returncode, 0)
        rc, out, err = rx.finish()
        c.eq("loss: rx exit code", rc, 0)
        r = result_record(rx_json, "rx")
        dropped = nft_counter(t.ns, "inet", "rltest")
        c.true("loss: nft dropped every 9th", dropped in (N // 9, N // 9 + 1), str(dropped))
        c.eq("loss: sent (end markers)", r["sent"], N)
        c.eq("loss: rx lost == nft drop counter", r["lost"], dropped)
        c.eq("loss: tap B tx_dropped (its queue towards DPDK full)", t.counter(tap_b, "tx_dropped"), 0)
        c.eq("loss: rx received", r["received"], N - dropped)
        c.eq("loss: tap B tx_packets delta == received + end markers", t.counter(tap_b, "tx_packets") - before,
             r["received"] + r["end_markers"])
        c.eq("loss: DPDK imissed (not DPDK's loss)", r["dpdk"]["imissed"], 0)

    c.eq("nothing left in /dev/hugepages or /var/run/dpdk", [x for x in leftovers() if x not in before_leftovers], [])
c.done()
