"""One command on HAProxy's Runtime API socket, the way the agent speaks
to it: one line in non-interactive mode, then everything HAProxy answers
until it closes the connection.

Imported by the soak (tests/soak/soak.py) and the reaction benchmark
(bench/reaction.py); every wait is bounded by the timeout.
"""
import socket


def command(path, line, timeout=2.0):
    """HAProxy's whole answer to LINE on the unix socket PATH, as text."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
        return out.decode(errors="replace")
    finally:
        s.close()
