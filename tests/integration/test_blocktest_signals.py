#!/usr/bin/env python3
"""blocktest stopped by SIGINT or SIGTERM at 50 moments spread over its runs:
plain (a directory on the disk: buffered with fsync, verify with prealloc,
O_DIRECT, --compare-dd with its dd children) and --fs (ext4 on a loop device
plus tmpfs, and ext4 with O_DIRECT). For every run:
- the exit code is 130 (interrupted) or 0 (it finished before it saw the
  signal), never a crash or an abort (139, 134, a negative code), nor an
  error; no sanitizer report on stderr;
- nothing is left behind: no .blocktest-* file, no lab directory, mount
  point or image, no loop device on our directory (losetup -a before and
  after), no mount under it, no tracefs mount directory;
- --json/--csv/--svg are complete (the JSON ends with its end record, whose
  "interrupted" agrees with the exit code) and no temporary sits beside them.
Also --json /dev/full: a message and exit 1, not an empty success.

The moments: per kind of run, an uninterrupted run measures its length L, and
its n signals fall at 0 and at L * (i + u) / n, u uniform in [0, 1),
i = 1..n-1: from the first instant to the end. blocktest is started with
SIGINT/SIGTERM blocked, as a launcher that holds them until the handlers
exist would do: blocktest unblocks them once its handlers are in, so a
signal sent while the program is still being loaded is a stop at its first
line (exit 130, checked with the signal sent at once), not a kill by the
default action. The seed is printed; BLOCKTEST_SIGNALS_SEED=N repeats
the same moments. Each run is small (1 MiB per size): ~30 s here, ~60 s
under ASan."""
import json
import os
import random
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
SEED = int(os.environ.get("BLOCKTEST_SIGNALS_SEED", "2544"))
MOMENTS = 50
RUN_TIMEOUT = 60

# name, arguments, --fs?, share of the 50 moments.
KINDS = [
    ("plain fsync", ["--total", "1M", "--fsync"], False, 7),
    ("plain verify+prealloc", ["--total", "1M", "--verify", "--prealloc"], False, 7),
    ("plain direct", ["--direct", "--sizes", "4k,64k,1M", "--total", "1M", "--fsync"], False, 7),
    ("plain compare-dd", ["--sizes", "4k,64k", "--total", "1M", "--compare-dd"], False, 7),
    ("fs ext4+tmpfs", ["--fs", "ext4,tmpfs", "--sizes", "8,4k,64k,1M", "--total", "1M"], True, 11),
    ("fs ext4 direct", ["--fs", "ext4", "--direct", "--sizes", "4k,64k", "--total", "1M", "--fsync"], True, 11),
]
assert sum(k[3] for k in KINDS) == MOMENTS
# Every run: no live progress, no memory warming (keeps each run a fraction of a second).
COMMON = ["-q", "--no-warm"]
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")


def block_stop_signals():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def start(args, out_dir):
    """blocktest with its outputs in out_dir; stdout/stderr to files (a pipe
    could fill, and a signal could cut a write to it short)."""
    out = open(os.path.join(out_dir, "stdout"), "w")
    err = open(os.path.join(out_dir, "stderr"), "w")
    outs = ["--json", os.path.join(out_dir, "r.json"), "--csv", os.path.join(out_dir, "r.csv"),
            "--svg", os.path.join(out_dir, "r.svg")]
    p = subprocess.Popen([BLOCKTEST] + args + COMMON + outs, stdout=out, stderr=err, preexec_fn=block_stop_signals)
    out.close()
    err.close()
    return p


def finish(p):
    try:
        return p.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return "timeout"


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


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


def losetup_lines():
    r = subprocess.run(["losetup", "-a"], capture_output=True, text=True)
    return set(r.stdout.splitlines())


def mounts_under(*paths):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if any(line.split()[4].startswith(p) for p in paths)]


def tracefs_dirs():
    return sorted(n for n in os.listdir("/tmp") if n.startswith("blocktest-tracefs-"))


def settle(check, seconds=5.0):
    """A loop device with autoclear detaches at its last close, which can be
    udev's probe after blocktest's: poll briefly for check() to be empty."""
    deadline = time.time() + seconds
    found = check()
    while found and time.time() < deadline:
        time.sleep(0.1)
        found = check()
    return found


def output_problems(out_dir, rc):
    """What is wrong with the run's --json/--csv/--svg: [] when complete."""
    problems = []
    names = sorted(n for n in os.listdir(out_dir) if n not in ("stdout", "stderr"))
    if names != ["r.csv", "r.json", "r.svg"]:
        problems.append(f"files beside the outputs: {names}")
    try:
        with open(os.path.join(out_dir, "r.json")) as f:
            recs = [json.loads(line) for line in f if line.strip()]
        end = recs[-1] if recs else {}
        if recs[0].get("type") != "start" or end.get("type") != "end":
            problems.append(f"JSON from {recs[0].get('type')} to {end.get('type')}, want start .. end")
        elif end.get("interrupted") != (rc == 130):
            problems.append(f"JSON end record interrupted={end.get('interrupted')} with exit {rc}")
    except (OSError, ValueError, IndexError) as e:
        problems.append(f"JSON: {e}")
    csv = read(os.path.join(out_dir, "r.csv")).splitlines()
    if not csv or "," not in csv[0]:
        problems.append("CSV without a header")
    try:
        if not ET.parse(os.path.join(out_dir, "r.svg")).getroot().tag.endswith("svg"):
            problems.append("SVG: not an svg document")
    except (OSError, ET.ParseError) as e:
        problems.append(f"SVG: {e}")
    return problems


