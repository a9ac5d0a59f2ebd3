#!/usr/bin/env python3
"""Open-loop load for `make bench-fleet`, and the servers' time out of rotation.

Sends GET / to --target (127.0.0.1:PORT) at --rate requests per second for
--seconds, with Poisson arrivals drawn from a generator seeded with --seed:
open loop, so a slow answer never slows the arrivals down (a request falls
due on time whether or not the ones before it were answered). Every request
is its own connection, with a --timeout of its own. A --stream-share of
them ask for a stream (GET /?stream=1); with --whole a 2xx counts only once
its body came to its end (a stream cut short is the class `cut`).

Meanwhile it asks HAProxy's Runtime API (--stats-socket) for `show stat`
every --poll-ms and adds up, per server of --backend, the time its status
was anything but UP (DOWN, DRAIN, MAINT, NOLB): out of rotation.

Prints one JSON object: requests, 2xx, errors by class, latency p50/p99/max
(ms to the response head, every answered request), the scheduler's worst
lateness, and per server the seconds out of rotation and the second of the
run it first left it. Classes name who answered: `worker 503` is a
worker's own response passed to the client; `router 503 breaker_open` is
HAProxy's own, with its x-router-error-code; `timeout` and `conn error` are
the client's.
"""
import argparse
import asyncio
import json
import random
import socket
import sys
import time


async def one_request(host, port, timeout, sent_at, path, whole):
    """(class or None for 2xx, latency ms or None, second of the run it was sent)"""
    cls, latency = await answer_of(host, port, timeout, path, whole)
    return cls, latency, sent_at


def body_complete(headers, body):
    """Whether a response body read to the end of the connection is whole."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return body.endswith(b"0\r\n\r\n")
    if "content-length" in headers:
        return len(body) == int(headers["content-length"])
    return True


async def answer_of(host, port, timeout, path="/", whole=False):
    """(class or None for 2xx, latency ms or None). The latency is to the
    response head; with `whole`, a 2xx counts only once its body came whole
    (a stream cut short is the class `cut`)."""
    start = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, asyncio.TimeoutError):
        return "conn error", None
    try:
        writer.write(b"GET %s HTTP/1.1\r\nhost: fleet\r\nconnection: close\r\n\r\n" % path.encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout - (time.monotonic() - start))
        latency = (time.monotonic() - start) * 1000.0
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if 200 <= status < 300:
            if whole:
                body = await asyncio.wait_for(reader.read(), timeout - (time.monotonic() - start))
                if not body_complete(headers, body):
                    return "cut", latency
            return None, latency
        if "x-router-error-code" in headers:
            return "router %d %s" % (status, headers["x-router-error-code"]), latency
        if "x-worker" in headers:
            return "worker %d" % status, latency
        return "haproxy %d" % status, latency
    except asyncio.TimeoutError:
        return "timeout", None
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, IndexError):
        return "conn error", None
    finally:
        writer.close()


def show_stat(sock_path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(sock_path)
        s.sendall(b"show stat\n")
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks).decode("latin-1")
    finally:
        s.close()


async def poll_rotation(sock_path, backend, poll_s, stop, out, first_out, start):
    """Adds poll_s to out[server] for every poll that finds it out of
    rotation; first_out[server] is the second of the run it was first out."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            text = await loop.run_in_executor(None, show_stat, sock_path)
        except OSError:
            text = ""
        col = None
        for line in text.splitlines():
            f = line.split(",")
            if line.startswith("# "):
                col = f.index("status") if "status" in f else None
                continue
            if col is None or len(f) <= col or f[0] != backend or f[1] in ("FRONTEND", "BACKEND"):
                continue
            out.setdefault(f[1], 0.0)
            if not f[col].startswith("UP") and f[col] != "no check":
                out[f[1]] += poll_s
                first_out.setdefault(f[1], round(time.monotonic() - start, 1))
        await asyncio.sleep(max(0.0, poll_s - (time.monotonic() - t0)))


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))
    return round(sorted_values[i], 1)


async def run(args):
    host, port = args.target.rsplit(":", 1)
    port = int(port)
    rng = random.Random(args.seed)
    stop = asyncio.Event()
    rotation, first_out = {}, {}
    t0 = time.monotonic()
    poller = None
    if args.stats_socket:
        poller = asyncio.create_task(poll_rotation(args.stats_socket, args.backend,
                                                  args.poll_ms / 1000.0, stop, rotation,
                                                  first_out, t0))
    tasks = []
    lateness = 0.0
    due = 0.0
    while True:
        due += rng.expovariate(args.rate)
        if due >= args.seconds:
            break
        now = time.monotonic() - t0
        if due > now:
            await asyncio.sleep(due - now)
        else:
            lateness = max(lateness, now - due)
        path = "/?stream=1" if rng.random() < args.stream_share else "/"
        tasks.append(asyncio.create_task(one_request(host, port, args.timeout, due, path,
                                                     args.whole)))
    results = await asyncio.gather(*tasks)
    stop.set()
    if poller:
        await poller
    classes = {}
    latencies = []
    # Errors per tenth of the run: when they happen (a breaker's cost is
    # at the start; a steady leak is everywhere).
    timeline = [0] * 10
    for cls, latency, sent_at in results:
        if cls is not None:
            classes[cls] = classes.get(cls, 0) + 1
            timeline[min(9, int(sent_at * 10 / args.seconds))] += 1
        if latency is not None:
            latencies.append(latency)
    latencies.sort()
    ok = sum(1 for cls, _, _ in results if cls is None)
    print(json.dumps({
        "requests": len(results),
        "ok": ok,
        "success_pct": round(100.0 * ok / len(results), 2) if results else None,
        "errors": dict(sorted(classes.items(), key=lambda kv: -kv[1])),
        "errors_by_tenth": timeline,
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "max_ms": round(latencies[-1], 1) if latencies else None,
        "late_ms": round(lateness * 1000.0, 1),
        "out_of_rotation_s": {k: round(v, 1) for k, v in sorted(rotation.items())},
        "first_out_s": dict(sorted(first_out.items())),
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True, help="127.0.0.1:PORT")
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--stats-socket")
    ap.add_argument("--backend", default="workers")
    ap.add_argument("--poll-ms", type=float, default=100.0)
    ap.add_argument("--stream-share", type=float, default=0.0,
                    help="share of the requests asking for a stream (GET /?stream=1)")
    ap.add_argument("--whole", action="store_true",
                    help="read each 2xx body to its end: a cut stream is a failure")
    args = ap.parse_args()
    if args.rate <= 0 or args.seconds <= 0:
        sys.exit("fleet_load: --rate and --seconds must be positive")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
