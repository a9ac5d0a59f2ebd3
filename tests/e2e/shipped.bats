#!/usr/bin/env bats
# The shipped haproxy/haproxy.cfg, with the SPOE file it names by default
# (spoe-breaker-steady.conf: steady-state mode) and the shipped agent file
# (packaging/spoa-breaker.ini), work as they are. The agent's runtime_api
# is pointed at this test's HAProxy; everything else is as shipped.

load helpers

setup() {
	# What haproxy.cfg names when BREAKER_SPOE_CONF is not set, from the tree.
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
	local name port
	for name in W1 W2 W3; do
		port=$(free_port)
		start_worker "$name" "$port" 200
		export "BREAKER_$name=127.0.0.1:$port"
	done
	grep -q '^filter spoe.*BREAKER_SPOE_CONF-/etc/haproxy/spoe-breaker-steady.conf}' \
		<(sed 's/^ *//' "$REPO/haproxy/haproxy.cfg")
	"$HAPROXY_BIN" -c -f "$REPO/haproxy/haproxy.cfg" >"$RUN_DIR/check.log" 2>&1
	spawn haproxy "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg"
	wait_port "$FE_PORT"
	AGENT_ARGS="-f $REPO/packaging/spoa-breaker.ini --runtime-api unix:$BREAKER_ADMIN_SOCKET --admin 127.0.0.1:$ADMIN_PORT"
	# shellcheck disable=SC2086 # a list of options
	start_agent agent --listen "$BREAKER_AGENT" $AGENT_ARGS
	wait_port "$AGENT_PORT"
	wait_until 10 agent_is_up
}

teardown() {
	stop_all
}

# The value at a dotted path of the agent's /state ("steady_state.watched_map").
state_of() { # PATH
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$1"
}
state_is() { [ "$(state_of "$1")" = "$2" ]; }

# The shipped agent file, less its runtime_api: an agent that keeps no map.
ini_without_runtime_api() {
	grep -v '^runtime_api' "$REPO/packaging/spoa-breaker.ini" >"$RUN_DIR/no-runtime-api.ini"
	grep -q '^runtime_api' "$REPO/packaging/spoa-breaker.ini"
}

@test "the shipped configuration passes haproxy -c without a warning" {
	run grep -i -E "warning|alert" "$RUN_DIR/check.log"
	assert_failure
}

@test "the shipped configuration passes haproxy -c without a warning with the every-response SPOE file too" {
	BREAKER_SPOE_CONF=$REPO/haproxy/spoe-breaker.conf \
		"$HAPROXY_BIN" -c -f "$REPO/haproxy/haproxy.cfg" >"$RUN_DIR/check-every.log" 2>&1
	run grep -i -E "warning|alert" "$RUN_DIR/check-every.log"
	assert_failure
}

@test "with the shipped defaults, healthy workers' successes cost no SPOP message" {
	wait_until 10 grep -q "loads breaker-watched.map: steady-state mode" "$RUN_DIR/agent.log"
	local before after i
	before=$(metric 'spoa_breaker_spop_frames_total{type="notify"}')
	for i in $(seq 30); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/")" = 200 ]
	done
	after=$(metric 'spoa_breaker_spop_frames_total{type="notify"}')
	[ -n "$before" ]
	[ "$before" = "$after" ]
	# A failure is sent, and it is steady-state mode's message.
	curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/500"
	wait_until 5 metric_is spoa_breaker_spop_steady_messages_total 1
	wait_until 5 state_is steady_state.watched_map kept
	run state_of steady_state.problem
	assert_output None
}

@test "with the shipped defaults, a failing worker is drained, and back once it answers again" {
	stop W3
	start_worker W3 "${BREAKER_W3##*:}" 500
	# A short cool-down, so that the probe comes within the test.
	stop agent
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-previous.log"
	# shellcheck disable=SC2086 # a list of options
	start_agent agent --listen "$BREAKER_AGENT" $AGENT_ARGS --cooldown 1s
	wait_port "$AGENT_PORT"
	wait_until 10 grep -q "loads breaker-watched.map: steady-state mode" "$RUN_DIR/agent.log"
	trip_server w3
	wait_until 5 is_drained w3
	# Busy is not dead: w2 answers 503s and is never drained.
	for _ in $(seq 10); do curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/503"; done
	is_not_drained w2
	# w3 recovers: its half-open probe's 200 is sent (it is watched while
	# dirty), and its breaker closes.
	stop W3
	start_worker W3 "${BREAKER_W3##*:}" 200
	local i
	for i in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		[ "$(logged_state_of w3)" = closed ] && break
		sleep 0.05
	done
	[ "$(logged_state_of w3)" = closed ]
	wait_until 5 is_not_drained w3
	is_not_drained w2
}

