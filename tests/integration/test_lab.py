#!/usr/bin/env python3
"""The lab every test, bench and script stands on (tools/lab/netlab.py), through its CLI as the shell scripts
use it (tools/quickstart, tools/check.d): a pair carries a ping with no ARP and no IPv6 frame on the link, `del`
leaves nothing behind, and a pair that cannot be made removes what it made before failing."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import LAB_DIR, Checks, require_root, sh

require_root()
c = Checks("lab")
CLI = [sys.executable, os.path.join(LAB_DIR, "netlab.py")]
uid = os.getpid() % 100000
ns_a, ns_b, if_a, if_b = f"rlt{uid}La", f"rlt{uid}Lb", f"rl{uid}La", f"rl{uid}Lb"


def namespaces():
    return {line.split()[0] for line in sh("ip", "netns", "list", capture=True).splitlines() if line.strip()}


def cli(*args):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=60)


try:
    r = cli("pair", ns_a, ns_b, if_a, if_b, "--subnet", "93")
    c.eq("pair: exit code", r.returncode, 0)
    c.true("pair: both namespaces exist", {ns_a, ns_b} <= namespaces())
    neigh = sh("ip", "neigh", "show", "dev", if_a, ns=ns_a, capture=True)
    c.true("pair: A's neighbour B is static", "198.18.93.2" in neigh and "PERMANENT" in neigh, neigh.strip())
    addrs = sh("ip", "-6", "addr", "show", "dev", if_b, ns=ns_b, capture=True)
    c.eq("pair: no IPv6 address on B's veth (no link-local, DAD or MLD frames)", addrs.strip(), "")
    time.sleep(0.5)  # anything the link would send on its own, it sends when it comes up
    before = int(sh("cat", f"/sys/class/net/{if_b}/statistics/rx_packets", ns=ns_b, capture=True))
    ping = subprocess.run(["ip", "netns", "exec", ns_a, "ping", "-c", "3", "-i", "0.2", "-W", "2", "198.18.93.2"],
                          capture_output=True, text=True, timeout=30)
    c.eq("pair: ping A -> B exit code", ping.returncode, 0)
    after = int(sh("cat", f"/sys/class/net/{if_b}/statistics/rx_packets", ns=ns_b, capture=True))
    c.eq("pair: B's veth counted the 3 echo requests and nothing else (no ARP)", after - before, 3)

    r = cli("del", ns_a, ns_b)
    c.eq("del: exit code", r.returncode, 0)
    c.true("del: both namespaces are gone", not ({ns_a, ns_b} & namespaces()))

    # The second namespace's name is taken (by the first): the pair fails and deletes the one it made.
    r = cli("pair", ns_a, ns_a, if_a, if_b)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    c.eq("pair that cannot be made: exit code", r.returncode, 1)
    c.true("pair that cannot be made: one line naming the command that failed",
           len(lines) == 1 and "ip netns add" in lines[0], r.stderr.strip())
    c.true("pair that cannot be made: leaves no namespace", ns_a not in namespaces())

    r = cli("ns", ns_a)
    c.eq("ns: exit code", r.returncode, 0)
    lo = sh("ip", "link", "show", "lo", ns=ns_a, capture=True)
    c.true("ns: lo is up", "UP" in lo.split(">")[0], lo.strip())
finally:
    for ns in (ns_a, ns_b):
        sh("ip", "netns", "del", ns, check=False)
c.true("nothing left behind", not ({ns_a, ns_b} & namespaces()))
c.done()
