#!/usr/bin/env python3
"""A simulated fleet of HTTP workers for `make bench-fleet`, in one process.

Each --worker NAME:PORT:KIND[:ARG][:retry-after=N] listens on
127.0.0.1:PORT and answers every request as its kind says, after a service
time drawn from --service-ms LOW:HIGH (uniform, from a generator seeded
with --seed and the worker's position, so a run is repeatable):

  busy:K      200, but 503 at once (with Retry-After: 1) to a request that
              finds K already in service: alive and busy. K may change
              over the run: `4,2@20,6@40` is 4 from the start, 2 from 20 s,
              6 from 40 s
  flaky:P     like busy (K from --busy-k), and 500 for a share P (0-1) of
              the requests it serves
  broken      500 to every request
  hung        reads the request and never answers
  stuck       like hung, but its GET /health still answers 200: a wedged
              engine behind a live HTTP server, which no health check sees
  wedged      503 at once to every request: stuck, yet looks busy
  crashed     nothing listens on PORT: every connection is refused
  crashed:T   refused until T seconds after the start, then it listens and
              answers like busy:K (K from --busy-k): a worker restarted

The LLM scenario's kinds answer like an inference engine: a completion
takes a time drawn from a log-normal law (--llm-median-s, --llm-sigma,
clipped to --llm-max-s); a request whose path has `stream=1` gets its
response head at the first token (--ttft-s LOW:HIGH) and then one
server-sent event every 100 ms until the completion ends; any other gets
its head only when the completion ends. Beyond K requests in service a
worker refuses at once:

  llm503:K    with 503 and `Retry-After: 2` (a load-shedding server)
  llm429:K    with 429 and no Retry-After (a rate limiter in front)
  crashing:T  like llm503:K (K from --busy-k) until T seconds after the
              start, then it dies: the requests in service are cut and
              its port refuses

`retry-after=N` sets the worker's Retry-After on its 503 (0: none); the
defaults are the ones above.

The start is the launch, or with --start-on-signal the first SIGUSR1 (the
load generator sends it as its first request falls due, so that a time
above is the same second of the run for both): every change of capacity,
crash and return is armed then, and none before.

GET /health answers 200 on every listening worker except a hung one (which
hangs): a liveness endpoint, as inference servers have, says nothing about
the answers. Every response carries `x-worker: NAME`.

On SIGTERM it writes what each worker answered, and for each one with a
capacity that capacity over the run ([[second, K], ...], K 0 while its port
refuses), as JSON, to --stats FILE and exits.
"""
import argparse
import asyncio
import json
import math
import random
import signal
import sys

MAX_HEAD = 16384
KINDS = ("busy", "flaky", "broken", "hung", "stuck", "wedged", "crashed", "llm503", "llm429",
         "crashing")
LLM_KINDS = ("llm503", "llm429", "crashing")


def response(name, status, extra="", body=None):
    """A whole response: head and a small JSON body."""
    if body is None:
        body = b'{"worker":"%s","status":%d}\n' % (name.encode(), status)
    head = ("HTTP/1.1 %d X\r\nx-worker: %s\r\ncontent-type: application/json\r\n"
            "content-length: %d\r\n%s\r\n" % (status, name, len(body), extra))
    return head.encode() + body


def capacity_schedule(arg, default):
    """[(second, K), ...] from `K[,K@T...]`, in order of time: ValueError if
    a K is not a positive integer or a T not a time after 0."""
    if not arg:
        return [(0.0, default)]
    first, *changes = arg.split(",")
    schedule = [(0.0, int(first))]
    for change in changes:
        k, _, at = change.partition("@")
        schedule.append((float(at), int(k)))
    if any(k < 1 for _, k in schedule) or any(t <= 0 for t, _ in schedule[1:]):
        raise ValueError("capacity %r: K is at least 1, each @T after 0" % arg)
    return sorted(schedule)


