#!/usr/bin/env python3
"""A Runtime API socket in front of HAProxy's that is slow to add map entries.

Listens on a unix socket and relays each connection's command line to
HAProxy's own socket (non-interactive mode: one line in, the answer, close).
A line holding `add map` waits --delay seconds first, and once HAProxy has
answered it, before the answer goes back, one line is appended to
--answered: the moment HAProxy had the entry and the agent could not yet
know it. A test reads that file to tell whether something that should wait
for the entry did.

Loopback only; every wait is bounded (--delay, and 10 s for HAProxy).
"""
import argparse
import asyncio
import os
import time


async def relay(reader, writer, args):
    try:
        line = await asyncio.wait_for(reader.readline(), 10)
        if b"add map" in line:
            await asyncio.sleep(args.delay)
        up_reader, up_writer = await asyncio.wait_for(
            asyncio.open_unix_connection(args.upstream), 10)
        up_writer.write(line)
        await up_writer.drain()
        answer = await asyncio.wait_for(up_reader.read(), 10)
        up_writer.close()
        if b"add map" in line:
            with open(args.answered, "a") as f:
                f.write("%.6f %s\n" % (time.time(), line.decode(errors="replace").strip()))
        writer.write(answer)
        await writer.drain()
    except (OSError, asyncio.TimeoutError) as e:
        print("relay:", e, flush=True)
    finally:
        writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="unix socket path to listen on")
    p.add_argument("--upstream", required=True, help="HAProxy's stats socket path")
    p.add_argument("--delay", type=float, default=0.3, help="seconds an `add map` waits")
    p.add_argument("--answered", required=True, help="file the answered adds are noted in")
    args = p.parse_args()
    if os.path.exists(args.listen):
        os.unlink(args.listen)
    server = await asyncio.start_unix_server(lambda r, w: relay(r, w, args), path=args.listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
