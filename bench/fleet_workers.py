#!/usr/bin/env python3
"""A simulated fleet of HTTP workers for `make bench-fleet`, in one process.

Each --worker NAME:PORT:KIND[:ARG] listens on 127.0.0.1:PORT and answers
every request as its kind says, after a service time drawn from
--service-ms LOW:HIGH (uniform, from a generator seeded with --seed and the
worker's position, so a run is repeatable):

  busy:K      200, but 503 at once (with Retry-After: 1) to a request that
              finds K already in service: alive and busy
  flaky:P     like busy (K from --busy-k), and 500 for a share P (0-1) of
              the requests it serves
  broken      500 to every request
  hung        reads the request and never answers
  stuck       like hung, but its GET /health still answers 200: a wedged
              engine behind a live HTTP server, which no health check sees
  wedged      503 at once to every request: stuck, yet looks busy
  crashed     nothing listens on PORT: every connection is refused

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

GET /health answers 200 on every listening worker except a hung one (which
hangs): a liveness endpoint, as inference servers have, says nothing about
the answers. Every response carries `x-worker: NAME`.

On SIGTERM it writes what each worker answered, as JSON, to --stats FILE
and exits.
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


class Worker:
    def __init__(self, name, port, kind, arg, service_ms, busy_k, rng, llm):
        self.name, self.port, self.kind = name, port, kind
        self.service_ms = service_ms
        self.rng = rng
        self.limit = busy_k
        self.fail_share = 0.0
        self.crash_after_s = None
        if kind in ("busy", "llm503", "llm429"):
            self.limit = int(arg) if arg else busy_k
        elif kind == "flaky":
            self.fail_share = float(arg) if arg else 0.3
        elif kind == "crashing":
            self.crash_after_s = float(arg) if arg else 30.0
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
            return 503, "retry-after: 1\r\n"
        if self.kind in ("busy", "flaky") and self.in_service >= self.limit:
            self.count("503")
            return 503, "retry-after: 1\r\n"
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
                writer.write(response(self.name, 503, "retry-after: 2\r\n"))
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


async def run(args):
    low, high = (float(x) for x in args.service_ms.split(":"))
    first_low, first_high = (float(x) for x in args.ttft_s.split(":"))
    llm = (args.llm_median_s, args.llm_sigma, args.llm_max_s, first_low, first_high)
    workers = []
    for i, spec in enumerate(args.worker):
        fields = spec.split(":")
        if len(fields) < 3:
            sys.exit("fleet_workers: --worker %r is not NAME:PORT:KIND[:ARG]" % spec)
        name, port, kind = fields[0], int(fields[1]), fields[2]
        arg = fields[3] if len(fields) > 3 else ""
        if kind not in KINDS:
            sys.exit("fleet_workers: unknown kind %r in %r" % (kind, spec))
        workers.append(Worker(name, port, kind, arg, (low, high), args.busy_k,
                              random.Random(args.seed * 1000 + i), llm))
    servers = []
    loop = asyncio.get_running_loop()
    for w in workers:
        if w.kind == "crashed":
            continue
        server = await asyncio.start_server(w.serve, "127.0.0.1", w.port, backlog=1024)
        servers.append(server)
        if w.crash_after_s is not None:
            loop.call_later(w.crash_after_s, crash, w, server)
    print("fleet: %d workers listening" % len(servers), file=sys.stderr, flush=True)
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    await done.wait()
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({w.name: {"kind": w.kind, "answers": w.answers} for w in workers}, f)
    for s in servers:
        s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="append", default=[], help="NAME:PORT:KIND[:ARG]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--service-ms", default="10:30", help="LOW:HIGH, uniform")
    ap.add_argument("--busy-k", type=int, default=4, help="K of flaky and crashing workers")
    ap.add_argument("--stats", help="where to write the answers on SIGTERM")
    ap.add_argument("--llm-median-s", type=float, default=3.0, help="LLM kinds: median completion")
    ap.add_argument("--llm-sigma", type=float, default=0.8, help="LLM kinds: log-normal sigma")
    ap.add_argument("--llm-max-s", type=float, default=60.0, help="LLM kinds: longest completion")
    ap.add_argument("--ttft-s", default="0.2:1.0", help="LLM kinds: first token after LOW:HIGH s")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
