#!/usr/bin/env python3
"""The null backend (no I/O: the engine's own cost) through the real programs,
as any user: pktgen writes exactly --count frames and discards them; rx
checks exactly --count synthesised frames, one stream per worker, nothing
lost or corrupt; the table and the JSON agree; a bad size is one line and
a non-zero exit. The frames themselves are checked byte by byte in
tests/unit/drivers/null_queues_test.cpp."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, PKTGEN, RX

c = Checks("null")


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def result(path):
    records = [json.loads(l) for l in open(path) if l.strip()]
    return [r for r in records if r.get("type") == "result"]


with tempfile.TemporaryDirectory() as tmp:
    for threads, size, count in ((1, 64, 200_000), (1, 18, 100_000), (2, 1400, 100_001)):
        tag = f"{threads} thread(s), {size} B, --count {count}"
        pj = os.path.join(tmp, "pktgen.json")
        p = run([PKTGEN, "--backend", "null", "--threads", str(threads), "--size", str(size),
                 "--count", str(count), "--json", pj])
        c.eq(f"pktgen {tag}: exit code", p.returncode, 0)
        c.eq(f"pktgen {tag}: nothing on stderr", p.stderr, "")
        c.true(f"pktgen {tag}: says what null does", "frames are written, then discarded" in p.stdout, p.stdout[:400])
        res = result(pj) if p.returncode == 0 else []
        c.eq(f"pktgen {tag}: one result record", len(res), 1)
        if res:
            c.eq(f"pktgen {tag}: JSON sent == --count", res[0]["sent"], count)
            c.eq(f"pktgen {tag}: nothing failed", res[0]["failed"], 0)
            row = [l for l in p.stdout.splitlines() if l.startswith(f"100-0-{count}-{size}")]
            c.true(f"pktgen {tag}: table row", row, p.stdout[-400:])
            if row:
                c.eq(f"pktgen {tag}: table Sent == JSON sent", int(row[0].split()[2]), count)

        rj = os.path.join(tmp, "rx.json")
        r = run([RX, "--backend", "null", "--threads", str(threads), "--device", f"size={size}",
                 "--count", str(count), "--json", rj])
        c.eq(f"rx {tag}: exit code", r.returncode, 0)
        c.eq(f"rx {tag}: nothing on stderr", r.stderr, "")
        c.true(f"rx {tag}: ended by the count", "ended by: count reached" in r.stdout, r.stdout[-300:])
        res = result(rj) if r.returncode == 0 else []
        c.eq(f"rx {tag}: one result record", len(res), 1)
        if res:
            d = res[0]
            c.eq(f"rx {tag}: received == --count", d["received"], count)
            c.eq(f"rx {tag}: lost", d["lost"], 0)
            streams = d["streams"]
            c.eq(f"rx {tag}: one stream per worker", len(streams), threads)
            c.eq(f"rx {tag}: streams sum to the total", sum(s["received"] for s in streams), count)
            c.eq(f"rx {tag}: corrupt, duplicated, reordered",
                 [sum(s[k] for s in streams) for k in ("corrupt", "duplicated", "reordered")], [0, 0, 0])
            c.eq(f"rx {tag}: payload bytes", sum(s["payload_bytes"] for s in streams), count * size)

    r = run([RX, "--backend", "null", "--device", "size=3", "--count", "10"])
    c.true("rx bad size: non-zero exit", r.returncode != 0, str(r.returncode))
    c.eq("rx bad size: one line on stderr", len(r.stderr.strip().splitlines()), 1)
    c.true("rx bad size: says the range", "from 18 to 9000" in r.stderr, r.stderr)
c.done()