def clean_dir(path):
    for n in os.listdir(path):
        full = os.path.join(path, n)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            os.unlink(full)


c = Checks("blocktest signals")
if not os.access(BLOCKTEST, os.X_OK):
    print(f"FAIL: {BLOCKTEST} not built")
    sys.exit(1)
if os.geteuid() != 0:
    print("SKIP: needs root (--fs makes loop devices and mounts)")
    sys.exit(SKIP)

rng = random.Random(SEED)
print(f"seed {SEED} (BLOCKTEST_SIGNALS_SEED={SEED} repeats these moments), {BLOCKTEST}", flush=True)
t_start = time.time()
# The runs' directory on the disk (fsync and O_DIRECT reach a device), the outputs beside it.
root = tempfile.mkdtemp(prefix="bt-sig-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
target = os.path.join(root, "target")
out_dir = os.path.join(root, "out")
os.mkdir(target)
os.mkdir(out_dir)
with open(os.path.join(target, "keep.txt"), "w") as f:
    f.write("not blocktest's\n")
loops_before = losetup_lines()
tracefs_before = tracefs_dirs()
counts = {}
try:
    # --json /dev/full: every write fails (ENOSPC); that is an error with a message.
    r = subprocess.run([BLOCKTEST, "--dir", target, "--sizes", "4k", "--total", "64k", "--json", "/dev/full"] + COMMON,
                       capture_output=True, text=True, timeout=RUN_TIMEOUT)
    c.eq("--json /dev/full: exit code", r.returncode, 1)
    c.true("--json /dev/full: says so", "Couldn't write JSON file /dev/full" in r.stderr, r.stderr.strip())
    c.true("--json /dev/full: still the device", os.path.exists("/dev/full") and
           os.stat("/dev/full").st_mode & 0o170000 == 0o020000)

    run_no = 0
    for name, args, fs, n in KINDS:
        args = ["--dir", target] + args
        # The length of this kind of run, uninterrupted (also checks that it
        # succeeds as such): the shorter of two, the first pays for cold caches.
        lengths = []
        for _ in range(2):
            t0 = time.time()
            rc = finish(start(args, out_dir))
            lengths.append(time.time() - t0)
            c.eq(f"{name}: uninterrupted run ({lengths[-1]:.2f} s): exit code", rc, 0)
            if rc != 0:
                print(read(os.path.join(out_dir, "stderr"))[-2000:])
                break
            c.eq(f"{name}: uninterrupted run: outputs", output_problems(out_dir, rc), [])
            clean_dir(out_dir)
        if rc != 0:
            continue
        length = min(lengths)
        for i in range(n):
            run_no += 1
            # The first at once: blocktest may still be loading, its handlers
            # not yet installed; that must still be a stop.
            moment = length * (i + rng.random()) / n if i else 0.0
            sig = rng.choice((signal.SIGINT, signal.SIGTERM))
            t0 = time.time()
            p = start(args, out_dir)
            time.sleep(max(0.0, moment - (time.time() - t0)))
            p.send_signal(sig)
            rc = finish(p)
            took = time.time() - t0
            err = read(os.path.join(out_dir, "stderr"))
            what = f"run {run_no}/{MOMENTS} {name}: {sig.name} at {moment:.3f} of {length:.2f} s"
            counts[rc] = counts.get(rc, 0) + 1
            c.true(f"{what}: exit {rc} in {took:.2f} s (130 interrupted, 0 finished first)", rc in (0, 130),
                   err.strip()[-1500:])
            if i == 0:
                c.eq(f"{what}: sent at once, maybe before the handlers exist: still a stop", rc, 130)
            c.true(f"{what}: no sanitizer report", not any(m in err for m in SANITIZER_MARKS), err[-3000:])
            c.eq(f"{what}: directory as before", sorted(os.listdir(target)), ["keep.txt"])
            if fs:
                c.eq(f"{what}: no loop device on the directory", settle(lambda: loops_under(root)), [])
            new_loops = settle(lambda: sorted(x for x in losetup_lines() - loops_before if root in x))
            c.eq(f"{what}: losetup -a: nothing new of ours", new_loops, [])
            c.eq(f"{what}: no mount under the directory", mounts_under(root), [])
            c.eq(f"{what}: no tracefs mount point left in /tmp", tracefs_dirs(), tracefs_before)
            c.eq(f"{what}: outputs complete, no temporary beside them", output_problems(out_dir, rc), [])
            clean_dir(out_dir)
            # Whatever a failed run left, the next run starts clean.
            for n_ in os.listdir(target):
                if n_ != "keep.txt":
                    full = os.path.join(target, n_)
                    shutil.rmtree(full, ignore_errors=True) if os.path.isdir(full) else os.unlink(full)
    others = sorted(losetup_lines() - loops_before)
    if others:
        print(f"note: loop devices appeared that are not ours (another program): {others}")
    print(f"{run_no} interrupted runs, exit codes {dict(sorted(counts.items(), key=str))}, "
          f"{time.time() - t_start:.1f} s in all", flush=True)
finally:
    for dev in loops_under(root):
        subprocess.run(["losetup", "-d", f"/dev/{dev}"], check=False)
    for m in reversed(mounts_under(root)):
        subprocess.run(["umount", "-l", m], check=False)
    shutil.rmtree(root, ignore_errors=True)
c.done()
