#!/usr/bin/env python3
"""A second rx on a port already taken must refuse with the cause and the
fix, not silently share the port (SO_REUSEPORT would split the traffic)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, RX, finish, start_rx

c = Checks("port_in_use")
with Lab("p", subnet=4) as lab:
    first = start_rx(lab, ["--port", "9100", "--idle", "0", "--quiet"])
    second = subprocess.run(["ip", "netns", "exec", lab.ns_b, RX, "--port", "9100"], capture_output=True, text=True,
                            timeout=10)
    c.eq("second rx exit code", second.returncode, 1)
    c.true("second rx names the cause", "port" in second.stderr and "use --port" in second.stderr, second.stderr)
    first.send_signal(2)
    rc, out, err = finish(first)
    c.eq("first rx exit code", rc, 0)
c.done()
