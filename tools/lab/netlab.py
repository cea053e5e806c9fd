#!/usr/bin/env python3
"""netlab: the one test host of rateline's tests, benches and scripts.

Network namespaces joined by veth pairs (or holding taps), made by this
process and deleted by it on any exit (`with`, close(), or the CLI's `del`).
The conventions every lab keeps, so that interface counters count only the
tools' packets:
- addresses from the RFC 2544 benchmarking range 198.18.0.0/15, /30 per link;
- IPv6 off in every namespace before a link exists: no link-local address,
  no DAD, RS or MLD frames;
- permanent neighbour entries both ways: no ARP on the wire;
- names carry a prefix per user (rlt tests, rlb/rlk/rlr/rlx/rld benches,
  rlq quickstart, rlc ceiling's own C++ lab in tools/ceiling/lab.cpp) and,
  where runs may overlap, the creating PID.

Python: `from netlab import Pair` (tests/integration/harness.py and
bench/lib/rlbench.py put tools/lab on sys.path). Shell: the CLI below.

usage: netlab.py pair NS_A NS_B IF_A IF_B [--subnet N]   two namespaces, one veth, 198.18.N.1 <-> .2
       netlab.py ns NS                                    one namespace with lo up (loopback runs)
       netlab.py del NS [NS ...]                          delete namespaces (missing ones are fine)
"""
import argparse
import os
import subprocess
import sys
import time

SKIP = 77  # meson: test skipped


