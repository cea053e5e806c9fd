#!/usr/bin/env python3
"""blocktest end to end, on filesystems this test (or blocktest) makes and
removes: a tmpfs directory, an ext4 image on a loop device (--fs), a tiny
filesystem for ENOSPC, a raw loop device (--device). Checks results for every
size, the output formats, that existing files are never touched, and that no
file, loop device, image or mount is left behind (also after Ctrl-C).
Small --total everywhere: the whole test takes well under a minute."""
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
from harness import PKTGEN, SKIP, Checks

BLOCKTEST = os.environ.get("BLOCKTEST") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(PKTGEN))), "tools", "blocktest", "blocktest")
SIZES = [8 << i for i in range(18)]  # the default sweep: 8 B .. 1 MiB


def run(args, timeout=90):
    return subprocess.run([BLOCKTEST] + args, capture_output=True, text=True, timeout=timeout)


def records(path, kind="result"):
    with open(path) as f:
        return [r for r in (json.loads(line) for line in f if line.strip()) if r.get("type") == kind]


def loops_under(path):
    """Loop devices whose backing file lies under path (deleted or not)."""
    found = []
    for dev in os.listdir("/sys/block"):
        bf = f"/sys/block/{dev}/loop/backing_file"
        if os.path.exists(bf):
            with open(bf) as f:
                if f.read().strip().startswith(path):
                    found.append(dev)
    return found


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(path)]


class Tmpfs:
    """A tmpfs of `size` mounted on a fresh directory; removed on exit."""

    def __init__(self, size):
        self.size = size

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="bt-int-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size}", "tmpfs", self.path], check=True)
        return self.path

    def __exit__(self, *exc):
        subprocess.run(["umount", self.path], check=False)
        os.rmdir(self.path)


