"""rlbench: shared parts of the bench/ scripts (udp_senders, kernel_paths, rtt).

A veth pair between two network namespaces that the script creates and
deletes (Lab, on tools/lab/netlab.py's Pair, with a lock and a stale-namespace
check), a persistent counter reader inside a namespace (Sampler), process
bookkeeping that only ever signals our own children by PID (Procs), and the
clean-up on any exit. The tools and the measured run are in bench_tools.py.

Every name that differs between benches (namespaces, veths, lock file, the
program name used in messages) lives in a Topo, so two benches with different
Topos can never touch each other's namespaces. See bench/README.md.
"""
import ctypes
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "lab"))
import netlab  # noqa: E402  (the namespaces and veth every test and bench uses)

MAX_PAYLOAD = 1500 - 20 - 8          # veth MTU 1500: bigger payloads would fragment
START_PACKETS = 100                  # packets in one 20 ms poll that mark a sender's traffic start

PROG = "rlbench"                     # prefix of warnings; set_prog() sets it per script


def set_prog(name):
    global PROG
    PROG = name


class Topo:
    """The names one bench uses: namespaces, veth ends, addresses, lock file."""

    def __init__(self, prog, ns_tx, ns_rx, if_tx, if_rx, ip_tx="198.18.0.1", ip_rx="198.18.0.2", lock_path=None):
        self.prog = prog
        self.ns_tx, self.ns_rx = ns_tx, ns_rx
        self.if_tx, self.if_rx = if_tx, if_rx
        self.ip_tx, self.ip_rx = ip_tx, ip_rx
        self.lock_path = lock_path or f"/run/lock/{ns_tx.split('-')[0]}-{prog}.lock"


class Interrupted(BaseException):
    """SIGINT/SIGTERM/SIGHUP: unwinds like KeyboardInterrupt, so every finally runs."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def log(msg=""):
    print(msg, flush=True)


def warn(msg):
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Process bookkeeping: every child is started here, in its own session (so a
# Ctrl-C at the terminal reaches only this script, which then stops them by
# PID), with PR_SET_PDEATHSIG so that it dies if this script is killed hard.
# `ip netns exec` and `taskset` exec() their command, so the PID we hold is
# the tool's own PID.
# --------------------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _child_setup():
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Procs:
    def __init__(self):
        self.live = []

    def spawn(self, cmd, stdout=None, stderr=None, stdin=subprocess.DEVNULL, text=True):
        p = subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=stderr, text=text,
                             start_new_session=True, preexec_fn=_child_setup)
        p.cmdline = cmd
        self.live.append(p)
        return p

    def stop(self, p, sig=signal.SIGINT, grace=5.0):
        """Signal one of our children by PID, wait, escalate to SIGKILL."""
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=5)
        if p in self.live:
            self.live.remove(p)
        return p.returncode

    def forget(self, p):
        """p has ended by itself (we waited for it): stop tracking it."""
        if p in self.live:
            self.live.remove(p)

    def stop_all(self):
        for p in list(reversed(self.live)):
            try:
                self.stop(p, signal.SIGTERM, grace=2.0)
            except Exception as e:  # keep cleaning up
                warn(f"could not stop pid {p.pid}: {e}")


PROCS = Procs()


def sh(*cmd, ns=None, check=True, timeout=20):
    """netlab.sh that always returns the command's stdout."""
    return netlab.sh(*cmd, ns=ns, check=check, capture=True, timeout=timeout)


def take_lock(topo):
    """One run of a bench at a time; the lock dies with the process. Returns the open file."""
    lock = open(topo.lock_path, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"{topo.prog}: another {topo.prog} run holds {topo.lock_path}; not starting")
    return lock


