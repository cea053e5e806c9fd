#!/usr/bin/env python3
"""A real Prometheus scrapes rx: two pktgen -> rx pairs (rx with --metrics),
Prometheus (Debian's package, started here with its own config, storage in a
temp dir, 1 s scrape interval) inside the receivers' namespace. Through its
HTTP API (PromQL):
- sum(rateline_rx_received_packets_total) == the two rx JSON results' received;
- loss by sender == each rx JSON's senders[].lost (one receiver is made slow,
  so one sender really loses packets);
and without Prometheus:
- /metrics during a run: live counters grow;
- the final textfiles (--metrics-textfile) of pktgen and rx hold the JSON
  result's numbers exactly;
- a metrics port already taken: exit 1, one line on stderr, nothing sent.
Every process here is started by this test and stopped by its PID."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, RX, SKIP, Checks, Lab, finish, read_until, require_root, result_record, start_rx

PROMETHEUS = shutil.which("prometheus")
PROM_PORT = 9090  # inside the lab's own namespace: nothing else listens there

GET = """import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"""


def get(ns, url):
    """GET url from inside namespace ns (the test itself stays in the root namespace)."""
    r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", GET, url], capture_output=True, text=True,
                       timeout=10)
    if r.returncode != 0:
        raise RuntimeError(f"GET {url}: {r.stderr.strip()}")
    return r.stdout


def promql(ns, query):
    """An instant query: [(labels, value)]."""
    from urllib.parse import quote
    reply = json.loads(get(ns, f"http://127.0.0.1:{PROM_PORT}/api/v1/query?query={quote(query)}"))
    if reply.get("status") != "success":
        raise RuntimeError(f"{query}: {reply}")
    return [(s["metric"], float(s["value"][1])) for s in reply["data"]["result"]]


def parse_page(text):
    """Exposition text -> {(name, frozenset(labels)): value text}."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        samples[(m.group(1), labels)] = m.group(4)
    return samples


def total(samples, name):
    return sum(int(v) for (n, _), v in samples.items() if n == name)


def metrics_address(p):
    found, text = read_until(p, "rx: metrics:", 10)
    if not found:
        raise RuntimeError(f"no metrics line from rx: {text}")
    p.startup += text
    return re.search(r"http://([0-9.:]+)/metrics", text).group(1)


if not PROMETHEUS:
    require_root()
    print("SKIP: prometheus is not installed (tools/check installs Debian's package)")
    sys.exit(SKIP)

c = Checks("prometheus")
t_start = time.time()

# A metrics port already taken: refused before anything is sent (loopback of this namespace only).
with socket.socket() as taken, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as catcher:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    catcher.bind(("127.0.0.1", 0))
    catcher.settimeout(0.5)
    for prog, args in ((PKTGEN, ["--port", str(catcher.getsockname()[1]), "--count", "10"]),
                       (RX, ["--port", str(catcher.getsockname()[1] + 1)])):
        r = subprocess.run([prog] + args + ["--metrics", f"127.0.0.1:{taken.getsockname()[1]}"], capture_output=True,
                           text=True, timeout=10)
        name = os.path.basename(prog)
        lines = r.stderr.strip().splitlines()
        c.eq(f"{name} --metrics on a taken port: exit code", r.returncode, 1)
        c.true(f"{name} --metrics on a taken port: one line naming the cause and the fix",
               len(lines) == 1 and "Address already in use" in lines[0] and "another port" in lines[0], r.stderr)
    try:
        catcher.recv(2048)
        c.true("nothing sent by the refused pktgen", False)
    except socket.timeout:
        c.true("nothing sent by the refused pktgen", True)

