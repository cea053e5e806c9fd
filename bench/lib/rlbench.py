"""rlbench: shared parts of the bench/ scripts (udp_senders, kernel_paths).

A veth pair between two network namespaces that the script creates and deletes
(Lab, on tools/lab/netlab.py's Pair, with a lock and a stale-namespace check), a persistent counter reader inside a namespace (Sampler), process
bookkeeping that only ever signals our own children by PID (Procs), tools that
know how to start their receiver and sender (Tool, Pktgen, Iperf3), one sampled
measurement run (run_one) and the pktgen cross-check (crosscheck).

Every name that differs between benches (namespaces, veths, lock file, the
program name used in messages) lives in a Topo, so two benches with different
Topos can never touch each other's namespaces. See bench/README.md.
"""
import ctypes
import datetime
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
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
# Tools. Each knows how to start its receiver in the receiving namespace (and
# wait until it listens), build its sender command, and read its own reports.
# --------------------------------------------------------------------------
def wait_listening(proto, port, proc, ns, timeout=10.0):
    flag = "-Huln" if proto == "udp" else "-Htln"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if sh("ss", flag, f"sport = :{port}", ns=ns, check=False).strip():
            return True
        time.sleep(0.05)
    return False


def read_jsonl(path):
    recs = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        recs.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return recs


def tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        return "\n".join(lines[-n:])
    except OSError:
        return ""


def mtime_iso(path):
    return datetime.datetime.fromtimestamp(os.stat(path).st_mtime).isoformat(timespec="seconds")


class Tool:
    name = "?"
    min_size = 1
    sender_grace = 10.0   # seconds past its nominal run time before we call a sender hung

    def __init__(self, args, topo):
        self.args = args
        self.topo = topo

    def available(self):
        return None   # or a reason why not

    def version(self):
        return None

    def start_receiver(self, size, rundir, total_s):
        raise NotImplementedError

    def sender_cmd(self, size, total_s, rundir):
        raise NotImplementedError

    def stop_receiver(self, recv):
        return None if recv is None else PROCS.stop(recv, signal.SIGINT)

    def reports(self, rundir, sender_out):
        return {}

    def _taskset_tx(self):
        return ["ip", "netns", "exec", self.topo.ns_tx, "taskset", "-c", str(self.args.tx_cpu)]

    def _taskset_rx(self):
        return ["ip", "netns", "exec", self.topo.ns_rx, "taskset", "-c", str(self.args.rx_cpu)]


class Pktgen(Tool):
    """pktgen --backend B as the sender, rx (backend rx_backend, or rx's auto choice) as the receiver."""
    min_size = 18   # pktgen's short header: the 64 B frame
    rx_port = 9000

    def __init__(self, args, topo, backend, rx_backend=None, extra=()):
        super().__init__(args, topo)
        self.backend = backend
        self.rx_backend = rx_backend
        self.extra = list(extra)
        self.name = f"pktgen-{backend}" + "".join(f"-{e.lstrip('-')}" for e in self.extra)

    def available(self):
        for b in (self.args.pktgen, self.args.rx):
            if not os.access(b, os.X_OK):
                return f"{b} is missing (build the project: ninja -C build)"
        return None

    def version(self):
        v = sh(self.args.pktgen, "--version", check=False).strip()
        return f"{v} (binary mtime {mtime_iso(self.args.pktgen)})"

    def start_rx(self, rundir, total_s, rx_backend=None, device=None, tag="rx"):
        """Start rx in the receiving namespace; returns the process once it listens.

        Also used for receivers of other senders (trafgen). --duration is only a safety
        bound (the script stops rx with SIGINT, or rx ends on pktgen's end markers)."""
        self.rx_json = os.path.join(rundir, f"{tag}.json")
        cmd = self._taskset_rx() + [self.args.rx]
        if rx_backend:
            cmd += ["--backend", rx_backend]
        if device:
            cmd += ["--device", device]
        cmd += ["--port", str(self.rx_port), "--idle", "0", "--quiet", "--duration", f"{total_s + 60}s",
                "--json", self.rx_json]
        out_path = os.path.join(rundir, f"{tag}.out")
        out = open(out_path, "w")
        p = PROCS.spawn(cmd, stdout=out, stderr=subprocess.STDOUT)
        out.close()
        if rx_backend in ("afpacket", "afxdp"):
            # Raw backends: ready once rx wrote its start record (after its ring/XDP set-up).
            deadline = time.monotonic() + 10.0
            ok = False
            while time.monotonic() < deadline and p.poll() is None:
                if any(r.get("type") == "start" for r in read_jsonl(self.rx_json)):
                    ok = True
                    break
                time.sleep(0.02)
        else:
            ok = wait_listening("udp", self.rx_port, p, self.topo.ns_rx)
        if not ok:
            PROCS.stop(p)
            raise RuntimeError(f"rx did not start listening: {tail(out_path)}")
        return p

    def start_receiver(self, size, rundir, total_s):
        if getattr(self.args, "tx_receiver", "rx") == "xdp-drop":
            self.rx_json = None   # the receiving veth drops the datagrams in XDP: no rx runs
            return None
        return self.start_rx(rundir, total_s, rx_backend=self.rx_backend)

    def sender_cmd(self, size, total_s, rundir, rate=None, burst=64, duration=None):
        self.pg_json = os.path.join(rundir, "pktgen.json")
        # Which build ran (someone may rebuild while the benchmark runs).
        self.launch_mtime = mtime_iso(self.args.pktgen)
        pace = ["--rate", rate] if rate else ["--delay", "0"]
        return self._taskset_tx() + [self.args.pktgen, "--backend", self.backend, "--dst", self.topo.ip_rx,
                                     "--port", str(self.rx_port), "--size", str(size), "--burst", str(burst)] + \
            self.extra + pace + ["--duration", duration or f"{total_s}s", "--quiet", "--json", self.pg_json]

    def reports(self, rundir, sender_out):
        pg = read_jsonl(self.pg_json)
        rx = read_jsonl(self.rx_json) if self.rx_json else []
        start = next((r for r in pg if r.get("type") == "start"), {})
        res = next((r for r in pg if r.get("type") == "result"), None)
        rxres = next((r for r in rx if r.get("type") == "result"), None)
        rep = {"backend_used": start.get("backend"), "backend_note": start.get("backend_note"),
               "pktgen_mtime": self.launch_mtime}
        if res is not None:
            rep.update(sent=res.get("sent"), end_markers=res.get("end_markers", 0), pktgen_pps=res.get("pps"),
                       pktgen_time_s=res.get("time_s"), retries=res.get("retries"), failed=res.get("failed"),
                       errors=res.get("errors"))
        if rxres is not None:
            rep.update(rx_received=rxres.get("received"), rx_lost=rxres.get("lost"),
                       rx_socket_drops=rxres.get("socket_drops"), rx_frames=rxres.get("frames"),
                       rx_backend=rxres.get("backend"))
        if res is None:
            rep["report_error"] = "pktgen wrote no result record"
        elif start.get("backend") not in (None, self.backend):
            rep["report_error"] = f"asked for backend {self.backend}, pktgen used {start.get('backend')}"
        return rep