@test "steady-state mode with an agent that keeps no map is said loudly, at start and when HAProxy sends" {
	ini_without_runtime_api
	run "$SPOA_BIN" --check -f "$RUN_DIR/no-runtime-api.ini"
	assert_success
	assert_output --partial "no runtime_api: steady-state mode (spoe-breaker-steady.conf, the shipped default) cannot work"
	stop agent
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-previous.log"
	start_agent agent --listen "$BREAKER_AGENT" -f "$RUN_DIR/no-runtime-api.ini" \
		--admin "127.0.0.1:$ADMIN_PORT"
	wait_port "$AGENT_PORT"
	wait_until 10 agent_is_up
	grep -q "no runtime_api: an HAProxy in steady-state mode" "$RUN_DIR/agent.log"
	run metric spoa_breaker_steady_state_unkept
	assert_output 0
	# HAProxy sends a failure in steady-state mode: no one keeps its map.
	curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/500"
	wait_until 5 metric_is spoa_breaker_steady_state_unkept 1
	wait_until 5 grep -q "HAProxy sends in steady-state mode (spoe-breaker-steady.conf) and no one keeps its breaker-watched.map" "$RUN_DIR/agent.log"
	grep "no one keeps its breaker-watched.map" "$RUN_DIR/agent.log" | grep -q '\[error\]'
	run state_of steady_state.watched_map
	assert_output unkept
	run state_of steady_state.problem
	assert_output --partial "give the agent runtime_api, or use spoe-breaker.conf"
}

@test "with the shipped configuration, worker responses pass unchanged" {
	run bash -c "curl -s -D - http://127.0.0.1:$FE_PORT/status/503 | tr -d '\r'"
	assert_line "HTTP/1.1 503 Service Unavailable"
	refute_line --regexp '^x-breaker'
	assert_line --regexp '^\{"worker":"W[123]","status":503\}$'
}

# The response headers a client FROM gets for a 429, asking for debug headers.
debug_headers_from() { # FROM
	curl -s -o /dev/null -D - --interface "$1" -H 'x-breaker-debug: 1' \
		"http://127.0.0.1:$FE_PORT/status/429" | tr -d '\r'
}

@test "with nothing set, a client sending x-breaker-debug gets no x-breaker-* header" {
	run debug_headers_from 127.0.0.1
	assert_line --regexp '^HTTP/1.1 429'
	refute_line --regexp '^x-breaker-'
	# Not for want of a verdict: the agent was asked.
	wait_until 5 metric_at_least 'spoa_breaker_spop_frames_total{type="notify"}' 1
}

@test "only a client listed in BREAKER_DEBUG_FROM sees the agent's verdict" {
	BREAKER_DEBUG_FROM="127.0.0.1 ::1" \
		"$HAPROXY_BIN" -c -f "$REPO/haproxy/haproxy.cfg" >"$RUN_DIR/check-debug.log" 2>&1
	run grep -i -E "warning|alert" "$RUN_DIR/check-debug.log"
	assert_failure
	stop haproxy
	BREAKER_DEBUG_FROM="127.0.0.1 ::1" spawn haproxy "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg"
	wait_port "$FE_PORT"
	wait_until 10 agent_is_up
	run debug_headers_from 127.0.0.1
	assert_line "x-breaker-state: closed"
	assert_line "x-breaker-outcome: backpressure"
	assert_line "x-breaker-upstream-status: 429"
	refute_line --regexp '^x-breaker-error'
	# Another address on the same host is not listed: the same answer, no verdict.
	run debug_headers_from 127.0.0.2
	assert_line --regexp '^HTTP/1.1 429'
	refute_line --regexp '^x-breaker-'
}

