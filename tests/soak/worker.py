#!/usr/bin/env python3
"""A loopback HTTP worker whose behaviour the soak switches while it runs.

Reads its behaviour from --mode-file at every request (a missing or empty
file is "healthy"):

  healthy   200
  busy      alive and busy: 503 or 429 for most requests, 200 for a few
  failing   500
  hung      accepts the request and answers nothing while the file says
            hung (at most --hang-limit seconds), then closes

Refusing is not a mode: the soak stops the process, so that nothing
listens on the port. Every response carries `x-worker: NAME`. 127.0.0.1
only.
"""
import argparse
import os
import random
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def read_mode(path):
    try:
        with open(path) as f:
            return f.read().strip() or "healthy"
    except OSError:
        return "healthy"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        srv = self.server
        mode = read_mode(srv.mode_file)
        if mode == "hung":
            deadline = time.monotonic() + srv.hang_limit
            while read_mode(srv.mode_file) == "hung" and time.monotonic() < deadline:
                time.sleep(0.1)
            # Released: the request was lost with the hang, as a real
            # worker's would be; the connection is closed unanswered.
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if mode == "failing":
            status = 500
        elif mode == "busy":
            r = srv.rng.random()
            status = 503 if r < 0.5 else 429 if r < 0.8 else 200
        else:
            status = 200
        body = b'{"worker":"%s","status":%d}\n' % (srv.name.encode(), status)
        self.send_response(status)
        self.send_header("x-worker", srv.name)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--mode-file", required=True)
    ap.add_argument("--hang-limit", type=float, default=60.0)
    args = ap.parse_args()
    server = Server(("127.0.0.1", args.port), Handler)
    server.name = args.name
    server.mode_file = args.mode_file
    server.hang_limit = args.hang_limit
    server.rng = random.Random(os.getpid())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
