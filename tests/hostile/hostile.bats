#!/usr/bin/env bats
# The agent under attack, on loopback: a log nobody reads, floods of
# refusable requests.
#
# Through each attack a well-behaved SPOP client (tests/lib/hostile.py
# steady: one NOTIFY every 10 ms) must get every ACK, /healthz must answer
# once it is over, and the log must stay bounded. The ACK latencies are
# printed (p50, p99, max), never asserted: a loaded CI machine is not a
# benchmark. This file runs once (tests/check.sh), not once per HAProxy
# version.

load ../e2e/helpers

HOSTILE=$REPO/tests/lib/hostile.py

setup() {
	RUN_DIR=$BATS_TEST_TMPDIR
	export RUN_DIR
	AGENT_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	AGENT_ADDR=127.0.0.1:$AGENT_PORT
}

teardown() {
	stop_all
}

hostile() {
	python3 "$HOSTILE" "$@"
}

# Starts the agent with ARGS (its own listener and admin port added) and
# waits for both.
start_hostile_agent() {
	start_agent agent --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" "$@"
	wait_port "$AGENT_PORT"
	wait_port "$ADMIN_PORT"
}

# The well-behaved client, in the background for SECONDS; once it said
# HELLO, the attack may start.
start_steady() { # SECONDS
	spawn steady python3 "$HOSTILE" steady "$AGENT_ADDR" --seconds "$1" --interval 10 \
		--ready "$RUN_DIR/steady.ready"
	wait_until 5 test -e "$RUN_DIR/steady.ready"
}

# Waits for the client: it must have lost no ACK. Prints its figures to
# the TAP stream (fd 3), labelled.
steady_lost_nothing() { # LABEL
	local pid rc=0
	pid=$(cat "$RUN_DIR/steady.pid")
	wait "$pid" || rc=$?
	rm -f "$RUN_DIR/steady.pid"
	echo "# $1: $(cat "$RUN_DIR/steady.log")" >&3
	grep -q "lost=0" "$RUN_DIR/steady.log" && [ "$rc" -eq 0 ]
}

healthz_answers() {
	[ "$(curl -s -m 1 "http://127.0.0.1:$ADMIN_PORT/healthz")" = ok ]
}

agent_lives() {
	kill -0 "$(cat "$RUN_DIR/agent.pid")"
}

log_lines() {
	wc -l <"$RUN_DIR/agent.log"
}

@test "a log output nobody reads never stalls the agent: lines are dropped and counted" {
	mkfifo "$RUN_DIR/stderr.fifo"
	# A reader that holds the pipe open and never reads (bounded: 60 s).
	spawn reader python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
time.sleep(60)' "$RUN_DIR/stderr.fifo"
	"$SPOA_BIN" --log-level debug --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" \
		2>"$RUN_DIR/stderr.fifo" >&2 &
	echo $! >"$RUN_DIR/agent.pid"
	wait_port "$AGENT_PORT"
	wait_port "$ADMIN_PORT"
	start_steady 5
	# Debug writes a few lines per connection: the 64 KiB pipe is full
	# after a few hundred, the agent's own buffer soon after.
	run hostile churn "$AGENT_ADDR" --conns 3000 --seconds 4
	steady_lost_nothing "stderr to a pipe nobody reads"
	agent_lives
	healthz_answers
	metric_at_least spoa_breaker_log_lines_dropped_total 1
}

@test "warnings are rate-limited: 2,000 garbage agent-check lines write a bounded log" {
	local check_port
	check_port=$(free_port)
	start_hostile_agent --agent-check "127.0.0.1:$check_port"
	wait_port "$check_port"
	start_steady 6
	local before
	before=$(log_lines)
	run hostile garbage "127.0.0.1:$check_port" --lines 2000 --seconds 20
	assert_output "sent=2000"
	local lines=$(($(log_lines) - before))
	echo "# log lines for 2,000 refused agent-check requests: $lines" >&3
	[ "$lines" -le 25 ]
	metric_at_least spoa_breaker_log_lines_suppressed_total 1900
	steady_lost_nothing "agent-check garbage flood"
	healthz_answers
}
