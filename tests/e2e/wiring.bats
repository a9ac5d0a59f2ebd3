#!/usr/bin/env bats
# haproxy/examples/multi-backend works as shipped: an operator's
# configuration (two frontends, guarded backends web, api and reports, the
# unguarded legacy) with the agent's own file loaded after it. The files
# run as they are; only addresses and paths come from the environment.

load helpers

EXAMPLE=$REPO/haproxy/examples/multi-backend

# Every server of the example, as BACKEND:SERVER:ENV.
SERVERS="web:w1:WEB1 web:w2:WEB2 api:a1:API1 api:a2:API2
	reports:r1:REPORTS1 reports:r2:REPORTS2 legacy:l1:LEGACY1 legacy:l2:LEGACY2"

setup() {
	RUN_DIR=$(mktemp -d "$BATS_TEST_TMPDIR/run.XXXXXX")
	export RUN_DIR
	# The SPOE file the example's filter lines name by default, taken
	# from the repository instead of where it is installed.
	BREAKER_SPOE_CONF=$EXAMPLE/$(sed -n 's|.*BREAKER_SPOE_CONF-[^}]*/\([^/}]*\)}.*|\1|p' \
		"$EXAMPLE/haproxy.cfg" | head -n 1)
	export BREAKER_SPOE_CONF
	export BREAKER_MAPS=$REPO/haproxy
	export BREAKER_ADMIN_SOCKET=$RUN_DIR/admin.sock
}

teardown() {
	stop_all
}

