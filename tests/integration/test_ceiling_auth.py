#!/usr/bin/env python3
"""tools/ceiling: the agent you can expose (`ceiling --serve --key-file`), over IPv6 on a veth pair.

A lab of two namespaces joined by a veth pair with ULA addresses (fd52:2544::1 -> ::2,
static neighbours, no DAD); the agent listens on [::]:7730 in B with a key file and
--max-clients 8. From A, a client re-executed by this test speaks the protocol itself
(HMAC-SHA-512-256 over blake2b-256(key file), as tools/ceiling/auth.hpp has it):

1. Refused, each with ERR and a closed connection: no key (TRIAL instead of AUTH),
   a wrong key, a replayed AUTH line (captured from a good session, sent on a new
   connection: its challenge differs), a malformed AUTH, a binary line, an oversized
   line, a client that sends HELLO one byte a second (dropped at the 5 s handshake
   deadline, per message, not per byte), one that authenticated and then sends a TRIAL a
   byte a second (the session's per-request deadline, also 5 s), and, meanwhile, 100
   connections at once (at most 8 held in all, the rest refused busy at once, the held
   ones dropped at the deadline).
2. Then a good client is served: it checks the agent's own proof (mutual), runs a real
   TRIAL (READY), sends 2000 packets over IPv6 with pktgen and gets rx's RESULT with all
   of them.
3. The agent's log has one line per refusal with the client's [address]:port and reason.
4. The real sender: `ceiling --remote [fd52:2544::2]:7730 --key-file` runs a short search
   over IPv6 and finds an NDR, its frames counted with IPv6's 66 B of headers; without --key-file, or with another key, it is refused
   (exit 1, saying why) and the agent logs it; with --key-file against an agent that
   has none it refuses to go on.
6. The agent's Prometheus page (--metrics on B's loopback, --metrics-textfile): its ERR replies
   by code equal the refusals its log names; its trial sums equal rx's RESULTs (the protocol
   client's 2000 packets plus every trial of the remote search, from ceiling's JSON); the
   textfile written at stop holds the same numbers.
5. Start-up checks (exit 2, one line): a key file group/others may read, a non-loopback
   --serve without a key (IPv4 and IPv6), a 64 B frame to an IPv6 --dst (84 B is the least). --serve PORT alone binds 127.0.0.1 and says it
   does not authenticate; --serve [::1]:PORT serves over IPv6 loopback.
"""
import hashlib
import hmac
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import Checks, Lab, PKTGEN, RX, json_records, require_root, sh

CEILING = os.environ.get("CEILING", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(PKTGEN))), "tools",
                                                 "ceiling", "ceiling"))
A6, B6 = "fd52:2544::1", "fd52:2544::2"  # unique local addresses, inside our namespaces only
PORT = 7730
MAX_CLIENTS = 8
HANDSHAKE_S = 5  # gate.hpp kHandshakeTimeoutNs
METRICS_PORT = 9474  # the keyed agent's --metrics, on B's loopback


def prom_samples(text):
    """{(name, first label value or None): value} of a Prometheus text page."""
    out = {}
    for ln in text.splitlines():
        m = re.match(r'([a-z_]+)(?:\{[a-z_]+="([^"]*)"[^}]*\})? (\S+)$', ln)
        if m:
            out[(m.group(1), m.group(2))] = int(float(m.group(3)))
    return out


def proof(key_file_bytes, role, agent_nonce, client_nonce):
    """auth.hpp: crypto_auth (HMAC-SHA-512 cut to 32 bytes) keyed with blake2b-256 of the key file."""
    key = hashlib.blake2b(key_file_bytes, digest_size=32).digest()
    label = b"rateline ceiling v1 client" if role == "client" else b"rateline ceiling v1 agent"
    return hmac.new(key, label + b"\0" + agent_nonce + client_nonce, hashlib.sha512).digest()[:32].hex()