prom = None
with tempfile.TemporaryDirectory() as tmp, Lab("m", subnet=44) as lab:
    ns_c, if_c, ip_c, ip_bc = lab.add_sender(1)
    rx_json = [os.path.join(tmp, f"rx{i}.json") for i in (1, 2)]
    rx_prom = [os.path.join(tmp, f"rx{i}.prom") for i in (1, 2)]
    common = ["--metrics", "127.0.0.1:0", "--metrics-linger", "30", "--quiet", "--idle", "5"]
    rx1 = start_rx(lab, ["--port", "9301", "--json", rx_json[0], "--metrics-textfile", rx_prom[0]] + common)
    # The second receiver is slow on purpose (test aid) behind a small buffer: its sender loses packets.
    rx2 = start_rx(lab, ["--port", "9302", "--json", rx_json[1], "--metrics-textfile", rx_prom[1],
                         "--rcvbuf", "16k", "--test-slow-us", "300"] + common)
    targets = [metrics_address(rx1), metrics_address(rx2)]
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: rateline_rx\n    static_configs:\n"
                f"      - targets: [{', '.join(repr(t) for t in targets)}]\n")
    prom = lab.spawn(lab.ns_b, [PROMETHEUS, f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/data",
                                f"--web.listen-address=127.0.0.1:{PROM_PORT}", "--log.level=warn"])
    deadline = time.time() + 15
    while time.time() < deadline:
        try:
            if get(lab.ns_b, f"http://127.0.0.1:{PROM_PORT}/-/ready").strip():
                break
        except RuntimeError:
            time.sleep(0.2)
    c.true("prometheus is ready", time.time() < deadline)

    tx1_json, tx2_json, tx1_prom = (os.path.join(tmp, n) for n in ("tx1.json", "tx2.json", "tx1.prom"))
    # Pair 1 runs ~3 s, long enough to watch its receiver's counters grow.
    tx1 = lab.spawn(lab.ns_a, [PKTGEN, "--dst", lab.ip_b, "--port", "9301", "--count", "60000", "--rate", "20k",
                               "--size", "200", "--quiet", "--json", tx1_json, "--metrics-textfile", tx1_prom])
    tx2 = lab.spawn(ns_c, [PKTGEN, "--dst", ip_bc, "--port", "9302", "--count", "20000", "--size", "1400",
                           "--quiet", "--json", tx2_json])
    live = []
    deadline = time.time() + 10
    while len(live) < 2 and time.time() < deadline:
        v = total(parse_page(get(lab.ns_b, f"http://{targets[0]}/metrics")), "rateline_rx_received_packets_total")
        if v and (not live or v > live[-1]):
            live.append(v)
        time.sleep(0.5)
    c.true("curl of /metrics during the run: received grows", len(live) == 2 and 0 < live[0] < live[1] < 60000,
           str(live))
    for p in (tx1, tx2):
        p.communicate(timeout=30)
        c.eq("pktgen exit code", p.returncode, 0)
    tx1_result = result_record(tx1_json, "pktgen")

    # The receivers end by end markers, write their JSON, and linger serving the final page.
    results = []
    for path in rx_json:
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                results.append(result_record(path, "rx"))
                break
            except (AssertionError, FileNotFoundError):
                time.sleep(0.2)
    c.eq("both rx results written", len(results), 2)
    lost_total = sum(r["lost"] for r in results)
    c.true("the slow receiver's sender lost packets (so the loss query means something)",
           results[1]["lost"] > 0 and results[0]["lost"] == 0, f"lost {[r['lost'] for r in results]}")

    deadline = time.time() + 10
    ended = []
    while time.time() < deadline:
        ended = promql(lab.ns_b, "sum(rateline_rx_run_ended)")
        if ended and ended[0][1] == 2:
            break
        time.sleep(0.5)
    c.true("prometheus scraped both final pages", ended and ended[0][1] == 2, str(ended))
    got = promql(lab.ns_b, "sum(rateline_rx_received_packets_total)")
    c.eq("PromQL sum(rateline_rx_received_packets_total) == sum of the rx JSON received",
         int(got[0][1]) if got else None, sum(r["received"] for r in results))
    by_target = dict(zip(targets, results))
    loss = promql(lab.ns_b, "sum by (instance, address, sender_id) (rateline_rx_sender_lost_packets)")
    want = {(t, g["address"], str(g["sender_id"])): g["lost"] for t, r in by_target.items() for g in r["senders"]}
    c.eq("PromQL loss by sender == the rx JSON senders[].lost",
         {(m["instance"], m["address"], m["sender_id"]): int(v) for m, v in loss}, want)
    lat = promql(lab.ns_b, "sum(rateline_rx_latency_seconds_count)")
    c.eq("PromQL latency histogram count == JSON latency samples", int(lat[0][1]) if lat else None,
         sum(r["latency_ns"]["samples"] for r in results))
    q = promql(lab.ns_b, "histogram_quantile(0.5, sum by (le) (rateline_rx_latency_seconds_bucket))")
    c.true("PromQL histogram_quantile of the latency is a positive number of seconds", q and 0 < q[0][1] < 1, str(q))

    # The final pages (textfiles) hold the JSON result's numbers exactly.
    for i, (r, path) in enumerate(zip(results, rx_prom)):
        with open(path) as f:
            s = parse_page(f.read())
        for name, field in (("rateline_rx_received_packets_total", "received"), ("rateline_rx_lost_packets", "lost"),
                            ("rateline_rx_worker_frames_total", "frames"),
                            ("rateline_rx_received_payload_bytes_total", "payload_bytes"),
                            ("rateline_rx_corrupt_packets_total", "corrupt"),
                            ("rateline_rx_socket_drops_total", "socket_drops"),
                            ("rateline_rx_end_markers_total", "end_markers"),
                            ("rateline_rx_reordered_packets_total", "reordered"),
                            ("rateline_rx_duplicated_packets_total", "duplicated"),
                            ("rateline_rx_sent_packets", "sent")):
            c.eq(f"rx{i + 1} textfile {name} == JSON {field}", total(s, name), r[field])
        c.eq(f"rx{i + 1} textfile latency count == JSON", total(s, "rateline_rx_latency_seconds_count"),
             r["latency_ns"]["samples"])
    with open(tx1_prom) as f:
        s = parse_page(f.read())
    for name, field in (("rateline_pktgen_sent_packets_total", "sent"),
                        ("rateline_pktgen_sent_payload_bytes_total", "payload_bytes"),
                        ("rateline_pktgen_failed_packets_total", "failed"),
                        ("rateline_pktgen_backend_retries_total", "retries"),
                        ("rateline_pktgen_end_markers_total", "end_markers"),
                        ("rateline_pktgen_pace_slips_total", "pace_slips")):
        c.eq(f"pktgen textfile {name} == JSON {field}", total(s, name), tx1_result[field])
    c.eq("pktgen textfile says the run ended", total(s, "rateline_pktgen_run_ended"), 1)

    # The shipped examples name only series the programs write, and the
    # scrape config is one Prometheus accepts.
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
    written = {n for (n, _) in s}
    for path in rx_prom:
        with open(path) as f:
            written |= {n for (n, _) in parse_page(f.read())}
    with open(os.path.join(docs, "grafana-dashboard.json")) as f:
        exprs = [t["expr"] for panel in json.load(f)["panels"] for t in panel["targets"]]
    named = {n for e in exprs for n in re.findall(r"rateline_[a-z_]+", e)}
    c.eq("series the Grafana dashboard asks for that no page has", sorted(named - written), [])
    promtool = shutil.which("promtool")
    if promtool:
        check = subprocess.run([promtool, "check", "config", os.path.join(docs, "prometheus.yml")],
                               capture_output=True, text=True, timeout=30)
        c.eq("promtool check config docs/prometheus.yml", check.returncode, 0)

    # A signal ends the linger; the exit code is the run's.
    for p in (rx1, rx2):
        p.send_signal(signal.SIGINT)
        rc, out, err = finish(p, timeout=10)
        c.eq("rx exit code after lingering", rc, 0)
    prom.terminate()
    prom.communicate(timeout=15)
print(f"wall time {time.time() - t_start:.1f} s")
c.done()