@test "with the shipped haproxy.cfg the agent finds and keeps HAProxy's record of its drains" {
	# Trip w1 by hand through the agent's SPOP port.
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

# HAProxy again, as the shipped configuration starts it, with the agent's
# record loaded from BREAKER_OWNED_MAP (a file of the test's own).
restart_haproxy_with_owned_map() {
	local old
	old=$(haproxy_pid)
	stop haproxy
	spawn haproxy "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg"
	wait_port "$FE_PORT"
	# The frontend's port may still be the old process's a moment (a
	# loaded machine): the admin socket must answer from the new one.
	wait_until 10 pid_changed_from "$old"
}
owned_map_lists() { # ENTRY
	haproxy_cli "show map $BREAKER_OWNED_MAP" | grep -qE "^0x[0-9a-f]+ $1\$"
}
owned_map_lacks() { ! haproxy_cli "show map $BREAKER_OWNED_MAP" | grep -q " $1 "; }
trip_w1_over_spop() {
	local i
	for i in 1 2 3; do
		python3 "$SPOP_CLIENT" "$BREAKER_AGENT" notify \
			"[('breaker-observe', [('be', 'workers'), ('srv', 'w1'), ('status', 500)])]" >/dev/null
	done
}

@test "reload-haproxy.sh save keeps the agent's record with the drains: after a restart, an agent without its snapshot lifts its own drain" {
	export BREAKER_OWNED_MAP=$RUN_DIR/breaker-owned.map
	: >"$BREAKER_OWNED_MAP"
	restart_haproxy_with_owned_map
	wait_until 10 agent_is_up
	trip_w1_over_spop
	wait_until 5 is_drained w1
	wait_until 5 owned_map_lists "workers/w1 drain"
	"$REPO/haproxy/reload-haproxy.sh" save
	grep -qx "workers/w1 drain" "$BREAKER_OWNED_MAP"
	# The agent dies with no snapshot (the tests' agents keep none); HAProxy
	# restarts on the two files: w1 drained, the drain the agent's.
	kill -9 "$(cat "$RUN_DIR/agent.pid")"
	rm -f "$RUN_DIR/agent.pid"
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-killed.log"
	restart_haproxy_with_owned_map
	is_drained w1
	owned_map_lists "workers/w1 drain"
	# A fresh agent: its w1 breaker is closed, and the record says the
	# drain is its own, so it lifts it (an operator's it would leave).
	# shellcheck disable=SC2086 # a list of options
	start_agent agent --listen "$BREAKER_AGENT" $AGENT_ARGS
	wait_until 10 grep -q "records that the agent drained workers/w1: taken back as its own" "$RUN_DIR/agent.log"
	wait_until 5 is_not_drained w1
	wait_until 5 owned_map_lacks workers/w1
}

@test "reload-haproxy.sh save with a BREAKER_OWNED_MAP HAProxy did not load says so and changes neither file" {
	export BREAKER_OWNED_MAP=$RUN_DIR/other/breaker-owned.map
	mkdir -p "$RUN_DIR/other"
	echo "workers/w9 drain" >"$BREAKER_OWNED_MAP"
	cp "$BREAKER_STATE_FILE" "$RUN_DIR/state-before"
	trip_w1_over_spop
	wait_until 5 is_drained w1
	run "$REPO/haproxy/reload-haproxy.sh" save
	assert_failure 1
	assert_output --partial "does not list the map $BREAKER_OWNED_MAP"
	[ "$(cat "$BREAKER_OWNED_MAP")" = "workers/w9 drain" ]
	cmp "$BREAKER_STATE_FILE" "$RUN_DIR/state-before"
	run "$REPO/haproxy/reload-haproxy.sh" restart
	assert_failure 2
}

@test "with every response sent and no runtime_api, a response from an open breaker's worker shows retry_after" {
	# The setup for an agent without HAProxy's Runtime API: HAProxy sends
	# every response (spoe-breaker.conf), and nothing drains w1, so
	# HAProxy still sends it requests once it is tripped by hand.
	ini_without_runtime_api
	stop agent
	stop haproxy
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-previous.log"
	BREAKER_SPOE_CONF=$REPO/haproxy/spoe-breaker.conf BREAKER_DEBUG_FROM=127.0.0.1 \
		spawn haproxy "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg"
	wait_port "$FE_PORT"
	start_agent agent --listen "$BREAKER_AGENT" -f "$RUN_DIR/no-runtime-api.ini" \
		--admin "127.0.0.1:$ADMIN_PORT"
	wait_port "$AGENT_PORT"
	wait_until 10 agent_is_up
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
	# Every response sent: no steady-state message, nothing to report.
	run metric spoa_breaker_spop_steady_messages_total
	assert_output 0
	run state_of steady_state.watched_map
	assert_output unused
	run grep -c "no one keeps its breaker-watched.map" "$RUN_DIR/agent.log"
	assert_output 0
}