# Starts the workers (SERVER=STATUS arguments change one's answer, 200
# otherwise), the agent from the build and HAProxy on the example files.
start_example() { # [SERVER=STATUS...]
	local entry server env port behaviour arg
	for entry in $SERVERS; do
		IFS=: read -r _ server env <<<"$entry"
		port=$(free_port)
		behaviour=200
		for arg in "$@"; do [ "${arg%%=*}" = "$server" ] && behaviour=${arg#*=}; done
		start_worker "$server" "$port" "$behaviour"
		export "EXAMPLE_$env=127.0.0.1:$port"
	done
	WWW_PORT=$(free_port)
	INTERNAL_PORT=$(free_port)
	AGENT_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	export EXAMPLE_WWW=127.0.0.1:$WWW_PORT
	export EXAMPLE_INTERNAL=127.0.0.1:$INTERNAL_PORT
	export BREAKER_AGENT=127.0.0.1:$AGENT_PORT
	start_agent agent -f "$EXAMPLE/spoa-breaker.ini" --listen "$BREAKER_AGENT" \
		--runtime-api "unix:$BREAKER_ADMIN_SOCKET" --admin "127.0.0.1:$ADMIN_PORT"
	wait_port "$AGENT_PORT"
	spawn haproxy "$HAPROXY_BIN" -db -f "$EXAMPLE/haproxy.cfg" -f "$EXAMPLE/spoa-breaker.cfg"
	wait_port "$WWW_PORT"
	wait_port "$INTERNAL_PORT"
	wait_until 10 agent_is_up
	# The agent has looked at this HAProxy once: its servers are known.
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

looks() { metric 'spoa_breaker_haproxy_looks_total{result="ok"}'; }

# Waits until the agent has looked at HAProxy twice more than it had when
# called: whatever HAProxy's counters held then, the agent has read.
two_more_looks() {
	local now
	now=$(looks)
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((now + 2))
}

# status code and answering worker of GET PATH on a frontend port.
answer_of() { # PORT PATH [CURL ARGS...]
	local port=$1 path=$2
	shift 2
	curl -s -o /dev/null -D - "$@" "http://127.0.0.1:$port$path" | tr -d '\r' | awk -F': ' '
		NR==1 {code=$0; sub(/^HTTP\/[0-9.]+ /, "", code); sub(/ .*/, "", code)}
		tolower($1)=="x-worker" {w=$2}
		END {print code, w}'
}

admin_state() { # BACKEND SERVER: srv_admin_state in `show servers state` (8 = drain)
	haproxy_cli "show servers state $1" | awk -v s="$2" '$4==s {print $7}'
}
drained() { [ $(($(admin_state "$1" "$2") & 8)) -ne 0 ]; }
draining() { [[ "$(server_status "$1" "$2")" == DRAIN* ]]; }

# Requests to PATH on PORT until BACKEND/SERVER is drained (bounded); the
# 500s SERVER answered meanwhile are left in $FAILED.
drive_until_drained() { # PORT PATH BACKEND SERVER
	FAILED=0
	for _ in $(seq 60); do
		[ "$(answer_of "$1" "$2")" = "500 $4" ] && FAILED=$((FAILED + 1))
		drained "$3" "$4" && return 0
	done
	echo "$3/$4 never drained" >&2
	return 1
}

maxconn() { # BACKEND SERVER: the limit HAProxy applies ("" when none)
	haproxy_cli "show stat" | awk -F, -v b="$1" -v s="$2" '$1==b && $2==s {print $7}'
}

# Requests to PATH on PORT until SERVER has answered N times with STATUS
# (bounded: at most 20 requests per answer wanted).
answers_from() { # PORT PATH SERVER STATUS N
	local seen=0
	for _ in $(seq $(($5 * 20))); do
		[ "$(answer_of "$1" "$2")" = "$4 $3" ] && seen=$((seen + 1))
		[ "$seen" -ge "$5" ] && return 0
	done
	echo "$3 answered $4 $seen times, not $5" >&2
	return 1
}

@test "the example passes haproxy -c without a warning, in both SPOE modes" {
	local spoe out
	for spoe in spoe-guarded.conf spoe-guarded-steady.conf; do
		out=$(BREAKER_SPOE_CONF=$EXAMPLE/$spoe "$HAPROXY_BIN" -c \
			-f "$EXAMPLE/haproxy.cfg" -f "$EXAMPLE/spoa-breaker.cfg" 2>&1) || {
			echo "$spoe: $out"
			return 1
		}
		run grep -i -E "warning|alert" <<<"$out"
		assert_failure
	done
}

@test "as shipped, the example runs in steady-state mode: healthy successes cost no SPOP message" {
	[ -f "$BREAKER_SPOE_CONF" ]
	start_example
	wait_until 10 grep -q "loads breaker-watched.map: steady-state mode" "$RUN_DIR/agent.log"
	local before after
	before=$(metric 'spoa_breaker_spop_frames_total{type="notify"}')
	for _ in $(seq 20); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$WWW_PORT/")" = 200 ]
	done
	after=$(metric 'spoa_breaker_spop_frames_total{type="notify"}')
	[ -n "$before" ]
	[ "$before" = "$after" ]
	# A failure is sent, as a steady-state message, and the agent keeps
	# the watched map the successes of its server are then sent by.
	curl -s -o /dev/null "http://127.0.0.1:$INTERNAL_PORT/status/500"
	wait_until 5 metric_is spoa_breaker_spop_steady_messages_total 1
	run metric spoa_breaker_steady_state_unkept
	assert_output 0
}

@test "both frontends route to their backends" {
	start_example
	run answer_of "$WWW_PORT" /
	assert_output --regexp '^200 w[12]$'
	run answer_of "$WWW_PORT" /api/x
	assert_output --regexp '^200 a[12]$'
	run answer_of "$WWW_PORT" /legacy/x
	assert_output --regexp '^200 l[12]$'
	run answer_of "$INTERNAL_PORT" /
	assert_output --regexp '^200 r[12]$'
	run answer_of "$INTERNAL_PORT" /api/x
	assert_output --regexp '^200 a[12]$'
}

@test "a guarded backend's failing server is drained, through either frontend" {
	start_example w2=500 r2=500
	drive_until_drained "$WWW_PORT" / web w2
	wait_until 5 draining web w2
	[ "$(breaker_field web/w2 state)" = open ]
	drive_until_drained "$INTERNAL_PORT" / reports r2
	wait_until 5 draining reports r2
	[ "$(breaker_field reports/r2 state)" = open ]
	# The healthy neighbours serve on.
	run answer_of "$WWW_PORT" /
	assert_output "200 w1"
	run answer_of "$INTERNAL_PORT" /
	assert_output "200 r1"
}

@test "a guarded backend's busy server is never drained" {
	start_example a2=503
	# Until the agent has recorded twice the failure threshold of a2's
	# capacity statuses in a row (HAProxy retries each on a1, and the
	# agent reads them in its counters): as failures they would have
	# opened it.
	local threshold
	threshold=$(breaker_field api/a2 policy.threshold)
	for _ in $(seq 200); do
		curl -s -o /dev/null "http://127.0.0.1:$WWW_PORT/api/x"
		[ "$(breaker_field api/a2 capacity_run)" -ge $((2 * threshold)) ] && break
	done
	[ "$(breaker_field api/a2 capacity_run)" -ge $((2 * threshold)) ]
	two_more_looks
	[ "$(breaker_field api/a2 state)" = closed ]
	[ "$(breaker_field api/a2 failure_streak)" = 0 ]
	# (A server without health checks reads "no check" while serving.)
	run server_status api a2
	assert_output --regexp '^(UP|no check)$'
	[ "$(admin_state api a2)" = 0 ]
	run answer_of "$WWW_PORT" /api/x
	assert_output "200 a1"
}

@test "the unguarded backend's failing server is never touched, while a guarded one is drained" {
	start_example w2=500 l2=500
	local before
	before=$(maxconn legacy l2)
	# w2 opens after FAILED 500s; l2 answers twice as many.
	drive_until_drained "$WWW_PORT" / web w2
	answers_from "$WWW_PORT" /legacy/x l2 500 $((2 * FAILED))
	two_more_looks
	drained web w2
	# legacy/l2: serving, its limit as configured, in no record of the
	# agent's: no breaker (guarded = false in spoa-breaker.ini), no
	# transition logged, no drain or limit in the ownership map, and its
	# backend not reported as unwired.
	run server_status legacy l2
	assert_output --regexp '^(UP|no check)$'
	[ "$(admin_state legacy l2)" = 0 ]
	[ "$(maxconn legacy l2)" = "$before" ]
	run answer_of "$WWW_PORT" /legacy/x
	assert_output --regexp '^(200 l1|500 l2)$'
	run breaker_field legacy/l2 state
	assert_failure
	run breaker_field web/w2 state
	assert_output open
	run grep -E "breaker legacy/|backend legacy" "$RUN_DIR/agent.log"
	assert_failure
	run haproxy_cli "show map $BREAKER_MAPS/breaker-owned.map"
	assert_output --partial "web/w2"
	refute_output --partial "legacy/"
}

econ() { # BACKEND SERVER: connection errors in HAProxy's counters
	haproxy_cli "show stat" | awk -F, -v b="$1" -v s="$2" '$1==b && $2==s {print $14}'
}

@test "the unguarded backend's refused connections drain none of its servers" {
	start_example
	stop l2
	local before threshold
	before=$(maxconn legacy l2)
	threshold=$(breaker_field web/w1 policy.threshold)
	# Until HAProxy has counted twice a guarded breaker's threshold of
	# connection errors on l2, and the agent has read them.
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$WWW_PORT/legacy/x"
		[ "$(econ legacy l2)" -ge $((2 * threshold)) ] && break
	done
	[ "$(econ legacy l2)" -ge $((2 * threshold)) ]
	two_more_looks
	# The agent keeps no breaker of legacy (guarded = false in
	# spoa-breaker.ini), so nothing could open...
	run breaker_field legacy/l2 state
	assert_failure
	# ... and it did nothing with them.
	[ "$(admin_state legacy l2)" = 0 ]
	[ "$(maxconn legacy l2)" = "$before" ]
	run grep "breaker legacy/" "$RUN_DIR/agent.log"
	assert_failure
}

@test "a guarded response shows the agent's verdict on request; HAProxy's own 503 carries Retry-After" {
	BREAKER_DEBUG_FROM=127.0.0.1 start_example
	run bash -c "curl -s -o /dev/null -D - -H 'x-breaker-debug: 1' http://127.0.0.1:$WWW_PORT/status/429 | tr -d '\r'"
	assert_line "x-breaker-state: closed"
	assert_line "x-breaker-outcome: backpressure"
	# A worker's own 503 passes untouched, with no Retry-After.
	run bash -c "curl -s -D - http://127.0.0.1:$INTERNAL_PORT/status/503 | tr -d '\r'"
	assert_line --regexp '^HTTP/1.1 503'
	assert_line --regexp '^x-worker: r[12]$'
	refute_line --regexp '^[Rr]etry-[Aa]fter'
	# No reports worker to take a request: HAProxy answers 503 itself.
	stop r1
	stop r2
	run bash -c "curl -s -o /dev/null -D - http://127.0.0.1:$INTERNAL_PORT/ | tr -d '\r'"
	assert_line --regexp '^HTTP/1.1 503'
	assert_line --regexp '^[Rr]etry-[Aa]fter: [0-9]+$'
	refute_line --regexp '^x-worker'
}