def snapshot(path):
    """name -> (inode, size, mtime_ns, sha256) of every file under path."""
    out = {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        st = os.lstat(full)
        with open(full, "rb") as f:
            out[name] = (st.st_ino, st.st_size, st.st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return out


def by_size(recs, fs):
    return {(r["block_bytes"], r["phase"]): r for r in recs if r["fs"] == fs}


CLAT = ("clat_p50_ns", "clat_p99_ns", "clat_p99_9_ns", "clat_max_ns")


def clat_problems(recs):
    """Result records with blocks whose completion latencies are missing, out of order or zero."""
    bad = []
    for r in recs:
        if not r.get("blocks"):
            continue
        v = [r.get(k) for k in CLAT]
        if None in v or not (v[0] <= v[1] <= v[2] <= v[3]) or v[3] <= 0:
            bad.append((r["fs"], r["block_bytes"], r["phase"], v))
    return bad


c = Checks("blocktest")
if not os.access(BLOCKTEST, os.X_OK):
    print(f"FAIL: {BLOCKTEST} not built")
    sys.exit(1)

# 1. Bad input: one line on stderr, exit 2 (no root needed).
for args in (["--sizes", "0", "--dir", "/tmp"], ["--sizes", "16..8", "--dir", "/tmp"], ["--qd", "0", "--dir", "/tmp"],
             ["--total", "lots", "--dir", "/tmp"], [], ["--device", "/dev/null"], ["--destroy-data", "--dir", "/tmp"],
             ["--device", "/dev/null", "--destroy-dat"], ["--fs", "zfs", "--dir", "/tmp"],
             ["--drop-cache", "sometimes", "--dir", "/tmp"], ["--inject-flip", "1", "--dir", "/tmp"]):
    r = run(args, timeout=10)
    lines = r.stderr.strip().splitlines()
    c.eq(f"blocktest {' '.join(args)}: exit code", r.returncode, 2)
    c.true(f"blocktest {' '.join(args)}: one line naming the program", len(lines) == 1 and lines[0].startswith("blocktest: "), r.stderr)
    c.eq(f"blocktest {' '.join(args)}: nothing on stdout", r.stdout, "")

if os.geteuid() != 0:
    print("SKIP: the rest needs root (tmpfs mounts, loop devices)")
    c.done() if c.failed else sys.exit(SKIP)

work = tempfile.mkdtemp(prefix="bt-int-out-")
try:
    # 2. A tmpfs directory: every size, verify, all output formats; existing files untouched.
    with Tmpfs("256M") as d:
        with open(os.path.join(d, "keep.txt"), "w") as f:
            f.write("precious\n")
        with open(os.path.join(d, f".blocktest-{os.getpid()}-00000000-8"), "w") as f:
            f.write("looks like one of ours, is not\n")
        before = snapshot(d)
        js, cs, sv = (os.path.join(work, n) for n in ("t.json", "t.csv", "t.svg"))
        r = run(["--dir", d, "--total", "1M", "--verify", "--json", js, "--csv", cs, "--svg", sv, "-q"])
        c.eq("tmpfs sweep: exit code", r.returncode, 0)
        c.eq("buffered: waits for the whole queue (qd 32)", records(js, "start")[0].get("wait_batch"), 32)
        recs = by_size(records(js), "tmpfs")
        for bs in SIZES:
            for ph in ("write", "read"):
                rec = recs.get((bs, ph))
                ok = rec is not None and rec["status"] == "ok" and rec["mib_s"] and rec["mib_s"] > 0
                c.true(f"tmpfs {bs} B {ph}: ok with a rate", ok, json.dumps(rec)[:200])
                if rec:
                    c.eq(f"tmpfs {bs} B {ph}: whole blocks, one I/O each", rec["bytes"], rec["blocks"] * bs)
                    c.eq(f"tmpfs {bs} B {ph}: verify failures", rec["verify_failures"], 0)
        c.true("tmpfs: the table has every size", all(f"\n{lab} " in r.stdout for lab in ("8", "512", "4k", "1M")), r.stdout[-800:])
        c.true("tmpfs: says whether workers served the run", "served by io-wq workers" in r.stdout)
        c.eq("tmpfs: p50 <= p99 <= p99.9 <= max > 0 for every size and phase", clat_problems(records(js)), [])
        c.true("tmpfs: completion latency tables, write and read",
               "write completion latency per block" in r.stdout and "read completion latency per block" in r.stdout, r.stdout[-1500:])
        with open(cs) as f:
            rows = f.read().strip().splitlines()
        c.eq("CSV rows: header + 18 sizes x 2 phases", len(rows), 1 + 36)
        with open(cs) as f:
            table = list(csv.DictReader(f))
        c.true("CSV header has the latency columns", table and all(k in table[0] for k in CLAT), rows[0])
        def as_csv(x, k):  # the JSON value of the row's (size, phase), as the CSV writes it
            v = recs[(int(x["block_bytes"]), x["phase"])][k]
            return "" if v is None else str(v)
        disagree = [(x["block_bytes"], x["phase"]) for x in table if [x[k] for k in CLAT] != [as_csv(x, k) for k in CLAT]]
        c.eq("CSV latency columns agree with the JSON", disagree, [])
        try:
            root = ET.parse(sv).getroot()
            c.true("SVG is an svg document with one line per fs and phase",
                   root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}polyline")) >= 2)
        except ET.ParseError as e:
            c.true("SVG parses as XML", False, str(e))
        if shutil.which("rsvg-convert"):
            png = os.path.join(work, "t.png")
            rr = subprocess.run(["rsvg-convert", "-o", png, sv], capture_output=True, text=True)
            c.true("SVG renders (rsvg-convert)", rr.returncode == 0 and os.path.getsize(png) > 5000, rr.stderr)
        c.eq("tmpfs: existing files untouched, nothing left behind", snapshot(d), before)

        # --compare-dd: dd at the same sizes, a ratio column.
        r = run(["--dir", d, "--sizes", "4k,64k", "--total", "1M", "--compare-dd", "--json", js, "-q"])
        c.eq("compare-dd: exit code", r.returncode, 0)
        c.true("compare-dd: ratio column", "x dd" in r.stdout, r.stdout[-500:])
        recs = records(js)
        c.true("compare-dd: dd rates in JSON", recs and all(x.get("dd_mib_s") and x["dd_mib_s"] > 0 for x in recs), json.dumps(recs)[:300])

        # --verify with a byte flipped on disk between write and read.
        r = run(["--dir", d, "--sizes", "4k", "--total", "64k", "--verify", "--inject-flip", "3", "--json", js, "-q"])
        c.eq("flipped byte: exit code", r.returncode, 1)
        c.true("flipped byte: reported", "VERIFY FAILED" in r.stdout and "block 3" in r.stdout, r.stdout[-400:])
        c.eq("flipped byte: one bad block", [x["verify_failures"] for x in records(js) if x["phase"] == "read"], [1])
        c.eq("tmpfs: still nothing left behind", snapshot(d), before)

    # 3. ENOSPC on a tiny filesystem: a clear message, a partial table, the file removed.
    with Tmpfs("4M") as d:
        r = run(["--dir", d, "--sizes", "4k,1M", "--total", "8M"])
        c.eq("space check: exit code", r.returncode, 1)
        c.true("space check: says why", "Not enough space" in r.stderr, r.stderr)
        js = os.path.join(work, "e.json")
        r = run(["--dir", d, "--sizes", "4k,1M", "--total", "8M", "--no-space-check", "--json", js, "-q"])
        c.eq("ENOSPC: exit code", r.returncode, 1)
        c.true("ENOSPC: clear message", "no space left (ENOSPC)" in r.stdout and "test file was removed" in r.stdout, r.stdout[-500:])
        recs = by_size(records(js), "tmpfs")
        w = recs.get((4096, "write"), {})
        c.true("ENOSPC: partial write row with errno 28", w.get("status") == "partial" and w.get("errno") == 28, json.dumps(w)[:200])
        c.eq("ENOSPC: the next size did not run", recs.get((1 << 20, "write"), {}).get("status"), "not_run")
        c.true("ENOSPC: partial table", "*" in r.stdout and "not run" in r.stdout)
        c.eq("ENOSPC: test file removed", os.listdir(d), [])

    # 4. --fs: ext4 on a loop device and tmpfs, every size; vfat reported, not skipped.
    lab = tempfile.mkdtemp(prefix="bt-int-lab-")
    js = os.path.join(work, "fs.json")
    r = run(["--dir", lab, "--fs", "ext4,tmpfs,vfat", "--total", "1M", "--json", js, "-q"])
    c.eq("--fs: exit code", r.returncode, 0)
    recs = records(js)
    for fs in ("ext4", "tmpfs"):
        got = by_size(recs, fs)
        missing = [(bs, ph) for bs in SIZES for ph in ("write", "read")
                   if got.get((bs, ph), {}).get("status") != "ok" or not got[(bs, ph)].get("mib_s")]
        c.eq(f"--fs {fs}: a result for every size and phase", missing, [])
    c.eq("--fs: p50 <= p99 <= p99.9 <= max > 0 for every size and phase", clat_problems(recs), [])
    vfat = [x for x in records(js, "fs") if x["fs"] == "vfat"]
    c.true("--fs vfat: has an fs record", len(vfat) == 1)
    if vfat and not vfat[0]["supported"]:
        c.true("--fs vfat: unsupported, with the reason", "vfat" in vfat[0]["reason"] and "unsupported" in r.stdout, r.stdout[-300:])
    c.eq("--fs: no loop device left", loops_under(lab), [])
    c.eq("--fs: no mount left", mounts_under(lab), [])
    c.eq("--fs: lab directory and image removed", os.listdir(lab), [])

    # 5. O_DIRECT on ext4: below the logical block size n/a, never faked; the rest runs.
    r = run(["--dir", lab, "--fs", "ext4", "--direct", "--sizes", "8..64k", "--total", "256k", "--json", js, "-q"])
    c.eq("--direct: exit code", r.returncode, 0)
    c.eq("--direct: refills after a quarter of the queue (qd 32)", records(js, "start")[0].get("wait_batch"), 8)
    got = by_size(records(js), "ext4")
    align = next((int(line.split("alignment ")[1].split()[0]) for line in r.stdout.splitlines() if "O_DIRECT alignment" in line), 0)
    c.true("--direct: alignment reported", align >= 512, r.stdout[:600])
    for bs in (8 << i for i in range(14)):
        want = "ok" if bs >= align else "not_applicable"
        c.eq(f"--direct {bs} B write", got.get((bs, "write"), {}).get("status"), want)
    c.true("--direct: n/a explained", "n/a at 8" in r.stdout and "O_DIRECT alignment" in r.stdout, r.stdout[-400:])
    c.eq("--direct: p50 <= p99 <= p99.9 <= max > 0 where blocks ran", clat_problems(records(js)), [])
    c.true("--direct: n/a sizes have no latency",
           all(x["clat_max_ns"] is None for x in got.values() if x["status"] == "not_applicable"))
    # O_DIRECT bypasses the page cache: the loop device under ext4 saw at least
    # every block blocktest counts (plus the journal on writes).
    short = [(bs, ph, x.get("device_bytes"), x["bytes"]) for (bs, ph), x in got.items()
             if x["status"] == "ok" and (x.get("device_bytes") is None or x["device_bytes"] < x["bytes"])]
    c.eq("--direct: the device moved every byte blocktest counts", short, [])
    c.true("--direct: device requests per block table", "device requests per block" in r.stdout, r.stdout[-600:])

    # 6. ENOSPC inside a made filesystem (tiny ext4 image).
    r = run(["--dir", lab, "--fs", "ext4", "--image-size", "16M", "--sizes", "1M", "--total", "32M", "--no-space-check", "-q"])
    c.eq("ext4 ENOSPC: exit code", r.returncode, 1)
    c.true("ext4 ENOSPC: clear message", "no space left (ENOSPC)" in r.stdout, r.stdout[-400:])

    # 7. Ctrl-C in the middle: partial table, exit 130, everything removed.
    p = subprocess.Popen([BLOCKTEST, "--dir", lab, "--fs", "ext4", "--sizes", "8", "--total", "64M", "-q"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    started = False
    while time.time() < deadline and not started:
        line = p.stdout.readline()
        started = line.startswith("blocktest: ext4: mkfs")
        if not line:
            break
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    c.eq("Ctrl-C: exit code", p.returncode, 130)
    c.true("Ctrl-C: partial table", "interrupted" in out and "*" in out, out[-400:])
    c.eq("Ctrl-C + all runs: no loop device left", loops_under(lab), [])
    c.eq("Ctrl-C + all runs: lab directory empty", os.listdir(lab), [])
    os.rmdir(lab)

    # 8. Block devices: refused as --dir, used only with --device X --destroy-data.
    img = os.path.join(work, "dev.img")
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", img], capture_output=True, text=True, check=True).stdout.strip()
    try:
        r = run(["--dir", dev])
        c.true("block device as --dir: refused", r.returncode == 1 and "--destroy-data" in r.stderr, r.stderr)
        r = run(["--device", dev, "--destroy-data", "--direct", "--sizes", "4k,64k", "--total", "1M", "--json", js, "-q"])
        c.eq("--device: exit code", r.returncode, 0)
        c.eq("--device: both sizes ok", sorted(x["status"] for x in records(js)), ["ok"] * 4)
        # The loop device's own counters (nobody else writes it): every written
        # byte reached it, and each block was one bio, a request of its own or
        # merged into a neighbour's (requests + merges == blocks, no splits).
        for x in records(js):
            if x["phase"] != "write":
                continue
            c.eq(f"--device {x['block_bytes']} B: device bytes == blocktest bytes", x["device_bytes"], x["bytes"])
            c.eq(f"--device {x['block_bytes']} B: device requests + merges == blocks",
                 (x["device_requests"] or 0) + (x["device_merges"] or 0), x["blocks"])
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
finally:
    shutil.rmtree(work, ignore_errors=True)
c.done()
