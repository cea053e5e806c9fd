"""bench_tools: the tools the kernel-path benches run, and one measured run.

Each tool (Pktgen, Iperf3) knows how to start its receiver in the receiving
namespace and wait until it listens, build its sender command and read its
own reports; run_one samples the receiving veth's counters around one
sender run, crosscheck compares pktgen's own count with the veth's. The lab,
process bookkeeping and counter reader they use are in rlbench.py.
"""
import datetime
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from rlbench import PROCS, START_PACKETS, sh

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
            # Raw backends: ready once rx says what it receives into (after its ring/XDP set-up), as
            # the tests wait for it. Its JSON file appears only when rx ends (it is written whole).
            deadline = time.monotonic() + 10.0
            ok = False
            while time.monotonic() < deadline and p.poll() is None:
                with open(out_path, errors="replace") as f:
                    if "rx: receive buffer" in f.read():
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
