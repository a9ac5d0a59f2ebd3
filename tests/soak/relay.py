#!/usr/bin/env python3
"""A relay in front of HAProxy's Runtime API socket that the soak can stall
or close while it runs.

Listens on --listen (a unix socket) and copies bytes both ways between each
client and --upstream. The behaviour is read from --mode-file:

  pass      copy both ways
  stall     hold HAProxy's replies (the commands reach HAProxy; nothing
            comes back while the file says stall, at most --hold-limit s)
  closed    accept and close at once, sending nothing

Loopback and unix sockets only; every wait is bounded.
"""
import argparse
import asyncio
import os
import time


def read_mode(path):
    try:
        with open(path) as f:
            return f.read().strip() or "pass"
    except OSError:
        return "pass"


async def pump(reader, writer, args, hold):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if hold:
                deadline = time.monotonic() + args.hold_limit
                while read_mode(args.mode_file) == "stall" and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        try:
            if writer.can_write_eof():
                writer.write_eof()
        except OSError:
            pass


async def relay(reader, writer, args):
    if read_mode(args.mode_file) == "closed":
        writer.close()
        return
    try:
        up_reader, up_writer = await asyncio.wait_for(
            asyncio.open_unix_connection(args.upstream), 5)
    except (OSError, asyncio.TimeoutError):
        writer.close()
        return
    await asyncio.gather(pump(reader, up_writer, args, False),
                         pump(up_reader, writer, args, True))
    up_writer.close()
    writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--mode-file", required=True)
    p.add_argument("--hold-limit", type=float, default=30.0)
    args = p.parse_args()
    if os.path.exists(args.listen):
        os.unlink(args.listen)
    server = await asyncio.start_unix_server(lambda r, w: relay(r, w, args), path=args.listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