class Worker:
    def __init__(self, name, port, kind, arg, service_ms, busy_k, rng, llm, retry_after=None):
        self.name, self.port, self.kind = name, port, kind
        self.service_ms = service_ms
        self.rng = rng
        self.limit = busy_k
        self.fail_share = 0.0
        self.crash_after_s = None
        self.back_after_s = None  # crashed:T: when its port opens
        self.schedule = []  # [(second, K)]: the capacity over the run, when it has one
        if kind in ("busy", "llm503", "llm429"):
            self.schedule = capacity_schedule(arg, busy_k)
            self.limit = self.schedule[0][1]
        elif kind == "flaky":
            self.fail_share = float(arg) if arg else 0.3
        elif kind == "crashing":
            self.crash_after_s = float(arg) if arg else 30.0
        elif kind == "crashed" and arg:
            self.back_after_s = float(arg)
            self.schedule = [(0.0, 0), (self.back_after_s, busy_k)]
        if retry_after is None:
            retry_after = 2 if kind in ("llm503", "crashing") else 1
        self.retry_after = ("retry-after: %d\r\n" % retry_after) if retry_after > 0 else ""
        self.llm = llm  # (median s, sigma, longest s, first token low s, high s)
        self.in_service = 0
        self.writers = set()  # open connections: a crash cuts them
        self.answers = {}  # "200", "200 stream", "503", "500", "hung", "health" -> count

    def count(self, what):
        self.answers[what] = self.answers.get(what, 0) + 1

    async def serve(self, reader, writer):
        self.writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if len(head) > MAX_HEAD:
                    break
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                path = parts[1] if len(parts) > 1 else "/"
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0") or 0)
                if length:
                    await reader.readexactly(length)
                if self.kind in LLM_KINDS and not path.startswith("/health"):
                    await self.complete(path, writer)
                else:
                    status, extra = await self.answer(path)
                    if status is None:  # hung: hold the connection until the peer goes
                        await reader.read()
                        break
                    writer.write(response(self.name, status, extra))
                    await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass
        finally:
            self.writers.discard(writer)
            writer.close()

    async def answer(self, path):
        """(status, extra header lines) for one request; (None, '') to hang."""
        if path.startswith("/health"):
            if self.kind == "hung":
                return None, ""
            self.count("health")
            return 200, ""
        if self.kind in ("hung", "stuck"):
            self.count("hung")
            return None, ""
        if self.kind == "wedged":
            self.count("503")
            return 503, self.retry_after
        # A crashed worker back in service is a busy one.
        if self.kind in ("busy", "flaky", "crashed") and self.in_service >= self.limit:
            self.count("503")
            return 503, self.retry_after
        self.in_service += 1
        try:
            await asyncio.sleep(self.rng.uniform(*self.service_ms) / 1000.0)
        finally:
            self.in_service -= 1
        if self.kind == "broken" or (self.kind == "flaky" and self.rng.random() < self.fail_share):
            self.count("500")
            return 500, ""
        self.count("200")
        return 200, ""

    async def complete(self, path, writer):
        """One completion of an LLM kind: refused beyond its concurrency,
        otherwise streamed from the first token or answered whole."""
        if self.in_service >= self.limit:
            if self.kind == "llm429":
                self.count("429")
                writer.write(response(self.name, 429))
            else:
                self.count("503")
                writer.write(response(self.name, 503, self.retry_after))
            await writer.drain()
            return
        median, sigma, longest, first_low, first_high = self.llm
        total = min(longest, self.rng.lognormvariate(math.log(median), sigma))
        stream = "stream=1" in path
        self.in_service += 1
        try:
            if stream:
                first = min(total, self.rng.uniform(first_low, first_high))
                await asyncio.sleep(first)
                writer.write(("HTTP/1.1 200 X\r\nx-worker: %s\r\ncontent-type: text/event-stream\r\n"
                              "transfer-encoding: chunked\r\n\r\n" % self.name).encode())
                left = total - first
                event = b"data: token\n\n"
                while left > 0:
                    writer.write(b"%x\r\n%s\r\n" % (len(event), event))
                    await writer.drain()
                    step = min(0.1, left)
                    await asyncio.sleep(step)
                    left -= step
                writer.write(b"0\r\n\r\n")
            else:
                await asyncio.sleep(total)
                writer.write(response(self.name, 200))
            await writer.drain()
            self.count("200 stream" if stream else "200")
        finally:
            self.in_service -= 1


def crash(worker, server):
    """The worker's process dies: its port refuses, its connections are cut."""
    server.close()
    for writer in list(worker.writers):
        writer.transport.abort()
    worker.count("crashed")
    print("fleet: %s crashed" % worker.name, file=sys.stderr, flush=True)


def set_limit(worker, k):
    worker.limit = k
    print("fleet: %s serves %d at a time" % (worker.name, k), file=sys.stderr, flush=True)


