#!/usr/bin/env python3
"""The embedded default: rx and pktgen with no flags at all on one host
(loopback, plain defaults) work together; pktgen runs until Ctrl-C."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from netlab import Checks, PKTGEN, RX, require_root, sh

require_root()
c = Checks("defaults_loopback")
ns = f"rltdef{os.getpid() % 100000}"
sh("ip", "netns", "add", ns)
try:
    sh("ip", "link", "set", "lo", "up", ns=ns)
    rx = subprocess.Popen(["ip", "netns", "exec", ns, RX], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = rx.stdout.readline()
    c.true("rx says where it listens", "listening on 0.0.0.0:9000" in line, line)
    rx.stdout.readline()
    tx = subprocess.Popen(["ip", "netns", "exec", ns, PKTGEN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    tx.send_signal(signal.SIGINT)
    tout, terr = tx.communicate(timeout=20)
    rout, rerr = rx.communicate(timeout=20)
    c.eq("pktgen exit code", tx.returncode, 0)
    c.eq("rx exit code", rx.returncode, 0)
    c.true("pktgen default settings 100-0-?-1400 to 127.0.0.1:9000", "100-0---1400 -> 127.0.0.1:9000" in tout, tout[:300])
    sent = [l for l in tout.splitlines() if l.startswith("100-0---1400")]
    got = [l for l in rout.splitlines() if l.startswith("100-0---1400")]
    c.true("both printed their table row", sent and got, tout[-300:] + rout[-300:])
    if sent and got:
        n_sent = int(sent[0].split()[2])
        n_lost, n_recv = int(got[0].split()[2]), int(got[0].split()[4])
        c.eq("rx received + lost == pktgen sent", n_recv + n_lost, n_sent)
        c.true("rx ended on the end markers", "ended by: end markers" in rout, rout[-200:])
finally:
    sh("ip", "netns", "del", ns, check=False)
c.done()