class Iperf3(Tool):
    name = "iperf3"
    min_size = 16
    port = 5201

    def available(self):
        return None if shutil.which("iperf3") else "iperf3 is not installed (apt-get install iperf3)"

    def version(self):
        return sh("iperf3", "--version", check=False).splitlines()[0].strip()

    def start_receiver(self, size, rundir, total_s):
        out = open(os.path.join(rundir, "iperf3-server.out"), "w")
        p = PROCS.spawn(self._taskset_rx() + ["iperf3", "-s", "-1", "-p", str(self.port)],
                        stdout=out, stderr=subprocess.STDOUT)
        out.close()
        if not wait_listening("tcp", self.port, p, self.topo.ns_rx):
            PROCS.stop(p)
            raise RuntimeError(f"iperf3 server did not start: {tail(os.path.join(rundir, 'iperf3-server.out'))}")
        return p

    def sender_cmd(self, size, total_s, rundir, bitrate="0"):
        return self._taskset_tx() + ["iperf3", "-u", "-b", str(bitrate), "-l", str(size), "-t", str(total_s),
                                     "-c", self.topo.ip_rx, "-p", str(self.port), "--json"]

    def stop_receiver(self, recv):
        # -1: the server ends by itself after its one test; give it a moment first.
        try:
            recv.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        return PROCS.stop(recv, signal.SIGINT)

    def reports(self, rundir, sender_out):
        try:
            j = json.loads(sender_out)
            s = j["end"].get("sum_sent") or j["end"]["sum"]
            return {"tool_sent": s.get("packets"), "tool_pps": s.get("packets", 0) / s["seconds"]
                    if s.get("seconds") else None}
        except (ValueError, KeyError, TypeError):
            return {"report_error": "could not parse iperf3 --json output"}


