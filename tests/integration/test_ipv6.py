#!/usr/bin/env python3
"""IPv6 on every backend that builds or sends IPv6: exact counts on a veth
pair with IPv6 addresses, and frames pktgen builds itself (afpacket) are
accepted by the receiver's stack (valid IPv6 UDP checksums)."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, finish, result_record, sh, start_rx

c = Checks("ipv6")
with tempfile.TemporaryDirectory() as tmp, Lab("v", subnet=16) as lab:
    a6, b6 = "2001:db8:2544::1", "2001:db8:2544::2"  # RFC 3849 documentation prefix, inside our namespaces only
    for ns, ifn, ip in ((lab.ns_a, lab.if_a, a6), (lab.ns_b, lab.if_b, b6)):
        sh("sysctl", "-qw", f"net.ipv6.conf.{ifn}.disable_ipv6=0", ns=ns)
        sh("ip", "-6", "addr", "add", f"{ip}/64", "dev", ifn, "nodad", ns=ns)
    sh("ip", "-6", "neigh", "replace", b6, "lladdr", lab.mac(lab.ns_b, lab.if_b), "dev", lab.if_a, "nud", "permanent",
       ns=lab.ns_a)
    time.sleep(0.2)
    for tx_b in ("socket", "uring", "afpacket"):
        rx_json = os.path.join(tmp, f"rx-{tx_b}.json")
        rx = start_rx(lab, ["--ipv6", "--json", rx_json, "--quiet"])
        tx = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--ipv6", "--backend", tx_b, "--dst", b6,
                             "--count", "10000", "--rate", "50k", "--size", "1000", "--quiet"], capture_output=True,
                            text=True, timeout=60)
        c.eq(f"{tx_b}: pktgen exit code", tx.returncode, 0)
        c.true(f"{tx_b}: pktgen used {tx_b}", f"backend {tx_b}" in tx.stdout, tx.stdout[:300] + tx.stderr)
        rc, out, err = finish(rx)
        r = result_record(rx_json, "rx")
        c.eq(f"{tx_b}: received over IPv6", r["received"], 10000)
        c.eq(f"{tx_b}: lost", r["lost"], 0)
c.done()
