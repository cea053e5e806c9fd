#!/usr/bin/env python3
"""The socket path needs no privilege: rx and pktgen --backend socket run as
an unprivileged user (setpriv: no capabilities, no supplementary groups) on
loopback in a namespace of their own, and the counts are exact. rx cannot
force its receive buffer past net.core.rmem_max and says so. What does need
privilege (ports below 1024) fails with a message that says why. (Since
Linux 5.7 SO_BINDTODEVICE needs no privilege on an unbound socket, so
--device is not among them.)"""
import os
import pwd
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, NetLab, PKTGEN, RX, json_records, require_root, result_record, sh

USER = "rateline-test"
N = 20000
require_root()
c = Checks("unprivileged")

try:
    pw = pwd.getpwnam(USER)
except KeyError:
    sh("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", USER)
    pw = pwd.getpwnam(USER)
c.true(f"user {USER} is not root", pw.pw_uid != 0, str(pw.pw_uid))
for binary in (PKTGEN, RX):
    c.true(f"{os.path.basename(binary)} is executable by others", os.stat(binary).st_mode & 0o001, binary)

ns = f"rltunp{os.getpid() % 100000}"


def as_user(args):
    """argv that runs `args` in the namespace as the unprivileged user, with no capability at all."""
    return ["ip", "netns", "exec", ns, "setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"] + list(args)


def run_user(args, timeout=30):
    return subprocess.run(as_user(args), capture_output=True, text=True, timeout=timeout)


rmem_max = int(open("/proc/sys/net/core/rmem_max").read())
ask = min(4 * rmem_max, 1 << 30)  # more than rmem_max lets a non-root socket have
with tempfile.TemporaryDirectory() as tmp:
    os.chmod(tmp, 0o777)  # the user writes its JSON here
    lab = NetLab()
    lab.namespace(ns)  # lo up, IPv6 off
    try:
        r = run_user(["id", "-u"])
        c.eq("setpriv drops to the user", r.stdout.strip(), str(pw.pw_uid))
        r = run_user(["grep", "^CapEff", "/proc/self/status"])
        c.true("no effective capability", r.stdout.split()[-1:] == ["0000000000000000"], r.stdout.strip())

        rx_json, tx_json = os.path.join(tmp, "rx.json"), os.path.join(tmp, "tx.json")
        rx = subprocess.Popen(as_user([RX, "--backend", "socket", "--rcvbuf", str(ask), "--json", rx_json, "--quiet"]),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        startup = rx.stdout.readline() + rx.stdout.readline()
        ok = "rx: receive buffer" in startup
        c.true("rx started as the user", ok, "" if ok else startup)
        tx = run_user([PKTGEN, "--backend", "socket", "--count", str(N), "--rate", "20k", "--burst", "10",
                       "--size", "200", "--quiet", "--json", tx_json], timeout=60)
        rout, rerr = rx.communicate(timeout=30)
        c.eq("pktgen exit code", tx.returncode, 0)
        c.eq("rx exit code", rx.returncode, 0)
        c.true("nothing on stderr", not tx.stderr.strip() and not rerr.strip(), tx.stderr + rerr)
        t = result_record(tx_json, "pktgen")
        r = result_record(rx_json, "rx")
        c.eq("pktgen sent", t["sent"], N)
        c.eq("rx received", r["received"], N)
        c.eq("rx lost", r["lost"], 0)
        c.eq("rx sent (end markers)", r["sent"], N)
        c.eq("rx ended by", r["ended_by"], "end markers")
        c.true("JSON files belong to the user", os.stat(rx_json).st_uid == pw.pw_uid, str(os.stat(rx_json).st_uid))
        # Not forced: the kernel capped SO_RCVBUF at rmem_max (and doubled it, as it does for bookkeeping).
        c.eq("rx receive buffer capped at 2 * net.core.rmem_max", r["rcvbuf_bytes"], 2 * rmem_max)
        c.true("rx says the buffer was capped, not forced",
               "(SO_RCVBUF, capped by net.core.rmem_max" in startup and "SO_RCVBUFFORCE" not in startup,
               startup.splitlines()[-1] if startup else "")
        start = [x for x in json_records(rx_json) if x.get("type") == "start"]
        c.true("rx JSON start record: rcvbuf_forced false", start and start[0]["rcvbuf_forced"] is False, str(start))

        # What needs privilege says so.
        r = run_user([RX, "--port", "80", "--quiet", "--duration", "1"])
        c.eq("rx --port 80 as the user: exit code", r.returncode, 1)
        c.true("rx --port 80: names the missing privilege", "CAP_NET_BIND_SERVICE" in r.stderr, r.stderr.strip())
        r = run_user([PKTGEN, "--backend", "socket", "--src-port", "80", "--count", "1", "--quiet"])
        c.eq("pktgen --src-port 80 as the user: exit code", r.returncode, 1)
        c.true("pktgen --src-port 80: says permission denied", "Couldn't bind source port 80: Permission denied"
               in r.stderr, r.stderr.strip())
    finally:
        lab.close()
c.true("namespace deleted", ns not in sh("ip", "netns", "list", capture=True))
c.done()