def sh(*args, check=True, capture=False, ns=None, timeout=30):
    """Runs a command (inside namespace ns); raises with its stderr when it fails and check is set.
    Returns its stdout when capture is set, else its exit code."""
    cmd = list(args)
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    r = subprocess.run(cmd, check=False, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout if capture else r.returncode


def require_root():
    if os.geteuid() != 0:
        print("SKIP: needs root for network namespaces")
        sys.exit(SKIP)


def existing_namespaces():
    out = sh("ip", "netns", "list", check=False, capture=True)
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def mac(ns, ifn):
    return sh("cat", f"/sys/class/net/{ifn}/address", ns=ns, capture=True).strip()


class Lab:
    """Namespaces and links this process made; closing kills the processes it spawned, then deletes the
    namespaces (their veths and taps go with them)."""

    def __init__(self):
        self.namespaces = []
        self.taps = []  # (ns, name): deleted first, before a DPDK process could hold one past its namespace
        self.procs = []

    def namespace(self, ns):
        """A new namespace with IPv6 off (before any link exists in it) and lo up."""
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        sh("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", ns=ns)
        sh("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1", ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        return ns

    @staticmethod
    def veth(ns_a, if_a, ip_a, ns_b, if_b, ip_b):
        """A veth pair ns_a/if_a (ip_a/30) <-> ns_b/if_b (ip_b/30), up, with permanent neighbours both ways."""
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)
        for ns, ifn, ip in ((ns_a, if_a, ip_a), (ns_b, if_b, ip_b)):
            sh("ip", "addr", "add", f"{ip}/30", "dev", ifn, ns=ns)
            sh("ip", "link", "set", ifn, "up", ns=ns)
        Lab.pin(ns_a, if_a, ip_a, ns_b, if_b, ip_b)

    @staticmethod
    def veth_in(ns, if_a, if_b):
        """A veth pair with both ends in ns, up, no addresses: for two DPDK ports, or a port and a counter."""
        sh("ip", "link", "add", if_a, "type", "veth", "peer", "name", if_b, ns=ns)
        for ifn in (if_a, if_b):
            sh("ip", "link", "set", ifn, "up", ns=ns)

    @staticmethod
    def pin(ns_a, if_a, ip_a, ns_b, if_b, ip_b):
        """Permanent neighbour entries both ways on one veth: no ARP on the link."""
        sh("ip", "neigh", "replace", ip_b, "lladdr", mac(ns_b, if_b), "dev", if_a, "nud", "permanent", ns=ns_a)
        sh("ip", "neigh", "replace", ip_a, "lladdr", mac(ns_a, if_a), "dev", if_b, "nud", "permanent", ns=ns_b)

    def tap(self, ns, name, cidr=None):
        """A persistent multi-queue tap in ns (net_tap attaches to it), optionally with an address; left down."""
        sh("ip", "tuntap", "add", "mode", "tap", "multi_queue", "name", name, ns=ns)
        self.taps.append((ns, name))
        if cidr:
            sh("ip", "addr", "add", cidr, "dev", name, ns=ns)
        return name

    def spawn(self, ns, args, **kw):
        """A process inside ns with its stdout and stderr piped; killed at close if still running."""
        p = subprocess.Popen(["ip", "netns", "exec", ns] + list(args), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        self.procs.append(p)
        return p

    def close(self):
        """Kills our processes, then deletes the taps and namespaces; the deleting happens whatever the killing
        raised (a namespace outliving its test is the one leftover no later run cleans up)."""
        try:
            for p in self.procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        finally:
            for ns, name in reversed(self.taps):
                sh("ip", "link", "del", name, ns=ns, check=False)
            self.taps = []
            for ns in reversed(self.namespaces):
                sh("ip", "netns", "del", ns, check=False)
            self.namespaces = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Pair(Lab):
    """Two namespaces A (sender) and B (receiver) joined by veth a <-> b (198.18.<subnet>.1 <-> .2).

    Pair("x", subnet=3) makes PID-unique names (tests, which may run side by side); Pair(names=(ns_a, ns_b,
    if_a, if_b)) takes fixed ones (benches, which hold a lock instead)."""

    def __init__(self, tag="", subnet=0, names=None):
        super().__init__()
        uid = f"{os.getpid() % 100000}"
        self.uid = uid
        self.ns_a, self.ns_b, self.if_a, self.if_b = names or (
            f"rlt{uid}{tag}a", f"rlt{uid}{tag}b", f"rl{uid}{tag}a"[:15], f"rl{uid}{tag}b"[:15])
        self.subnet = subnet
        self.ip_a = f"198.18.{subnet}.1"
        self.ip_b = f"198.18.{subnet}.2"

    def up(self):
        try:
            self.namespace(self.ns_a)
            self.namespace(self.ns_b)
            self.veth(self.ns_a, self.if_a, self.ip_a, self.ns_b, self.if_b, self.ip_b)
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self):
        return self.up()

    def pin_neighbours(self):
        """Again after a DPDK port on a veth has stopped: it takes the interface down and up, and the kernel
        flushes its neighbours, permanent ones too."""
        self.pin(self.ns_a, self.if_a, self.ip_a, self.ns_b, self.if_b, self.ip_b)

    def add_sender(self, idx):
        """A further sender namespace joined to B by a veth pair of its own
        (198.18.<subnet + 10 * idx>.0/30): (ns, if, ip, B's address on that link). Deleted with the lab."""
        ns = self.namespace(f"rlt{self.uid}{idx}s")
        ifs, ifb = f"rl{self.uid}{idx}s"[:15], f"rl{self.uid}{idx}r"[:15]
        net = self.subnet + 10 * idx
        ip_s, ip_r = f"198.18.{net}.1", f"198.18.{net}.2"
        self.veth(ns, ifs, ip_s, self.ns_b, ifb, ip_r)
        return ns, ifs, ip_s, ip_r

    mac = staticmethod(mac)

    def side(self, side):
        return (self.ns_a, self.if_a) if side == "a" else (self.ns_b, self.if_b)

    def counter(self, side, name):
        ns, ifn = self.side(side)
        return int(sh("cat", f"/sys/class/net/{ifn}/statistics/{name}", ns=ns, capture=True))

    def add_ipv6(self, a6, b6):
        """IPv6 on both veth ends (a6 on a, b6 on b, /64, no DAD) with permanent neighbours both ways."""
        for ns, ifn, ip in ((self.ns_a, self.if_a, a6), (self.ns_b, self.if_b, b6)):
            sh("sysctl", "-qw", f"net.ipv6.conf.{ifn}.disable_ipv6=0", ns=ns)
            sh("ip", "-6", "addr", "add", f"{ip}/64", "dev", ifn, "nodad", ns=ns)
        sh("ip", "-6", "neigh", "replace", b6, "lladdr", mac(self.ns_b, self.if_b), "dev", self.if_a,
           "nud", "permanent", ns=self.ns_a)
        sh("ip", "-6", "neigh", "replace", a6, "lladdr", mac(self.ns_a, self.if_a), "dev", self.if_b,
           "nud", "permanent", ns=self.ns_b)

    def xdp_pass(self, side, tmp):
        """Attaches a native XDP program that passes every frame to side's veth: a veth delivers frames
        that its peer returns by XDP_TX only to an end that runs one. `ip link set ... xdpdrv off` detaches."""
        src, obj = os.path.join(tmp, "xdp_pass.c"), os.path.join(tmp, "xdp_pass.o")
        with open(src, "w") as f:
            f.write('#include <linux/bpf.h>\n__attribute__((section("xdp"), used)) int pass(struct xdp_md *c) '
                    '{ return XDP_PASS; }\nchar _license[] __attribute__((section("license"), used)) = "GPL";\n')
        sh("clang", "-O2", "-target", "bpf", f"-I/usr/include/{os.uname().machine}-linux-gnu", "-c", src, "-o", obj)
        ns, ifn = self.side(side)
        sh("ip", "link", "set", "dev", ifn, "xdpdrv", "obj", obj, "sec", "xdp", ns=ns)
        return ns, ifn


class NetCounters:
    """Reads a namespace's interface counters with a plain file read: a process parked in the namespace
    (`ip netns exec` mounts that namespace's /sys in its own mount namespace) lends its /proc/PID/root.
    Costs microseconds per read, where `ip netns exec NS cat` costs milliseconds with jitter."""

    def __init__(self, ns, ifn):
        self.ifn = ifn
        self.p = subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "1000000"], stdin=subprocess.DEVNULL)
        self.root = f"/proc/{self.p.pid}/root/sys/class/net/"
        deadline = time.monotonic() + 5
        while True:
            try:
                self.read("rx_packets")
                return
            except OSError:
                if time.monotonic() > deadline or self.p.poll() is not None:
                    self.close()
                    raise RuntimeError(f"cannot read {ifn}'s counters inside namespace {ns}")
                time.sleep(0.02)

    def read(self, name, ifn=None):
        """Counter `name` of ifn (default: the interface given at start), e.g. read("rx_packets")."""
        with open(f"{self.root}{ifn or self.ifn}/statistics/{name}") as f:
            return int(f.read())

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def main(argv):
    ap = argparse.ArgumentParser(prog="netlab.py", description="rateline's network namespace lab (see the module's text)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pair", help="two namespaces joined by a veth, 198.18.SUBNET.1 <-> .2")
    p.add_argument("ns_a")
    p.add_argument("ns_b")
    p.add_argument("if_a")
    p.add_argument("if_b")
    p.add_argument("--subnet", type=int, default=0)
    n = sub.add_parser("ns", help="one namespace with lo up")
    n.add_argument("ns")
    d = sub.add_parser("del", help="delete namespaces")
    d.add_argument("ns", nargs="+")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("netlab.py: needs root to create network namespaces")
    try:
        if a.cmd == "pair":
            lab = Pair(subnet=a.subnet, names=(a.ns_a, a.ns_b, a.if_a, a.if_b)).up()
            lab.namespaces = []  # the caller deletes them (netlab.py del)
        elif a.cmd == "ns":
            Lab().namespace(a.ns)
        else:
            for ns in a.ns:
                sh("ip", "netns", "del", ns, check=False)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        sys.exit(f"netlab.py: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
