#!/usr/bin/env python3
"""Raw HTTP/1.1 on loopback for tests/e2e/router_errors.bats.

  router_http.py summary PORT PATH
      GET PATH; prints "STATUS CODE UPSTREAM BODYCODE" where CODE and
      UPSTREAM are the x-router-error-code and x-router-upstream-status
      headers and BODYCODE the body's error.code ("-" when absent), then
      the body on a second line; "none - - -" when the connection closed
      before any response.
  router_http.py summary-raw PORT REQUEST
      The same for REQUEST sent as is (Python escapes such as \\r\\n).
  router_http.py compare WORKER_PORT HAPROXY_PORT PATH
      GET PATH from the worker directly and through HAProxy, and exits 1
      unless HAProxy's response is the worker's (see same_response).

Every request is sent with "connection: close" and read until the peer
closes, so a body cut short (a worker closing mid-body) is read as far as
it got.
"""
import json
import socket
import sys

# Headers HAProxy may legitimately add, drop or rewrite on the way: the
# hop-by-hop ones (RFC 9110 7.6.1) and `date`, which the worker stamps
# anew on each of the two requests compared.
NOT_COMPARED = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
                "transfer-encoding", "upgrade", "date"}


def exchange(port, request, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(request)
    chunks = []
    while True:
        try:
            data = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not data:
            break
        chunks.append(data)
    s.close()
    return b"".join(chunks)


def get(port, path):
    return exchange(port, b"GET %s HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
                    % path.encode())


def parse(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    version, status, reason = (lines[0].split(" ", 2) + ["", ""])[:3]
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
    return {"version": version, "status": status, "reason": reason,
            "headers": headers, "body": body}


def header(resp, name):
    values = [v for n, v in resp["headers"] if n.lower() == name]
    return values[-1] if values else "-"


def summary(raw):
    if not raw.startswith(b"HTTP/"):
        # The connection closed before any response: nothing to show.
        print("none - - -")
        print(repr(raw))
        return
    resp = parse(raw)
    try:
        code = json.loads(resp["body"])["error"]["code"]
    except (ValueError, KeyError, TypeError):
        code = "-"
    print(resp["status"], header(resp, "x-router-error-code"),
          header(resp, "x-router-upstream-status"), code)
    print(resp["body"].decode("latin-1"))


def same_response(direct, proxied):
    """What is compared: the status line (version, code, reason), every
    header in order -- names case-insensitively, since HAProxy's H1 output
    writes them in lower case, values byte for byte -- except NOT_COMPARED,
    and the body byte for byte. Returns the differences."""
    d, p = parse(direct), parse(proxied)
    diffs = []
    for part in ("version", "status", "reason", "body"):
        if d[part] != p[part]:
            diffs.append(f"{part}: worker {d[part]!r}, haproxy {p[part]!r}")

    def kept(r):
        return [(n.lower(), v) for n, v in r["headers"] if n.lower() not in NOT_COMPARED]
    if kept(d) != kept(p):
        diffs.append(f"headers: worker {kept(d)!r}, haproxy {kept(p)!r}")
    for name in ("x-router-error-code", "x-router-upstream-status"):
        if header(p, name) != "-":
            diffs.append(f"haproxy added {name}")
    return diffs


def main():
    cmd = sys.argv[1]
    if cmd == "summary":
        summary(get(int(sys.argv[2]), sys.argv[3]))
    elif cmd == "summary-raw":
        request = sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
        summary(exchange(int(sys.argv[2]), request))
    elif cmd == "compare":
        direct = get(int(sys.argv[2]), sys.argv[4])
        proxied = get(int(sys.argv[3]), sys.argv[4])
        diffs = same_response(direct, proxied)
        for diff in diffs:
            print(diff)
        sys.exit(1 if diffs else 0)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
