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
  wedged      503 at once to every request: stuck, yet looks busy
  crashed     nothing listens on PORT: every connection is refused

GET /health answers 200 on every listening worker except a hung one (which
hangs): a liveness endpoint, as inference servers have, says nothing about
the answers. Every response carries `x-worker: NAME`.

On SIGTERM it writes what each worker answered, as JSON, to --stats FILE
and exits.
"""
import argparse
import asyncio
import json
import random
import signal
import sys

MAX_HEAD = 16384


class Worker:
    def __init__(self, name, port, kind, arg, service_ms, busy_k, rng):
        self.name, self.port, self.kind = name, port, kind
        self.service_ms = service_ms
        self.rng = rng
        self.limit = busy_k
        self.fail_share = 0.0
        if kind == "busy":
            self.limit = int(arg) if arg else busy_k
        elif kind == "flaky":
            self.fail_share = float(arg) if arg else 0.3
        self.in_service = 0
        self.answers = {}  # "200", "503", "500", "hung", "health" -> count

    def count(self, what):
        self.answers[what] = self.answers.get(what, 0) + 1

    async def serve(self, reader, writer):
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
                status, extra = await self.answer(path)
                if status is None:  # hung: hold the connection until the peer goes
                    await reader.read()
                    break
                body = b'{"worker":"%s","status":%d}\n' % (self.name.encode(), status)
                head_out = ("HTTP/1.1 %d X\r\nx-worker: %s\r\ncontent-type: application/json\r\n"
                            "content-length: %d\r\n%s\r\n" % (status, self.name, len(body), extra))
                writer.write(head_out.encode() + body)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def answer(self, path):
        """(status, extra header lines) for one request; (None, '') to hang."""
        if path.startswith("/health"):
            if self.kind == "hung":
                return None, ""
            self.count("health")
            return 200, ""
        if self.kind == "hung":
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


async def run(args):
    low, high = (float(x) for x in args.service_ms.split(":"))
    workers = []
    for i, spec in enumerate(args.worker):
        fields = spec.split(":")
        if len(fields) < 3:
            sys.exit("fleet_workers: --worker %r is not NAME:PORT:KIND[:ARG]" % spec)
        name, port, kind = fields[0], int(fields[1]), fields[2]
        arg = fields[3] if len(fields) > 3 else ""
        if kind not in ("busy", "flaky", "broken", "hung", "wedged", "crashed"):
            sys.exit("fleet_workers: unknown kind %r in %r" % (kind, spec))
        workers.append(Worker(name, port, kind, arg, (low, high), args.busy_k,
                              random.Random(args.seed * 1000 + i)))
    servers = []
    for w in workers:
        if w.kind == "crashed":
            continue
        servers.append(await asyncio.start_server(w.serve, "127.0.0.1", w.port, backlog=1024))
    print("fleet: %d workers listening" % len(servers), file=sys.stderr, flush=True)
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
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
    ap.add_argument("--busy-k", type=int, default=4, help="K of flaky workers")
    ap.add_argument("--stats", help="where to write the answers on SIGTERM")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
