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
was anything but UP (DOWN, DRAIN, MAINT, NOLB): out of rotation; and apart
the times it was drained (DRAIN or MAINT: an administrative state, set by
the agent, a Lua script or an operator, never by a health check) and for
how long. Once a second it keeps each server's status and `slim` (its
maxconn in HAProxy, empty for none): what a breaker or a learner set, over
time.

--start-signal PID sends SIGUSR1 to PID as the run starts (the fleet's
clock, bench/fleet_workers.py --start-on-signal); each --at T:COMMAND
sends COMMAND to the stats socket T seconds into the run (an operator's
`set maxconn server workers/busy1 2` at a change the bench knows of).

Prints one JSON object: requests, 2xx, errors by class, latency p50/p99/max
(ms to the response head, every answered request), the scheduler's worst
lateness, per server the seconds out of rotation, the second of the run it
first left it, its drains and its samples, and the commands sent with
HAProxy's answers. Classes name who answered: `worker 503` is a worker's
own response passed to the client; `router 503 breaker_open` is HAProxy's
own, with its x-router-error-code; `timeout` and `conn error` are the
client's.
"""
import argparse
import asyncio
import json
import os
import random
import signal
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


def runtime_api(sock_path, command="show stat"):
    """The Runtime API's answer to COMMAND, whole."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(sock_path)
        s.sendall(command.encode() + b"\n")
        chunks = []
        while True:
            b = s.recv(65536)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks).decode("latin-1")
    finally:
        s.close()


def drained(status):
    """An administrative state: DRAIN or MAINT (`MAINT (via ...)` too)."""
    return status.startswith("DRAIN") or status.startswith("MAINT")


async def poll_rotation(sock_path, backend, poll_s, stop, rec, start):
    """Every poll_s: adds poll_s to rec["out"][server] for every poll that
    finds it out of rotation, and to rec["drained"][server] when drained
    (counting each entry in rec["drains"]); rec["first_out"][server] is the
    second of the run it was first out; once a second rec["samples"][server]
    gets [second, status, slim]."""
    loop = asyncio.get_running_loop()
    was_drained = {}
    next_sample = 0.0
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            text = await loop.run_in_executor(None, runtime_api, sock_path)
        except OSError:
            text = ""
        at = t0 - start
        sample = at >= next_sample
        if sample:
            next_sample = float(int(at) + 1)
        col = slim = None
        for line in text.splitlines():
            f = line.split(",")
            if line.startswith("# "):
                f[0] = f[0][2:]
                col = f.index("status") if "status" in f else None
                slim = f.index("slim") if "slim" in f else None
                continue
            if col is None or len(f) <= col or f[0] != backend or f[1] in ("FRONTEND", "BACKEND"):
                continue
            name, status = f[1], f[col]
            rec["out"].setdefault(name, 0.0)
            rec["drained"].setdefault(name, 0.0)
            rec["drains"].setdefault(name, 0)
            if not status.startswith("UP") and status != "no check":
                rec["out"][name] += poll_s
                rec["first_out"].setdefault(name, round(at, 1))
            if drained(status):
                rec["drained"][name] += poll_s
                if not was_drained.get(name):
                    rec["drains"][name] += 1
            was_drained[name] = drained(status)
            if sample:
                rec["samples"].setdefault(name, []).append(
                    [round(at, 1), status, f[slim] if slim is not None and len(f) > slim else ""])
        await asyncio.sleep(max(0.0, poll_s - (time.monotonic() - t0)))


async def send_at(sock_path, commands, start, log):
    """Each (second, command) of COMMANDS to the stats socket at its second
    of the run; what HAProxy answered goes to LOG."""
    loop = asyncio.get_running_loop()
    for at, command in sorted(commands):
        await asyncio.sleep(max(0.0, at - (time.monotonic() - start)))
        try:
            answer = await loop.run_in_executor(None, runtime_api, sock_path, command)
        except OSError as e:
            answer = "(%s)" % e
        log.append([round(time.monotonic() - start, 1), command, answer.strip()])


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
    rec = {"out": {}, "first_out": {}, "drained": {}, "drains": {}, "samples": {}}
    sent = []
    if args.start_signal:
        try:
            os.kill(args.start_signal, signal.SIGUSR1)
        except OSError as e:  # the run goes on: its changes just never come
            print("fleet_load: no start signal to %d: %s" % (args.start_signal, e), file=sys.stderr)
    t0 = time.monotonic()
    poller = sender = None
    if args.stats_socket:
        poller = asyncio.create_task(poll_rotation(args.stats_socket, args.backend,
                                                  args.poll_ms / 1000.0, stop, rec, t0))
        if args.at:
            sender = asyncio.create_task(send_at(args.stats_socket, args.at, t0, sent))
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
    if sender:
        sender.cancel()  # a command due after the last answer is not sent
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
        "out_of_rotation_s": {k: round(v, 1) for k, v in sorted(rec["out"].items())},
        "first_out_s": dict(sorted(rec["first_out"].items())),
        "drains": dict(sorted(rec["drains"].items())),
        "drained_s": {k: round(v, 1) for k, v in sorted(rec["drained"].items())},
        "samples": rec["samples"],
        "commands": sent,
    }))


def timed_command(text):
    """(second, command) from T:COMMAND."""
    at, _, command = text.partition(":")
    try:
        return float(at), command
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not T:COMMAND" % text)


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
    ap.add_argument("--start-signal", type=int, metavar="PID",
                    help="send SIGUSR1 to PID as the run starts")
    ap.add_argument("--at", action="append", default=[], type=timed_command,
                    metavar="T:COMMAND", help="send COMMAND to the stats socket T s into the run")
    args = ap.parse_args()
    if args.rate <= 0 or args.seconds <= 0:
        sys.exit("fleet_load: --rate and --seconds must be positive")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
