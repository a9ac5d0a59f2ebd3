#!/usr/bin/env bats
# Failures SPOE never sees -- connect refused or timed out, server timeout,
# closed before headers, invalid response, body aborted after the head, a
# failed first server under option redispatch -- reach the breaker through
# HAProxy's counters, and drain the worker; its healthy neighbours are left
# alone.

load helpers

setup() {
	TIMEOUT_SERVER=300ms
	ADMIN_PORT=$(free_port) # its /metrics count the looks
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 60s --admin 127.0.0.1:$ADMIN_PORT"
}

teardown() {
	stop_all
}

scene() { # W2_BEHAVIOUR
	W2_BEHAVIOUR=$1
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	# The first looks at HAProxy set the counters' baseline: a fault
	# counted before it would be taken for history. (The looks before
	# HAProxy was up failed, and count apart.)
	wait_until 30 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 2
}

# Requests until w2 is drained (bounded: the loop watches HAProxy, not a
# count), then checks the neighbours and the reason the agent logged.
drives_w2_to_drain() { # REASON_PATTERN
	local i
	for i in $(seq 60); do
		curl -s -o /dev/null -m 3 "http://127.0.0.1:$FE_PORT/" || true
		is_drained w2 && break
	done
	is_drained w2
	is_not_drained w1
	is_not_drained w3
	grep -q "breaker workers/w2: closed -> open (.*$1" "$RUN_DIR/agent.log"
	run grep -c "breaker workers/w[13]: closed -> open" "$RUN_DIR/agent.log"
	assert_output "0"
}

@test "connection refused" {
	scene refused
	drives_w2_to_drain "connect errors (econ)"
}

@test "connect timeout" {
	scene blackhole
	drives_w2_to_drain "connect errors (econ)"
}

@test "server timeout" {
	scene hang
	drives_w2_to_drain "response errors (eresp)"
}

@test "closed before headers" {
	scene close
	drives_w2_to_drain "response errors (eresp)"
}

@test "invalid response" {
	scene garbage
	drives_w2_to_drain "response errors (eresp)"
}

@test "body aborted after a 200 head" {
	scene midbody
	drives_w2_to_drain "bodies aborted after the head (srv_abrt)"
}

@test "with option redispatch the failing first server is the one counted" {
	EXTRA_DEFAULTS="option redispatch"
	scene refused
	# Clients see only successes: the failed first tries are redispatched.
	local i
	for i in $(seq 60); do
		run curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:$FE_PORT/"
		assert_output "200"
		is_drained w2 && break
	done
	is_drained w2
	is_not_drained w1
	is_not_drained w3
	grep -q "breaker workers/w2: closed -> open (.*redispatched (wredis)" "$RUN_DIR/agent.log"
}

# A look reads HAProxy's whole `show stat`: 20,000 servers make it over
# 4 MB, which once failed every look (faults unseen) and, each failed
# look cutting the reply short, left HAProxy 2.6's Runtime API answering
# nothing at all. Read as it arrives, it is read whole every time.
@test "a show stat over 4 MB (20,000 servers) is read at every look: faults still drain" {
	local fleet=$BATS_TEST_TMPDIR/fleet.cfg i
	{
		printf 'backend fleet\n    mode http\n    timeout connect 1s\n    timeout server 1s\n'
		for i in $(seq 20000); do printf '    server s%d 127.0.0.1:9 disabled\n' "$i"; done
	} >"$fleet"
	HAPROXY_EXTRA_ARGS="-f $fleet"
	AGENT_ARGS="$AGENT_ARGS --max-breakers 30000"
	# HAProxy takes seconds to start with 20,000 servers on a loaded
	# machine: more than wait_port's 5 s (for this test only).
	wait_port() { wait_port_within 60 "$1"; }
	scene refused
	local bytes failed ok
	bytes=$(haproxy_cli "show stat -1 4 -1" | wc -c)
	echo "show stat -1 4 -1: $bytes bytes"
	[ "$bytes" -gt $((4 << 20)) ]
	# (A look before HAProxy was up failed: count from the good ones,
	# which scene waited for.)
	failed=$(metric 'spoa_breaker_haproxy_looks_total{result="failed"}')
	drives_w2_to_drain "connect errors (econ)"
	ok=$(metric 'spoa_breaker_haproxy_looks_total{result="ok"}')
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((ok + 3))
	metric_is 'spoa_breaker_haproxy_looks_total{result="failed"}' "$failed"
	haproxy_cli "show info" | grep -q '^Pid: '
}
