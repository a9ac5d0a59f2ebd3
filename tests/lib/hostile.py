#!/usr/bin/env python3
"""Hostile peers for the agent, and one well-behaved SPOP client to watch
while they attack. Loopback only; every loop is bounded in count and time.

Usage: hostile.py SCENARIO [options]   (hostile.py SCENARIO --help)

  steady     a well-behaved SPOP client: one NOTIFY every --interval ms for
             --seconds (or until SIGTERM); prints sent, acked, lost, p50,
             p99, max (ms) and exits 1 if an ACK was lost or late
  hold       opens --conns connections (with --hello: each says HELLO
             first), keeps them open --seconds, prints how many the agent
             closed meanwhile
  slowloris  --conns HTTP connections sending one header byte a second
             for --seconds, then closes them all
  churn      --conns connections one after another, each saying HELLO,
             reading the answer and closing (a log line or three each)
  garbage    --lines connections to an agent-check address, each sending
             one line of garbage
  flood      --conns SPOP connections (from --source), each saying HELLO and
             sending --notifies breaker-observe NOTIFYs of --status for
             --backend/--server; prints how many were refused (no
             AGENT-HELLO) and how many NOTIFYs were ACKed
Each prints one line of key=value facts.
"""
import argparse
import os
import selectors
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spop_client as spop  # noqa: E402  (the independent SPOP codec)


def addr_of(text):
    host, port = text.rsplit(":", 1)
    return host.strip("[]"), int(port)