async def come_back(worker, servers):
    """A crashed:T worker's port opens: it serves from now on."""
    servers.append(await asyncio.start_server(worker.serve, "127.0.0.1", worker.port, backlog=1024))
    print("fleet: %s is back" % worker.name, file=sys.stderr, flush=True)


def arm_timeline(workers, servers, by_name):
    """At the start: every timed change of the run, counted from now."""
    loop = asyncio.get_running_loop()
    for w in workers:
        if w.back_after_s is not None:  # its schedule is down, then --busy-k
            loop.call_later(w.back_after_s,
                            lambda w=w: asyncio.ensure_future(come_back(w, servers)))
            continue
        for at, k in w.schedule[1:]:
            loop.call_later(at, set_limit, w, k)
        if w.crash_after_s is not None:
            loop.call_later(w.crash_after_s, crash, w, by_name[w.name])


async def run(args):
    low, high = (float(x) for x in args.service_ms.split(":"))
    first_low, first_high = (float(x) for x in args.ttft_s.split(":"))
    llm = (args.llm_median_s, args.llm_sigma, args.llm_max_s, first_low, first_high)
    workers = []
    for i, spec in enumerate(args.worker):
        fields = spec.split(":")
        if len(fields) < 3:
            sys.exit("fleet_workers: --worker %r is not NAME:PORT:KIND[:ARG][:retry-after=N]" % spec)
        name, port, kind = fields[0], int(fields[1]), fields[2]
        arg = fields[3] if len(fields) > 3 else ""
        retry_after = None
        for option in fields[4:]:
            key, _, value = option.partition("=")
            if key != "retry-after" or not value.isdigit():
                sys.exit("fleet_workers: %r in %r is not retry-after=SECONDS" % (option, spec))
            retry_after = int(value)
        if kind not in KINDS:
            sys.exit("fleet_workers: unknown kind %r in %r" % (kind, spec))
        try:
            workers.append(Worker(name, port, kind, arg, (low, high), args.busy_k,
                                  random.Random(args.seed * 1000 + i), llm, retry_after))
        except ValueError as e:
            sys.exit("fleet_workers: --worker %r: %s" % (spec, e))
    loop = asyncio.get_running_loop()
    started = asyncio.Event()
    if args.start_on_signal:
        # Before the ports open: a start signalled early is kept, not fatal.
        loop.add_signal_handler(signal.SIGUSR1, started.set)
    else:
        started.set()
    servers = []
    by_name = {}
    for w in workers:
        if w.kind == "crashed":
            continue
        server = await asyncio.start_server(w.serve, "127.0.0.1", w.port, backlog=1024)
        servers.append(server)
        by_name[w.name] = server
    print("fleet: %d workers listening" % len(servers), file=sys.stderr, flush=True)

    async def timeline():
        await started.wait()
        print("fleet: the run starts", file=sys.stderr, flush=True)
        arm_timeline(workers, servers, by_name)
    # Held until the end: the loop keeps only a weak reference to a task.
    timeline_task = asyncio.ensure_future(timeline())
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    await done.wait()
    if args.stats:
        stats = {}
        for w in workers:
            stats[w.name] = {"kind": w.kind, "answers": w.answers}
            if w.schedule:
                stats[w.name]["capacity"] = [list(step) for step in w.schedule]
        with open(args.stats, "w") as f:
            json.dump(stats, f)
    timeline_task.cancel()
    for s in servers:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="append", default=[],
                    help="NAME:PORT:KIND[:ARG][:retry-after=N]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--service-ms", default="10:30", help="LOW:HIGH, uniform")
    ap.add_argument("--busy-k", type=int, default=4,
                    help="K of flaky, crashing and returning crashed:T workers")
    ap.add_argument("--start-on-signal", action="store_true",
                    help="the timed changes count from the first SIGUSR1, not the launch")
    ap.add_argument("--stats", help="where to write the answers on SIGTERM")
    ap.add_argument("--llm-median-s", type=float, default=3.0, help="LLM kinds: median completion")
    ap.add_argument("--llm-sigma", type=float, default=0.8, help="LLM kinds: log-normal sigma")
    ap.add_argument("--llm-max-s", type=float, default=60.0, help="LLM kinds: longest completion")
    ap.add_argument("--ttft-s", default="0.2:1.0", help="LLM kinds: first token after LOW:HIGH s")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
