#!/usr/bin/env python3
"""Round-trip latency: rx --reflect sends packets back, pktgen --rtt times them.

Over the lab's veth, pktgen in side a sends 100 kpps (one packet per burst)
to rx in side b, which reflects them; ping runs across the same veth at the
same time. Their workers are pinned to the two cores apart (unpinned on a
2-core host, run-queue waits of a scheduler tick reach p99). Checked against observers outside both tools:
1. every reflected packet is counted once at each end: tcpdump on side a
   sees exactly rx's `reflected` replies (plus the forged ones below), and
   pktgen's `replies` equal them (its socket dropped none);
2. the round trip is a real one: 0 < min <= max < 1 s, and on afxdp no
   frame waits for a TX reclaim (p50 < 5 ms); how p50 compares with ping's
   range under the same load is printed, not enforced (a speed is bench/rtt's
   to measure: ping's echo is answered in the kernel, ours in user space at
   both ends, and a wake-up on this 2-core VM moves a p50 several times over);
3. forged replies sent as side b's rx port during the run are counted and
   named, never timed: 20 with another sender id, 15 stamped in the far
   future, 15 stamped before the run began, 10 not our format; 10 valid-looking
   ones from another port are not ours either;
4. --reflect-every 10: rx sends back exactly every 10th data packet;
5. pktgen in a time namespace 3600 s ahead (another host's clock): rx shows
   no one-way latency, and the round trip is still measured, in range;
6. on uring, afpacket, afxdp and xdp senders (replies read by a socket bound to
   the frames' source port) too, and dpdk's (replies polled off the port's RX
   queue: all of them, nothing else counted), afxdp's one-way latency as small, rx
   afpacket, afxdp, dpdk and xdp as the reflector (frames with swapped ends;
   dpdk's port TX counter = rx's reflected; xdp's failed XDP_TX, all of them
   when the veth peer runs no NAPI, = the veth's xdp_tx_errors; xdp's replies
   to 64 B frames and over IPv6 pass the sender's UDP checksum), and the usage errors exit 2 (--reflect on a backend that
   cannot send back, --reflect-every without --reflect, --rtt on null).
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import LAB_DIR, PKTGEN, RX, Checks, Lab, finish, result_record, sh, start_rx, tshark_rows  # noqa: E402

SANITIZED = os.environ.get("RATELINE_SANITIZED", "")  # set by tools/check.d/10-sanitize
N = 20_000 if SANITIZED else 100_000
SPORT = 5000
c = Checks("rtt")


def beside_ping(what, p50_us, ping):
    """How a round trip compares with ping's under the same load: printed, not enforced. A speed is
    bench/rtt's to measure; on a shared 2-core VM a scheduler wake-up moves a p50 several times over."""
    inside = ping[0] / 4 <= p50_us <= ping[1] * 4
    print(f"info {what}: rtt p50 {p50_us:.1f} us, ping {ping[0]:.1f}..{ping[1]:.1f} us under the same load "
          f"({'within' if inside else 'outside'} x4 either way)", flush=True)

FORGER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from inject_frames import payload, raw_udp_sender
send = raw_udp_sender(*sys.argv[2:6])
sender, dport = int(sys.argv[6]), %d
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
for i in range(20): send(payload(1, 0, i, 200, sender=sender ^ 0x5a5a, tx_ns=now), 9000, dport)
for i in range(15): send(payload(1, 0, i, 200, sender=sender, tx_ns=now + 10**15), 9000, dport)
for i in range(15): send(payload(1, 0, i, 200, sender=sender, tx_ns=1), 9000, dport)
for i in range(10): send(b"not a rateline packet " * 4, 9000, dport)
for i in range(10): send(payload(1, 0, i, 200, sender=sender, tx_ns=now), 9001, dport)
print("forged", flush=True)
""" % SPORT


def prom_values(path):
    """Each metric's value in a textfile, summed over its label sets."""
    values = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        name = name.split("{")[0]
        values[name] = values.get(name, 0) + float(value)
    return values


