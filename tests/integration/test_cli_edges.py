#!/usr/bin/env python3
"""CLI edges of pktgen, rx and ceiling.

1. A bad address (pktgen --dst, rx --bind, ceiling --serve/--dst/--rx-bind/--remote)
   is bad usage: exit 2, one line naming the option, nothing on stdout, and
   nothing sent (the sender namespace's counters do not move).
2. An empty value is refused (one line, exit 2), never read as "not given":
   `ceiling --serve ""` used to start the local lab.
3. ceiling validates every option before it builds anything: a spy `ip` first
   in PATH records any call, and none may come for a bad value. A good
   command line must call it (the spy works).
4. `ceiling --max-rate` below `--min-rate` (pps, or bit/s at some size) is refused.
5. rx --backend xdp/afxdp/afpacket with no interface names the backend asked
   for and --device.
6. --json /dev/full: the final report is printed, then one line naming the
   file and the errno text, and exit 1 (pktgen, rx; ceiling's CSV too).
7. Output files are whole or absent: a regular file is written beside its
   name and renamed at the end (the old content stays while the run lasts,
   after a SIGKILL and after a setup error); permissions and symlinks are
   kept; a FIFO and "-" are written in place.
"""
import glob
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, RX, finish, json_records, require_root, start_rx

CEILING = os.environ.get("CEILING", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PKTGEN))), "tools",
                                                 "ceiling", "ceiling"))
NAME = {PKTGEN: "pktgen", RX: "rx", CEILING: "ceiling"}

require_root()
c = Checks("cli_edges")
work = tempfile.mkdtemp(prefix="rl-cli-edges-")


def run(prog, args, ns=None, env=None, timeout=20):
    cmd = ([] if ns is None else ["ip", "netns", "exec", ns]) + [prog] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def usage_error(prog, args, names, ns=None, env=None, code=2):
    """One line `<prog>: ...` naming `names` on stderr, nothing on stdout, exit `code`."""
    r = run(prog, args, ns=ns, env=env)
    label = f"{NAME[prog]} {' '.join(repr(a) if a == '' else a for a in args)}"
    lines = r.stderr.strip().splitlines()
    c.eq(f"{label}: exit code", r.returncode, code)
    c.true(f"{label}: one line on stderr", len(lines) == 1 and lines[0].startswith(NAME[prog] + ": "), repr(r.stderr))
    c.true(f"{label}: names {names}", names in r.stderr, repr(r.stderr))
    c.eq(f"{label}: nothing on stdout", r.stdout, "")
    return r


def leftovers(path):
    return glob.glob(path + ".tmp.*")


