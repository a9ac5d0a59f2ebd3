#!/usr/bin/env python3
"""A listener whose accept queue is full: new connections' SYNs are dropped,
so a client's connect times out (HAProxy: connect timeout, sC). Binds
127.0.0.1 only; never accepts; runs until killed."""
import argparse
import socket
import time

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--port", type=int, required=True)
args = ap.parse_args()

server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", args.port))
server.listen(0)
# Fill the queue ourselves (a backlog of 0 still holds one or two).
fillers = []
for _ in range(4):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", args.port))
    except BlockingIOError:
        pass
    fillers.append(s)
while True:
    time.sleep(3600)