# --------------------------------------------------------------------------
# Topology
# --------------------------------------------------------------------------
class Lab:
    def __init__(self, topo):
        self.topo = topo
        self.pair = netlab.Pair(names=(topo.ns_tx, topo.ns_rx, topo.if_tx, topo.if_rx))
        self.pair.ip_a, self.pair.ip_b = topo.ip_tx, topo.ip_rx
        self.samplers = {}
        self.mac_tx = self.mac_rx = None

    @staticmethod
    def existing():
        return netlab.existing_namespaces()

    def check_free(self, replace_stale):
        t = self.topo
        clash = sorted({t.ns_tx, t.ns_rx} & self.existing())
        if not clash:
            return
        if not replace_stale:
            raise SystemExit(
                f"{t.prog}: network namespace(s) {', '.join(clash)} already exist. Another run, or "
                f"someone else, is using them; refusing to touch them. If they are left over from a "
                f"killed run, delete them (ip netns del NAME) or rerun with --replace-stale.")
        for ns in clash:
            pids = sh("ip", "netns", "pids", ns, check=False).split()
            if pids:
                raise SystemExit(f"{t.prog}: namespace {ns} still has processes ({' '.join(pids)}); "
                                 f"not deleting it even with --replace-stale")
            log(f"deleting stale namespace {ns} (--replace-stale, no processes in it)")
            sh("ip", "netns", "del", ns)

    def up(self):
        t = self.topo
        self.pair.up()  # IPv6 off before the links exist, static neighbours: the counters count only the tools
        self.mac_tx = netlab.mac(t.ns_tx, t.if_tx)
        self.mac_rx = netlab.mac(t.ns_rx, t.if_rx)
        # A GSO send (pktgen --gso) must be cut into datagrams before the veth counts it.
        if shutil.which("ethtool"):
            sh("ethtool", "-K", t.if_tx, "tx-udp-segmentation", "off", ns=t.ns_tx, check=False)
        for ns, dev in ((t.ns_tx, t.if_tx), (t.ns_rx, t.if_rx)):
            self.samplers[ns] = Sampler(ns, dev)

    def down(self):
        for s in self.samplers.values():
            s.close()
        self.samplers = {}
        self.pair.close()  # deletes only the namespaces this run created

    def rx(self):
        return self.samplers[self.topo.ns_rx]

    def tx(self):
        return self.samplers[self.topo.ns_tx]

    def sanity(self):
        """The persistent reader agrees with a plain `ip netns exec ... cat`, and the link is quiet."""
        t = self.topo
        _, c = self.rx().read()
        cat = int(sh("cat", f"/sys/class/net/{t.if_rx}/statistics/rx_packets", ns=t.ns_rx))
        if cat != c["rx_packets"]:
            warn(f"counter reader says {c['rx_packets']}, cat says {cat}")
        time.sleep(1.0)
        _, c2 = self.rx().read()
        if c2["rx_packets"] != c["rx_packets"]:
            warn(f"{t.if_rx} counted {c2['rx_packets'] - c['rx_packets']} packets while idle: "
                 f"something else sends on the link; numbers may be polluted")


# A tiny reader that lives inside a namespace (`ip netns exec NS python3 ...`,
# so it sees that namespace's /sys) and answers each request line with the
# current counters. Spawning `ip netns exec NS cat ...` per sample costs
# milliseconds with jitter; this costs ~0.1 ms, so the sample times are exact.
SAMPLER_CODE = r"""
import signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
base = "/sys/class/net/%s/statistics/" % sys.argv[1]
for line in sys.stdin:
    out = []
    for name in line.split():
        with open(base + name) as f:
            out.append(f.read().strip())
    sys.stdout.write(" ".join(out) + "\n")
    sys.stdout.flush()
"""

COUNTERS = ("rx_packets", "rx_bytes", "rx_dropped", "tx_packets", "tx_dropped")


class Sampler:
    def __init__(self, ns, dev, cpu=None):
        self.ns, self.dev = ns, dev
        self.p = PROCS.spawn(["ip", "netns", "exec", ns, sys.executable, "-c", SAMPLER_CODE, dev],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def read(self):
        """Returns (t, {counter: value}); t is the midpoint of the request."""
        t0 = time.monotonic()
        self.p.stdin.write(" ".join(COUNTERS) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        t1 = time.monotonic()
        if not line:
            raise RuntimeError(f"counter reader in {self.ns} died: {self.p.stderr.read()}")
        vals = [int(v) for v in line.split()]
        return (t0 + t1) / 2, dict(zip(COUNTERS, vals))

    def close(self):
        try:
            self.p.stdin.close()
        except Exception:
            pass
        PROCS.stop(self.p, signal.SIGTERM, grace=2.0)


# --------------------------------------------------------------------------
# Session scaffolding: cleanup on exit and on SIGINT/SIGTERM/SIGHUP.
# --------------------------------------------------------------------------
def make_cleanup(lab, tmp):
    """Returns an idempotent cleanup(): stop our processes, delete our namespaces, remove tmp."""
    cleaned = []

    def cleanup():
        if cleaned:
            return
        cleaned.append(1)
        sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in sigs}   # let cleanup finish
        try:
            PROCS.stop_all()
            lab.down()
            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            for sig in sigs:
                signal.signal(sig, old[sig])
    return cleanup


def raise_on_signals():
    """Ctrl-C, kill and hangup all end the run the same way: raise Interrupted, so every finally runs
    (SIGINT is set explicitly: a shell starts background jobs with it ignored)."""
    def on_signal(signum, frame):
        raise Interrupted(signum)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)


def default_signals():
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def results_path(here, prog, started):
    resdir = os.path.join(here, "results")
    os.makedirs(resdir, exist_ok=True)
    gi = os.path.join(resdir, ".gitignore")
    if not os.path.exists(gi):
        with open(gi, "w") as f:
            f.write("*.json\n")
    return os.path.join(resdir, f"{prog}-{started.strftime('%Y%m%d-%H%M%S')}.json")