def client(key_path, wrong_key_path):
    """Runs in the sender's namespace (re-executed by the test); prints one JSON object of what it saw."""
    key, wrong = open(key_path, "rb").read(), open(wrong_key_path, "rb").read()
    out = {}

    def conn():
        s = socket.create_connection((B6, PORT), timeout=15)
        return s, s.makefile("rb")

    def line(f):
        return f.readline().decode(errors="replace").strip()

    def ask(s, f, text):
        s.sendall(text if isinstance(text, bytes) else (text + "\n").encode())
        return line(f)

    def closed(f):
        try:
            return f.readline() == b""
        except OSError:
            return True

    def auth_line(key_bytes, challenge):
        agent_nonce = bytes.fromhex(challenge.split("nonce=")[1])
        client_nonce = os.urandom(32)
        return (f"AUTH nonce={client_nonce.hex()} mac={proof(key_bytes, 'client', agent_nonce, client_nonce)}",
                agent_nonce, client_nonce)

    # A good session first: the AUTH line it sends is the one replayed below.
    s, f = conn()
    challenge = ask(s, f, "HELLO version=1")
    out["challenge"] = challenge
    good_auth, an, cn = auth_line(key, challenge)
    ok = ask(s, f, good_auth)
    out["good_ok"] = ok
    m = re.match(r"OK version=1 mac=([0-9a-f]{64})$", ok)
    out["agent_proof_valid"] = bool(m) and hmac.compare_digest(m.group(1), proof(key, "agent", an, cn))
    out["good_ping"] = ask(s, f, "PING")
    out["good_bye"] = ask(s, f, "BYE")
    f.close()
    s.close()

    def refused(name, *lines):
        s, f = conn()
        reply = ""
        for text in lines:
            reply = ask(s, f, text(reply) if callable(text) else text)
        out[name] = reply
        out[name + "_closed"] = closed(f)
        f.close()
        s.close()

    refused("no_key", "HELLO version=1", "TRIAL id=1 size=1400 port=9000")
    refused("wrong_key", "HELLO version=1", lambda ch: auth_line(wrong, ch)[0])
    refused("replay", "HELLO version=1", good_auth)
    refused("malformed_auth", "HELLO version=1", "AUTH nonce=zz mac=zz")
    refused("binary", b"\x00\xff\xfe\n")
    refused("oversized", b"HELLO " + b"x" * 5000 + b"\n")

    def dripped(s, f, text, key_):
        """Sends `text` a byte a second from a thread until the agent answers; records the answer and its delay."""
        t0 = time.time()
        stop = threading.Event()

        def drip():
            for b in text:
                try:
                    s.send(bytes([b]))
                except OSError:
                    return
                if stop.wait(1):
                    return

        d = threading.Thread(target=drip)
        d.start()
        out[key_ + "_reply"] = line(f)
        out[key_ + "_dropped_after_s"] = time.time() - t0
        out[key_ + "_closed"] = closed(f)
        stop.set()
        d.join()
        f.close()
        s.close()

    # A slow client (a byte a second) and 100 connections at once, side by side.
    def slow():
        s, f = conn()
        dripped(s, f, b"HELLO version=1\n", "slow")

    # And one that authenticates, then sends its requests a byte a second: the session's own per-request deadline.
    authed = threading.Event()

    def slow_session():
        s, f = conn()
        a, _, _ = auth_line(key, ask(s, f, "HELLO version=1"))
        out["slow_session_ok"] = ask(s, f, a).split(" mac=")[0]
        authed.set()
        dripped(s, f, b"TRIAL id=1 size=1400 port=9000\n", "slow_session")

    t2 = threading.Thread(target=slow_session)
    t2.start()
    authed.wait(10)
    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.3)
    t0 = time.time()
    flood = [conn() for _ in range(100)]
    replies = []
    for s, f in flood:
        replies.append(line(f))
    out["flood_connect_and_replies_s"] = time.time() - t0
    out["flood_busy"] = sum(r.startswith("ERR code=busy") and "too many connections" in r for r in replies)
    out["flood_timeout"] = sum(r.startswith("ERR code=timeout") for r in replies)
    out["flood_other"] = [r for r in replies if not r.startswith(("ERR code=busy", "ERR code=timeout"))][:5]
    for s, f in flood:
        f.close()
        s.close()
    t.join()
    t2.join()

    # Still serving: a good client, the agent's proof checked, a real TRIAL with packets over IPv6.
    s, f = conn()
    challenge = ask(s, f, "HELLO version=1")
    out["after_challenge_differs"] = challenge != out["challenge"]
    a, an, cn = auth_line(key, challenge)
    ok = ask(s, f, a)
    out["after_ok"] = ok.split(" mac=")[0]
    m = re.match(r"OK version=1 mac=([0-9a-f]{64})$", ok)
    out["after_agent_proof_valid"] = bool(m) and hmac.compare_digest(m.group(1), proof(key, "agent", an, cn))
    out["after_trial"] = ask(s, f, "TRIAL id=1 size=1400 port=9000 idle_ms=300 max_ms=10000 backend=socket")
    tx = subprocess.run([PKTGEN, "--ipv6", "--dst", B6, "--port", "9000", "--count", "2000", "--rate", "20k",
                         "--size", "1400", "--backend", "socket", "--quiet"], capture_output=True, text=True, timeout=30)
    out["pktgen_rc"] = tx.returncode
    res = line(f)
    out["after_result_head"] = res[:40]
    if res.startswith("RESULT id=1 "):
        r = json.loads(res[len("RESULT id=1 "):])
        out["after_received"], out["after_lost"] = r.get("received"), r.get("lost")
    out["after_bye"] = ask(s, f, "BYE")
    f.close()
    s.close()
    print(json.dumps(out))