# --------------------------------------------------------------------------
# One sampled run of one tool (a sender at full speed, counted at the
# receiving veth). See bench/README.md, "Measurement method".
# --------------------------------------------------------------------------
def run_one(lab, tool, size, args, tmp, label):
    if_rx = lab.topo.if_rx
    D, lead, tail_s = args.duration, args.lead, args.tail
    total_s = lead + D + tail_s
    rundir = tempfile.mkdtemp(prefix=f"{tool.name}-{size}-", dir=tmp)
    rec = {"tool": tool.name, "size": size, "label": label, "run_s": total_s, "window_s": D,
           "ok": False, "loadavg_1m": os.getloadavg()[0]}
    recv = sender = None
    try:
        recv = tool.start_receiver(size, rundir, total_s)
        time.sleep(0.1)
        t_before, c_before = lab.rx().read()
        _, txc_before = lab.tx().read()
        cmd = tool.sender_cmd(size, total_s, rundir)
        rec["cmd"] = " ".join(cmd)
        out_path = os.path.join(rundir, "sender.out")
        out = open(out_path, "w")
        t_launch = time.monotonic()
        sender = PROCS.spawn(cmd, stdout=out, stderr=subprocess.STDOUT)
        out.close()

        # Traffic start: the first 20 ms poll in which the receiving veth counted >= START_PACKETS new
        # packets (iperf3's TCP control exchange or a stray datagram does not count; sockperf, for one,
        # waits ~2 s before it sends anything). The window is anchored there.
        samples = []          # (t since traffic start, rx_packets, rx_bytes)
        died_early = False
        t_first = None
        prev = c_before["rx_packets"]
        while time.monotonic() - t_launch < args.start_timeout:
            if sender.poll() is not None:
                break
            time.sleep(0.02)
            t, c = lab.rx().read()
            if c["rx_packets"] - prev >= START_PACKETS:
                t_first = t
                break
            prev = c["rx_packets"]
        if t_first is None:
            raise RuntimeError(f"no traffic at {if_rx} within {args.start_timeout}s of launch "
                               f"(sender {'ended, status %s' % sender.returncode if sender.poll() is not None else 'still running'}): "
                               f"{tail(out_path, 4)}")
        rec["startup_s"] = t_first - t_launch
        for i in range(D + 1):
            target = t_first + lead + i
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if sender.poll() is not None:
                died_early = True
                break
            t, c = lab.rx().read()
            samples.append((t - t_first, c["rx_packets"], c["rx_bytes"]))
        still_running = sender.poll() is None

        try:
            sender.wait(timeout=max(0.0, t_launch + args.start_timeout + total_s + tool.sender_grace
                                    - time.monotonic()))
        except subprocess.TimeoutExpired:
            PROCS.stop(sender, signal.SIGINT)
            rec["error"] = "sender did not end in time; stopped"
        rc = sender.returncode
        PROCS.forget(sender)
        t_after, c_after = lab.rx().read()
        _, txc_after = lab.tx().read()
        rec["sender_rc"] = rc
        rec["recv_rc"] = tool.stop_receiver(recv)
        recv = None

        with open(out_path, errors="replace") as f:
            sender_out = f.read()
        rec.update(tool.reports(rundir, sender_out))

        whole = c_after["rx_packets"] - c_before["rx_packets"]
        rec["whole_run"] = {
            "rx_packets": whole,
            "rx_bytes": c_after["rx_bytes"] - c_before["rx_bytes"],
            "seconds": t_after - t_before,
            "pps": whole / (t_after - t_before),
            "rlb1_rx_dropped": c_after["rx_dropped"] - c_before["rx_dropped"],
            "rlb0_tx_packets": txc_after["tx_packets"] - txc_before["tx_packets"],
            "rlb0_tx_dropped": txc_after["tx_dropped"] - txc_before["tx_dropped"],
        }
        rec["samples"] = [{"t": round(t, 4), "rx_packets": p, "rx_bytes": b} for t, p, b in samples]

        if "error" in rec:
            pass
        elif rc != 0:
            rec["error"] = f"sender exited with status {rc}: {tail(out_path, 4)}"
        elif died_early or not still_running:
            rec["error"] = (f"sender ended before the window closed (sent < {lead + D}s); "
                            f"output: {tail(out_path, 4)}")
        elif len(samples) != D + 1:
            rec["error"] = "missing samples"
        elif rec.get("report_error"):
            rec["error"] = rec["report_error"]
        if "error" not in rec:
            (t0, p0, b0), (t1, p1, b1) = samples[0], samples[-1]
            dp = p1 - p0
            rec["pps"] = dp / (t1 - t0)
            rec["window"] = {"t_start": t0, "t_end": t1, "packets": dp}
            rec["avg_frame_bytes"] = (b1 - b0) / dp if dp else None
            rec["per_second_pps"] = [(samples[k + 1][1] - samples[k][1]) / (samples[k + 1][0] - samples[k][0])
                                     for k in range(len(samples) - 1)]
            rec["ok"] = dp > 0
            if dp == 0:
                rec["error"] = f"no packets arrived at {if_rx} in the window"
    except Exception as e:  # one failed tool must not stop the others
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        if sender is not None and sender.poll() is None:
            PROCS.stop(sender, signal.SIGINT)
        if recv is not None:
            PROCS.stop(recv, signal.SIGINT)
    return rec


def crosscheck(rec):
    """pktgen: packets it says it sent vs what the receiving veth counted over the whole run."""
    if not rec["tool"].startswith("pktgen") or rec.get("sent") is None or "whole_run" not in rec:
        return None
    w = rec["whole_run"]
    expected = rec["sent"] + (rec.get("end_markers") or 0)
    diff = w["rx_packets"] - expected
    return {"sent": rec["sent"], "end_markers": rec.get("end_markers") or 0, "expected_at_rlb1": expected,
            "rlb1_rx_packets": w["rx_packets"], "diff": diff, "rlb0_tx_dropped": w["rlb0_tx_dropped"],
            "rx_received": rec.get("rx_received"), "rx_socket_drops": rec.get("rx_socket_drops"),
            "match": diff == 0}


def fmt_int(x):
    return f"{x:,.0f}" if x is not None else "-"


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
