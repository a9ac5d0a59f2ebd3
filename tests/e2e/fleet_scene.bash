# The fleet scene of fleet.bats and retry_cause.bats: four workers behind
# one HAProxy (haproxy-fleet.cfg.in), the agent driving it through its
# Runtime API, and a load of concurrent clients.

# start_fleet_scene B1 B2 B3 B4: worker wN answers with behaviour BN; a
# behaviour ending in "!" ignores the path (worker.py --no-override: a
# hung worker stays hung whatever it is asked). TIMEOUT_SERVER, RETRY_ON,
# RETRIES, REDISPATCH: HAProxy's (default 5m, conn-failure, 3, none);
# AGENT_ARGS: more options of the agent, after its Runtime API and admin.
start_fleet_scene() {
	RUN_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/scene.XXXXXX")
	FE_PORT=$(free_port)
	AGENT_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	AGENT_ADDR=127.0.0.1:$AGENT_PORT
	SPOE_CONF=$REPO/haproxy/spoe-breaker.conf
	TIMEOUT_SERVER=${TIMEOUT_SERVER:-5m}
	RETRY_ON=${RETRY_ON:-conn-failure}
	RETRIES=${RETRIES:-3}
	REDISPATCH=${REDISPATCH:-"no option redispatch"}
	export RUN_DIR FE_PORT AGENT_PORT ADMIN_PORT AGENT_ADDR SPOE_CONF
	export TIMEOUT_SERVER RETRY_ON RETRIES REDISPATCH
	local i=0 behaviour port extra
	for behaviour in "$@"; do
		i=$((i + 1))
		port=$(free_port)
		export "W${i}_PORT=$port"
		extra=()
		if [ "${behaviour%!}" != "$behaviour" ]; then
			behaviour=${behaviour%!}
			extra=(--no-override)
		fi
		spawn "w$i" python3 "$WORKER" --name "w$i" --port "$port" --behaviour "$behaviour" \
			--arrivals "$RUN_DIR/w$i.arrivals" --spans "$RUN_DIR/w$i.spans" "${extra[@]}"
		wait_port "$port"
	done
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" --runtime-api "unix:$RUN_DIR/admin.sock" \
		--admin "127.0.0.1:$ADMIN_PORT" ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	echo 1 >"$RUN_DIR/server-state" # an empty state, version 1
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-fleet.cfg.in"
	wait_until 10 agent_is_up
	# The first looks at HAProxy set the counters' baseline.
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 2
}

# start_load CLIENTS ANSWERS DEADLINE PATH...: CLIENTS concurrent clients in
# the background, each sending requests one after another, each to one of
# the PATHs drawn at random, until ANSWERS requests were answered whole (a
# complete 200) or DEADLINE seconds passed (a bound, never a measure);
# requests still in flight then are abandoned. One line per request in
# $RUN_DIR/load.out: "STATUS WORKER COMPLETE PATH" (STATUS 0 when no head
# came, COMPLETE 1 for a whole body). Its PID is in $RUN_DIR/load.pid, so
# stop_all stops it.
start_load() {
	cat >"$RUN_DIR/load.py" <<'PY'
import http.client, random, sys, threading, time
port, out, clients, answers, deadline = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
paths = sys.argv[6:]
end = time.monotonic() + deadline
lock = threading.Lock()
done = [0]
log = open(out, "a", buffering=1)
def client():
    while time.monotonic() < end:
        with lock:
            if done[0] >= answers:
                return
        path = random.choice(paths)
        status, worker, complete = 0, "-", 0
        c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=max(0.1, end - time.monotonic()))
        try:
            c.request("GET", path)
            r = c.getresponse()
            status, worker = r.status, r.getheader("x-worker", "-")
            r.read()
            complete = 1
        except Exception:
            pass
        finally:
            c.close()
        with lock:
            log.write("%d %s %d %s\n" % (status, worker, complete, path))
            if status == 200 and complete:
                done[0] += 1
threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
for t in threads:
    t.start()
while time.monotonic() < end:
    with lock:
        if done[0] >= answers:
            break
    time.sleep(0.1)
with lock:
    print("answered %d" % done[0], flush=True)
PY
	spawn load python3 "$RUN_DIR/load.py" "$FE_PORT" "$RUN_DIR/load.out" "$@"
}

# How many requests the load got answered whole (at least its ANSWERS, when
# it ended for them, a few more from clients finishing at the same time).
load_answered() { awk '$1 == "answered" {print $2}' "$RUN_DIR/load.log"; }

load_running() { kill -0 "$(cat "$RUN_DIR/load.pid" 2>/dev/null)" 2>/dev/null; }

# The drained servers of backend workers now, one name a line.
drained_servers() {
	haproxy_cli "show servers state workers" | awk '$4 ~ /^w[0-9]$/ && int($7 / 8) % 2 == 1 {print $4}'
}

# watch_drains_while_loaded: until the load ends, every drained server
# seen at each look at HAProxy, one "SERVER" a line in $RUN_DIR/drained.
# Bounded by the load's own deadline.
watch_drains_while_loaded() {
	: >"$RUN_DIR/drained"
	while load_running; do
		drained_servers >>"$RUN_DIR/drained"
		sleep 0.2
	done
	drained_servers >>"$RUN_DIR/drained"
}

# watch_drains_until TIMEOUT COMMAND...: the same watch, appending to
# $RUN_DIR/drained, until COMMAND holds; fails when it has not within
# TIMEOUT seconds.
watch_drains_until() {
	local deadline=$((SECONDS + $1))
	shift
	touch "$RUN_DIR/drained"
	until drained_servers >>"$RUN_DIR/drained" && "$@"; do
		if ((SECONDS >= deadline)); then
			echo "condition never held: $*" >&2
			return 1
		fi
		sleep 0.2
	done
}

# Requests the load has had answered whole so far.
answers_so_far() { awk '$1 == 200 && $3 == 1' "$RUN_DIR/load.out" 2>/dev/null | wc -l; }
answers_at_least() { [ "$(answers_so_far)" -ge "$1" ]; }

# Was SERVER drained at any look of the watch?
was_drained() { grep -qx "$1" "$RUN_DIR/drained"; }
never_drained() { ! was_drained "$1"; }

# Requests that reached w2 (its arrivals file) in each complete half-open episode, one count a
# line: an episode runs from an "open -> half_open" line of the agent's log
# to the next "half_open -> " line.
arrivals_per_episode() {
	python3 - "$RUN_DIR/agent.log" "$RUN_DIR/w2.arrivals" <<'PY'
import datetime, sys
def ms(line):
    t = datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    return int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
episodes, start = [], None
for line in open(sys.argv[1]):
    if "breaker workers/w2: open -> half_open" in line:
        start = ms(line)
    elif "breaker workers/w2: half_open -> " in line and start is not None:
        episodes.append((start, ms(line)))
        start = None
try:
    arrivals = [int(x) for x in open(sys.argv[2])]
except FileNotFoundError:
    arrivals = []
for a, b in episodes:
    print(sum(1 for t in arrivals if a <= t <= b))
PY
}

# Two more looks at HAProxy: every counter of the requests answered so far
# has been read.
two_more_looks() {
	local ok
	ok=$(metric 'spoa_breaker_haproxy_looks_total{result="ok"}')
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((ok + 2))
}
