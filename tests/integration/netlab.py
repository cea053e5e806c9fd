"""Test hosts for integration tests: network namespaces joined by a veth pair.

Every lab gets unique names (pid-based), addresses from the RFC 2544
benchmarking range 198.18.0.0/15, no IPv6 link-local chatter and static
neighbour entries, so the interface counters count our packets and nothing
else. A lab deletes what it made on exit, also when the test fails.
"""
import json
import os
import signal
import subprocess
import sys
import time

BUILD = os.environ.get("RATELINE_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
PKTGEN = os.environ.get("PKTGEN", os.path.join(BUILD, "pktgen", "pktgen"))
RX = os.environ.get("RX", os.path.join(BUILD, "rx", "rx"))

SKIP = 77  # meson: test skipped


def sh(*args, check=True, capture=False, ns=None, timeout=30):
    cmd = list(args)
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    r = subprocess.run(cmd, check=False, text=True, timeout=timeout,
                       stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout if capture else r.returncode


def require_root():
    if os.geteuid() != 0:
        print("SKIP: needs root for network namespaces")
        sys.exit(SKIP)


def hugepages_free():
    """Free hugepages of the default size (DPDK runs need some: tools/check reserves them)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("HugePages_Free:"):
                return int(line.split()[1])
    return 0


class Lab:
    """Two namespaces A (sender) and B (receiver) with veth a <-> b."""

    def __init__(self, tag, subnet=0):
        require_root()
        uid = f"{os.getpid() % 100000}"
        self.ns_a = f"rlt{uid}{tag}a"
        self.ns_b = f"rlt{uid}{tag}b"
        self.if_a = f"rl{uid}{tag}a"[:15]
        self.if_b = f"rl{uid}{tag}b"[:15]
        self.ip_a = f"198.18.{subnet}.1"
        self.ip_b = f"198.18.{subnet}.2"
        self.procs = []

    def __enter__(self):
        try:
            sh("ip", "netns", "add", self.ns_a)
            sh("ip", "netns", "add", self.ns_b)
            sh("ip", "link", "add", self.if_a, "netns", self.ns_a, "type", "veth", "peer", "name", self.if_b,
               "netns", self.ns_b)
            for ns, ifn, ip in ((self.ns_a, self.if_a, self.ip_a), (self.ns_b, self.if_b, self.ip_b)):
                sh("sysctl", "-qw", f"net.ipv6.conf.all.disable_ipv6=1", ns=ns)
                sh("sysctl", "-qw", f"net.ipv6.conf.default.disable_ipv6=1", ns=ns)
                sh("ip", "addr", "add", f"{ip}/30", "dev", ifn, ns=ns)
                sh("ip", "link", "set", ifn, "up", ns=ns)
                sh("ip", "link", "set", "lo", "up", ns=ns)
            self.pin_neighbours()
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for ns in [self.ns_a, self.ns_b] + getattr(self, "extra_ns", []):
            sh("ip", "netns", "del", ns, check=False)

    def pin_neighbours(self):
        """Permanent neighbour entries both ways: no ARP on the link. Again after a DPDK port on a veth has
        stopped: it takes the interface down and up, and the kernel flushes its neighbours, permanent ones too."""
        sh("ip", "neigh", "replace", self.ip_b, "lladdr", self.mac(self.ns_b, self.if_b), "dev", self.if_a, "nud",
           "permanent", ns=self.ns_a)
        sh("ip", "neigh", "replace", self.ip_a, "lladdr", self.mac(self.ns_a, self.if_a), "dev", self.if_b, "nud",
           "permanent", ns=self.ns_b)

    def add_sender(self, idx):
        """A further sender namespace joined to B by a veth pair of its own
        (198.18.<subnet + 10 * idx>.0/30): (ns, if, ip, B's address on that link).
        Deleted with the lab."""
        uid = f"{os.getpid() % 100000}"
        ns = f"rlt{uid}{idx}s"
        ifs, ifb = f"rl{uid}{idx}s"[:15], f"rl{uid}{idx}r"[:15]
        net = int(self.ip_a.split(".")[2]) + 10 * idx
        ip_s, ip_r = f"198.18.{net}.1", f"198.18.{net}.2"
        self.extra_ns = getattr(self, "extra_ns", []) + [ns]
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", ifs, "netns", ns, "type", "veth", "peer", "name", ifb, "netns", self.ns_b)
        sh("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", ns=ns)
        for n, ifn, ip in ((ns, ifs, ip_s), (self.ns_b, ifb, ip_r)):
            sh("ip", "addr", "add", f"{ip}/30", "dev", ifn, ns=n)
            sh("ip", "link", "set", ifn, "up", ns=n)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "neigh", "replace", ip_r, "lladdr", self.mac(self.ns_b, ifb), "dev", ifs, "nud", "permanent", ns=ns)
        sh("ip", "neigh", "replace", ip_s, "lladdr", self.mac(ns, ifs), "dev", ifb, "nud", "permanent", ns=self.ns_b)
        return ns, ifs, ip_s, ip_r

    @staticmethod
    def mac(ns, ifn):
        return sh("cat", f"/sys/class/net/{ifn}/address", ns=ns, capture=True).strip()

    def counter(self, side, name):
        ns, ifn = (self.ns_a, self.if_a) if side == "a" else (self.ns_b, self.if_b)
        return int(sh("cat", f"/sys/class/net/{ifn}/statistics/{name}", ns=ns, capture=True))

    def add_ipv6(self, a6, b6):
        """IPv6 on both veth ends (a6 on a, b6 on b, /64, no DAD) with permanent neighbours both ways."""
        for ns, ifn, ip in ((self.ns_a, self.if_a, a6), (self.ns_b, self.if_b, b6)):
            sh("sysctl", "-qw", f"net.ipv6.conf.{ifn}.disable_ipv6=0", ns=ns)
            sh("ip", "-6", "addr", "add", f"{ip}/64", "dev", ifn, "nodad", ns=ns)
        sh("ip", "-6", "neigh", "replace", b6, "lladdr", self.mac(self.ns_b, self.if_b), "dev", self.if_a,
           "nud", "permanent", ns=self.ns_a)
        sh("ip", "-6", "neigh", "replace", a6, "lladdr", self.mac(self.ns_a, self.if_a), "dev", self.if_b,
           "nud", "permanent", ns=self.ns_b)

    def xdp_pass(self, side, tmp):
        """Attaches a native XDP program that passes every frame to side's veth: a veth delivers frames
        that its peer returns by XDP_TX only to an end that runs one. `ip link set ... xdpdrv off` detaches."""
        src, obj = os.path.join(tmp, "xdp_pass.c"), os.path.join(tmp, "xdp_pass.o")
        with open(src, "w") as f:
            f.write('#include <linux/bpf.h>\n__attribute__((section("xdp"), used)) int pass(struct xdp_md *c) '
                    '{ return XDP_PASS; }\nchar _license[] __attribute__((section("license"), used)) = "GPL";\n')
        sh("clang", "-O2", "-target", "bpf", f"-I/usr/include/{os.uname().machine}-linux-gnu", "-c", src, "-o", obj)
        ns, ifn = (self.ns_a, self.if_a) if side == "a" else (self.ns_b, self.if_b)
        sh("ip", "link", "set", "dev", ifn, "xdpdrv", "obj", obj, "sec", "xdp", ns=ns)
        return ns, ifn

    def spawn(self, ns, args, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", ns] + list(args), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        self.procs.append(p)
        return p


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
