#!/usr/bin/env python3
"""A loopback HTTP worker for the demo and the end-to-end tests.

It answers every request according to its behaviour, which a path of the
form /status/NNN overrides for one request:

  NNN       answer that status (200, 429, 500, 503, ...)
  busy      alive and busy: 503 for half the requests, 429 for 3 in 10,
            200 for the rest (drawn at random)
  hang      accept the request and answer nothing for --hang-limit
            seconds (an hour: a server timeout), then close unanswered
  close     close the connection before any response (closed before headers)
  garbage   answer bytes that are not HTTP (invalid response)
  midbody   send a 200 head announcing a long body, then close mid-body
  slow:SECONDS[:NNN]
            a whole 200 answer (or status NNN), head and body, after
            SECONDS (a long completion that is not streamed; a late refusal)
  cap:K:SECONDS
            an engine of capacity K: a 200 after SECONDS while fewer than K
            requests are in service, 503 at once beyond (a batch that is full)
  stream:FIRST:TOTAL
            a 200 head after FIRST seconds (the first token), then a chunked
            body of server-sent events, one every 100 ms, ending TOTAL
            seconds after the request arrived (a streamed completion)

SECONDS, FIRST and TOTAL may be fractions (0.5). With --no-override the path
overrides nothing: a hung worker stays hung whatever it is asked.

With --mode-file FILE the behaviour is read from FILE at every request (a
missing or empty file means --behaviour), so that the soak can switch it
while the worker runs; a hang the file asked for ends, the request closed
unanswered as a real worker's would be, as soon as the file says otherwise.

Every response carries `x-worker: NAME`. Binds 127.0.0.1, or another
loopback address given with --host (a DNS test's workers share a port). With
--arrivals FILE, the arrival time of every request (milliseconds since the
epoch) is appended to FILE, one per line, before it is answered. With
--spans FILE, each request's arrival and departure (the same clock) are
appended to FILE as one line "ARRIVED LEFT" once it is done: what the
worker held at a moment, whatever its answers' delays on a loaded machine.
With
--retry-after VALUE, its 429 and 503 answers carry `Retry-After: VALUE`
(sent as given: seconds, a date, or anything a test wants refused).
--backlog sets the listen queue (the soak's open-loop traffic needs more
than the default 5).
"""
import argparse
import os
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import mode_file


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep test output quiet
        pass

    def do_GET(self):
        arrived_ms = int(time.time() * 1000)
        try:
            self.answer_get()
        finally:
            if self.server.spans:
                with open(self.server.spans, "a") as f:
                    f.write("%d %d\n" % (arrived_ms, int(time.time() * 1000)))

    def answer_get(self):
        behaviour = self.server.current_behaviour()
        arrived = time.monotonic()
        from_file = self.server.mode_file is not None
        if self.path.startswith("/status/") and not self.server.fixed:
            behaviour = self.path[len("/status/"):].split("?")[0]
            from_file = False
        self.server.requests += 1
        if self.server.arrivals:
            with open(self.server.arrivals, "a") as f:
                f.write("%d\n" % int(time.time() * 1000))
        if behaviour == "hang":
            deadline = arrived + self.server.hang_limit
            while time.monotonic() < deadline:
                if from_file and self.server.current_behaviour() != "hang":
                    break
                time.sleep(0.1)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if behaviour == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if behaviour == "garbage":
            self.wfile.write(b"this is not HTTP\r\n\r\n")
            self.close_connection = True
            return
        if behaviour == "midbody":
            self.send_response(200)
            self.send_header("x-worker", self.server.name)
            self.send_header("content-length", "100000")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if behaviour.startswith("slow:"):
            parts = behaviour.split(":")
            time.sleep(float(parts[1]))
            behaviour = parts[2] if len(parts) > 2 else "200"
        elif behaviour.startswith("stream:"):
            _, first, total = behaviour.split(":")
            self.stream(arrived, float(first), float(total))
            return
        elif behaviour.startswith("cap:"):
            _, k, seconds = behaviour.split(":")
            with self.server.lock:
                full = self.server.in_service >= int(k)
                if not full:
                    self.server.in_service += 1
            if full:
                behaviour = "503"
            else:
                try:
                    time.sleep(float(seconds))
                finally:
                    with self.server.lock:
                        self.server.in_service -= 1
                behaviour = "200"
        elif behaviour == "busy":
            r = self.server.rng.random()
            behaviour = "503" if r < 0.5 else "429" if r < 0.8 else "200"
        try:
            status = int(behaviour)
        except ValueError:
            status = 400
        body = b'{"worker":"%s","status":%d}\n' % (self.server.name.encode(), status)
        self.send_response(status)
        self.send_header("x-worker", self.server.name)
        if self.server.retry_after is not None and status in (429, 503):
            self.send_header("retry-after", self.server.retry_after)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def stream(self, arrived, first, total):
        time.sleep(max(0.0, arrived + first - time.monotonic()))
        self.send_response(200)
        self.send_header("x-worker", self.server.name)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        n = 0
        while True:
            event = b"data: {\"worker\":\"%s\",\"event\":%d}\n\n" % (self.server.name.encode(), n)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            n += 1
            left = arrived + total - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(0.1, left))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client resetting its connection is not news

    def current_behaviour(self):
        if self.mode_file is None:
            return self.behaviour
        return mode_file.read(self.mode_file, self.behaviour)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--name", default="worker")
    ap.add_argument("--behaviour", default="200")
    ap.add_argument("--arrivals", help="append each request's arrival time (ms) to this file")
    ap.add_argument("--spans", help="append each request's arrival and departure (ms) to this file")
    ap.add_argument("--no-override", action="store_true",
                    help="the path never overrides the behaviour")
    ap.add_argument("--host", default="127.0.0.1", help="a loopback address (127.0.0.0/8)")
    ap.add_argument("--retry-after", help="send Retry-After: VALUE with 429 and 503 answers")
    ap.add_argument("--mode-file", help="read the behaviour from this file at every request")
    ap.add_argument("--hang-limit", type=float, default=3600.0,
                    help="seconds a hang lasts at most")
    ap.add_argument("--backlog", type=int, default=Server.request_queue_size,
                    help="the listen queue's length")
    args = ap.parse_args()
    if not args.host.startswith("127."):
        ap.error("--host must be a loopback address (127.0.0.0/8)")
    Server.request_queue_size = args.backlog  # read when the server listens
    server = Server((args.host, args.port), Handler)
    server.name = args.name
    server.behaviour = args.behaviour
    server.requests = 0
    server.arrivals = args.arrivals
    server.spans = args.spans
    server.fixed = args.no_override
    server.retry_after = args.retry_after
    server.mode_file = args.mode_file
    server.hang_limit = args.hang_limit
    server.rng = random.Random(os.getpid())
    server.lock = threading.Lock()
    server.in_service = 0  # cap:K:SECONDS's requests being served
    print(f"worker {args.name} on {args.host}:{args.port} ({args.behaviour})", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
