#!/usr/bin/env python3
"""Least privilege after setup: started as root, every thread of pktgen and rx
keeps in its effective, permitted and bounding sets only what its backend still
uses (read from /proc/PID/task/*/status while it runs), and the run still
counts exactly. That includes the threads DPDK's EAL starts (eal-intr-thread,
rte_mp_handle): DPDK runs here on its AF_PACKET PMD over the lab's veths. Expected sets are written out here from capability numbers, not
taken from the code under test."""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, Checks, Lab, finish, read_until, result_record, start_rx

DAC_OVERRIDE, NET_ADMIN, NET_RAW, IPC_LOCK, SYS_ADMIN, PERFMON, BPF = 1, 12, 13, 14, 21, 38, 39
KEEP = {
    "socket": 0,
    "uring": 0,
    "afpacket": 1 << NET_RAW | 1 << NET_ADMIN,
    # CAP_SYS_ADMIN only where the kernel has no CAP_BPF (before 5.8).
    "afxdp": 1 << NET_RAW | 1 << NET_ADMIN | (1 << BPF | 1 << PERFMON
                                              if int(open("/proc/sys/kernel/cap_last_cap").read()) >= BPF
                                              else 1 << SYS_ADMIN),
    "dpdk": 1 << NET_RAW | 1 << NET_ADMIN | 1 << SYS_ADMIN | 1 << IPC_LOCK | 1 << DAC_OVERRIDE,
}
probe = subprocess.run([PKTGEN, "--backend", "dpdk", "--count", "1", "--", "--no-pci"], capture_output=True, text=True,
                       timeout=60)
if "built without DPDK" in probe.stderr:
    print("info: built without DPDK: its threads are not checked")
    del KEEP["dpdk"]
N = 20000
c = Checks("least_privilege")


def thread_caps(pid):
    caps = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                fields = dict(line.split(":\t", 1) for line in f if ":\t" in line)
        except FileNotFoundError:
            continue
        caps[tid] = {k: int(fields[k], 16) for k in ("CapEff", "CapPrm", "CapBnd")}
    return caps


def check_caps(tag, pid, keep):
    caps = thread_caps(pid)
    c.true(f"{tag}: threads seen", len(caps) >= 2, str(len(caps)))
    for tid, sets in sorted(caps.items()):
        for name, value in sets.items():
            c.true(f"{tag}: thread {tid} {name} within the backend's set", value & ~keep == 0,
                   f"{value:016x} vs keep {keep:016x}")


with open("/proc/self/status") as f:
    own = int(next(line for line in f if line.startswith("CapEff:")).split()[1], 16)
if own & (1 << NET_RAW) == 0:
    print("SKIP: needs CAP_NET_RAW (run as root)")
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp, Lab("p", subnet=7) as lab:
    for backend, keep in KEEP.items():
        rx_json = os.path.join(tmp, f"rx-{backend}.json")
        rx_args, tx_args = ["--device", lab.if_b], []
        if backend == "dpdk":
            rx_args = ["--dpdk-args", f"--no-pci --vdev=net_af_packet0,iface={lab.if_b}"]
            tx_args = ["--dpdk-args", f"--no-pci --vdev=net_af_packet0,iface={lab.if_a}",
                       "--dst-mac", Lab.mac(lab.ns_b, lab.if_b)]
        rx = start_rx(lab, ["--backend", backend, "--json", rx_json, "--quiet"] + rx_args)
        # A line after "receive buffer" (read here: communicate() reads the pipe itself, past Python's buffer).
        said, text = read_until(rx, "rx: privileges after setup:")
        c.true(f"rx {backend}: says what it kept", said, text)
        check_caps(f"rx {backend}", rx.pid, keep)
        tx = lab.spawn(lab.ns_a, [PKTGEN, "--backend", backend, "--dst", lab.ip_b, "--count", str(N), "--rate", "10k",
                                  "--size", "200", "--quiet"] + tx_args)
        started, text = read_until(tx, "pktgen: privileges after setup:")
        c.true(f"pktgen {backend}: says what it kept", started, text)
        if started:
            time.sleep(0.3)  # its workers are past setup and sending
            check_caps(f"pktgen {backend}", tx.pid, keep)
        out, err = tx.communicate(timeout=60)
        c.eq(f"pktgen {backend}: exit code", tx.returncode, 0)
        rc, rx_out, rx_err = finish(rx)
        c.eq(f"rx {backend}: exit code", rc, 0)
        r = result_record(rx_json, "rx")
        c.eq(f"{backend}: received after the drop", r["received"], N)
        c.eq(f"{backend}: lost", r["lost"], 0)

c.done()
