#!/usr/bin/env bats
# The same breaker, carried by agent-check instead of the Runtime API; and
# enforce none, where HAProxy is never changed.

load helpers

teardown() {
	stop_all
}

@test "agent-check mode: drain after the threshold, ready with maxconn = probes, then unlimited again" {
	ENFORCE_MODE=agent-check
	W2_BEHAVIOUR=500
	# The port HAProxy's agent-check will use, and the agent listens on.
	AGENT_CHECK_PORT=$(free_port)
	export AGENT_CHECK_PORT
	AGENT_ARGS="--agent-check 127.0.0.1:$AGENT_CHECK_PORT --cooldown 1500ms"
	start_enforce_scene
	trip_w2
	# The drain lasts the 1.5 s cool-down less an agent-inter: a loaded
	# machine can ask HAProxy only after it. The next test holds it open
	# and sees it; here the log says the breaker went on to half-open.
	wait_until 10 grep -q "breaker workers/w2: open -> half_open" "$RUN_DIR/agent.log"
	is_not_drained w1
	# Half-open: HAProxy applies "ready maxconn:1".
	wait_until 10 is_not_drained w2
	wait_until 10 maxconn_is w2 1
	probe_w2_until_closed
	wait_until 10 maxconn_is w2 ""
	# An operator's drain on a healthy server survives the agent's answers.
	# A sleep, not a condition: nothing counts HAProxy's agent checks
	# (the agent logs each answer at debug level only, rate-limited). A
	# loaded machine checks less often in that second, which can only let
	# the test pass having seen less, never fail it.
	haproxy_cli "set server workers/w1 state drain"
	sleep 1
	is_drained w1
}

# One agent-check request "workers/w1" from SOURCE: the answer line, or
# "closed" when the agent closes without one.
agent_check_from() { # SOURCE
	python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[2])), source_address=(sys.argv[1], 0))
s.settimeout(5)
try:
    s.sendall(b"workers/w1\n")
    answer = s.recv(256)
except ConnectionResetError:  # closed with the request unread
    answer = b""
print(answer.decode().strip() if answer else "closed")
' "$1" "$AGENT_CHECK_PORT"
}

@test "agent-check mode: the listener lets in only allow; HAProxy, in it, still drains" {
	ENFORCE_MODE=agent-check
	W2_BEHAVIOUR=500
	AGENT_CHECK_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	export AGENT_CHECK_PORT
	AGENT_ARGS="--agent-check 127.0.0.1:$AGENT_CHECK_PORT --allow 127.0.0.1 --cooldown 60s --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	# 127.0.0.2 plays another host: closed before its request is read.
	run agent_check_from 127.0.0.2
	assert_success
	assert_output closed
	wait_until 5 grep -q "agent-check 127.0.0.1:$AGENT_CHECK_PORT: connection from 127.0.0.2 refused: not in allow" \
		"$RUN_DIR/agent.log"
	wait_until 5 metric_is 'spoa_breaker_connections_refused_total{listener="agent_check",reason="not_allowed"}' 1
	# From an address in the list the answer comes.
	run agent_check_from 127.0.0.1
	assert_success
	assert_output --regexp '^(up|ready)'
	# HAProxy connects from 127.0.0.1: its checks carry the drain.
	trip_w2
	wait_until 10 is_drained w2
	is_not_drained w1
}

@test "enforce none: the breaker opens, HAProxy is never changed" {
	W2_BEHAVIOUR=500
	ADMIN_PORT=$(free_port) # its /metrics count the looks
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --enforce none --cooldown 1500ms --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	trip_w2
	wait_until 10 grep -q "enforce none: would send to HAProxy .*set server workers/w2 state drain" "$RUN_DIR/agent.log"
	# Looks that would have sent it: HAProxy must not have it.
	wait_more_looks 3
	is_not_drained w2
	[ "$(maxconn_of w2)" = 50 ]
	run haproxy_cli "show servers state workers"
	refute_output --regexp ' w[123] [0-9.]+ [0-9]+ 8 '
}

@test "runtime-api and an agent-check listener together are refused" {
	run "$SPOA_BIN" --runtime-api unix:/nonexistent --agent-check 127.0.0.1:1 --check
	assert_failure 1
	assert_output --partial "cannot be combined"
}
