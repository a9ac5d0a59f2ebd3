#!/usr/bin/env bats
# ack_variables through a real HAProxy: the answer carries the variables
# listed and no other, a reload widens the list, and --check names a
# variable that does not exist where it is written.

load helpers

setup() {
	INI=$BATS_TEST_TMPDIR/agent.ini
	export INI
	AGENT_ARGS="-f $INI --cooldown 60s"
}

teardown() {
	stop_all
}

write_ini() { # LIST
	printf '[agent]\nack_variables = %s\n' "$1" >"$INI"
}

# Every x-breaker-* header of one response, "name=value" sorted, the empty
# ones left out: a variable the agent did not set reads empty in HAProxy.
breaker_headers_of() { # PATH
	curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT$1" | tr -d '\r' |
		awk -F': ' 'tolower($1) ~ /^x-breaker-/ && $2 != "" {print tolower($1) "=" $2}' | sort |
		paste -sd' '
}

@test "with ack_variables = state, HAProxy gets the state and none of the others" {
	write_ini state
	start_scene
	run breaker_headers_of /status/200
	assert_output "x-breaker-state=closed"
	run breaker_headers_of /status/503
	assert_output "x-breaker-state=closed"
	# Not even the transition of a trip: only what was asked for.
	local i
	for i in $(seq 50); do
		run breaker_headers_of /status/500
		[ "$output" = "x-breaker-state=closed" ] || break
	done
	assert_output "x-breaker-state=open"
	grep -q "breaker workers/w1: closed -> open" "$RUN_DIR/agent.log"
}

@test "ack_variables = none: HAProxy is answered at once, with no variable" {
	write_ini none
	start_scene
	# An empty ACK would stall HAProxy 3.1 for timeout processing; the
	# agent's answer unsets error instead. Ten requests well within it.
	local i
	for i in $(seq 10); do
		run breaker_headers_of /status/200
		assert_output ""
	done
	# An ACK HAProxy waited on until `timeout processing` would set the
	# agent error variable.
	run header_of /status/200 x-breaker-agent-error
	assert_output ""
}

@test "SIGHUP widens the list without a restart" {
	write_ini state
	start_scene
	run breaker_headers_of /status/200
	assert_output "x-breaker-state=closed"
	local pid
	pid=$(cat "$RUN_DIR/agent.pid")
	write_ini "state, outcome, failures"
	kill -HUP "$pid"
	wait_until 5 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	! grep -q "ack_variables changed; it takes effect at the next restart" "$RUN_DIR/agent.log"
	run breaker_headers_of /status/200
	assert_output "x-breaker-failures=0 x-breaker-outcome=success x-breaker-state=closed"
	[ "$(cat "$RUN_DIR/agent.pid")" = "$pid" ]
}

@test "--check names an unknown variable and its line" {
	printf '[agent]\nlog_level = info\nack_variables = state, sate\n' >"$INI"
	run "$SPOA_BIN" --check -f "$INI"
	assert_failure 1
	assert_output --partial "$INI:3: ack_variables 'state, sate': 'sate' is not one of upstream_status, outcome, state, failures, transition, ejection_capped, retry_after, all or none"
	run "$SPOA_BIN" --check --ack-variables state,outcome
	assert_success
}
