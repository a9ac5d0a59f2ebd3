#!/usr/bin/env python3
"""A scriptable SPOP peer for the end-to-end tests: plays HAProxy, well or badly.

An independent implementation of the wire format (SPOE.txt), so that the
agent's codec and this one cannot be wrong together.

Usage: spop_client.py [--source IP] [--tls CA [--cert PEM]] ADDR SCENARIO [ARG]
ADDR is HOST:PORT or unix:PATH; --source binds the socket to IP first (a
second loopback address, 127.0.0.2, plays another host). --tls speaks TLS,
verifying the agent's certificate against CA, and --cert presents PEM (its
certificate and key) as the client's; a TLS failure prints
"tls-error REASON" (a reset too) and exits 1. Each scenario prints one line of key=value
facts about what the agent answered and exits 0, or prints what went wrong
and exits 1.
"""
import socket
import ssl
import struct
import sys
import time

HAPROXY_HELLO, HAPROXY_DISCONNECT, NOTIFY = 1, 2, 3
AGENT_HELLO, AGENT_DISCONNECT, ACK = 101, 102, 103
FIN = 1

T_NULL, T_BOOL, T_INT32, T_UINT32, T_INT64, T_UINT64 = 0, 1, 2, 3, 4, 5
T_IPV4, T_IPV6, T_STRING, T_BINARY = 6, 7, 8, 9


def varint(v):
    if v < 240:
        return bytes([v])
    out = [(v & 0xFF) | 240]
    v = (v - 240) >> 4
    while v >= 128:
        out.append((v & 0xFF) | 128)
        v = (v - 128) >> 7
    out.append(v)
    return bytes(out)


def read_varint(buf, i):
    v = buf[i]
    i += 1
    if v < 240:
        return v, i
    shift = 4
    while True:
        b = buf[i]
        i += 1
        v += b << shift
        shift += 7
        if b < 128:
            return v, i


def string(s):
    if isinstance(s, str):
        s = s.encode()
    return varint(len(s)) + s


def typed(value):
    if value is None:
        return bytes([T_NULL])
    if isinstance(value, bool):
        return bytes([T_BOOL | (0x10 if value else 0)])
    if isinstance(value, int):
        return bytes([T_INT64]) + varint(value & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, tuple) and value[0] == "uint32":
        return bytes([T_UINT32]) + varint(value[1])
    return bytes([T_STRING]) + string(value)


def read_typed(buf, i):
    t = buf[i] & 0x0F
    flags = buf[i] >> 4
    i += 1
    if t == T_NULL:
        return None, i
    if t == T_BOOL:
        return bool(flags & 1), i
    if t in (T_INT32, T_UINT32, T_INT64, T_UINT64):
        v, i = read_varint(buf, i)
        if t in (T_INT32, T_INT64) and v >= 1 << 63:
            v -= 1 << 64
        return v, i
    if t == T_IPV4:
        return buf[i:i + 4], i + 4
    if t == T_IPV6:
        return buf[i:i + 16], i + 16
    n, i = read_varint(buf, i)
    data = buf[i:i + n]
    return (data.decode(errors="replace") if t == T_STRING else data), i + n


def kv_list(pairs):
    return b"".join(string(k) + typed(v) for k, v in pairs)


def read_kv_list(buf):
    out, i = {}, 0
    while i < len(buf):
        n, i = read_varint(buf, i)
        name = buf[i:i + n].decode()
        i += n
        out[name], i = read_typed(buf, i)
    return out


def read_actions(buf):
    actions, i = [], 0
    while i < len(buf):
        atype, nargs, scope = buf[i], buf[i + 1], buf[i + 2]
        i += 3
        n, i = read_varint(buf, i)
        name = buf[i:i + n].decode()
        i += n
        value = None
        if atype == 1:
            value, i = read_typed(buf, i)
        actions.append(("set" if atype == 1 else "unset", scope, name, value))
    return actions


def frame(ftype, payload, sid=0, fid=0, flags=FIN):
    body = bytes([ftype]) + struct.pack(">I", flags) + varint(sid) + varint(fid) + payload
    return struct.pack(">I", len(body)) + body


def hello_frame(healthcheck=False, max_frame=16380, caps="pipelining,async",
                engine_id="e2e-test-engine"):
    pairs = [("supported-versions", "2.0"), ("max-frame-size", ("uint32", max_frame)),
             ("capabilities", caps)]
    if healthcheck:
        pairs.append(("healthcheck", True))
    else:
        pairs.append(("engine-id", engine_id))
    return frame(HAPROXY_HELLO, kv_list(pairs))


def notify_frame(sid, fid, messages, flags=FIN):
    payload = b""
    for name, args in messages:
        payload += string(name) + bytes([len(args)]) + kv_list(args)
    return frame(NOTIFY, payload, sid, fid, flags)