def ping_range(lab, out):
    m = re.search(r"rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)", out)
    got = re.search(r"(\d+) received", out)
    return (float(m.group(1)) * 1000, float(m.group(3)) * 1000, int(got.group(1))) if m and got else None


def run(lab, tmp, tag, rx_extra=(), tx_extra=(), backend="socket", forge=False, shift_s=0, count=N, pings=100, dst=None,
        tcpdump=True, rx_backend=None):
    """One pktgen --rtt -> rx --reflect run with `pings` pings beside it. The
    observer: tcpdump on side a, or side a's rx_packets counter (with forge
    or tcpdump=False: where the round trip is held to ping's, a capture's own
    CPU would be part of it). Returns pktgen's and rx's results, what the observer
    counted, ping's (min, max, received), pktgen's and rx's output."""
    rx_json, tx_json = os.path.join(tmp, f"rx-{tag}.json"), os.path.join(tmp, f"tx-{tag}.json")
    pcap = os.path.join(tmp, f"a-{tag}.pcap")
    rx_backend = rx_backend or (backend if backend in ("socket", "uring") else "socket")
    rx_dev = ["--device", lab.if_b] if rx_backend not in ("socket", "uring", "dpdk") else []
    # dpdk: the PMD's default ring, which overflows while the worker is off the CPU on this 2-core VM;
    # each such drop must be named (the check after reflector_run("dpdk")). A deeper ring trades those
    # drops for queueing: with 16k frames one run's reflected p50 was 46 ms.
    eal = (["--", "--no-pci", f"--vdev=net_af_packet0,iface={lab.if_b}", "--log-level=*:error"]
           if rx_backend == "dpdk" else [])
    rx = start_rx(lab, ["--backend", rx_backend, *rx_dev, "--reflect", "--cores", "1", "--json", rx_json, "--quiet",
                        *rx_extra, *eal])
    before = lab.counter("a", "rx_packets")
    cap = None
    if tcpdump and not forge:
        # --immediate-mode: no packet waits in a ring block that is only handed over after a timeout.
        cap = subprocess.Popen(["ip", "netns", "exec", lab.ns_a, "tcpdump", "-n", "--immediate-mode", "-s", "96", "-B",
                                "65536", "-i", lab.if_a, "-w", pcap, "udp", "and", "src", "port", "9000"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lab.procs.append(cap)
        cap.stderr.readline()
    cmd = ["ip", "netns", "exec", lab.ns_a]
    if shift_s:
        cmd += ["unshare", "--time", "--fork", "--monotonic", str(shift_s)]
    tx = subprocess.Popen(cmd + [PKTGEN, "--backend", backend, "--dst", dst or lab.ip_b, "--src-port", str(SPORT), "--rtt", "--cores", "0",
                                 "--count", str(count), "--rate", "100k", "--burst", "1",
                                 *(() if "--size" in tx_extra else ("--size", "200")), "--json", tx_json, *tx_extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    first = tx.stdout.readline()
    sender = int(re.search(r"sender id (\d+)", first).group(1))
    ping = subprocess.Popen(["ip", "netns", "exec", lab.ns_a, "ping", "-q", "-c", str(pings), "-i", "0.005", lab.ip_b],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if forge:
        time.sleep(0.2)
        mac_a = lab.mac(lab.ns_a, lab.if_a)
        f = subprocess.run(["ip", "netns", "exec", lab.ns_b, sys.executable, "-c", FORGER, LAB_DIR,
                            lab.if_b, lab.ip_b, lab.ip_a, mac_a, str(sender)], capture_output=True, text=True, timeout=30)
        c.eq(f"{tag}: forger ran", f.stdout.strip(), "forged")
    ping_out, _ = ping.communicate(timeout=60)
    out, err = tx.communicate(timeout=90)
    c.eq(f"{tag}: pktgen exit code", tx.returncode, 0)
    if tx.returncode:
        print(err[-800:])
    rc, rx_out, rx_err = finish(rx, timeout=60)
    c.eq(f"{tag}: rx exit code", rc, 0)
    t, r = result_record(tx_json, "pktgen"), result_record(rx_json, "rx")
    if cap:
        time.sleep(0.3)
        cap.send_signal(2)
        cap.wait(timeout=20)
        seen = len(tshark_rows(pcap, ["frame.number"], ("-Y", f"udp.srcport == 9000 && udp.dstport == {SPORT}")))
    else:
        seen = lab.counter("a", "rx_packets") - before
    return t, r, seen, ping_range(lab, ping_out), first + out, rx_out


with tempfile.TemporaryDirectory() as tmp, Lab("t", subnet=77) as lab:
    forged = 20 + 15 + 15 + 10 + 10
    t, r, counted, ping, out, rx_out = run(lab, tmp, "socket", forge=True)
    c.eq("socket: rx received, lost", (r["received"], r["lost"]), (N, 0))
    c.eq("socket: rx reflected + dropped", r["reflected"] + r["reflect_failed"], N)
    c.true("socket: ping ran", ping, str(ping))
    c.eq("socket: side a's rx_packets = reflected + forged + ping replies", counted,
         r["reflected"] + forged + (ping[2] if ping else 0))
    rtt = t["rtt"]
    c.eq("socket: pktgen replies = rx reflected (its socket dropped none)", (rtt["replies"], rtt["socket_drops"]),
         (r["reflected"], 0))
    c.eq("socket: forged replies named, not timed", (rtt["other_sender"], rtt["implausible"], rtt["not_ours"]),
         (20, 30, 20))
    if rtt["rtt_ns"] and ping:
        p50 = rtt["rtt_ns"]["p50"] / 1000
        c.true("socket: rtt min > 0 and max < 1 s", 0 < rtt["rtt_ns"]["min"] <= rtt["rtt_ns"]["max"] < 10**9, str(rtt))
        beside_ping("socket", p50, ping)
    c.true("socket: the table shows the round trip", "rtt: min" in out and "from another sender id" in out, out[-600:])
    c.true("socket: rx's table says what it reflected", "reflected: " in rx_out, rx_out[-400:])

    tx_prom, rx_prom = os.path.join(tmp, "tx.prom"), os.path.join(tmp, "rx.prom")
    t, r, captured, ping, out, _ = run(lab, tmp, "every10", rx_extra=("--reflect-every", "10", "--metrics-textfile", rx_prom),
                                       tx_extra=("--metrics-textfile", tx_prom), count=20_000)
    c.eq("every10: rx reflected exactly every 10th", r["reflected"] + r["reflect_failed"], 20_000 // 10)
    c.eq("every10: replies = reflected = captured", (t["rtt"]["replies"], captured), (r["reflected"], r["reflected"]))
    tx_m, rx_m = prom_values(tx_prom), prom_values(rx_prom)
    c.eq("every10: metrics = JSON (replies, histogram count, reflected)",
         (tx_m.get("rateline_pktgen_rtt_replies_total"), tx_m.get("rateline_pktgen_rtt_seconds_count"),
          rx_m.get("rateline_rx_reflected_packets_total")),
         (t["rtt"]["replies"], t["rtt"]["replies"], r["reflected"]))

    # afpacket reflects whole frames: swapped ends, a fresh UDP checksum (the socket sender's was left for offload).
    t, r, captured, ping, out, _ = run(lab, tmp, "rx-afpacket", rx_backend="afpacket", count=20_000)
    c.eq("rx afpacket: replies = reflected = captured, all of them",
         (t["rtt"]["replies"], r["reflected"], captured), (20_000, 20_000, 20_000))

    def reflector_run(rx_backend, tag=None, tx_extra=(), rx_extra=(), dst=None):
        """20000 packets at rx `rx_backend` reflecting; the accounting every reflector owes, whatever its speed."""
        t, r, captured, _, _, _ = run(lab, tmp, tag or f"rx-{rx_backend}", rx_backend=rx_backend, count=20_000,
                                      tx_extra=tx_extra, rx_extra=rx_extra, dst=dst)
        p50 = (t["rtt"]["rtt_ns"] or {}).get("p50")
        print(f"     rx {rx_backend}: received {r['received']}, lost {r['lost']}, reflected {r['reflected']}, "
              f"reflect_failed {r['reflect_failed']}, socket_drops {r['socket_drops']}, "
              f"rtt p50 {p50 / 1000 if p50 else '-'} us", flush=True)
        c.eq(f"rx {rx_backend}: replies = reflected = captured", (t["rtt"]["replies"], captured),
             (r["reflected"], r["reflected"]))
        c.eq(f"rx {rx_backend}: reflected + failed = received", r["reflected"] + r["reflect_failed"], r["received"])
        c.eq(f"rx {rx_backend}: received + lost = sent", (r["received"] + r["lost"], r["sent"]), (20_000, 20_000))
        return r

    # afxdp reflects through a send-only packet socket on the interface it receives on. Each reply's
    # send runs side a's receive path on rx's core; at 100 kpps beside ping and tcpdump on this 2-core
    # VM the AF_XDP ring sometimes overflows (5 of 11 runs lost 492-2883 of 20000; 8559 under ASan): rx must
    # count every such frame lost and name it (its socket_drops), and reflect every frame it received.
    r = reflector_run("afxdp")
    c.true("rx afxdp: every loss named by the AF_XDP ring (its drops may include end markers), nothing unattributed",
           r["lost"] <= r["socket_drops"] <= r["lost"] + 3 and r["ledger"]["unattributed"] == 0,
           f"lost {r['lost']}, socket_drops {r['socket_drops']}, unattributed {r['ledger']['unattributed']}")
    c.true("rx afxdp: it reflected (how many the ring kept up with is a speed: 11441 to 20000 seen here)",
           r["reflected"] > 0, str(r["reflected"]))

    # dpdk (net_af_packet on side b's veth) turns each frame around in its own mbuf on the worker's TX queue.
    # The PMD's ring takes every frame on the veth, so its drops may include the 3 end markers and any of the
    # 100 pings run() sends beside the load.
    r = reflector_run("dpdk")
    c.true("rx dpdk: every loss named by the PMD's ring (its drops may include end markers and pings), nothing "
           "unattributed", r["lost"] <= r["socket_drops"] <= r["lost"] + 3 + 100 and r["ledger"]["unattributed"] == 0,
           f"lost {r['lost']}, socket_drops {r['socket_drops']}, unattributed {r['ledger']['unattributed']}")
    c.true("rx dpdk: it reflected", r["reflected"] > 0, str(r["reflected"]))
    c.true("rx dpdk: the port's TX counter = reflected", r["dpdk"]["opackets"] == r["reflected"], str(r.get("dpdk")))

    # xdp turns the frame around in the driver (XDP_TX). A veth hands it to a peer without NAPI nowhere:
    # every XDP_TX fails, and rx must say so from the driver's own tracepoints (and agree with the veth's
    # xdp_tx_errors), not count replies that never left. A peer with NAPI (GRO) but no XDP program of its
    # own takes 256 (its ring) and is never woken for them; one with an XDP program gets them all.
    def veth_xdp_tx_errors():
        stats = sh("ethtool", "-S", lab.if_b, ns=lab.ns_b, capture=True)
        return sum(int(v) for k, v in re.findall(r"(\S*xdp_tx_errors):\s*(\d+)", stats))

    errors_before = veth_xdp_tx_errors()
    r = reflector_run("xdp", tag="rx-xdp-no-napi")
    c.eq("rx xdp, peer without NAPI: nothing reflected, every reply counted failed (= the veth's xdp_tx_errors)",
         (r["reflected"], r["reflect_failed"], veth_xdp_tx_errors() - errors_before), (0, r["received"], r["received"]))
    ns_a, if_a = lab.xdp_pass("a", tmp)
    try:
        errors_before = veth_xdp_tx_errors()
        r = reflector_run("xdp")
        c.true("rx xdp: it reflected", r["reflected"] > 0, str(r["reflected"]))
        c.eq("rx xdp: its reflect_failed = the veth's xdp_tx_errors", r["reflect_failed"],
             veth_xdp_tx_errors() - errors_before)
        # 64 B frames carry the short header (its own parse path), and the reply's UDP checksum covers it too.
        r = reflector_run("xdp", tag="rx-xdp-64", tx_extra=("--size", "18"))
        c.true("rx xdp, 64 B frames: it reflected", r["reflected"] > 0, str(r["reflected"]))
        # IPv6: the UDP checksum is mandatory there; the sender's kernel accepts the reply only with it right.
        lab.add_ipv6("2001:db8:77::1", "2001:db8:77::2")
        r = reflector_run("xdp", tag="rx-xdp-ipv6", tx_extra=("--ipv6",), rx_extra=("--ipv6",), dst="2001:db8:77::2")
        c.true("rx xdp, IPv6: it reflected", r["reflected"] > 0, str(r["reflected"]))
    finally:
        sh("ip", "link", "set", "dev", if_a, "xdpdrv", "off", ns=ns_a)

    t, r, captured, ping, out, _ = run(lab, tmp, "afpacket", tx_extra=("--dst-mac", lab.mac(lab.ns_b, lab.if_b)),
                                       backend="afpacket", count=20_000)
    c.eq("afpacket: replies = reflected = captured, all of them",
         (t["rtt"]["replies"], r["reflected"], captured), (20_000, 20_000, 20_000))

    # dpdk (net_af_packet on side a's veth): the replies land on the port's RX queue, which pktgen's reply
    # listener polls; side a's stack, which sees them too, drops them (no ICMP port unreachable back to rx).
    quiet = os.path.join(tmp, "quiet-a.nft")
    open(quiet, "w").write("table inet rlquiet {\n chain in { type filter hook input priority 0; policy accept;\n"
                           f"  udp dport {SPORT} drop\n }}\n}}\n")
    sh("nft", "-f", quiet, ns=lab.ns_a)
    t, r, captured, ping, out, _ = run(lab, tmp, "dpdk", backend="dpdk", count=20_000, tx_extra=(
        "--dst-mac", lab.mac(lab.ns_b, lab.if_b), "--", "--no-pci",
        f"--vdev=net_af_packet0,iface={lab.if_a},framecnt=16384,blocksz=65536", "--log-level=*:error"))
    sh("nft", "delete", "table", "inet", "rlquiet", ns=lab.ns_a)
    lab.pin_neighbours()  # the port's stop flushed side a's (an ARP exchange would show in the counters below)
    c.eq("dpdk: replies = reflected = captured, all of them",
         (t["rtt"]["replies"], r["reflected"], captured), (20_000, 20_000, 20_000))
    c.eq("dpdk: nothing else counted, receive stamps one clock read per burst",
         (t["rtt"]["not_ours"], t["rtt"]["other_sender"], t["rtt"]["implausible"], t["rtt"]["receive_stamps"]),
         (0, 0, 0, "batch"))
    c.true("dpdk: rtt measured", t["rtt"]["rtt_ns"] and 0 < t["rtt"]["rtt_ns"]["min"] <= t["rtt"]["rtt_ns"]["max"] < 10**9,
           str(t["rtt"]))
    if t["rtt"]["rtt_ns"] and ping:
        beside_ping("dpdk", t["rtt"]["rtt_ns"]["p50"] / 1000, ping)

    if SANITIZED:
        c.done()  # the shapes below add no code path the sanitizers have not run above
    t, r, captured, ping, out, _ = run(lab, tmp, "shifted", shift_s=3600, count=20_000)
    c.eq("shifted: rx shows no one-way latency", (r["latency_ns"], r["streams_clock_unrelated"]), (None, 1))
    c.eq("shifted: replies = reflected = captured", (t["rtt"]["replies"], captured), (r["reflected"], r["reflected"]))
    c.true("shifted: rtt measured", t["rtt"]["rtt_ns"] and 0 < t["rtt"]["rtt_ns"]["min"] < t["rtt"]["rtt_ns"]["max"] < 10**9,
           str(t["rtt"]))

    t, r, captured, ping, out, _ = run(lab, tmp, "uring", backend="uring", count=20_000)
    c.eq("uring: replies = reflected = captured, all of them",
         (t["rtt"]["replies"], r["reflected"], captured), (20_000, 20_000, 20_000))

    # afxdp: before its TX queue reaped completions on every commit, frames waited in the TX ring for the
    # next reclaim (a UMEM's worth: ~40 ms at 100 kpps); every round trip and one-way latency carried it.
    t, r, counted, ping, out, _ = run(lab, tmp, "afxdp", tx_extra=("--dst-mac", lab.mac(lab.ns_b, lab.if_b),
                                                                   "--device", lab.if_a), backend="afxdp", count=20_000,
                                      tcpdump=False)
    c.eq("afxdp: replies = reflected, all of them", (t["rtt"]["replies"], r["reflected"]), (20_000, 20_000))
    c.eq("afxdp: side a's rx_packets = reflected + ping replies", counted, r["reflected"] + (ping[2] if ping else 0))
    if t["rtt"]["rtt_ns"] and ping:
        p50 = t["rtt"]["rtt_ns"]["p50"] / 1000
        beside_ping("afxdp", p50, ping)
        # A frame that waited in the TX ring for the next reclaim (a UMEM's worth, ~40 ms at 100 kpps) would put
        # the median past 5 ms: two orders of magnitude above any wake-up noise seen here.
        c.true(f"afxdp: no frame waits for a reclaim (rtt p50 {p50:.1f} us < 5 ms)", p50 < 5000)
    c.eq("afxdp: rx's one-way latency says the same (p99 under 10 ms)", (r["latency_ns"] or {}).get("p99", 10**9) < 10**7, True)

    # The xdp sender: frames from the kernel's generator, stamped once per 32 (the stamp lead pktgen reports).
    # A veth takes XDP frames only into a peer with NAPI: GRO on side b for this run.
    sh("ethtool", "-K", lab.if_b, "gro", "on", ns=lab.ns_b)
    try:
        t, r, captured, ping, out, _ = run(lab, tmp, "xdp", tx_extra=("--dst-mac", lab.mac(lab.ns_b, lab.if_b),
                                                                      "--device", lab.if_a), backend="xdp",
                                           count=20_000)
    finally:
        sh("ethtool", "-K", lab.if_b, "gro", "off", ns=lab.ns_b)
    c.eq("xdp: replies = reflected = captured, all of them",
         (t["rtt"]["replies"], r["reflected"], captured), (20_000, 20_000, 20_000))
    c.true("xdp: rtt measured", t["rtt"]["rtt_ns"] and 0 < t["rtt"]["rtt_ns"]["min"] <= t["rtt"]["rtt_ns"]["max"] < 10**9,
           str(t["rtt"]))

    for args, want, tag in ((["--backend", "null", "--reflect"], "cannot send packets back", "rx null --reflect"),
                            (["--backend", "xdp", "--device", lab.if_b, "--reflect", "--layers"], "--layers",
                             "rx xdp --reflect --layers"),
                            (["--reflect-every", "5"], "--reflect-every needs --reflect", "rx --reflect-every alone")):
        p = subprocess.run(["ip", "netns", "exec", lab.ns_b, RX, *args], capture_output=True, text=True, timeout=30)
        c.eq(f"{tag}: exit 2", p.returncode, 2)
        c.true(f"{tag}: one clear line", want in p.stderr and p.stderr.count("\n") == 1, p.stderr)
    p = subprocess.run(["ip", "netns", "exec", lab.ns_a, PKTGEN, "--backend", "null", "--dst", lab.ip_b, "--rtt"],
                       capture_output=True, text=True, timeout=30)
    c.eq("pktgen --rtt --backend null: exit 2", p.returncode, 2)
    c.true("pktgen --rtt --backend null: one clear line", "cannot read the replies" in p.stderr, p.stderr)

c.done()
