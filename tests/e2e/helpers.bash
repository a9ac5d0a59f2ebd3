# Shared by the end-to-end suites: real HAProxy, real agent, real workers,
# all on loopback, every process started here stopped here by its PID.

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
# shellcheck source=../lib/agent_timeouts.sh
. "$REPO/tests/lib/agent_timeouts.sh"
SPOA_BIN=${SPOA_BIN:-$REPO/build/spoa-breaker}
# HAPROXY_BIN may name another HAProxy (3.0, 3.2: see tests/haproxy-versions.sh).
HAPROXY_BIN=${HAPROXY_BIN:-haproxy}
WORKER=$REPO/tests/lib/worker.py
SPOP_CLIENT=$REPO/tests/lib/spop_client.py

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

# A port nobody listens on right now, and none this test was given before:
# two calls in a row may otherwise get the same one. The kernel picks it,
# unless E2E_PORT_BASE names a range of E2E_PORT_SPAN ports of this run's
# own (make check gives each of its parallel runs one, below the kernel's
# ephemeral ports): a port picked here is bound only later, and another
# run, or a client's ephemeral port, must not take it meanwhile.
free_port() {
	local given="${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:-/tmp}}/.ports-given" port
	touch "$given"
	for _ in $(seq 20); do
		# SO_REUSEADDR as HAProxy and the workers bind: a port an
		# earlier test's connections left in TIME_WAIT is free to them.
		port=$(python3 -c '
import random, socket, sys
base, span = int(sys.argv[1] or 0), int(sys.argv[2])
for _ in range(200):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", random.randrange(base, base + span) if base else 0))
    except OSError:
        continue
    print(s.getsockname()[1])
    break
' "${E2E_PORT_BASE:-}" "${E2E_PORT_SPAN:-2000}")
		[ -n "$port" ] && ! grep -qx "$port" "$given" && break
		port=""
	done
	[ -n "$port" ] || {
		echo "free_port: no free port found (E2E_PORT_BASE ${E2E_PORT_BASE:-unset})" >&2
		return 1
	}
	echo "$port" >>"$given"
	echo "$port"
}

# Waits until a TCP port accepts connections. The 30 s are a hang guard,
# not a measure: a process starting on a loaded machine (a python3 under
# the sanitizer lanes) took more than 5 s, the bound this once had.
wait_port() {
	local deadline=$((SECONDS + 30))
	until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "nothing listens on 127.0.0.1:$1" >&2
			# Say why, when the process that should listen left a log.
			if [ -n "${RUN_DIR:-}" ] && [ -f "$RUN_DIR/agent.log" ]; then
				echo "--- agent.log:" >&2
				tail -n 20 "$RUN_DIR/agent.log" >&2
			fi
			return 1
		fi
		sleep 0.05
	done
}

# wait_until TIMEOUT_SECONDS COMMAND...: polls an observable condition.
# The bound is no assertion: it only keeps a test whose condition never
# holds from hanging. A loaded machine (the suite's parallel lanes, the
# sanitizer) runs the same steps several times slower than a quiet one, so
# the guard is four times the figure written, and at least 20 s.
wait_until() {
	local guard=$(($1 * 4))
	((guard >= 20)) || guard=20
	local deadline=$((SECONDS + guard))
	shift
	until "$@"; do
		if ((SECONDS >= deadline)); then
			echo "condition never held: $*" >&2
			return 1
		fi
		sleep 0.1
	done
}

# Starts a background process, remembering its PID in $RUN_DIR/NAME.pid.
spawn() {
	local name=$1
	shift
	"$@" >"$RUN_DIR/$name.log" 2>&1 &
	echo $! >"$RUN_DIR/$name.pid"
}

stop() {
	local pidfile="$RUN_DIR/$1.pid" pid
	[ -f "$pidfile" ] || return 0
	pid=$(cat "$pidfile")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$pidfile"
}

# Stops everything this test started, then fails if a sanitizer (in a
# `make sanitize` build) reported anything in the agent's logs.
stop_all() {
	local f
	for f in "$RUN_DIR"/*.pid; do
		[ -e "$f" ] && stop "$(basename "$f" .pid)"
	done
	if grep -l -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$RUN_DIR"/agent*.log 2>/dev/null; then
		grep -h -A20 -E 'AddressSanitizer|LeakSanitizer|runtime error:' "$RUN_DIR"/agent*.log >&2
		return 1
	fi
	return 0
}

start_worker() { # NAME PORT BEHAVIOUR
	spawn "$1" python3 "$WORKER" --name "$1" --port "$2" --behaviour "${3:-200}"
	wait_port "$2"
}

# No state snapshot unless a test names one (a later --state-file wins):
# one test's breakers must never come back in another's agent.
start_agent() { # NAME ARGS...
	local name=$1
	shift
	spawn "$name" "$SPOA_BIN" --log-level info --state-file none "$@"
}

# Renders a template into $RUN_DIR/haproxy.cfg, replacing @NAME@ with the
# value of $NAME for every NAME it mentions, and checks it with haproxy -c.
render_haproxy_cfg() { # TEMPLATE
	local out="$RUN_DIR/haproxy.cfg" var
	cp "$1" "$out"
	for var in $(grep -o '@[A-Z0-9_]*@' "$1" | sort -u | tr -d @); do
		sed -i "s|@$var@|${!var}|g" "$out"
	done
	"$HAPROXY_BIN" -c -f "$out" >"$RUN_DIR/haproxy-check.log" 2>&1 || {
		cat "$RUN_DIR/haproxy-check.log" >&2
		return 1
	}
}

# Starts HAProxy on a rendered template in the foreground (-db), so its PID
# is ours; extra arguments go before -f (e.g. -W -S master.sock).
start_haproxy() { # TEMPLATE [ARGS...]
	local template=$1
	shift
	render_haproxy_cfg "$template"
	spawn haproxy "$HAPROXY_BIN" "$@" -db -f "$RUN_DIR/haproxy.cfg"
	wait_port "$FE_PORT"
}

haproxy_cli() {
	echo "$*" | socat -t 2 - "UNIX-CONNECT:$RUN_DIR/admin.sock"
}

# The status of BACKEND/SERVER in `show stat` (UP, DOWN, DRAIN, ...).
server_status() { # BACKEND SERVER
	haproxy_cli "show stat" | awk -F, -v b="$1" -v s="$2" '$1==b && $2==s {print $18}'
}

agent_is_up() {
	[[ "$(server_status spoa-breaker agent)" == UP* ]]
}

agent_is_down() {
	[[ "$(server_status spoa-breaker agent)" == DOWN* ]]
}

# The value of response header NAME for GET PATH through HAProxy.
header_of() { # PATH NAME
	curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT$1" | tr -d '\r' |
		awk -v h="$(echo "$2" | tr 'A-Z' 'a-z')" -F': ' 'tolower($1)==h {print $2}'
}

# The response headers of GET PATH through HAProxy.
response_headers() { # PATH
	curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT$1" | tr -d '\r'
}

# header_of, the request sent again while the agent answered it late
# (past_agent_timeouts, tests/lib/agent_timeouts.sh).
header_past_timeouts() { # PATH NAME
	past_agent_timeouts response_headers "$1" |
		awk -v h="$(echo "$2" | tr 'A-Z' 'a-z')" -F': ' 'tolower($1)==h {print $2}'
}

# The agent's verdict on one request: "state outcome failures transition".
verdict_of() { # PATH
	curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT$1" | tr -d '\r' | awk -F': ' '
		tolower($1)=="x-breaker-state" {s=$2} tolower($1)=="x-breaker-outcome" {o=$2}
		tolower($1)=="x-breaker-failures" {f=$2} tolower($1)=="x-breaker-transition" {t=$2}
		END {print s, o, f, t}'
}

# A directory of the test's own, in RUN_DIR, for its logs, sockets and
# PID files.
new_run_dir() {
	RUN_DIR=$(mktemp -d "$BATS_TEST_TMPDIR/run.XXXXXX")
	export RUN_DIR
}

# What the shipped haproxy/haproxy.cfg reads from its BREAKER_* variables,
# for a test of its own: a run directory, the frontend's, the agent's and
# its admin page's ports (FE_PORT, AGENT_PORT, ADMIN_PORT), the SPOE file
# SPOE_CONF, the admin socket and an empty server-state file (version 1).
# The workers' BREAKER_W1.. are the test's to set (shipped_scene does).
shipped_cfg_env() { # SPOE_CONF
	new_run_dir
	FE_PORT=$(free_port)
	AGENT_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	export BREAKER_FRONTEND=127.0.0.1:$FE_PORT
	export BREAKER_AGENT=127.0.0.1:$AGENT_PORT
	export BREAKER_SPOE_CONF=$1
	export BREAKER_ADMIN_SOCKET=$RUN_DIR/admin.sock
	export BREAKER_STATE_FILE=$RUN_DIR/server-state
	echo 1 >"$BREAKER_STATE_FILE"
}

# shipped_scene W1 W2 W3 (after shipped_cfg_env): each worker's behaviour
# (a status, or `refused`: nothing listens), then the agent driving the
# shipped HAProxy through its admin socket (AGENT_RUNTIME_API: another
# socket; AGENT_COOLDOWN: its cooldown, 60s; AGENT_EXTRA: more of its
# options), up once its first looks at HAProxy have set the counters'
# baseline.
shipped_scene() {
	local name port behaviour i=0
	for behaviour in "$@"; do
		i=$((i + 1))
		name=W$i
		port=$(free_port)
		export "BREAKER_$name=127.0.0.1:$port"
		[ "$behaviour" = refused ] || start_worker "$name" "$port" "$behaviour"
	done
	# shellcheck disable=SC2086 # AGENT_EXTRA is a list of options
	start_agent agent --listen "$BREAKER_AGENT" --admin "127.0.0.1:$ADMIN_PORT" \
		--runtime-api "${AGENT_RUNTIME_API:-unix:$BREAKER_ADMIN_SOCKET}" \
		--cooldown "${AGENT_COOLDOWN:-60s}" ${AGENT_EXTRA:-}
	wait_port "$AGENT_PORT"
	"$HAPROXY_BIN" -c -f "$REPO/haproxy/haproxy.cfg" >"$RUN_DIR/check.log" 2>&1
	spawn haproxy "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg"
	wait_port "$FE_PORT"
	wait_until 10 agent_is_up
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 2
}

# The start of a scene a template describes (for a whole file: in
# BATS_FILE_TMPDIR): its directory in RUN_DIR, a free port in FE_PORT,
# AGENT_PORT and each variable NAME given, the agent's address in
# AGENT_ADDR and the every-response SPOE file in SPOE_CONF, all exported.
new_scene() { # NAME...
	RUN_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/scene.XXXXXX")
	export RUN_DIR
	local var
	for var in FE_PORT AGENT_PORT "$@"; do
		printf -v "$var" %s "$(free_port)"
		export "${var?}"
	done
	AGENT_ADDR=127.0.0.1:$AGENT_PORT
	SPOE_CONF=$REPO/haproxy/spoe-breaker.conf
	export AGENT_ADDR SPOE_CONF
}

# Sets up the standard scene: one worker, the agent (plus $AGENT_ARGS),
# HAProxy with SPOE.
start_scene() {
	new_scene W1_PORT
	start_worker w1 "$W1_PORT" 200
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	start_haproxy "$BATS_TEST_DIRNAME/haproxy.cfg.in"
	wait_until 10 agent_is_up
}

# The enforcement scene: three workers (w2 answering W2_BEHAVIOUR), the
# agent with $AGENT_ARGS, HAProxy in master-worker mode (so tests can
# reload it) with $RUN_DIR/admin.sock. ENFORCE_MODE=agent-check wires the
# servers' agent-check to 127.0.0.1:$AGENT_CHECK_PORT instead.
start_enforce_scene() {
	new_scene W1_PORT W2_PORT W3_PORT
	AGENT_CHECK_DEFAULTS="" W1_AGENT="" W2_AGENT="" W3_AGENT=""
	if [ "${ENFORCE_MODE:-}" = agent-check ]; then
		AGENT_CHECK_DEFAULTS="default-server agent-check agent-addr 127.0.0.1 agent-port $AGENT_CHECK_PORT agent-inter 200ms"
		W1_AGENT='agent-send "workers/w1\\n"'
		W2_AGENT='agent-send "workers/w2\\n"'
		W3_AGENT='agent-send "workers/w3\\n"'
	fi
	export AGENT_CHECK_DEFAULTS W1_AGENT W2_AGENT W3_AGENT
	AGENT_TLS=${AGENT_TLS:-} # e.g. "ssl verify required ca-file CA crt PEM" (tls.bats)
	export AGENT_TLS
	TIMEOUT_SERVER=${TIMEOUT_SERVER:-5s}
	EXTRA_DEFAULTS=${EXTRA_DEFAULTS:-}
	export TIMEOUT_SERVER EXTRA_DEFAULTS
	start_worker w1 "$W1_PORT" 200
	case "${W2_BEHAVIOUR:-200}" in
	refused) ;; # nothing listens on W2_PORT
	blackhole) # (a connect to it would hang: wait for the listener instead)
		spawn w2 python3 "$REPO/tests/lib/blackhole.py" --port "$W2_PORT"
		wait_until 5 bash -c "ss -ltn \"sport = :$W2_PORT\" | grep -q LISTEN" ;;
	*)
		spawn w2 python3 "$WORKER" --name w2 --port "$W2_PORT" --behaviour "${W2_BEHAVIOUR:-200}" \
			--arrivals "$RUN_DIR/w2.arrivals"
		wait_port "$W2_PORT" ;;
	esac
	start_worker w3 "$W3_PORT" 200
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	echo 1 >"$RUN_DIR/server-state" # an empty state, version 1
	# Master-worker, so that tests can reload it.
	# shellcheck disable=SC2086 # HAPROXY_EXTRA_ARGS is a list of options
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-enforce.cfg.in" -W -S "$RUN_DIR/master.sock" ${HAPROXY_EXTRA_ARGS:-}
	wait_until 10 agent_is_up
}

# srv_admin_state of workers/SERVER in `show servers state` (8 = drain).
admin_state_of() {
	haproxy_cli "show servers state workers" | awk -v s="$1" '$4==s {print $7}'
}

# The maxconn HAProxy applies to workers/SERVER ("" when unlimited).
maxconn_of() {
	haproxy_cli "show stat" | awk -F, -v s="$1" '$1=="workers" && $2==s {print $7}'
}

# maxconn_is SERVER VALUE ("" for unlimited): for wait_until.
maxconn_is() { [ "$(maxconn_of "$1")" = "$2" ]; }

haproxy_pid() {
	haproxy_cli "show info" | awk '/^Pid:/ {print $2}'
}

pid_changed_from() { local now; now=$(haproxy_pid); [ -n "$now" ] && [ "$now" != "$1" ]; }

is_drained() { [ "$(($(admin_state_of "$1") & 8))" -ne 0 ]; }
is_not_drained() { [ "$(($(admin_state_of "$1") & 8))" -eq 0 ]; }

# The worker that answered a request to PATH (x-worker header).
worker_of() {
	curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT$1" | tr -d '\r' |
		awk -F': ' 'tolower($1)=="x-worker" {print $2}'
}

# The breaker state the agent reports for SERVER, from its log's last
# transition line ("closed" when none yet).
logged_state_of() {
	local s
	s=$(grep -o "breaker workers/$1: [a-z_]* -> [a-z_]*" "$RUN_DIR/agent.log" | tail -n1 | awk '{print $5}')
	echo "${s:-closed}"
}

# Sends requests until workers/SERVER's breaker opens (bounded, watching
# the state).
trip_server() { # SERVER
	local i
	for i in $(seq 200); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		[ "$(logged_state_of "$1")" = open ] && return 0
	done
	return 1
}

# Some request of a bounded series is answered by worker NAME.
served_by() { # NAME
	local i
	for i in $(seq 40); do
		[ "$(worker_of /status/200)" = "$1" ] && return 0
	done
	return 1
}

# Sends requests until w2's breaker opens (bounded: the loop watches the
# state, so a changed threshold cannot make it vacuous).
trip_w2() {
	local i
	for i in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		[ "$(logged_state_of w2)" = open ] && return 0
	done
	return 1
}

# Sends requests w2 answers 200 (the path overrides its default) until its
# breaker is closed again (bounded, watching the state).
probe_w2_until_closed() {
	local i
	for i in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/200"
		[ "$(logged_state_of w2)" = closed ] && return 0
	done
	return 1
}

# Stops the scene's agent and starts it again with the same options (the
# file it reads may have changed meanwhile): its start-up look at HAProxy
# then finds HAProxy running. Its log starts anew; the previous one is kept
# as agent-previous.log (stop_all checks both).
restart_agent() {
	stop agent
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-previous.log"
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	wait_until 10 agent_is_up
}

# One sample of the agent's /metrics on 127.0.0.1:$ADMIN_PORT, named with its
# labels as printed (metric 'spoa_breaker_haproxy_looks_total{result="ok"}');
# empty when the agent does not print it.
metric() { # SAMPLE
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v m="$1" '$1==m {print $2}'
}

# metric_at_least SAMPLE N: for wait_until.
metric_at_least() {
	local v
	v=$(metric "$1")
	[ -n "$v" ] && [ "${v%.*}" -ge "$2" ]
}

# metric_is SAMPLE VALUE: for wait_until.
metric_is() { [ "$(metric "$1")" = "$2" ]; }

# One field of a breaker in the agent's /state (FIELD may be a dotted path,
# policy.threshold); prints nothing and fails when there is no such breaker.
breaker_field() { # BACKEND/SERVER FIELD
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" | python3 -c '
import json, sys
backend, server = sys.argv[1].split("/", 1)
try:
    breakers = json.load(sys.stdin)["breakers"]
except (ValueError, KeyError):
    sys.exit(1)  # no answer yet, or not the /state document
for b in breakers:
    if b["backend"] == backend and b["server"] == server:
        v = b
        for k in sys.argv[2].split("."):
            v = v[k]
        print(str(v).lower() if isinstance(v, bool) else v)
        sys.exit(0)
sys.exit(1)
' "$1" "$2"
}

# The agent has a breaker for BACKEND/SERVER: for wait_until.
breaker_known() { breaker_field "$1" state >/dev/null; }

# looks_ok: the agent's successful looks at HAProxy so far (needs its
# --admin on ADMIN_PORT).
looks_ok() { metric 'spoa_breaker_haproxy_looks_total{result="ok"}'; }

# Waits until the agent has made N more successful looks at HAProxy than
# now. The first may have begun before this call; with N >= 3 the second
# read HAProxy's state as it is now, and the commands it decided on (sent
# on their own socket as that look ended) had a poll interval to land
# before the third ended. For "nothing undid it" checks, in place of a
# sleep. The bound is generous for a loaded machine: waiting longer never
# changes the verdict.
wait_more_looks() { # N
	local from
	from=$(looks_ok)
	[ -n "$from" ] || {
		echo "no look counter on 127.0.0.1:$ADMIN_PORT/metrics" >&2
		return 1
	}
	wait_until 20 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((from + $1))
}

# wait_port_within SECONDS PORT: wait_port with a bound of the caller's,
# for a process known to start slowly (a configuration of thousands of
# servers on a loaded machine).
wait_port_within() {
	wait_until "$1" bash -c "exec 3<>/dev/tcp/127.0.0.1/$2" 2>/dev/null || {
		echo "nothing listens on 127.0.0.1:$2 after $1 s" >&2
		return 1
	}
}

# Certificates for the TLS tests (tls.bats, reload_exposure.bats), made per
# test with openssl req and openssl x509, in $CERTS.
# make_ca NAME: a self-signed CA, NAME.pem and NAME.key in $CERTS.
make_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=$1" -keyout "$CERTS/$1.key" -out "$CERTS/$1.pem" 2>/dev/null
}

# make_cert NAME CA CN USAGE: NAME.pem, NAME.key and NAME-bundle.pem (both,
# as HAProxy's crt reads them), signed by CA, for serverAuth or clientAuth.
make_cert() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-subj "/CN=$3" -keyout "$CERTS/$1.key" -out "$CERTS/$1.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' "$4" >"$CERTS/$1.ext"
	openssl x509 -req -in "$CERTS/$1.csr" -CA "$CERTS/$2.pem" -CAkey "$CERTS/$2.key" \
		-CAcreateserial -days 2 -extfile "$CERTS/$1.ext" -out "$CERTS/$1.pem" 2>/dev/null
	cat "$CERTS/$1.pem" "$CERTS/$1.key" >"$CERTS/$1-bundle.pem"
}
