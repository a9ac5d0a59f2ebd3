#!/usr/bin/env python3
"""A relay in front of HAProxy's Runtime API socket that a test can slow,
stall or close.

Listens on --listen (a unix socket) and copies bytes both ways between each
client and --upstream, HAProxy's socket. With --mode-file, that file, read
at every connection and while a reply waits, says what the relay does:

  pass      copy both ways (a missing or empty file says the same)
  stall     hold HAProxy's replies (the commands reach HAProxy; nothing
            comes back while the file says stall, at most --hold-limit s)
  closed    accept and close at once, sending nothing

With --add-map-delay SECONDS, what a client sends that holds `add map`
reaches HAProxy that much later. With --answered FILE, a connection that
sent an `add map` gets HAProxy's answer only once it is whole (HAProxy
closes after one line in non-interactive mode), and before it goes back
one line, the time and the command line, is appended to FILE: the moment
HAProxy had the entry and the client could not yet know it. A test reads
that file to tell whether something that should wait for the entry did.

Loopback and unix sockets only; every wait is bounded (--hold-limit,
--add-map-delay, 5 s to reach HAProxy).
"""
import argparse
import asyncio
import os
import time

import mode_file

ADD_MAP = b"add map"


class Exchange:
    """One client's connection: what it sent, when that is looked into."""

    def __init__(self, args):
        self.keep_sent = bool(args.add_map_delay or args.answered)
        self.sent = b""
        self.adds_map = False


def mode(args):
    return mode_file.read(args.mode_file, "pass") if args.mode_file else "pass"


def close_write(writer):
    try:
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        pass


async def copy(reader, writer, each, at_end=None):
    """Copies READER to WRITER until its end: each chunk as EACH(chunk)
    makes it (awaited: it may wait), then what AT_END() gives, if any."""
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            data = await each(data)
            if data:
                writer.write(data)
                await writer.drain()
        last = at_end() if at_end else b""
        if last:
            writer.write(last)
            await writer.drain()
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        close_write(writer)


async def commands(reader, up_writer, args, ex):
    """Client to HAProxy, an `add map` late by --add-map-delay."""
    async def each(data):
        if ex.keep_sent:
            # Looked for across the chunks' seam: a line may come in two.
            seam = max(0, len(ex.sent) - len(ADD_MAP) + 1)
            ex.sent += data
            if ADD_MAP in ex.sent[seam:]:
                ex.adds_map = True
                await asyncio.sleep(args.add_map_delay)
        return data
    await copy(reader, up_writer, each)


async def replies(up_reader, writer, args, ex):
    """HAProxy to the client, held while the mode says stall; an answer to
    an `add map` whole, noted in --answered before it goes back."""
    held = []

    async def each(data):
        deadline = time.monotonic() + args.hold_limit
        while mode(args) == "stall" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if args.answered and ex.adds_map:
            held.append(data)
            return b""
        return data

    def at_end():
        if not (args.answered and ex.adds_map):
            return b""
        with open(args.answered, "a") as f:
            for line in ex.sent.decode(errors="replace").splitlines():
                if ADD_MAP.decode() in line:
                    f.write("%.6f %s\n" % (time.time(), line.strip()))
        return b"".join(held)
    await copy(up_reader, writer, each, at_end)


async def relay(reader, writer, args):
    if mode(args) == "closed":
        writer.close()
        return
    try:
        up_reader, up_writer = await asyncio.wait_for(
            asyncio.open_unix_connection(args.upstream), 5)
    except (OSError, asyncio.TimeoutError) as e:
        print("relay: HAProxy's socket:", e, flush=True)
        writer.close()
        return
    ex = Exchange(args)
    await asyncio.gather(commands(reader, up_writer, args, ex),
                         replies(up_reader, writer, args, ex))
    up_writer.close()
    writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="unix socket path to listen on")
    p.add_argument("--upstream", required=True, help="HAProxy's stats socket path")
    p.add_argument("--mode-file", help="file saying pass, stall or closed")
    p.add_argument("--hold-limit", type=float, default=30.0,
                   help="seconds a reply is held at most while stalled")
    p.add_argument("--add-map-delay", type=float, default=0.0,
                   help="seconds an `add map` waits before it reaches HAProxy")
    p.add_argument("--answered", help="file the answered `add map` lines are noted in")
    args = p.parse_args()
    if os.path.exists(args.listen):
        os.unlink(args.listen)
    server = await asyncio.start_unix_server(lambda r, w: relay(r, w, args), path=args.listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