with Lab("ce") as lab:
    sent = lambda: (lab.counter("a", "tx_packets"), int(subprocess.run(
        ["ip", "netns", "exec", lab.ns_a, "cat", "/sys/class/net/lo/statistics/tx_packets"],
        capture_output=True, text=True).stdout))

    # 1. Bad addresses: bad usage, and nothing leaves the sender.
    before = sent()
    for args in (["--dst", "not-an-address"], ["--dst", "198.18.0.300"], ["--dst", "::1"], ["-6", "--dst", lab.ip_b],
                 ["--dst", "198.18.0.2x"]):
        usage_error(PKTGEN, args + ["--count", "10"], "--dst", ns=lab.ns_a)
    c.eq("bad --dst: nothing sent (veth and lo tx_packets)", sent(), before)
    for args in (["--bind", "1.2.3"], ["--bind", "localhost"], ["-6", "--bind", "::g"]):
        usage_error(RX, args, "--bind", ns=lab.ns_b)
    for spec in ("70000", "x:9000", "127.0.0.1:", "127.0.0.1:9x", "[::1]:0", "0.0.0.0:+80"):
        usage_error(CEILING, ["--serve", spec], "--serve")
    usage_error(CEILING, ["--serve", "9000", "--rx-bind", "bad"], "--rx-bind")
    usage_error(CEILING, ["--remote", "host", "--dst", lab.ip_b], "--remote")
    usage_error(CEILING, ["--remote", "host:9000", "--dst", "198.18.0"], "--dst")

    # 2. Empty values.
    before = sent()
    for prog, args in ((PKTGEN, ["--dst", ""]), (PKTGEN, ["--json", ""]), (PKTGEN, ["--device", ""]),
                       (PKTGEN, ["--src-ip", ""]), (PKTGEN, ["--rate", ""]), (PKTGEN, ["--cores", ""]),
                       (RX, ["--bind", ""]), (RX, ["--json", ""]), (RX, ["--device", ""]), (RX, ["--idle", ""]),
                       (CEILING, ["--serve", ""]), (CEILING, ["--json", ""]), (CEILING, ["--pktgen", ""]),
                       (CEILING, ["--remote", ""]), (CEILING, ["--frame-sizes", ""]), (CEILING, ["--svg", ""])):
        usage_error(prog, args + (["--count", "10"] if prog == PKTGEN else []), args[0] + ": empty value",
                    ns=lab.ns_a if prog == PKTGEN else None)
    c.eq("empty --dst/--json/...: nothing sent", sent(), before)
    r = run(PKTGEN, ["--dst=", "--count", "10"], ns=lab.ns_a)
    c.eq("pktgen --dst= : exit code", r.returncode, 2)
    c.eq("pktgen --dst= : nothing sent", sent(), before)

    # 3. ceiling: everything checked before the lab is built. A spy `ip` records any call.
    spy_dir = os.path.join(work, "spy")
    os.mkdir(spy_dir)
    spy_log = os.path.join(work, "ip-called")
    with open(os.path.join(spy_dir, "ip"), "w") as f:
        f.write(f"#!/bin/sh\necho \"$@\" >> {spy_log}\nexit 1\n")
    os.chmod(os.path.join(spy_dir, "ip"), 0o755)
    spy_env = dict(os.environ, PATH=spy_dir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
    ok_args = ["--pktgen", PKTGEN, "--rx", RX, "--frame-sizes", "none", "--trial", "100ms", "--quiet"]
    for args, names, code in (
            (["--tx-backend", "bogus"], "--tx-backend", 2),
            (["--rx-backend", "bogus"], "--rx-backend", 2),
            (["--pktgen", "/missing/pktgen"], "--pktgen /missing/pktgen", 2),
            (["--rx", "/missing/rx"], "--rx /missing/rx", 2),
            (["--rx", work], "--rx " + work, 2),  # a directory is no program
            (["--sndbuf", "1k"], "--sndbuf", 2),
            (["--max-rate", "10", "--min-rate", "100"], "--max-rate 10 is below --min-rate 100", 2),
            (["--max-rate", "1kbit", "--min-rate", "10"], "--max-rate 1kbit is below --min-rate 10", 2),
            (["--json", "/nonexistent-dir/x.json"], "JSON file /nonexistent-dir/x.json: No such file or directory", 1),
            (["--svg", work + "/no/such/dir/x.svg"], "SVG file", 1)):
        if os.path.exists(spy_log):
            os.unlink(spy_log)
        usage_error(CEILING, ok_args + args, names, env=spy_env, code=code)
        c.true(f"ceiling {' '.join(args)}: nothing built (no `ip` call)", not os.path.exists(spy_log),
               open(spy_log).read() if os.path.exists(spy_log) else "")
    # $PKTGEN naming nothing: bad usage too. No pktgen anywhere (a copy of ceiling with no build tree
    # beside it, a PATH without one): a setup error. Both before the lab.
    env = dict(spy_env, PKTGEN=os.path.join(work, "none"))
    usage_error(CEILING, ["--rx", RX, "--frame-sizes", "none"], "$PKTGEN=" + env["PKTGEN"], env=env, code=2)
    c.true("ceiling $PKTGEN missing: nothing built", not os.path.exists(spy_log))
    lone = os.path.join(work, "ceiling")
    subprocess.run(["cp", CEILING, lone], check=True)
    NAME[lone] = "ceiling"
    env = {k: v for k, v in spy_env.items() if k not in ("PKTGEN", "RX")}
    env["PATH"] = spy_dir
    usage_error(lone, ["--rx", RX, "--frame-sizes", "none"], "Couldn't find pktgen", env=env, code=1)
    c.true("ceiling without any pktgen: nothing built", not os.path.exists(spy_log))
    # 4 (accepted side). The spy itself: a good command line gets as far as the lab.
    r = run(CEILING, ok_args + ["--max-rate", "100", "--min-rate", "10"], env=spy_env)
    c.true("ceiling good options: builds the lab (the spy `ip` was called)", os.path.exists(spy_log), r.stderr)
    c.eq("ceiling good options, `ip` failing: exit code", r.returncode, 1)

    # 5. A raw backend with no interface: the message names the backend asked for and what to give.
    for backend in ("xdp", "afxdp", "afpacket"):
        r = run(RX, ["--backend", backend, "--port", "9311"], ns=lab.ns_b)
        if "built without" in r.stderr:
            print(f"skip rx --backend {backend}: {r.stderr.strip()}")
            continue
        lines = r.stderr.strip().splitlines()
        c.eq(f"rx --backend {backend} without --device: exit code", r.returncode, 1)
        c.true(f"rx --backend {backend} without --device: one line", len(lines) == 1, repr(r.stderr))
        c.true(f"rx --backend {backend} without --device: names the backend and --device",
               f"--backend {backend}" in r.stderr and "give --device" in r.stderr, r.stderr)
        if backend != "afpacket":
            c.true(f"rx --backend {backend}: does not talk about AF_PACKET", "AF_PACKET" not in r.stderr, r.stderr)

    # 6. --json /dev/full: the report first, then one line naming the file and the errno text, exit 1.
    rx = start_rx(lab, ["--json", "/dev/full", "--quiet", "--port", "9312"])
    tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--dst", lab.ip_b, "--port", "9312", "--count", "1000",
                         "--size", "200", "--json", "/dev/full", "--quiet"],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    rrc, rout, rerr = finish(rx)
    want = "Couldn't write JSON file /dev/full: No space left on device"
    c.eq("pktgen --json /dev/full: exit code", tx.returncode, 1)
    c.true("pktgen --json /dev/full: the error is the last line, once", tx.stdout.endswith(f"pktgen: {want}\n") and
           tx.stdout.count(want) == 1, tx.stdout)
    c.true("pktgen --json /dev/full: the final report comes before it", 0 <= tx.stdout.find("Settings(b,t,n,s)") <
           tx.stdout.find(want), tx.stdout)
    c.eq("rx --json /dev/full: exit code", rrc, 1)
    c.eq("rx --json /dev/full: one line on stderr naming the file and the cause", rerr, f"rx: {want}\n")
    c.true("rx --json /dev/full: the final report is printed (1000 received)", "ended by: end markers" in rout and
           " 1000 " in rout, rout)
    # ceiling: the table, then each output that cannot be written, exit 1; the others are written whole.
    svg = os.path.join(work, "ceiling.svg")
    r = run(CEILING, ["--pktgen", PKTGEN, "--rx", RX, "--frame-sizes", "none", "-s", "1400", "--tests", "throughput",
                      "--trial", "100ms", "--max-trials", "2", "--max-rate", "1000", "--min-rate", "100",
                      "--tx-backend", "socket", "--rx-backend", "socket", "--csv", "/dev/full", "--svg", svg, "--quiet"],
            timeout=120)
    c.eq("ceiling --csv /dev/full: exit code", r.returncode, 1)
    c.true("ceiling --csv /dev/full: the table is printed", "NDR pps" in r.stdout, r.stdout)
    c.eq("ceiling --csv /dev/full: one line naming the file and the cause", r.stderr,
         "ceiling: Couldn't write CSV file /dev/full: No space left on device\n")
    c.true("ceiling --svg: written whole beside it", open(svg).read().rstrip().endswith("</svg>") and not leftovers(svg))

    # 7. Whole or absent.
    def send(json_path, port=9313, size=200):
        return subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--dst", lab.ip_b, "--port", str(port),
                               "--count", "500", "--size", str(size), "--json", json_path, "--quiet"],
                              capture_output=True, text=True, timeout=30)

    rx_json, tx_json = os.path.join(work, "rx.json"), os.path.join(work, "tx.json")
    for p in (rx_json, tx_json):
        with open(p, "w") as f:
            f.write("old\n")
    os.chmod(tx_json, 0o640)
    rx = start_rx(lab, ["--json", rx_json, "--quiet", "--port", "9313"])
    time.sleep(1.5)  # rx has written its start record by now
    c.eq("rx running: the old file is untouched", open(rx_json).read(), "old\n")
    tmp = leftovers(rx_json)
    c.true("rx running: writes a temporary file beside it", len(tmp) == 1 and "start" in open(tmp[0]).read(), str(tmp))
    t = send(tx_json)
    rrc, rout, rerr = finish(rx)
    c.eq("pktgen to a regular file: exit code", t.returncode, 0)
    c.eq("rx to a regular file: exit code", rrc, 0)
    for name, p in (("rx", rx_json), ("pktgen", tx_json)):
        recs = json_records(p)
        c.true(f"{name} --json FILE: whole (start ... result)", recs[0]["type"] == "start" and recs[-1]["type"] == "result")
        c.eq(f"{name} --json FILE: no temporary file left", leftovers(p), [])
    c.eq("pktgen --json FILE: permissions kept", stat.S_IMODE(os.stat(tx_json).st_mode), 0o640)

    # SIGKILL: the old file stays; only the temporary one is left.
    with open(rx_json, "w") as f:
        f.write("old\n")
    rx = start_rx(lab, ["--json", rx_json, "--port", "9314"])
    time.sleep(1.5)
    rx.kill()
    rx.wait()
    c.eq("rx killed: the old file is untouched, never half a run", open(rx_json).read(), "old\n")
    c.eq("rx killed: its temporary file is what is left", len(leftovers(rx_json)), 1)
    for p in leftovers(rx_json):
        os.unlink(p)

    # An error found at set-up, after the file was opened: the old file stays, nothing is left.
    with open(tx_json, "w") as f:
        f.write("old\n")
    t = send(tx_json, size=9000)  # beyond the veth's MTU: bad usage, found after the JSON file is opened
    c.true("pktgen --size beyond the path MTU: exit 2, one line, says why",
           t.returncode == 2 and "path MTU" in t.stderr and len(t.stderr.strip().splitlines()) == 1, t.stderr)
    c.eq("pktgen set-up error: the old file is untouched", open(tx_json).read(), "old\n")
    c.eq("pktgen set-up error: no temporary file left", leftovers(tx_json), [])

    # A symlink keeps pointing at its (now whole) file.
    link = os.path.join(work, "link.json")
    os.symlink(tx_json, link)
    rx = start_rx(lab, ["--quiet", "--port", "9315"])
    t = send(link, port=9315)
    finish(rx)
    c.true("pktgen --json SYMLINK: the link stays a link", os.path.islink(link))
    c.true("pktgen --json SYMLINK: its file is whole", json_records(tx_json)[-1]["type"] == "result")
    c.eq("pktgen --json SYMLINK: nothing left beside either", leftovers(tx_json) + leftovers(link), [])

    # A FIFO is written in place, line by line; "-" is stdout.
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    rx = start_rx(lab, ["--quiet", "--port", "9316"])
    t = send(fifo, port=9316)
    finish(rx)
    reader.join(10)
    c.eq("pktgen --json FIFO: exit code", t.returncode, 0)
    c.true("pktgen --json FIFO: the records came through it", got and '"type":"result"' in got[0], str(got))
    c.true("pktgen --json FIFO: still a FIFO", stat.S_ISFIFO(os.stat(fifo).st_mode))
    rx = start_rx(lab, ["--quiet", "--port", "9317"])
    t = send("-", port=9317)
    finish(rx)
    c.true('pktgen --json -: the records on stdout', '"type":"result"' in t.stdout, t.stdout)

subprocess.run(["rm", "-rf", work])
c.done()
