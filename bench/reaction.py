#!/usr/bin/env python3
"""reaction.py - how long a trip takes to reach HAProxy.

Sends THRESHOLD failing responses through HAProxy to one server, and
measures the time from the client receiving the last one (the agent has
ACKed its NOTIFY by then: on-http-response runs before the response is
forwarded) until `show servers state` lists that server drained. Then waits
out the cool-down, sends one successful probe to close the breaker, waits
until the agent says closed and HAProxy no longer shows the drain, and
trips again.

Usage: reaction.py --frontend PORT --socket PATH --admin PORT [--trips N]
                   [--threshold N] [--cooldown-ms MS] [--server NAME]
Prints one line: trips= missed= p50_ms= p99_ms= max_ms=
Every wait is bounded (2 s for a drain, 5 s to close); a trip whose drain
never shows is counted as missed, not waited for.
"""
import argparse
import http.client
import json
import os
import sys
import time

# The Runtime API the way the agent and the soak speak it (tests/lib).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
import haproxy_cli  # noqa: E402

DRAIN_BITS = 0x08 | 0x10  # SRV_ADMF_FDRAIN | SRV_ADMF_IDRAIN in srv_admin_state


def request(port, server, fail):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    headers = {"x-srv": server}
    if fail:
        headers["x-fail"] = "1"
    conn.request("GET", "/", headers=headers)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp.status


def drained(sock_path, backend, server):
    """True when HAProxy's `show servers state` has the server drained."""
    columns = None
    for line in haproxy_cli.command(sock_path, f"show servers state {backend}", 2).splitlines():
        if line.startswith("# "):
            columns = line[2:].split()
            continue
        fields = line.split()
        if columns and len(fields) >= len(columns) and fields[columns.index("srv_name")] == server:
            admin = int(fields[columns.index("srv_admin_state")])
            return bool(admin & DRAIN_BITS)
    return False


def breaker_state(admin_port, backend, server):
    conn = http.client.HTTPConnection("127.0.0.1", admin_port, timeout=5)
    conn.request("GET", "/state")
    body = conn.getresponse().read()
    conn.close()
    for b in json.loads(body).get("breakers", []):
        if b.get("backend") == backend and b.get("server") == server:
            return b.get("state")
    return "closed"  # not tracked yet: a fresh breaker is closed


def wait_until(predicate, seconds, step=0.0005):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return False


def quantile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frontend", type=int, required=True, help="HAProxy's HTTP port")
    ap.add_argument("--socket", required=True, help="HAProxy's stats socket (level admin)")
    ap.add_argument("--admin", type=int, required=True, help="the agent's admin HTTP port")
    ap.add_argument("--trips", type=int, default=30, help="trips to measure (at most 1000)")
    ap.add_argument("--threshold", type=int, default=3, help="the agent's threshold")
    ap.add_argument("--cooldown-ms", type=int, default=300, help="the agent's cooldown")
    ap.add_argument("--backend", default="workers")
    ap.add_argument("--server", default="w2", help="the server tripped (use-server on x-srv)")
    a = ap.parse_args()
    a.trips = max(1, min(a.trips, 1000))

    def is_drained():
        return drained(a.socket, a.backend, a.server)

    def is_closed():
        return breaker_state(a.admin, a.backend, a.server) == "closed" and not is_drained()

    delays, missed = [], 0
    for _ in range(a.trips):
        if not wait_until(is_closed, 5, 0.01):
            missed += 1
            break
        for _ in range(a.threshold):
            request(a.frontend, a.server, fail=True)
        tripped_at = time.monotonic_ns()
        if wait_until(is_drained, 2):
            delays.append((time.monotonic_ns() - tripped_at) / 1e6)
        else:
            missed += 1
        # Past the cool-down the server is half-open: one success closes it.
        time.sleep(a.cooldown_ms / 1000 + 0.05)
        wait_until(lambda: breaker_state(a.admin, a.backend, a.server) == "half_open", 2, 0.01)
        request(a.frontend, a.server, fail=False)
    delays.sort()
    print(f"trips={len(delays)} missed={missed} p50_ms={quantile(delays, 0.5):.2f} "
          f"p99_ms={quantile(delays, 0.99):.2f} max_ms={delays[-1] if delays else float('nan'):.2f}")


if __name__ == "__main__":
    main()
