#!/usr/bin/env python3
"""The soak: HAProxy, the agent and a fleet of workers under open-loop
traffic and a seeded random schedule of faults, with the breaker's
invariants checked all along and at the end.

Run by tests/soak/soak.sh, which gives it its environment:
  SOAK_DIR      an empty directory of this run's own
  SOAK_REPO     the repository
  SPOA_BIN      the agent; HAPROXY_BIN: HAProxy
  SOAK_SECONDS  how long the schedule runs (600)
  SOAK_SEED     the schedule's seed (a random one is picked and printed)
  SOAK_RATE     requests per second, open loop (60)
  SOAK_MIX      fault weights, "kind=weight,...", over the defaults below
  SOAK_BREAK    operator-drain: drain w1 behind the agent's back a third of
                the way in, which invariant 1 must catch (shows the soak
                failing); peers-same-id (SOAK_PEERS=1): node 2's agent
                with node 1's node_id, which invariant 7 must catch
  SOAK_ASAN     1 for a sanitizer build: RSS is reported, not bounded
  SOAK_SCHEDULE a JSON file of [second, kind, parameters] to run instead of
                the seeded schedule (tests/soak/schedules/: one case, fixed)
  SOAK_LOG_LEVEL the agent's log level (notice)
  SOAK_PEERS    1: peers mode, a second node (HAProxy and agent) sharing
                the breakers' verdicts with the first (PeersSoak, below)
  SOAK_AGENT    none: the same schedule with no agent at all (AgentlessSoak,
                below): what HAProxy alone serves, for invariant 4's figures

Exits 0 when every invariant held, 1 (after printing the seed, the
schedule up to the failure and the state that differed) when one broke.
"""
import heapq
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(os.path.dirname(HERE), "lib")  # tests/lib: the tools the e2e tests use too
sys.path.insert(0, LIB)
import haproxy_cli  # noqa: E402
WORKERS = ["w1", "w2", "w3"]
BAD_MODES = ("failing", "hung", "refusing")
# What a worker's mode file says (tests/lib/worker.py's behaviours); a
# refusing worker is a stopped one, with no file to read.
WORKER_BEHAVIOUR = {"healthy": "200", "busy": "busy", "failing": "500", "hung": "hang"}

# The bounds the invariants are judged by.
# s: HAProxy equals the breakers after a fault (10 of the agent's polls)
CONVERGE_BOUND = float(os.environ.get("SOAK_CONVERGE_BOUND", "5"))
# s: the agent reaches HAProxy's Runtime API again once it is back: its
# reconnect backoff doubles up to 5 s (runtime_api.h), then one attempt of
# at most 2 s. Invariant 1's clock starts when it is reached: the agent
# cannot act before, and this bound keeps the wait itself honest.
RECONNECT_BOUND = 5.0 + 2.0 + 0.5
DRAIN_BOUND = 5.0      # s: a failing worker is drained once it fails
OPEN_LOOKBACK = 35.0   # s: a breaker may open this long after its worker was bad
                       # (timeout server 30s: a hung request's answer comes late)
FD_SLACK = 16          # descriptors an agent may gain after its first 10 s
RSS_FACTOR, RSS_SLACK_KB = 1.5, 8192  # RSS at its end <= baseline * 1.5 + 8 MB

DEFAULT_MIX = {
    "agent_kill": 3,        # kill -9, restarted with its snapshot
    "agent_kill_fresh": 2,  # kill -9, restarted without it
    "agent_term": 2,        # TERM, started again
    "agent_hup": 2,         # HUP with the threshold changed (3 <-> 5)
    "haproxy_reload": 3,    # reload-haproxy.sh through the master CLI
    "haproxy_restart": 2,   # state dumped, master stopped, started (mode picked anew)
    "rapi_stall": 2,        # the Runtime API holds its replies
    "rapi_closed": 2,       # the Runtime API closes every connection
    "worker": 8,            # a worker switches behaviour
    "disk_full": 1,         # the agent's state directory is full
}

AGENT_CODES = ("breaker_open", "no_healthy_workers", "service_overloaded", "internal_error")
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:")
TRANSITION = re.compile(r"breaker \S+/\S+: [a-z_]+ -> [a-z_]+ \(")


class Violation(Exception):
    pass


def free_port(taken=set()):
    """A port nobody listens on, in E2E_PORT_BASE's range when make check
    gives this run one (below the kernel's ephemeral ports), and none given
    before."""
    base = int(os.environ.get("E2E_PORT_BASE") or 0)
    span = int(os.environ.get("E2E_PORT_SPAN") or 2000)
    for _ in range(500):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", random.randrange(base, base + span) if base else 0))
            port = s.getsockname()[1]
        except OSError:
            continue
        finally:
            s.close()
        if port not in taken:
            taken.add(port)
            return port
    raise OSError("no free port")


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        return True
    except OSError:
        return False