def main():
    require_root()
    if not os.path.exists(CEILING):
        print(f"SKIP: {CEILING} not built")
        sys.exit(77)
    c = Checks("ceiling_auth")
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp, Lab("k", subnet=23) as lab:
        key, wrong, loose = (os.path.join(tmp, n) for n in ("key", "wrong", "loose"))
        r = subprocess.run([CEILING, "--make-key", key], capture_output=True, text=True)
        c.eq("--make-key: exit code", r.returncode, 0)
        c.eq("--make-key: mode 0600, 32 bytes", (os.stat(key).st_mode & 0o777, os.path.getsize(key)), (0o600, 32))
        with open(wrong, "wb") as f:
            f.write(os.urandom(32))
        os.chmod(wrong, 0o600)
        with open(loose, "wb") as f:
            f.write(os.urandom(32))
        os.chmod(loose, 0o644)

        # 5. Start-up refusals: exit 2, one line, before anything listens.
        for what, args, words in (
                ("key file others may read", ["--serve", "7731", "--key-file", loose], ("mode 0644", "chmod 600")),
                ("IPv4 non-loopback without a key", ["--serve", "0.0.0.0:7731"], ("--key-file", "127.0.0.1")),
                ("IPv6 non-loopback without a key", ["--serve", f"[{B6}]:7731"], ("--key-file", "--make-key")),
                ("client key file others may read", ["--remote", f"[{B6}]:{PORT}", "--dst", B6, "--key-file", loose],
                 ("chmod 600",)),
                ("--metrics on a sender", ["--remote", f"[{B6}]:{PORT}", "--dst", B6, "--metrics", "9475"],
                 ("--metrics", "--serve")),
                ("--metrics-linger on the agent", ["--serve", "7731", "--metrics", "9475", "--metrics-linger", "1"],
                 ("--metrics-linger",)),
                ("a 64 B frame over IPv6", ["--remote", f"[{B6}]:{PORT}", "--dst", B6, "--frame-sizes", "64"],
                 ("smallest frame", "84 B"))):
            r = subprocess.run(["ip", "netns", "exec", lab.ns_b, CEILING] + args + ["--rx", RX, "--pktgen", PKTGEN],
                               capture_output=True, text=True, timeout=10)
            lines = r.stderr.strip().splitlines()
            c.true(f"refused at start ({what}): exit 2, one line naming {', '.join(words)}",
                   r.returncode == 2 and len(lines) == 1 and all(w in r.stderr for w in words),
                   f"rc {r.returncode}: {r.stderr.strip()}")

        # IPv6 on the veth pair (the lab turns it off) and on B's loopback.
        for ns, ifn, ip in ((lab.ns_a, lab.if_a, A6), (lab.ns_b, lab.if_b, B6)):
            sh("sysctl", "-qw", f"net.ipv6.conf.{ifn}.disable_ipv6=0", ns=ns)
            sh("sysctl", "-qw", "net.ipv6.conf.lo.disable_ipv6=0", ns=ns)
            sh("ip", "-6", "addr", "add", f"{ip}/64", "dev", ifn, "nodad", ns=ns)
        sh("ip", "-6", "neigh", "replace", B6, "lladdr", lab.mac(lab.ns_b, lab.if_b), "dev", lab.if_a, "nud",
           "permanent", ns=lab.ns_a)
        sh("ip", "-6", "neigh", "replace", A6, "lladdr", lab.mac(lab.ns_a, lab.if_a), "dev", lab.if_b, "nud",
           "permanent", ns=lab.ns_b)

        prom_file = os.path.join(tmp, "agent.prom")
        agent = lab.spawn(lab.ns_b, [CEILING, "--serve", f"[::]:{PORT}", "--key-file", key, "--rx-bind", "::", "--rx",
                                     RX, "--max-clients", str(MAX_CLIENTS), "--metrics", f"127.0.0.1:{METRICS_PORT}",
                                     "--metrics-textfile", prom_file])
        # Without a key, on loopback: allowed, and it says so. The default address is 127.0.0.1; [::1] works too.
        plain4 = lab.spawn(lab.ns_b, [CEILING, "--serve", "7732", "--rx", RX])
        plain6 = lab.spawn(lab.ns_b, [CEILING, "--serve", "[::1]:7733", "--rx", RX])
        time.sleep(0.5)
        r = subprocess.run(["ip", "netns", "exec", lab.ns_a, sys.executable, os.path.abspath(__file__), "--client", key,
                            wrong], capture_output=True, text=True, timeout=90)
        c.eq("protocol client ran", r.returncode, 0)
        o = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
        if r.returncode != 0:
            print(r.stderr[-2000:])
        for k, v in o.items():
            print(f"     {k}: {str(v)[:150]}")

        def refusal(key_, code, *words):
            got = o.get(key_, "")
            c.true(f"{key_}: ERR code={code}{' naming ' + ', '.join(words) if words else ''}, connection closed",
                   got.startswith(f"ERR code={code}") and all(w in got for w in words) and o.get(key_ + "_closed"), got)

        if o:
            # 1. Refusals.
            c.true("a good session: CHALLENGE, then OK with the agent's proof",
                   o["challenge"].startswith("CHALLENGE nonce=") and o["good_ok"].startswith("OK version=1 mac="),
                   o["good_ok"])
            c.true("the agent proved it holds the key (mutual)", o["agent_proof_valid"])
            c.eq("good session: PING", o["good_ping"], "PONG")
            refusal("no_key", "auth", "--key-file")
            refusal("wrong_key", "auth", "wrong key")
            refusal("replay", "auth", "wrong key")
            refusal("malformed_auth", "malformed")
            refusal("binary", "malformed")
            refusal("oversized", "too-long")
            c.true(f"slow client (a byte a second) dropped at the handshake deadline "
                   f"({o['slow_dropped_after_s']:.1f} s)",
                   o["slow_reply"].startswith("ERR code=timeout") and o["slow_closed"] and
                   HANDSHAKE_S - 0.5 <= o["slow_dropped_after_s"] <= HANDSHAKE_S + 1.5, o["slow_reply"])
            c.eq("a client that authenticated ...", o["slow_session_ok"], "OK version=1")
            c.true(f"... then sends a request a byte a second is dropped 5 s after its first byte "
                   f"({o['slow_session_dropped_after_s']:.1f} s)",
                   o["slow_session_reply"].startswith("ERR code=timeout") and "a slow or stalled client" in
                   o["slow_session_reply"] and o["slow_session_closed"] and
                   HANDSHAKE_S - 0.5 <= o["slow_session_dropped_after_s"] <= HANDSHAKE_S + 1.5, o["slow_session_reply"])
            c.true(f"100 connections at once: at least {100 - MAX_CLIENTS} refused busy (--max-clients), "
                   f"the rest dropped at the deadline ({o['flood_busy']} busy, {o['flood_timeout']} timeout)",
                   o["flood_busy"] >= 100 - MAX_CLIENTS and o["flood_busy"] + o["flood_timeout"] == 100,
                   str(o["flood_other"]))
            c.true(f"... all answered within the deadline + 3 s ({o['flood_connect_and_replies_s']:.1f} s)",
                   o["flood_connect_and_replies_s"] <= HANDSHAKE_S + 3)
            # 2. Still serving.
            c.true("afterwards: a new challenge", o["after_challenge_differs"])
            c.eq("afterwards: a good client is admitted", o["after_ok"], "OK version=1")
            c.true("... and the agent proves the key again", o["after_agent_proof_valid"])
            c.eq("... a real TRIAL starts rx", o["after_trial"], "READY id=1")
            c.eq("... pktgen sent over IPv6", o["pktgen_rc"], 0)
            c.eq("... rx's RESULT: every packet received", (o.get("after_received"), o.get("after_lost")), (2000, 0))
            c.eq("... BYE", o["after_bye"], "OK bye")

        # 4. The real sender over IPv6: a short search through the keyed agent.
        j = os.path.join(tmp, "remote6.json")
        base = [CEILING, "--remote", f"[{B6}]:{PORT}", "--dst", B6, "--frame-sizes", "none", "--size", "1400",
                "--tests", "throughput", "--trial", "0.2s", "--max-rate", "5k", "--max-trials", "3", "--drain", "100ms",
                "--tx-backend", "socket", "--rx-backend", "socket", "--pktgen", PKTGEN, "--quiet"]
        t0 = time.time()
        p = subprocess.run(["ip", "netns", "exec", lab.ns_a] + base + ["--key-file", key, "--json", j],
                           capture_output=True, text=True, timeout=60)
        print(f"-- ceiling --remote [{B6}]:{PORT} ({time.time() - t0:.0f} s)\n" + p.stdout[-900:] + p.stderr[-600:])
        c.eq("remote search over IPv6 with the key: exit code", p.returncode, 0)
        recs = json_records(j) if os.path.exists(j) else []
        trials = [x for x in recs if x.get("type") == "trial"]
        res = [x for x in recs if x.get("type") == "result" and x.get("tool") == "ceiling"]
        c.true("... its trials carried packets to the receiver", trials and all(t.get("received", 0) > 0 for t in trials),
               json.dumps(trials)[:300])
        c.true("... and it found an NDR", res and res[0]["ndr"]["rate"] is not None, json.dumps(res)[:300])
        c.eq("... its frames counted with IPv6 headers (1400 B payload + 66 B)", res[0]["frame"] if res else None, 1466)
        for what, extra, words in (("without --key-file", [], ("asks for a key", "--key-file")),
                                   ("with another key", ["--key-file", wrong], ("refused us", "wrong key"))):
            p = subprocess.run(["ip", "netns", "exec", lab.ns_a] + base + extra, capture_output=True, text=True,
                               timeout=30)
            c.true(f"remote search {what}: exit 1, saying {', '.join(words)}",
                   p.returncode == 1 and all(w in p.stderr for w in words), f"rc {p.returncode}: {p.stderr[-300:]}")
        p = subprocess.run(["ip", "netns", "exec", lab.ns_b, CEILING, "--remote", "127.0.0.1:7732", "--dst", "127.0.0.1",
                            "--key-file", key, "--pktgen", PKTGEN, "--frame-sizes", "none", "--quiet"],
                           capture_output=True, text=True, timeout=30)
        c.true("a client with a key refuses an agent without one",
               p.returncode == 1 and "does not authenticate" in p.stderr, f"rc {p.returncode}: {p.stderr[-300:]}")

        # The plain agents: loopback only, saying they do not authenticate; IPv6 loopback served.
        def hello(port, host):
            r = subprocess.run(["ip", "netns", "exec", lab.ns_b, sys.executable, "-c",
                                "import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), 5); "
                                "s.sendall(b'HELLO version=1\\n'); print(s.makefile().readline().strip())", host,
                                str(port)], capture_output=True, text=True, timeout=10)
            return r.stdout.strip() or r.stderr.strip()[-200:]

        c.eq("--serve [::1]:7733 without a key serves HELLO over IPv6 loopback", hello(7733, "::1"), "OK version=1")
        c.eq("--serve 7732 without a key serves HELLO on 127.0.0.1", hello(7732, "127.0.0.1"), "OK version=1")

        r = subprocess.run(["ip", "netns", "exec", lab.ns_b, sys.executable, "-c",
                            "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("
                            f"'http://127.0.0.1:{METRICS_PORT}/metrics', timeout=5).read().decode())"],
                           capture_output=True, text=True, timeout=15)
        live_page = prom_samples(r.stdout)
        c.true("the agent's metrics page answers a scrape", r.returncode == 0 and live_page, r.stderr[-300:])
        up = agent.poll() is None
        for p_ in (agent, plain4, plain6):
            p_.terminate()
        logs = [p_.communicate(timeout=15)[1] for p_ in (agent, plain4, plain6)]
        c.true("the keyed agent ran throughout", up)
        log = logs[0]
        print("     agent log (head):\n       " + "\n       ".join(log.strip().splitlines()[:16]))
        c.true("start-up line: the key, the address, --max-clients",
               re.search(r"control on tcp \[::\]:7730; clients authenticate with the key file", log) and
               f"at most {MAX_CLIENTS} connections" in log, log.splitlines()[0] if log else "")
        c.true("plain agent: binds 127.0.0.1 and says it does not authenticate",
               "control on tcp 127.0.0.1:7732; NO authentication (loopback only" in logs[1], logs[1][:300])
        c.true("plain IPv6 agent: binds [::1]", "control on tcp [::1]:7733; NO authentication" in logs[2], logs[2][:300])

        # 3. Every refusal logged with the client's address and the reason.
        peer = re.escape(f"[{A6}]:") + r"\d+: "

        def logged(what, *parts, at_least=1):
            n = sum(bool(re.search(peer, ln)) and all(x in ln for x in parts) for ln in log.splitlines())
            c.true(f"logged with the client's address: {what} ({n})", n >= at_least, " | ".join(parts))

        logged("no key", "refused (code=auth): TRIAL instead of AUTH")
        logged("wrong key, replay, the sender with another key", "refused (code=auth): wrong key", at_least=3)
        logged("malformed AUTH, binary line", "refused (code=malformed)", at_least=2)
        logged("oversized line", "refused (code=too-long)")
        logged("slow client", "refused (code=timeout)", "a slow client")
        logged("slow client inside a session", "dropped: a request begun", "a slow or stalled client")
        logged("100 connections", "refused (code=busy)", f"(--max-clients {MAX_CLIENTS})", at_least=100 - MAX_CLIENTS)
        # The sender without a key says BYE as it leaves, which is not an answer to the challenge.
        logged("the sender without a key", "refused (code=auth): BYE instead of AUTH")
        logged("good sessions authenticated", "authenticated", at_least=3)

        # 6. The metrics page against the log and the RESULTs.
        log_codes = {}
        for ln in log.splitlines():
            m = re.search(r"refused \(code=([a-z-]+)", ln)
            code = m.group(1) if m else ("timeout" if ": dropped: " in ln and "stopped reading" not in ln else None)
            if code:
                log_codes[code] = log_codes.get(code, 0) + 1
        page_codes = {k[1]: v for k, v in live_page.items() if k[0] == "rateline_ceiling_agent_err_replies_total"}
        c.eq("metrics: ERR replies by code = refusals in the agent's log, by code", page_codes, log_codes)
        want_trials = 1 + len(trials)
        want_received = 2000 + sum(t.get("received", 0) for t in trials)
        want_lost = sum(t.get("lost", 0) for t in trials)
        got = lambda page, name, label=None: page.get((name, label))
        c.eq("metrics: trials with a RESULT = the protocol client's one + the remote search's",
             got(live_page, "rateline_ceiling_agent_trials_total", "result"), want_trials)
        c.eq("metrics: received packets = the RESULTs' sum (2000 + the search's trials)",
             got(live_page, "rateline_ceiling_agent_trial_received_packets_total"), want_received)
        c.eq("metrics: lost packets = the RESULTs' sum", got(live_page, "rateline_ceiling_agent_trial_lost_packets_total"),
             want_lost)
        c.true("metrics: sessions = the good clients (at least the 3 authenticated)",
               (got(live_page, "rateline_ceiling_agent_sessions_total") or 0) >= 3, str(live_page)[:300])
        final_page = prom_samples(open(prom_file).read()) if os.path.exists(prom_file) else {}
        c.eq("the textfile written at stop holds the same counts",
             {k: v for k, v in final_page.items() if k[0].endswith("_total")},
             {k: v for k, v in live_page.items() if k[0].endswith("_total")})
    left = sh("ip", "netns", "list", capture=True)
    c.true("no lab namespaces left", f"rlt{os.getpid() % 100000}k" not in left)
    print(f"(test_ceiling_auth took {time.time() - start:.0f} s)")
    c.done()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--client":
        client(sys.argv[2], sys.argv[3])
        sys.exit(0)
    main()