class Peer:
    def __init__(self, addr, source=None, tls=None):
        if addr.startswith("unix:"):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(addr[5:])
        else:
            host, port = addr.rsplit(":", 1)
            self.sock = socket.create_connection((host.strip("[]"), int(port)),
                                                 source_address=(source, 0) if source else None)
        self.sock.settimeout(5)
        if tls:
            self.sock = tls.wrap_socket(self.sock)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                return False
            self.buf += chunk
        return True

    def read_frame(self):
        """Returns (type, flags, sid, fid, payload), or None at EOF."""
        if not self._fill(4):
            return None
        (length,) = struct.unpack(">I", self.buf[:4])
        if not self._fill(4 + length):
            return None
        body, self.buf = self.buf[4:4 + length], self.buf[4 + length:]
        ftype = body[0]
        (flags,) = struct.unpack(">I", body[1:5])
        sid, i = read_varint(body, 5)
        fid, i = read_varint(body, i)
        return ftype, flags, sid, fid, body[i:]

    def eof(self):
        """True when the agent closes (after at most the socket timeout)."""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
        except (ConnectionResetError, socket.timeout):
            return False

    def hello(self, **kw):
        self.send(hello_frame(**kw))
        f = self.read_frame()
        if not f or f[0] != AGENT_HELLO:
            fail(f"expected AGENT-HELLO, got {f!r}")
        return read_kv_list(f[4])


def fail(why):
    print(f"FAIL {why}")
    sys.exit(1)


def expect_disconnect(peer):
    f = peer.read_frame()
    if not f or f[0] != AGENT_DISCONNECT:
        fail(f"expected AGENT-DISCONNECT, got {f!r}")
    kv = read_kv_list(f[4])
    closed = peer.eof()
    print(f"disconnect status={kv.get('status-code')} closed={closed} message={kv.get('message')!r}")


def observe(status, backend="be_app", server="w1"):
    return [("breaker-observe", [("be", backend), ("srv", server), ("status", status)])]


def scenario_hello(peer, arg):
    kv = peer.hello(max_frame=int(arg) if arg else 16380)
    print(f"version={kv.get('version')} max-frame-size={kv.get('max-frame-size')} "
          f"capabilities={kv.get('capabilities')!r}")


def scenario_healthcheck(peer, arg):
    kv = peer.hello(healthcheck=True, caps="")
    print(f"version={kv.get('version')} capabilities={kv.get('capabilities')!r} closed={peer.eof()}")


def scenario_split_hello(peer, arg):
    # One byte per write: the agent must reassemble across partial reads.
    peer.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for b in hello_frame():
        peer.send(bytes([b]))
        time.sleep(0.002)
    f = peer.read_frame()
    print(f"type={f[0] if f else None}")


def scenario_pipeline(peer, arg):
    count = int(arg or 20)
    peer.hello()
    statuses = [200, 429, 500, 503, 404]
    # All NOTIFYs in one write, like HAProxy with many streams in flight;
    # stream-ids as 3.x numbers them (odd), frame-id as 2.6 does (1).
    frames = b"".join(notify_frame(2 * i + 1, 1, observe(statuses[i % 5])) for i in range(count))
    peer.send(frames)
    seen = {}
    for _ in range(count):
        f = peer.read_frame()
        if not f or f[0] != ACK:
            fail(f"expected ACK, got {f!r}")
        vars_ = {name: value for kind, scope, name, value in read_actions(f[4]) if kind == "set"}
        seen[(f[2], f[3])] = vars_.get("upstream_status")
    wrong = [i for i in range(count) if seen.get((2 * i + 1, 1)) != statuses[i % 5]]
    print(f"acks={len(seen)} mismatched={len(wrong)}")


def scenario_notify(peer, arg):
    """One NOTIFY; ARG is the messages as a Python literal, for odd cases."""
    peer.hello()
    messages = eval(arg) if arg else observe(200)  # test-controlled input
    peer.send(notify_frame(7, 1, messages))
    f = peer.read_frame()
    if not f or f[0] != ACK:
        fail(f"expected ACK, got {f!r}")
    actions = read_actions(f[4])
    desc = " ".join(f"{kind}:{name}={value}" for kind, scope, name, value in actions)
    print(f"sid={f[2]} fid={f[3]} actions={len(actions)} {desc}")


def scenario_garbage(peer, arg):
    peer.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    expect_disconnect(peer)


def scenario_huge_length(peer, arg):
    peer.send(b"\xff\xff\xff\xff" + b"\x01" * 64)
    expect_disconnect(peer)


def scenario_no_hello(peer, arg):
    peer.send(notify_frame(1, 1, observe(200)))
    expect_disconnect(peer)


