#!/usr/bin/env bats
# The shipped haproxy/haproxy.cfg and spoe-breaker.conf work as they are.

load helpers

setup() {
	RUN_DIR=$(mktemp -d "$BATS_TEST_TMPDIR/run.XXXXXX")
	export RUN_DIR
	FE_PORT=$(free_port)
	AGENT_PORT=$(free_port)
	local name port
	for name in W1 W2 W3; do
		port=$(free_port)
		start_worker "$name" "$port" 200
		export "BREAKER_$name=127.0.0.1:$port"
	done
	export BREAKER_FRONTEND=127.0.0.1:$FE_PORT
	export BREAKER_AGENT=127.0.0.1:$AGENT_PORT
	export BREAKER_SPOE_CONF=$REPO/haproxy/spoe-breaker.conf
	export BREAKER_ADMIN_SOCKET=$RUN_DIR/admin.sock
	export BREAKER_STATE_FILE=$RUN_DIR/server-state
	echo 1 >"$BREAKER_STATE_FILE"
	start_agent agent --listen "$BREAKER_AGENT" -f "$REPO/packaging/spoa-breaker.ini"
	wait_port "$AGENT_PORT"
	"$HAPROXY_BIN" -c -f "$REPO/haproxy/haproxy.cfg" >"$RUN_DIR/check.log" 2>&1
	spawn haproxy "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg"
	wait_port "$FE_PORT"
	wait_until 10 agent_is_up
}

teardown() {
	stop_all
}

@test "the shipped configuration passes haproxy -c without a warning" {
	run grep -i -E "warning|alert" "$RUN_DIR/check.log"
	assert_failure
}

@test "the shipped configuration passes haproxy -c without a warning with the steady-state SPOE file too" {
	BREAKER_SPOE_CONF=$REPO/haproxy/spoe-breaker-steady.conf \
		"$HAPROXY_BIN" -c -f "$REPO/haproxy/haproxy.cfg" >"$RUN_DIR/check-steady.log" 2>&1
	run grep -i -E "warning|alert" "$RUN_DIR/check-steady.log"
	assert_failure
}

@test "with the shipped configuration, worker responses pass unchanged" {
	run bash -c "curl -s -D - http://127.0.0.1:$FE_PORT/status/503 | tr -d '\r'"
	assert_line "HTTP/1.1 503 Service Unavailable"
	refute_line --regexp '^x-breaker'
	assert_line --regexp '^\{"worker":"W[123]","status":503\}$'
}

@test "a client sending x-breaker-debug sees the agent's verdict" {
	run bash -c "curl -s -o /dev/null -D - -H 'x-breaker-debug: 1' http://127.0.0.1:$FE_PORT/status/429 | tr -d '\r'"
	assert_line "x-breaker-state: closed"
	assert_line "x-breaker-outcome: backpressure"
	assert_line "x-breaker-upstream-status: 429"
	refute_line --regexp '^x-breaker-error'
}

@test "with the shipped haproxy.cfg the agent finds and keeps HAProxy's record of its drains" {
	# The shipped agent file has no runtime_api: point this agent at the
	# shipped HAProxy's socket, and trip w1 by hand through its SPOP port.
	stop agent
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-shipped.log"
	start_agent agent --listen "$BREAKER_AGENT" -f "$REPO/packaging/spoa-breaker.ini" \
		--runtime-api "unix:$BREAKER_ADMIN_SOCKET" --admin none
	wait_port "$AGENT_PORT"
	local i
	for i in 1 2 3; do
		python3 "$SPOP_CLIENT" "$BREAKER_AGENT" notify \
			"[('breaker-observe', [('be', 'workers'), ('srv', 'w1'), ('status', 500)])]" >/dev/null
	done
	# HAProxy lists the map by the name haproxy.cfg gives it (relative to
	# its default-path); the agent's record is there under that name.
	wait_until 5 bash -c "echo 'show map breaker-owned.map' | socat -t 2 - UNIX-CONNECT:$BREAKER_ADMIN_SOCKET | grep -q ' workers/w1 drain$'"
	run grep -c "loads no breaker-owned.map" "$RUN_DIR/agent.log"
	assert_output 0
}

@test "with the shipped haproxy.cfg, a response from an open breaker's worker shows retry_after" {
	# Trip w1 by hand through the agent's SPOP port; with no runtime_api
	# in the shipped agent file, HAProxy still sends it requests.
	local i
	for i in 1 2 3; do
		python3 "$SPOP_CLIENT" "$BREAKER_AGENT" notify \
			"[('breaker-observe', [('be', 'workers'), ('srv', 'w1'), ('status', 500)])]" >/dev/null
	done
	local headers="" seen=""
	for i in $(seq 6); do
		headers=$(curl -s -o /dev/null -D - -H 'x-breaker-debug: 1' "http://127.0.0.1:$FE_PORT/" | tr -d '\r')
		if grep -qx 'x-worker: W1' <<<"$headers"; then seen=1; break; fi
	done
	[ -n "$seen" ]
	run grep -E '^x-breaker-(state|retry-after): ' <<<"$headers"
	assert_line "x-breaker-state: open"
	assert_line --regexp '^x-breaker-retry-after: (30|29)$'
	# A closed breaker's worker: no retry_after.
	headers=$(curl -s -o /dev/null -D - -H 'x-breaker-debug: 1' "http://127.0.0.1:$FE_PORT/" | tr -d '\r')
	run grep -c '^x-breaker-retry-after' <<<"$headers"
	assert_output 0
}