def wait_for(cond, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()


def http_get(port, path, timeout=2.0):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    finally:
        c.close()


def make_schedule(seed, seconds, mix):
    """Every fault, at its planned second, with its parameters; long faults
    get their end as an event of their own. Deterministic in the seed."""
    rng = random.Random(seed)
    kinds = [k for k, w in mix.items() if w > 0]
    weights = [mix[k] for k in kinds]
    events, ends = [], []
    modes = {w: "healthy" for w in WORKERS}
    relay = "pass"
    disk = False
    t = 5.0
    seq = 0
    while True:
        t += rng.uniform(2.0, 8.0)
        if t > seconds - 10:
            break
        while ends and ends[0][0] <= t:
            et, _, kind, p = heapq.heappop(ends)
            events.append((et, kind, p))
            if kind == "worker_recover":
                modes[p["worker"]] = "healthy"
            elif kind == "rapi_pass":
                relay = "pass"
            elif kind == "disk_free":
                disk = False
        kind = rng.choices(kinds, weights)[0]
        p = {}
        if kind in ("rapi_stall", "rapi_closed"):
            if relay != "pass":
                continue
            relay = kind
            seq += 1
            heapq.heappush(ends, (t + rng.uniform(2.0, 8.0), seq, "rapi_pass", {}))
        elif kind == "disk_full":
            if disk:
                continue
            disk = True
            seq += 1
            heapq.heappush(ends, (t + rng.uniform(5.0, 20.0), seq, "disk_free", {}))
        elif kind == "haproxy_restart":
            p["spoe"] = "steady" if rng.random() < 0.6 else "every-response"
        elif kind == "worker":
            w = rng.choice(WORKERS)
            if modes[w] in BAD_MODES:
                continue  # its recovery is planned already
            other_bad = any(modes[o] in BAD_MODES for o in WORKERS if o != w)
            if modes[w] == "busy":
                choices = ["healthy"] if other_bad else ["healthy", "failing", "hung", "refusing"]
            else:
                # One bad worker at a time: the shipped ejection cap (50 %
                # of 3) drains one, and a second is judged by the cap.
                choices = ["busy"] if other_bad else ["busy", "failing", "failing", "hung", "refusing"]
            mode = rng.choice(choices)
            modes[w] = mode
            p = {"worker": w, "mode": mode}
            if mode in BAD_MODES:
                seq += 1
                heapq.heappush(ends, (t + rng.uniform(5.0, 30.0), seq, "worker_recover", {"worker": w}))
        events.append((t, kind, p))
    while ends:
        et, _, kind, p = heapq.heappop(ends)
        events.append((min(et, seconds - 5), kind, p))
    events.sort(key=lambda e: e[0])
    return events


class AgentInstance:
    def __init__(self, n, proc, log, fresh):
        self.n, self.proc, self.log, self.fresh = n, proc, log, fresh
        self.started = time.monotonic()
        self.expected_exit = False
        self.fd_base = self.rss_base = None
        self.fd_max = self.rss_last = self.rss_first = 0


class Soak:
    HELD = "every invariant held"
    MIX = DEFAULT_MIX  # the kinds a schedule draws from (peers mode adds its own)

    def __init__(self):
        self.dir = os.environ["SOAK_DIR"]
        self.repo = os.environ["SOAK_REPO"]
        self.spoa = os.environ["SPOA_BIN"]
        self.haproxy_bin = os.environ.get("HAPROXY_BIN", "haproxy")
        self.seconds = float(os.environ.get("SOAK_SECONDS", "600"))
        seed = os.environ.get("SOAK_SEED", "")
        self.seed = int(seed) if seed else random.randrange(1, 2**31)
        self.rate = float(os.environ.get("SOAK_RATE", "60"))
        self.asan = os.environ.get("SOAK_ASAN") == "1"
        self.break_kind = os.environ.get("SOAK_BREAK", "")
        self.keep_going = os.environ.get("SOAK_KEEP_GOING") == "1"
        self.violations = []
        self.mismatch_reported = False
        self.mix = dict(self.MIX)
        for item in filter(None, os.environ.get("SOAK_MIX", "").split(",")):
            k, _, v = item.partition("=")
            if k not in self.mix:
                sys.exit("SOAK_MIX: no fault kind %r (kinds: %s)" % (k, ", ".join(self.mix)))
            self.mix[k] = int(v)
        self.ports = {n: free_port() for n in ("fe", "agent", "admin", *WORKERS)}
        self.admin_sock = os.path.join(self.dir, "admin.sock")
        self.master_sock = os.path.join(self.dir, "master.sock")
        self.relay_sock = os.path.join(self.dir, "relay.sock")
        self.relay_mode_file = os.path.join(self.dir, "relay.mode")
        self.state_dir = os.path.join(self.dir, "state")
        self.snapshot = os.path.join(self.state_dir, "state.msgpack")
        self.policy_file = os.path.join(self.dir, "agent.ini")
        self.threshold = 3
        self.lock = threading.RLock()
        self.t0 = time.monotonic()
        self.executed = []          # (second, kind, params): the schedule as run
        self.modes = {w: [(0.0, "healthy")] for w in WORKERS}  # history
        self.worker_procs = {}
        self.agents = []
        self.agent = None
        self.haproxy = None
        self.haproxy_up = False
        self.relay_mode = "pass"
        self.spoe = "steady"
        self.disk_full_possible = False
        self.failed = None
        self.stop = threading.Event()
        self.records = []
        self.restart_windows = []   # (start, end) seconds HAProxy was down
        self.script_retries = 0     # reload-haproxy.sh runs again after a refused socket
        self.inflight = 0
        self.unsent = 0
        # invariant figures
        self.samples = 0
        self.compared = 0
        self.mismatch_since = None
        self.mismatch_diff = None
        self.possible_since = None
        self.relay_back_at = None   # when the Runtime API came back, until the agent reached it
        self.reconnects = []        # s from the Runtime API's return to the agent reaching it
        self.episodes = []          # (duration, fault before it)
        self.trips_seen = 0
        self.prev_breakers = None
        self.pending_drain = {}     # worker -> second its failures began
        self.drain_times = []
        self.drain_capped = 0
        self.drain_unjudged = 0
        self.consistency_checks = []  # (instance, log count, metric low, high)
        self.hup_applied = []
        self.next_progress = 60

    # ---- time, ground truth, failure ----
    def now(self):
        return time.monotonic() - self.t0

    def mode_of(self, w):
        return self.modes[w][-1][1]

    def set_mode(self, w, mode):
        self.modes[w].append((self.now(), mode))

    def was_bad_within(self, w, since):
        hist = self.modes[w]
        for i, (t, m) in enumerate(hist):
            end = hist[i + 1][0] if i + 1 < len(hist) else float("inf")
            if m in BAD_MODES and end >= since:
                return True
        return False

    def violate(self, n, what, diff=None, recoverable=False):
        """Fails the run; with SOAK_KEEP_GOING=1, an invariant the run can
        go on past (a state check, not a process that did not start) is
        noted and the run goes on, to see whether and when it heals."""
        with self.lock:
            if self.failed is None:
                self.failed = (n, what, diff, self.now())
                self.failed_schedule = list(self.executed)
            self.violations.append((round(self.now(), 1), n, what, diff))
            print("soak: %.1f s: INVARIANT %s BROKEN: %s %s" % (self.now(), n, what, diff or ""), flush=True)
        if recoverable and self.keep_going:
            return
        self.stop.set()
        raise Violation(what)

    # ---- processes ----
    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL)

    def start_worker(self, w):
        mode_file = os.path.join(self.dir, w + ".mode")
        # The path overrides nothing; a hang ends with the file's or after
        # 60 s (timeout server is 30 s); a listen queue for open-loop traffic.
        self.worker_procs[w] = self.spawn(w, [sys.executable, os.path.join(LIB, "worker.py"),
                                              "--port", str(self.ports[w]), "--name", w,
                                              "--mode-file", mode_file, "--no-override",
                                              "--hang-limit", "60", "--backlog", "128"])
        if not wait_for(lambda: port_open(self.ports[w]), 10):
            self.violate(0, "worker %s did not start" % w)

    def stop_proc(self, proc, timeout=10):
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def switch_worker(self, w, mode):
        prev = self.mode_of(w)
        if prev == "refusing" and mode != "refusing":
            with open(os.path.join(self.dir, w + ".mode"), "w") as f:
                f.write(WORKER_BEHAVIOUR[mode])
            self.start_worker(w)
        elif mode == "refusing":
            self.stop_proc(self.worker_procs.pop(w, None))
        else:
            with open(os.path.join(self.dir, w + ".mode"), "w") as f:
                f.write(WORKER_BEHAVIOUR[mode])
        with self.lock:
            self.set_mode(w, mode)
            if mode == "failing":
                self.pending_drain[w] = self.now()
            else:
                if w in self.pending_drain:
                    self.drain_unjudged += 1
                self.pending_drain.pop(w, None)

    def set_relay(self, mode):
        with open(self.relay_mode_file, "w") as f:
            f.write(mode)
        with self.lock:
            if mode == "pass" and self.relay_mode != "pass":
                self.relay_back_at = self.now()
            self.relay_mode = mode
            self.possible_since = None

    def haproxy_env(self):
        env = dict(os.environ)
        hdir = os.path.join(self.dir, "haproxy")
        env.update({
            "BREAKER_FRONTEND": "127.0.0.1:%d" % self.ports["fe"],
            "BREAKER_AGENT": "127.0.0.1:%d" % self.ports["agent"],
            "BREAKER_SPOE_CONF": os.path.join(hdir, "spoe-breaker-steady.conf" if self.spoe == "steady"
                                              else "spoe-breaker.conf"),
            "BREAKER_ADMIN_SOCKET": self.admin_sock,
            "BREAKER_STATE_FILE": os.path.join(self.dir, "server-state"),
            # Kept across restarts with the state, as docs/haproxy.md says.
            "BREAKER_OWNED_MAP": os.path.join(self.dir, "breaker-owned.map"),
            "HAPROXY_MASTER_SOCKET": self.master_sock,
            # The load generator reads x-breaker-agent-error: it may ask.
            "BREAKER_DEBUG_FROM": "127.0.0.1",
        })
        for i, w in enumerate(WORKERS):
            env["BREAKER_W%d" % (i + 1)] = "127.0.0.1:%d" % self.ports[w]
        return env

    def haproxy_pid(self):
        try:
            m = re.search(r"^Pid: (\d+)", haproxy_cli.command(self.admin_sock, "show info"), re.M)
            return m.group(1) if m else None
        except OSError:
            return None

    def start_haproxy(self):
        self.haproxy = self.spawn("haproxy", [self.haproxy_bin, "-W", "-S", self.master_sock, "-db",
                                              "-f", os.path.join(self.dir, "haproxy", "haproxy.cfg")],
                                  env=self.haproxy_env())
        if not wait_for(lambda: port_open(self.ports["fe"]) and self.haproxy_pid(), 10):
            self.violate(0, "HAProxy did not start")
        with self.lock:
            self.haproxy_up = True
            self.possible_since = None

    def reload_script(self, *args):
        """Runs the shipped reload-haproxy.sh. HAProxy's stats socket may
        refuse a connection for a moment (seen on 3.4 right after a
        start): the script then changes nothing and says so, and an
        operator runs it again; so does the soak, a few times."""
        for attempt in range(5):
            r = subprocess.run([os.path.join(self.dir, "haproxy", "reload-haproxy.sh"), *args],
                               env=self.haproxy_env(), capture_output=True, timeout=20)
            if r.returncode == 0:
                return
            self.script_retries += 1
            time.sleep(0.5)
        self.violate(0, "reload-haproxy.sh %s failed 5 times: %s"
                     % (" ".join(args), r.stderr.decode(errors="replace")))

    def reload_haproxy(self):
        old = self.haproxy_pid()
        self.reload_script()
        if not wait_for(lambda: (self.haproxy_pid() or old) != old, 10):
            self.violate(0, "HAProxy's worker did not change on reload")
        with self.lock:
            self.possible_since = None

    def restart_haproxy(self, spoe):
        # As an operator following the reload script would: the servers'
        # state and the agent's record saved first (`reload-haproxy.sh
        # save`), so that neither file is a stale one.
        self.reload_script("save")
        start = self.now()
        with self.lock:
            self.haproxy_up = False
        self.stop_proc(self.haproxy)
        self.spoe = spoe
        self.start_haproxy()
        self.restart_windows.append((start, self.now()))

    def write_policy(self):
        with open(self.policy_file, "w") as f:
            f.write("[breaker]\nthreshold = %d\ncooldown = 5s\nmax_cooldown = 20s\n" % self.threshold)

    def start_agent(self, fresh=False):
        if fresh and os.path.exists(self.snapshot):
            os.unlink(self.snapshot)
        n = len(self.agents) + 1
        env = dict(os.environ)
        if self.asan:
            env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        log = os.path.join(self.dir, "agent-%d.log" % n)
        proc = self.spawn("agent-%d" % n, [
            self.spoa, "-f", self.policy_file, "--log-level", os.environ.get("SOAK_LOG_LEVEL", "notice"),
            "--listen", "127.0.0.1:%d" % self.ports["agent"],
            "--admin", "127.0.0.1:%d" % self.ports["admin"],
            "--runtime-api", "unix:" + self.relay_sock,
            "--state-file", self.snapshot], env=env)
        inst = AgentInstance(n, proc, log, fresh)

        def healthy():
            try:
                return http_get(self.ports["admin"], "/healthz", 1)[0] == 200
            except OSError:
                return False
        if not wait_for(lambda: proc.poll() is None and healthy(), 20, 0.1):
            self.violate(5, "agent %d did not come up (exit %s)" % (n, proc.poll()))
        with self.lock:
            self.agents.append(inst)
            self.agent = inst
            self.possible_since = None
            self.prev_breakers = None

    def check_consistency(self, inst):
        """Invariant 6: the transition lines the instance logged equal the
        transitions its /metrics counts (read before and after the log)."""
        def metric_sum():
            _, body = http_get(self.ports["admin"], "/metrics", 3)
            return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines()
                       if line.startswith("spoa_breaker_server_transitions_total{"))
        try:
            low = metric_sum()
            with open(inst.log, errors="replace") as f:
                logged = sum(1 for line in f if TRANSITION.search(line))
            high = metric_sum()
        except OSError as e:
            self.violate(6, "agent %d: /metrics unreadable: %s" % (inst.n, e))
        self.consistency_checks.append((inst.n, logged, low, high))
        if not low <= logged <= high:
            self.violate(6, "agent %d logged %d transitions, /metrics counts %d..%d"
                         % (inst.n, logged, low, high), recoverable=True)

    def check_sanitizer(self, inst):
        with open(inst.log, errors="replace") as f:
            text = f.read()
        m = SANITIZER.search(text)
        if m:
            self.violate(5, "sanitizer report in agent-%d.log:\n%s" % (inst.n, text[m.start():m.start() + 3000]))

    def stop_agent(self, sig):
        inst = self.agent
        self.check_consistency(inst)
        with self.lock:
            inst.expected_exit = True
            self.agent = None
        inst.proc.send_signal(sig)
        try:
            code = inst.proc.wait(15)
        except subprocess.TimeoutExpired:
            inst.proc.kill()
            inst.proc.wait()
            self.violate(5, "agent %d did not stop within 15 s of %s" % (inst.n, sig.name))
        if sig == signal.SIGTERM and code != 0:
            self.violate(5, "agent %d exited %d on TERM" % (inst.n, code))
        self.check_sanitizer(inst)
        self.check_memory(inst)

    # ---- disk full ----
    def fill_disk(self):
        # Unbuffered, so that the write that finds the disk full is the
        # last one (a buffered close would fail again).
        try:
            with open(os.path.join(self.state_dir, "filler"), "wb", buffering=0) as f:
                while True:
                    f.write(b"\0" * 4096)
        except OSError:
            pass

    def free_disk(self):
        try:
            os.unlink(os.path.join(self.state_dir, "filler"))
        except OSError:
            pass

    # ---- traffic ----
    def frontend(self):
        """The node a request goes to, and its frontend's port."""
        return 1, self.ports["fe"]

    def one_request(self, sent):
        rec = [sent, None, None, None, None, None]  # sent, end, status, worker, code, agent_error
        node, port = self.frontend()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=40)
            c.request("GET", "/", headers={"x-breaker-debug": "1"})
            r = c.getresponse()
            r.read()
            rec[2] = r.status
            rec[3] = r.getheader("x-worker")
            rec[4] = r.getheader("x-router-error-code")
            rec[5] = r.getheader("x-breaker-agent-error")
            c.close()
        except (OSError, http.client.HTTPException) as e:
            rec[2] = "conn:" + type(e).__name__
        rec[1] = self.now()
        rec.append(tuple(self.mode_of(w) for w in WORKERS))
        rec.append(node)
        self.records.append(rec)
        with self.lock:
            self.inflight -= 1

    def traffic(self):
        pool = ThreadPoolExecutor(max_workers=300)
        period = 1.0 / self.rate
        nxt = time.monotonic()
        while not self.stop.is_set():
            nxt += period
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            with self.lock:
                if self.inflight >= 290:
                    self.unsent += 1
                    continue
                self.inflight += 1
            pool.submit(self.one_request, self.now())
        pool.shutdown(wait=False, cancel_futures=True)

    # ---- the continuous checks ----
    def haproxy_view(self):
        state = haproxy_cli.command(self.admin_sock, "show servers state workers", 1)
        stat = haproxy_cli.command(self.admin_sock, "show stat", 1)
        view = {}
        for line in state.splitlines():
            f = line.split()
            if len(f) > 6 and f[3] in WORKERS:
                view[f[3]] = {"drain": bool(int(f[6]) & 8)}
        for line in stat.splitlines():
            f = line.split(",")
            if len(f) > 6 and f[0] == "workers" and f[1] in view:
                view[f[1]]["scur"] = int(f[4] or 0)
                view[f[1]]["maxconn"] = f[6]
        return view if len(view) == len(WORKERS) else None

    def expected_view(self, st, hv):
        exp = {}
        by_server = {b["server"]: b for b in st.get("breakers", []) if b["backend"] == "workers"}
        for w in WORKERS:
            b = by_server.get(w)
            s = b["state"] if b else "closed"
            if s == "open":
                exp[w] = {"state": s, "drain": not b["ejection_capped"]}
            elif s == "half_open":
                # A half-open server is drained while its probes are all
                # out (sessions at the probe limit: a hung probe, or the
                # requests a hung worker still holds), so that a probe
                # ended by `timeout server` frees no slot for a second one.
                probes = b["policy"]["half_open_probes"]
                exp[w] = {"state": s, "drain": hv[w].get("scur", 0) >= probes, "maxconn": str(probes)}
            else:
                # Closed: unlimited, or the capacity the agent learnt from
                # the worker's refusals (docs/capacity.md).
                learnt = b.get("maxconn_learnt", 0) if b else 0
                exp[w] = {"state": s, "drain": False, "maxconn": str(learnt) if learnt else ""}
        return exp, by_server

    def last_fault(self):
        return self.executed[-1] if self.executed else (0.0, "start", {})

    def sample(self):
        now = self.now()
        inst = self.agent
        if inst is not None and inst.proc.poll() is not None and not inst.expected_exit:
            self.check_sanitizer(inst)
            self.violate(5, "agent %d exited by itself (status %s)" % (inst.n, inst.proc.poll()))
        if inst is not None:
            self.sample_memory(inst)
        st = hv = None
        if inst is not None:
            try:
                code, body = http_get(self.ports["admin"], "/state", 1)
                st = json.loads(body) if code == 200 else None
            except (OSError, ValueError, http.client.HTTPException):
                st = None
        if self.haproxy_up:
            try:
                hv = self.haproxy_view()
            except OSError:
                hv = None
        with self.lock:
            self.samples += 1
            reachable = st is not None and all(h.get("reachable") for h in st.get("haproxy") or [{}])
            if self.relay_back_at is not None and self.relay_mode == "pass" and inst is not None \
                    and self.agent is inst:
                waited = now - self.relay_back_at
                if reachable:
                    self.reconnects.append(waited)
                    self.relay_back_at = None
                elif waited > RECONNECT_BOUND:
                    self.relay_back_at = None
                    self.violate(1, "the agent did not reach the Runtime API %.1f s after it came back "
                                 "(bound %.1f s)" % (waited, RECONNECT_BOUND), recoverable=True)
            possible = st is not None and hv is not None and self.relay_mode == "pass" \
                and self.agent is inst and self.haproxy_up and reachable
            if not possible:
                self.possible_since = None
                self.mismatch_since = None
                self.mismatch_reported = False
                return
            if self.possible_since is None:
                self.possible_since = now
            exp, by_server = self.expected_view(st, hv)
            self.compared += 1
            # Invariant 1: HAProxy equals the breakers.
            diff = {}
            for w in WORKERS:
                e, h = exp[w], hv[w]
                if e["drain"] != h["drain"]:
                    diff[w] = ("missing drain" if e["drain"] else "stranded drain", e, h)
                elif "maxconn" in e and e["maxconn"] != h.get("maxconn"):
                    diff[w] = ("stale maxconn", e, h)
            if self.break_kind == "operator-drain" and now > self.seconds / 3 and not getattr(self, "broke", False):
                self.broke = True
                haproxy_cli.command(self.admin_sock, "set server workers/w1 state drain")
                self.executed.append((round(now, 1), "operator_drain (SOAK_BREAK)", {"worker": "w1"}))
            if diff:
                if self.mismatch_since is None:
                    self.mismatch_since = max(now, self.possible_since)
                    self.mismatch_after = self.last_fault()
                self.mismatch_diff = diff
                if now - self.mismatch_since > CONVERGE_BOUND and not self.mismatch_reported:
                    self.mismatch_reported = True
                    self.violate(1, "HAProxy differs from the breakers for %.1f s (bound %.1f s)"
                                 % (now - self.mismatch_since, CONVERGE_BOUND), diff, recoverable=True)
            elif self.mismatch_since is not None:
                self.episodes.append((now - self.mismatch_since, self.mismatch_after))
                # Ended between two checks, yet past the bound: broken too.
                if now - self.mismatch_since > CONVERGE_BOUND and not self.mismatch_reported:
                    self.mismatch_reported = True
                    self.violate(1, "HAProxy differed from the breakers for %.1f s (bound %.1f s)"
                                 % (now - self.mismatch_since, CONVERGE_BOUND), self.mismatch_diff,
                                 recoverable=True)
                if self.mismatch_reported:
                    print("soak: %.1f s: HAProxy equals the breakers again, after %.1f s" % (
                        now, now - self.mismatch_since), flush=True)
                self.mismatch_since = None
                self.mismatch_reported = False
            first_look = self.prev_breakers is None
            # Invariant 2: no breaker opens on a worker that was only busy
            # or healthy (same process: a restart's restored breakers are
            # not new trips).
            for w, b in by_server.items():
                if w not in WORKERS:
                    continue
                if first_look:
                    continue
                prev = self.prev_breakers.get(w, {"trips": 0, "state": "closed"})
                if b["trips"] > prev["trips"] or (b["state"] == "open" and prev["state"] != "open"):
                    self.trips_seen += 1
                    if not self.was_bad_within(w, now - OPEN_LOOKBACK):
                        self.violate(2, "breaker workers/%s opened (%s) though %s was %s for the last %.0f s"
                                     % (w, b.get("opened_by"), w, self.mode_of(w), OPEN_LOOKBACK),
                                     {w: (b["state"], b, hv[w])}, recoverable=True)
            self.prev_breakers = {w: {"trips": b["trips"], "state": b["state"]} for w, b in by_server.items()}
            # Invariant 3: a failing worker is drained (or held by the cap).
            for w, since in list(self.pending_drain.items()):
                since = max(since, self.possible_since)
                if hv[w]["drain"]:
                    self.drain_times.append(now - since)
                    del self.pending_drain[w]
                elif exp[w]["state"] == "open" and not exp[w]["drain"]:
                    self.drain_capped += 1
                    del self.pending_drain[w]
                elif now - since > DRAIN_BOUND:
                    self.violate(3, "failing worker %s not drained %.1f s after its failures began (bound %.1f s)"
                                 % (w, now - since, DRAIN_BOUND), {w: ("not drained", exp[w], hv[w])},
                                 recoverable=True)
                    del self.pending_drain[w]

    def sample_memory(self, inst):
        try:
            with open("/proc/%d/status" % inst.proc.pid) as f:
                rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
            fds = len(os.listdir("/proc/%d/fd" % inst.proc.pid))
        except (OSError, AttributeError):
            return
        age = time.monotonic() - inst.started
        if not inst.rss_first:
            inst.rss_first = rss
        if age >= 10 and inst.fd_base is None:
            inst.fd_base, inst.rss_base = fds, rss
        inst.fd_max = max(inst.fd_max, fds)
        inst.rss_last = rss

    def check_memory(self, inst):
        if inst.fd_base is None:
            return  # lived less than 10 s
        if inst.fd_max > inst.fd_base + FD_SLACK:
            self.violate(5, "agent %d: %d descriptors, %d after its first 10 s (bound +%d)"
                         % (inst.n, inst.fd_max, inst.fd_base, FD_SLACK))
        if not self.asan and inst.rss_last > inst.rss_base * RSS_FACTOR + RSS_SLACK_KB:
            self.violate(5, "agent %d: RSS %d kB, %d kB after its first 10 s (bound x%.1f + %d kB)"
                         % (inst.n, inst.rss_last, inst.rss_base, RSS_FACTOR, RSS_SLACK_KB))

    def checker(self):
        while not self.stop.is_set():
            try:
                self.sample()
            except Violation:
                return
            except Exception as e:  # a check that cannot run is a failure too
                try:
                    self.violate(0, "checker: %r" % e)
                except Violation:
                    return
            time.sleep(0.25)

    # ---- the schedule ----
    def run_event(self, kind, p):
        if kind == "agent_kill":
            self.stop_agent(signal.SIGKILL)
            self.start_agent()
        elif kind == "agent_kill_fresh":
            self.stop_agent(signal.SIGKILL)
            self.start_agent(fresh=True)
        elif kind == "agent_term":
            self.stop_agent(signal.SIGTERM)
            self.start_agent()
        elif kind == "agent_hup":
            self.threshold = 5 if self.threshold == 3 else 3
            self.write_policy()
            self.agent.proc.send_signal(signal.SIGHUP)
            self.hup_applied.append(self.threshold)
        elif kind == "haproxy_reload":
            self.reload_haproxy()
        elif kind == "haproxy_restart":
            self.restart_haproxy(p["spoe"])
        elif kind in ("rapi_stall", "rapi_closed"):
            self.set_relay(kind[5:])
        elif kind == "rapi_pass":
            self.set_relay("pass")
        elif kind == "worker":
            self.switch_worker(p["worker"], p["mode"])
        elif kind == "worker_recover":
            self.switch_worker(p["worker"], "healthy")
        elif kind == "disk_full":
            self.fill_disk()
        elif kind == "disk_free":
            self.free_disk()

    def run(self):
        hdir = os.path.join(self.dir, "haproxy")
        shutil.copytree(os.path.join(self.repo, "haproxy"), hdir)
        with open(os.path.join(self.dir, "server-state"), "w") as f:
            f.write("1\n")
        open(os.path.join(self.dir, "breaker-owned.map"), "w").close()
        os.makedirs(self.state_dir, exist_ok=True)
        self.disk_full_possible = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512k,mode=0700", "soak-state", self.state_dir],
            capture_output=True).returncode == 0
        if not self.disk_full_possible:
            self.mix["disk_full"] = 0
        if os.environ.get("SOAK_SCHEDULE"):
            with open(os.environ["SOAK_SCHEDULE"]) as f:
                schedule = [tuple(e) for e in json.load(f)]
        else:
            schedule = make_schedule(self.seed, self.seconds, self.mix)
        version = subprocess.run([self.haproxy_bin, "-v"], capture_output=True, text=True).stdout.split("\n")[0]
        print("soak: seed %d, %.0f s, %.0f requests/s, %s, agent %s" % (
            self.seed, self.seconds, self.rate, version, self.spoa), flush=True)
        print("soak: %d faults planned; fault mix %s" % (
            len(schedule), ",".join("%s=%d" % kv for kv in self.mix.items())), flush=True)
        if not self.disk_full_possible:
            print("soak: the state directory cannot be a tmpfs here (mount refused): disk_full skipped")
        self.write_policy()
        self.relay = self.spawn("relay", [sys.executable, os.path.join(LIB, "runtime_api_relay.py"),
                                          "--listen", self.relay_sock, "--upstream", self.admin_sock,
                                          "--mode-file", self.relay_mode_file])
        try:
            for w in WORKERS:
                self.start_worker(w)
            self.start_agent()
            self.start_haproxy()
            wait_for(lambda: os.path.exists(self.relay_sock), 5)
            threads = [threading.Thread(target=self.traffic, daemon=True),
                       threading.Thread(target=self.checker, daemon=True)]
            for t in threads:
                t.start()
            self.t0 = time.monotonic() - 0.0
            for t, kind, p in schedule:
                while not self.stop.is_set() and self.now() < t:
                    time.sleep(0.05)
                if self.stop.is_set():
                    break
                self.executed.append((round(self.now(), 1), kind, p))
                self.run_event(kind, p)
                if self.now() >= self.next_progress:
                    self.next_progress += 60
                    print("soak: %4.0f s, %d faults run, %d requests" % (
                        self.now(), len(self.executed), len(self.records)), flush=True)
            while not self.stop.is_set() and self.now() < self.seconds:
                time.sleep(0.1)
            if not self.stop.is_set():
                self.finish()
        except Violation:
            pass
        except Exception as e:  # the driver's own failure fails the run too
            import traceback
            traceback.print_exc()
            try:
                self.violate(0, "the soak itself failed: %r" % e)
            except Violation:
                pass
        finally:
            self.stop.set()
            time.sleep(0.3)
            self.teardown()
        return self.report()

    def finish(self):
        """The end: every fault lifted, HAProxy and the breakers must agree
        within the bound; then the agent stops as a service manager would."""
        self.executed.append((round(self.now(), 1), "end: all faults lifted", {}))
        for w in WORKERS:
            if self.mode_of(w) != "healthy":
                self.switch_worker(w, "healthy")
        self.set_relay("pass")
        self.free_disk()
        deadline = time.monotonic() + RECONNECT_BOUND + CONVERGE_BOUND * 2
        while time.monotonic() < deadline and (self.possible_since is None or self.mismatch_since is not None
                                               or self.compared == 0):
            time.sleep(0.1)
        if self.failed and not self.keep_going:
            return
        if self.mismatch_since is not None or self.possible_since is None:
            self.violate(1, "at the end, with every fault lifted, HAProxy still differs from the breakers",
                         self.mismatch_diff)
        self.stop.set()
        time.sleep(0.5)
        self.stop_agent(signal.SIGTERM)

    def teardown(self):
        if self.agent is not None:
            self.agent.expected_exit = True
            self.stop_proc(self.agent.proc)
        self.stop_proc(self.haproxy)
        for p in self.worker_procs.values():
            self.stop_proc(p)
        self.stop_proc(getattr(self, "relay", None))
        if self.disk_full_possible:
            subprocess.run(["umount", self.state_dir])

    # ---- figures ----
    def report(self):
        counts = {}
        for _, kind, p in self.executed:
            key = kind + ("(%s)" % p["mode"] if kind == "worker" else "(%s)" % p["spoe"]
                          if kind == "haproxy_restart" else "")
            counts[key] = counts.get(key, 0) + 1
        print("faults injected: %d: %s; reload-haproxy.sh run again %d times (HAProxy's socket refused)"
              % (len(self.executed), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                 self.script_retries))
        worst = max(self.episodes, default=(0.0, None))
        print("invariant 1 (HAProxy's drains and maxconn equal the breakers' within %.1f s of each fault, "
              "from when the agent reaches the Runtime API, itself within %.1f s of its return): "
              "%d comparisons, %d mismatch episodes, worst convergence %.2f s%s; Runtime API reached again "
              "%d times, worst %.2f s after its return"
              % (CONVERGE_BOUND, RECONNECT_BOUND, self.compared, len(self.episodes), worst[0],
                 " (after %s at %s s)" % (worst[1][1], worst[1][0]) if worst[1] else "",
                 len(self.reconnects), max(self.reconnects, default=0.0)))
        print("invariant 2 (no breaker opens on a busy or healthy worker): %d openings seen, all on a worker bad"
              " within %.0f s" % (self.trips_seen, OPEN_LOOKBACK))
        print("invariant 3 (a failing worker is drained within %.1f s): %d drained, worst %.2f s; "
              "%d held by the ejection cap; %d recovered or interrupted before judged"
              % (DRAIN_BOUND, len(self.drain_times), max(self.drain_times, default=0.0),
                 self.drain_capped, self.drain_unjudged))
        # Every request, for a closer look when a run is kept.
        with open(os.path.join(self.dir, "requests.csv"), "w") as f:
            f.write("sent_s,end_s,status,worker,router_error_code,agent_error,modes\n")
            for rec in list(self.records):
                f.write("%.3f,%.3f,%s,%s,%s,%s,%s\n" % (rec[0], rec[1], rec[2], rec[3] or "", rec[4] or "",
                                                     rec[5] or "", "/".join(rec[6])))
        served = worker_err = conn = 0
        generated, agent_caused = {}, []
        agent_errors = 0
        for rec in self.records:
            sent, end, status, worker, code, agent_error = rec[:6]
            if agent_error:
                agent_errors += 1
            if isinstance(status, str):
                conn += 1
            elif code:
                generated[code] = generated.get(code, 0) + 1
                if code in AGENT_CODES and any(m in ("healthy", "busy") for m in rec[6]):
                    agent_caused.append(rec)
            elif status >= 500:
                worker_err += 1
            else:
                served += 1
        in_restart = sum(1 for rec in self.records if isinstance(rec[2], str) and any(
            a - 1 <= rec[0] <= b + 1 for a, b in self.restart_windows))
        print("invariant 4 (fail-open): %d requests, %d served (incl. busy answers passed on), %d worker errors "
              "passed on, HAProxy-generated %s, %d connection errors (%d while HAProxy restarted), %d not sent "
              "(client bound); %d with an SPOE agent error, all served; caused by the agent: %d"
              % (len(self.records), served, worker_err,
                 "{" + ", ".join("%s: %d" % kv for kv in sorted(generated.items())) + "}",
                 conn, in_restart, self.unsent, agent_errors, len(agent_caused)))
        done = [a for a in self.agents if a.fd_base is not None]
        print("invariant 5 (agent flat: fds <= first-10-s + %d%s; no crash; no sanitizer report): %d agent "
              "processes; RSS first/after 10 s/last kB: %s; fds after 10 s/max: %s"
              % (FD_SLACK, "" if self.asan else ", RSS <= x%.1f + %d MB" % (RSS_FACTOR, RSS_SLACK_KB // 1024),
                 len(self.agents),
                 " ".join("%d/%s/%d" % (a.rss_first, a.rss_base, a.rss_last) for a in done[:3] + done[-2:]),
                 " ".join("%s/%d" % (a.fd_base, a.fd_max) for a in done[:3] + done[-2:])))
        mism = [c for c in self.consistency_checks if not c[2] <= c[1] <= c[3]]
        print("invariant 6 (logged transitions = /metrics transitions): %d checks, %d transitions logged in all,"
              " %d disagreements" % (len(self.consistency_checks),
                                     sum(c[1] for c in self.consistency_checks), len(mism)))
        if self.failed is None and agent_caused:
            rec = agent_caused[0]
            self.failed = (4, "%d requests failed by HAProxy (%s) while a serving worker was there; first at %.1f s"
                           % (len(agent_caused), rec[4], rec[0]), {"worker modes": rec[6]}, rec[0])
        if self.failed is None:
            print("soak: %s (seed %d)" % (self.HELD, self.seed))
            return 0
        n, what, diff, at = self.failed
        if len(self.violations) > 1:
            print("\n%d invariant breaks in all:" % len(self.violations))
            for v in self.violations:
                print("  %7.1f  invariant %s: %s" % v[:3])
        print("\nINVARIANT %s FAILED at %.1f s: %s" % (n, at, what))
        print("replay: SOAK_SEED=%d SOAK_SECONDS=%.0f%s" % (
            self.seed, self.seconds, "".join(" %s=%s" % (k, os.environ[k]) for k in ("SOAK_MIX", "SOAK_RATE", "SOAK_BREAK",
                                                                                     "SOAK_SCHEDULE", "SOAK_PEERS")
                                             if os.environ.get(k))))
        print("schedule up to the failure (second, fault, parameters):")
        for e in getattr(self, "failed_schedule", self.executed):
            print("  %7.1f  %s %s" % (e[0], e[1], json.dumps(e[2]) if e[2] else ""))
        print("worker modes now: %s" % {w: self.mode_of(w) for w in WORKERS})
        if diff:
            print("state diff (server: what differs, the breaker's view, HAProxy's):")
            for k, v in diff.items():
                print("  %s: %s" % (k, v))
        if self.agents:
            print("last lines of agent-%d.log:" % self.agents[-1].n)
            with open(self.agents[-1].log, errors="replace") as f:
                for line in f.readlines()[-15:]:
                    print("  " + line.rstrip())
        print("run directory kept: %s" % self.dir)
        return 1

# ---- peers mode (SOAK_PEERS=1) ----
# Two nodes, each an HAProxy (master-worker, haproxy.cfg + breaker-peers.cfg)
# with an agent of its own (node_id 1 and 2), sharing the verdict table
# over HAProxy's peers, the same three workers behind both and the traffic
# split between their frontends. Node 1 is the soak above, faults and all;
# node 2 gets kills of its agent.

PEERS_MIX = {
    "node2_agent_kill": 2,        # node 2's agent: kill -9, restarted with its snapshot
    "node2_agent_kill_fresh": 1,  # node 2's agent: kill -9, restarted without it
}
VERDICT_TABLE = "breaker_verdicts"
# s: a node's verdict is held by the other node (one look of its, 500 ms,
# after the write; more after the peers link comes back)
SHARE_BOUND = CONVERGE_BOUND
# s: a verdict nobody renews stops holding the other node: the table's
# expire (breaker-peers.cfg, 5 s) counted from the owner's last write,
# the holder's next look (0.5 s), the hold it gave at that look (two looks
# and a second: 2 s), and 2.5 s of slack for a loaded machine.
EXPIRE_BOUND = 10.0


def peers_argv(name, argv, node, hdir):
    """What peers mode adds to the command lines the soak starts: HAProxy
    loads breaker-peers.cfg after haproxy.cfg, the agent gets the table
    and its node_id (docs/haproxy.md, "More than one HAProxy")."""
    if name == "haproxy":
        return argv + ["-f", os.path.join(hdir, "breaker-peers.cfg")]
    if name.startswith("agent-"):
        return argv + ["--verdict-table", VERDICT_TABLE, "--node-id", str(node)]
    return argv


def peers_established(admin_sock, remote):
    """HAProxy at ADMIN_SOCK has its peers session with REMOTE up."""
    try:
        out = haproxy_cli.command(admin_sock, "show peers breaker_peers", 1)
    except OSError:
        return False
    return any("id=%s(" % remote in line and "last_status=ESTA" in line for line in out.splitlines())


def agent_state(port):
    """The agent's /state by server of backend workers, or None."""
    try:
        code, body = http_get(port, "/state", 1)
        st = json.loads(body) if code == 200 else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    if st is None:
        return None
    return {b["server"]: b for b in st.get("breakers", []) if b["backend"] == "workers"}


def owns_verdict(b):
    """Open or half-open on its own evidence and held by no other node: the
    verdict this node publishes (breaker_owns_verdict)."""
    return b is not None and b["state"] in ("open", "half_open") and not b["peer_adopted"] \
        and b["peer_hold_left_ms"] == 0


def held_by_peer(b):
    """Held open by the other node's verdict (a hold renewed at each look,
    or one adopted whose hold just ended and which goes half-open at its
    next tick)."""
    return b is not None and b["state"] == "open" and (b["peer_hold_left_ms"] > 0 or b["peer_adopted"])


def note_failing(node, w, mode, now):
    """Invariant 3's clock of NODE for worker W switching to MODE."""
    if mode == "failing":
        node.pending_drain[w] = now
    else:
        if w in node.pending_drain:
            node.drain_unjudged += 1
        node.pending_drain.pop(w, None)


class PeerNode(Soak):
    """Node 2: its own HAProxy and agent, checked by the same invariants
    1-3, 5 and 6 as node 1 (Soak's own methods, on this node's sockets and
    ports), with the schedule's ground truth (the workers' modes, the
    faults run) shared with node 1."""

    def __init__(self, main):
        self.main = main
        self.dir = os.path.join(main.dir, "node2")
        os.makedirs(self.dir)
        shutil.copytree(os.path.join(main.repo, "haproxy"), os.path.join(self.dir, "haproxy"))
        open(os.path.join(self.dir, "breaker-owned.map"), "w").close()
        with open(os.path.join(self.dir, "server-state"), "w") as f:
            f.write("1\n")
        self.repo, self.spoa, self.haproxy_bin = main.repo, main.spoa, main.haproxy_bin
        self.seconds, self.asan, self.keep_going = main.seconds, main.asan, main.keep_going
        self.break_kind = ""
        self.ports = {n: free_port() for n in ("fe", "agent", "admin")}
        self.ports.update({w: main.ports[w] for w in WORKERS})
        self.admin_sock = os.path.join(self.dir, "admin.sock")
        self.master_sock = os.path.join(self.dir, "master.sock")
        self.relay_sock = self.admin_sock  # no relay: node 2's Runtime API has no faults
        self.relay_mode = "pass"
        self.state_dir = os.path.join(self.dir, "state")
        os.makedirs(self.state_dir)
        self.snapshot = os.path.join(self.state_dir, "state.msgpack")
        self.policy_file = os.path.join(self.dir, "agent.ini")
        self.threshold = 3
        self.write_policy()
        # Every-response mode, while node 1 starts in steady-state mode:
        # both SPOE modes feed the shared verdicts at once.
        self.spoe = "every-response"
        # Shared with node 1: the ground truth and the list of agents.
        self.lock, self.modes, self.executed, self.agents = main.lock, main.modes, main.executed, main.agents
        self.agent = self.haproxy = None
        self.haproxy_up = False
        self.samples = self.compared = self.trips_seen = self.drain_capped = self.drain_unjudged = 0
        self.mismatch_since = self.mismatch_diff = self.possible_since = self.prev_breakers = None
        self.mismatch_reported = False
        self.episodes, self.drain_times, self.consistency_checks = [], [], []
        self.relay_back_at, self.reconnects = None, []
        self.pending_drain = {}
        self.restart_windows = []
        self.script_retries = 0

    def now(self):
        return self.main.now()

    def violate(self, n, what, diff=None, recoverable=False):
        self.main.violate(n, "node 2: " + what, diff, recoverable)

    def spawn(self, name, argv, env=None):
        # SOAK_BREAK=peers-same-id: node 2's agent takes node 1's id, so
        # each reads the other's verdicts as its own and ignores them,
        # which invariant 7 must report.
        node = 1 if self.main.break_kind == "peers-same-id" else 2
        return super().spawn(name, peers_argv(name, argv, node, os.path.join(self.dir, "haproxy")), env)

    def haproxy_env(self):
        env = super().haproxy_env()
        env.update(self.main.peers_env("node2"))
        return env

    def figures(self):
        worst = max(self.episodes, default=(0.0, None))
        print("node 2, invariant 1: %d comparisons, %d mismatch episodes, worst convergence %.2f s%s"
              % (self.compared, len(self.episodes), worst[0],
                 " (after %s at %s s)" % (worst[1][1], worst[1][0]) if worst[1] else ""))
        print("node 2, invariant 2: %d openings seen (its own trips and the verdicts it holds), all on a worker "
              "bad within %.0f s" % (self.trips_seen, OPEN_LOOKBACK))
        print("node 2, invariant 3: %d drained, worst %.2f s; %d held by the ejection cap; %d recovered or "
              "interrupted before judged" % (len(self.drain_times), max(self.drain_times, default=0.0),
                                              self.drain_capped, self.drain_unjudged))
        mism = [c for c in self.consistency_checks if not c[2] <= c[1] <= c[3]]
        print("node 2, invariant 6: %d checks, %d transitions logged in all, %d disagreements"
              % (len(self.consistency_checks), sum(c[1] for c in self.consistency_checks), len(mism)))


class PeersSoak(Soak):
    """The soak in peers mode: node 1 is Soak itself, with every fault of
    the schedule; node 2 a PeerNode; invariant 7 judges the verdicts the
    two share."""
    MIX = dict(DEFAULT_MIX, **PEERS_MIX)

    def __init__(self):
        super().__init__()
        self.ports.update({"peer1": free_port(), "peer2": free_port(), "peer3": free_port()})
        self.node2 = None
        # invariant 7 figures
        self.share_since = self.share_key = None
        self.share_compared = self.share_owned = 0
        self.share_open = {}        # server -> (second, fault before it): a verdict not held yet
        self.share_episodes = []    # (duration, fault before it)
        self.share_reported = set()
        self.fallback_open = {}     # (node, server) -> (second, fault before it): held, nobody owns
        self.fallback_episodes = []
        self.fallback_reported = set()
        self.fallback_key = {}

    def peers_env(self, node):
        # node3, named in breaker-peers.cfg, listens nowhere: a tier of two.
        return {"BREAKER_NODE": node, "BREAKER_PEER1": "127.0.0.1:%d" % self.ports["peer1"],
                "BREAKER_PEER2": "127.0.0.1:%d" % self.ports["peer2"],
                "BREAKER_PEER3": "127.0.0.1:%d" % self.ports["peer3"]}

    def spawn(self, name, argv, env=None):
        return super().spawn(name, peers_argv(name, argv, 1, os.path.join(self.dir, "haproxy")), env)

    def haproxy_env(self):
        env = super().haproxy_env()
        env.update(self.peers_env("node1"))
        return env

    def start_haproxy(self):
        super().start_haproxy()
        if self.node2 is None:
            # The first start: node 2 joins, and both peers sessions are up
            # before traffic.
            self.node2 = PeerNode(self)
            self.node2.start_agent()
            self.node2.start_haproxy()
            if not wait_for(lambda: peers_established(self.admin_sock, "node2")
                            and peers_established(self.node2.admin_sock, "node1"), 15, 0.2):
                self.violate(0, "the peers sessions of node 1 and node 2 did not come up")
            print("soak: peers mode: node 1 (every fault) and node 2 (agent kills), frontends 127.0.0.1:%d "
                  "and :%d, peers :%d and :%d" % (self.ports["fe"], self.node2.ports["fe"],
                                                  self.ports["peer1"], self.ports["peer2"]), flush=True)

    def frontend(self):
        # One request in three through node 2: node 1's breakers mostly
        # trip first, so node 2's often open on node 1's verdict alone
        # (with an even split both trip on their own as often, and the
        # verdict only settles which one owns it).
        self.turn = (getattr(self, "turn", 0) + 1) % 3
        return (2, self.node2.ports["fe"]) if self.turn == 0 else (1, self.ports["fe"])

    def switch_worker(self, w, mode):
        super().switch_worker(w, mode)
        with self.lock:
            note_failing(self.node2, w, mode, self.now())

    def run_event(self, kind, p):
        if kind == "node2_agent_kill":
            self.node2.stop_agent(signal.SIGKILL)
            self.node2.start_agent()
        elif kind == "node2_agent_kill_fresh":
            self.node2.stop_agent(signal.SIGKILL)
            self.node2.start_agent(fresh=True)
        else:
            super().run_event(kind, p)

    def sample(self):
        super().sample()
        self.node2.sample()
        self.sample_verdicts()

    # ---- invariant 7: the shared verdicts ----
    def sample_verdicts(self):
        """A verdict one node owns is held by the other within SHARE_BOUND
        (and two owners settle on one), judged while both nodes, node 1's
        Runtime API and both peers sessions are up; a node held by a
        verdict that nobody owns any more (its owner's agent stopped or
        its breaker let go) falls back on its own breaker within
        EXPIRE_BOUND."""
        now = self.now()
        insts = {1: self.agent, 2: self.node2.agent}
        views = {1: agent_state(self.ports["admin"]) if insts[1] else None,
                 2: agent_state(self.node2.ports["admin"]) if insts[2] else None}
        links = self.haproxy_up and self.node2.haproxy_up and self.relay_mode == "pass" \
            and peers_established(self.admin_sock, "node2") and peers_established(self.node2.admin_sock, "node1")
        with self.lock:
            current = {1: self.agent, 2: self.node2.agent}
            key = (insts[1], insts[2])
            possible = links and views[1] is not None and views[2] is not None and current == insts
            if not possible or key != self.share_key:
                self.share_since = None
                self.share_open.clear()
                self.share_reported.clear()
            if possible:
                self.share_key = key
                if self.share_since is None:
                    self.share_since = now
                self.share_compared += 1
                for w in WORKERS:
                    b = {n: views[n].get(w) for n in (1, 2)}
                    owners = [n for n in (1, 2) if owns_verdict(b[n])]
                    bad = None
                    if len(owners) == 2:
                        bad = "both nodes own the verdict (the higher node_id must yield)"
                    elif owners:
                        self.share_owned += 1
                        other = 3 - owners[0]
                        if not held_by_peer(b[other]):
                            bad = "node %d owns the verdict (%s), node %d does not hold it (%s)" % (
                                owners[0], b[owners[0]]["state"], other, b[other]["state"] if b[other] else "none")
                    self.track(self.share_open, self.share_episodes, self.share_reported, w, bad, now,
                               SHARE_BOUND, b)
            # The fallback: judged on each node whose agent is up, while
            # the other's agent is down or up and not owning.
            for n in (1, 2):
                other = 3 - n
                judged = views[n] is not None and current[n] is insts[n] and \
                    (current[other] is None or (views[other] is not None and current[other] is insts[other]))
                for w in WORKERS:
                    k = (n, w)
                    if not judged or self.fallback_key.get(k) is not insts[n]:
                        self.fallback_open.pop(k, None)
                        self.fallback_reported.discard(k)
                        self.fallback_key[k] = insts[n]
                    if not judged:
                        continue
                    mine = views[n].get(w)
                    theirs = views[other].get(w) if views[other] is not None else None
                    bad = None
                    if held_by_peer(mine) and not owns_verdict(theirs):
                        bad = "node %d still held by a verdict nobody owns (node %d %s)" % (
                            n, other, "down" if current[other] is None else theirs["state"] if theirs else "none")
                    self.track(self.fallback_open, self.fallback_episodes, self.fallback_reported, k, bad, now,
                               EXPIRE_BOUND, {n: mine, other: theirs})

    def track(self, opened, episodes, reported, k, bad, now, bound, views):
        if bad is None:
            if k in opened:
                start, after = opened.pop(k)
                episodes.append((now - start, after))
                reported.discard(k)
            return
        if k not in opened:
            opened[k] = (now, self.last_fault())
        start, after = opened[k]
        if now - start > bound and k not in reported:
            reported.add(k)
            self.violate(7, "%s for %.1f s (bound %.1f s), since %.1f s, after %s at %s s" % (
                bad, now - start, bound, start, after[1], after[0]),
                {"node %d" % n: v for n, v in views.items()}, recoverable=True)

    # ---- the end ----
    def finish(self):
        """Every fault lifted: node 2 and the verdicts must settle as node 1
        must (Soak.finish), then node 2's agent stops as node 1's does."""
        for w in WORKERS:
            if self.mode_of(w) != "healthy":
                self.switch_worker(w, "healthy")
        self.set_relay("pass")
        self.free_disk()
        n2 = self.node2
        deadline = time.monotonic() + max(CONVERGE_BOUND, EXPIRE_BOUND) * 2
        while time.monotonic() < deadline and (n2.possible_since is None or n2.mismatch_since is not None
                                               or n2.compared == 0 or self.share_since is None
                                               or self.share_open or self.fallback_open):
            time.sleep(0.1)
        if self.failed and not self.keep_going:
            return
        if n2.mismatch_since is not None or n2.possible_since is None:
            self.violate(1, "node 2: at the end, with every fault lifted, HAProxy still differs from the breakers",
                         n2.mismatch_diff)
        if self.share_since is None or self.share_open or self.fallback_open:
            self.violate(7, "at the end, with every fault lifted, the nodes still disagree on a verdict",
                         {"not held": dict(self.share_open), "held by nobody's": dict(self.fallback_open),
                          "peers up": self.share_since is not None})
        super().finish()
        if self.failed and not self.keep_going:
            return
        n2.stop_agent(signal.SIGTERM)

    def teardown(self):
        n2 = self.node2
        if n2 is not None:
            if n2.agent is not None:
                n2.agent.expected_exit = True
                n2.stop_proc(n2.agent.proc)
            n2.stop_proc(n2.haproxy)
        super().teardown()

    def report(self):
        print("peers mode: node 2's figures and invariant 7 first; the lines of invariants 1-4 and 6 after "
              "them are node 1's, invariant 5 counts the agents of both")
        if self.node2 is not None:
            self.node2.figures()
        worst = max(self.share_episodes, default=(0.0, None))
        worst_fb = max(self.fallback_episodes, default=(0.0, None))
        logs = [a.log for a in self.agents]
        holds = fallbacks = 0
        for path in logs:
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        if TRANSITION.search(line):
                            holds += "holds it open" in line
                            fallbacks += "no longer renewed" in line
            except OSError:
                pass
        print("invariant 7 (shared verdicts: one node's verdict held by the other within %.1f s, one owner; a "
              "verdict nobody owns stops holding within %.1f s): %d comparisons, %d with a verdict owned; "
              "%d episodes before the other held it, worst %.2f s%s; %d fallbacks from a verdict nobody owns, "
              "worst %.2f s%s; transitions logged: %d on a peer's verdict, %d on one no longer renewed"
              % (SHARE_BOUND, EXPIRE_BOUND, self.share_compared, self.share_owned, len(self.share_episodes),
                 worst[0], " (after %s at %s s)" % (worst[1][1], worst[1][0]) if worst[1] else "",
                 len(self.fallback_episodes), worst_fb[0],
                 " (after %s at %s s)" % (worst_fb[1][1], worst_fb[1][0]) if worst_fb[1] else "",
                 holds, fallbacks))
        by_node = {}
        for rec in self.records:
            node = rec[7]
            c = by_node.setdefault(node, [0, 0, 0])
            c[0] += 1
            c[1] += isinstance(rec[2], str)
            c[2] += not isinstance(rec[2], str) and not rec[4] and rec[2] < 500
        print("invariant 4 by node (requests / connection errors / served): %s" % ", ".join(
            "node %d %d / %d / %d" % (n, c[0], c[1], c[2]) for n, c in sorted(by_node.items())))
        return super().report()


# ---- the agent-less run (SOAK_AGENT=none) ----

class AgentlessSoak(Soak):
    """The same schedule, traffic and HAProxy with no agent: HAProxy's SPOE
    filter finds nothing listening and lets every request through, the
    agent's faults find no agent. What it serves is what HAProxy alone
    serves under the same worker faults: the figure invariant 4 compares
    with. Invariants 1-3, 5 and 6 judge an agent and are not judged."""
    HELD = "agent-less run done, no error only a breaker causes"

    def start_agent(self, fresh=False):
        pass

    def stop_agent(self, sig):
        pass

    def run_event(self, kind, p):
        if kind == "agent_hup":
            return
        super().run_event(kind, p)

    def finish(self):
        self.executed.append((round(self.now(), 1), "end: all faults lifted", {}))
        self.stop.set()

    def report(self):
        print("agent-less run (SOAK_AGENT=none): no agent started, its faults skipped; only invariant 4's "
              "request figures apply, and none may be an error only a breaker causes")
        return super().report()


if __name__ == "__main__":
    if os.environ.get("SOAK_AGENT") == "none" and os.environ.get("SOAK_PEERS") == "1":
        sys.exit("SOAK_AGENT=none and SOAK_PEERS=1: the agent-less run has one node")
    kind = AgentlessSoak if os.environ.get("SOAK_AGENT") == "none" else \
        PeersSoak if os.environ.get("SOAK_PEERS") == "1" else Soak
    sys.exit(kind().run())