def scenario_fragmented(peer, arg):
    peer.hello()
    peer.send(notify_frame(1, 1, observe(200), flags=0))
    expect_disconnect(peer)


def scenario_unknown_frame(peer, arg):
    peer.hello()
    peer.send(frame(42, b"", 1, 1))
    expect_disconnect(peer)


def scenario_bad_version(peer, arg):
    peer.send(frame(HAPROXY_HELLO, kv_list([("supported-versions", "1.0"),
                                            ("max-frame-size", ("uint32", 16380)),
                                            ("capabilities", "")])))
    expect_disconnect(peer)


def scenario_truncated(peer, arg):
    peer.hello()
    whole = notify_frame(1, 1, observe(200))
    peer.send(whole[: len(whole) // 2])
    peer.sock.close()
    print("sent=half")


def scenario_disconnect(peer, arg):
    """ARG, when given: the HELLO's engine-id and the DISCONNECT's message."""
    peer.hello(**({"engine_id": arg} if arg else {}))
    peer.send(frame(HAPROXY_DISCONNECT, kv_list([("status-code", ("uint32", 0)),
                                                 ("message", arg or "normal")])))
    expect_disconnect(peer)


def notify_of_size(size):
    """A breaker-observe NOTIFY whose frame (length prefix left out) is size bytes."""
    pad = 0
    while True:
        f = notify_frame(1, 1, [("breaker-observe", [("be", "be_app"), ("srv", "w1"),
                                                     ("status", 200), ("pad", "x" * pad)])])
        missing = size - (len(f) - 4)
        if missing == 0:
            return f
        if missing < 0:
            fail(f"cannot build a NOTIFY of {size} bytes")
        pad += missing if pad or missing < 200 else missing - 2  # the varint may grow


def scenario_oversize_notify(peer, arg):
    """ARG "AGREED SIZE": agree on AGREED in the HELLO, then send a SIZE-byte NOTIFY."""
    agreed, size = (int(x) for x in arg.split())
    kv = peer.hello(max_frame=agreed)
    if kv.get("max-frame-size") != agreed:
        fail(f"agreed on {kv.get('max-frame-size')}, not {agreed}")
    peer.send(notify_of_size(size))
    f = peer.read_frame()
    if f and f[0] == ACK:
        print(f"ack sid={f[2]} fid={f[3]}")
        return
    if not f or f[0] != AGENT_DISCONNECT:
        fail(f"expected ACK or AGENT-DISCONNECT, got {f!r}")
    kv = read_kv_list(f[4])
    print(f"disconnect status={kv.get('status-code')} closed={peer.eof()} message={kv.get('message')!r}")


def scenario_oversize_prefix(peer, arg):
    """ARG "AGREED LENGTH SENT": after agreeing on AGREED, a length prefix
    of LENGTH followed by SENT bytes only: the prefix alone is refusable."""
    agreed, length, sent = (int(x) for x in arg.split())
    peer.hello(max_frame=agreed)
    peer.send(struct.pack(">I", length) + b"\x03" + b"\x00" * (sent - 1))
    peer.sock.settimeout(3)
    try:
        expect_disconnect(peer)
    except socket.timeout:
        fail("no answer within 3 s: the agent waits for the rest of the frame")


def scenario_wait_disconnect(peer, arg):
    """Completes a HELLO, then waits for the agent to say goodbye."""
    peer.hello()
    print("ready", flush=True)
    peer.sock.settimeout(30)
    expect_disconnect(peer)


SCENARIOS = {name[len("scenario_"):].replace("_", "-"): fn
             for name, fn in globals().items() if name.startswith("scenario_")}


def main():
    argv = sys.argv[1:]
    source = tls = None
    while len(argv) >= 2 and argv[0] in ("--source", "--tls", "--cert"):
        if argv[0] == "--source":
            source = argv[1]
        elif argv[0] == "--tls":
            tls = ssl.create_default_context(cafile=argv[1])
            tls.check_hostname = False  # the agent is named by its address
        elif tls:
            tls.load_cert_chain(argv[1])
        argv = argv[2:]
    if len(argv) < 2 or argv[1] not in SCENARIOS:
        print(__doc__)
        print("scenarios:", ", ".join(sorted(SCENARIOS)))
        sys.exit(2)
    try:
        peer = Peer(argv[0], source, tls)
        SCENARIOS[argv[1]](peer, argv[2] if len(argv) > 2 else None)
    except ssl.SSLError as e:
        print(f"tls-error {e.reason or e}")
        sys.exit(1)
    except ConnectionError as e:
        if not tls:
            raise
        print(f"tls-error {e.strerror or e}")  # refused before a TLS alert was read
        sys.exit(1)


if __name__ == "__main__":
    main()