def connect(addr, timeout=2.0, source=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source:
        s.bind((source, 0))
    s.settimeout(timeout)
    s.connect(addr)
    return s


# ---- steady: what HAProxy does, watched for lost or late ACKs ----

def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[k]


def scenario_steady(args):
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    peer = spop.Peer(args.addr)
    peer.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    peer.hello()
    if args.ready:
        open(args.ready, "w").close()
    latencies, sent, lost = [], 0, 0
    deadline = time.monotonic() + args.seconds
    peer.sock.settimeout(args.ack_timeout)
    while not stop["now"] and time.monotonic() < deadline:
        sent += 1
        start = time.monotonic()
        try:
            peer.send(spop.notify_frame(2 * sent + 1, 1, spop.observe(200)))
            f = peer.read_frame()
        except OSError:
            f = None
        if not f or f[0] != spop.ACK or f[2] != 2 * sent + 1:
            lost += 1
            print(f"lost ACK {sent}: {f!r}", file=sys.stderr)
            break  # the connection is gone or out of step
        latencies.append((time.monotonic() - start) * 1000.0)
        time.sleep(args.interval / 1000.0)
    latencies.sort()
    print(f"sent={sent} acked={len(latencies)} lost={lost} "
          f"p50={percentile(latencies, 50):.2f}ms p99={percentile(latencies, 99):.2f}ms "
          f"max={latencies[-1] if latencies else 0:.2f}ms", flush=True)
    sys.exit(1 if lost or not latencies else 0)


# ---- hold: many connections that do nothing ----

def scenario_hold(args):
    addr = addr_of(args.addr)
    socks, failed = [], 0
    deadline = time.monotonic() + args.seconds
    for _ in range(args.conns):
        if time.monotonic() >= deadline:
            break
        try:
            s = connect(addr, source=args.source)
            if args.hello:
                s.sendall(spop.hello_frame())
            socks.append(s)
        except OSError:
            failed += 1
    if args.ready:
        open(args.ready, "w").close()
    # Watch for the agent closing them (EOF or an AGENT-DISCONNECT).
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    closed = 0
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data or (args.hello and data[4:5] == b"\x66"):  # 102: AGENT-DISCONNECT
                closed += 1
                sel.unregister(s)
                s.close()
    while time.monotonic() < deadline:
        time.sleep(0.1)
    for s in socks:
        s.close()
    print(f"opened={len(socks)} failed={failed} closed_by_agent={closed}", flush=True)


# ---- slowloris: HTTP requests that never end ----

def scenario_slowloris(args):
    addr = addr_of(args.addr)
    socks, failed = [], 0
    for _ in range(args.conns):
        try:
            s = connect(addr, source=args.source)
            s.setblocking(False)
            s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            socks.append(s)
        except OSError:
            failed += 1
    if args.ready:
        open(args.ready, "w").close()
    deadline = time.monotonic() + args.seconds
    cut = 0
    while time.monotonic() < deadline:
        for s in list(socks):
            try:
                s.send(b"a")
            except OSError:
                cut += 1
                socks.remove(s)
                s.close()
        time.sleep(1.0)
    for s in socks:
        s.close()
    print(f"opened={len(socks) + cut} failed={failed} cut_by_agent={cut}", flush=True)


# ---- churn: short connections, as fast as they go ----

def scenario_churn(args):
    addr = addr_of(args.addr)
    done = failed = 0
    deadline = time.monotonic() + args.seconds
    for _ in range(args.conns):
        if time.monotonic() >= deadline:
            break
        try:
            s = connect(addr, timeout=1.0)
            s.sendall(spop.hello_frame())
            s.recv(4096)
            s.close()
            done += 1
        except OSError:
            failed += 1
    print(f"done={done} failed={failed}", flush=True)


# ---- garbage: agent-check lines that are not BACKEND/SERVER ----

def scenario_garbage(args):
    addr = addr_of(args.addr)
    sent = 0
    deadline = time.monotonic() + args.seconds
    for i in range(args.lines):
        if time.monotonic() >= deadline:
            break
        try:
            s = connect(addr)
            s.sendall(b"not a name %d\n" % i)
            s.recv(64)
            s.close()
            sent += 1
        except OSError:
            pass
    print(f"sent={sent}", flush=True)


# ---- flood: breaker-observe NOTIFYs from whoever can connect ----

def flood_one(args, addr):
    """One connection: (refused, acked)."""
    try:
        peer = spop.Peer(addr, args.source)
    except OSError:
        return 1, 0
    peer.sock.settimeout(2.0)
    acked = 0
    try:
        peer.send(spop.hello_frame())
        f = peer.read_frame()
        if not f or f[0] != spop.AGENT_HELLO:
            return 1, 0
        messages = spop.observe(args.status, args.backend, args.server)
        peer.send(b"".join(spop.notify_frame(2 * i + 1, 1, messages) for i in range(args.notifies)))
        for _ in range(args.notifies):
            f = peer.read_frame()
            if not f or f[0] != spop.ACK:
                break
            acked += 1
        return 0, acked
    except OSError:  # reset: closed at accept
        return 1, acked
    finally:
        peer.sock.close()


def scenario_flood(args):
    refused = acked = 0
    deadline = time.monotonic() + args.seconds
    for _ in range(args.conns):
        if time.monotonic() >= deadline:
            break
        r, a = flood_one(args, args.addr)
        refused += r
        acked += a
    print(f"refused={refused} acked={acked}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", choices=["steady", "hold", "slowloris", "churn", "garbage", "flood"])
    p.add_argument("addr", help="HOST:PORT (unix:PATH for steady)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--interval", type=float, default=10.0, help="steady: ms between NOTIFYs")
    p.add_argument("--ack-timeout", type=float, default=2.0, help="steady: seconds an ACK may take")
    p.add_argument("--conns", type=int, default=100)
    p.add_argument("--lines", type=int, default=100)
    p.add_argument("--hello", action="store_true", help="hold: send HAPROXY-HELLO on each")
    p.add_argument("--source", help="local address to connect from (127.0.0.2, ...)")
    p.add_argument("--ready", help="a file created once the attack is in place")
    p.add_argument("--notifies", type=int, default=3, help="flood: NOTIFYs per connection")
    p.add_argument("--status", type=int, default=500, help="flood: the status they report")
    p.add_argument("--backend", default="workers", help="flood: the backend they name")
    p.add_argument("--server", default="w2", help="flood: the server they name")
    args = p.parse_args()
    {"steady": scenario_steady, "hold": scenario_hold, "slowloris": scenario_slowloris,
     "churn": scenario_churn, "garbage": scenario_garbage,
     "flood": scenario_flood}[args.scenario](args)


if __name__ == "__main__":
    main()
