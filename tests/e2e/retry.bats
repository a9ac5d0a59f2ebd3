#!/usr/bin/env bats
# The shipped haproxy.cfg retries a worker's capacity status on another
# worker (retry-on, option redispatch 1, retries 2), and the agent never
# charges the busy worker for it: HAProxy's counters show such a retry as
# wredis with wretr, a failed connection as wredis alone (faults.c). A
# worker that refuses connections is still drained. When no worker can
# take a request, HAProxy's own 503 tells the client when to come back.

load helpers

setup() {
	shipped_cfg_env "$REPO/haproxy/spoe-breaker.conf"
}

teardown() {
	stop_all
}

# HAProxy >= 3.0.4 can retry a 429 (retry-on 429); older ones cannot.
retries_429() {
	local v
	v=$("$HAPROXY_BIN" -v | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p')
	[ "$(printf '%s\n' 3.0.4 "$v" | sort -V | head -n1)" = 3.0.4 ]
}

@test "a busy worker's 503 is retried on another worker and never drains it" {
	shipped_scene 503 200 200
	local i
	for i in $(seq 12); do
		run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/"
		assert_output 200
	done
	# HAProxy did retry it: the busy worker was chosen and refused.
	wait_until 10 metric_at_least 'spoa_breaker_capacity_retries_total' 2
	# Two more looks: every counter of those requests has been read.
	local ok
	ok=$(metric 'spoa_breaker_haproxy_looks_total{result="ok"}')
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((ok + 2))
	run breaker_field workers/w1 state
	assert_output closed
	run breaker_field workers/w1 failure_streak
	assert_output 0
	run metric 'spoa_breaker_faults_polled_total{kind="redispatch"}'
	assert_output 0
	is_not_drained w1
	run grep -c "closed -> open" "$RUN_DIR/agent.log"
	assert_output 0
}

@test "every worker busy: the client gets the last worker's 503, untouched" {
	shipped_scene 503 503 503
	run bash -c "curl -s -D - http://127.0.0.1:$FE_PORT/ | tr -d '\r'"
	assert_line "HTTP/1.1 503 Service Unavailable"
	assert_line --regexp '^x-worker: W[123]$'
	assert_line --regexp '^\{"worker":"W[123]","status":503\}$'
	refute_line --regexp '^x-router-'
	local i
	for i in $(seq 6); do curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"; done
	wait_until 10 metric_at_least 'spoa_breaker_capacity_retries_total' 14
	is_not_drained w1
	is_not_drained w2
	is_not_drained w3
	run grep -c "closed -> open" "$RUN_DIR/agent.log"
	assert_output 0
}

@test "a busy worker's 429 is retried where HAProxy can, passed on where it cannot" {
	shipped_scene 429 200 200
	local codes i
	for i in 1 2 3; do
		codes+=$(curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$FE_PORT/")
	done
	if retries_429; then
		[ "$codes" = "200 200 200 " ]
	else
		[ "$codes" = "429 200 200 " ]
	fi
	# Three more looks: the counters of those requests have been read,
	# and anything they made the agent send has landed.
	wait_more_looks 3
	run breaker_field workers/w1 failure_streak
	assert_output 0
	is_not_drained w1
}

@test "a worker that refuses connections is still drained under the retries" {
	shipped_scene refused 200 200
	local i
	for i in $(seq 30); do
		run curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:$FE_PORT/"
		assert_output 200
		is_drained w1 && break
		sleep 0.1
	done
	wait_until 10 is_drained w1
	is_not_drained w2
	is_not_drained w3
	grep -q "breaker workers/w1: closed -> open (.*redispatched (wredis)" "$RUN_DIR/agent.log"
	run metric 'spoa_breaker_capacity_retries_total'
	assert_output 0
}

@test "a half-open probe answered 503 and retried elsewhere closes the breaker, as over SPOP" {
	AGENT_COOLDOWN=1s
	shipped_scene 503 200 200
	# Trip w1 by hand (its own answers are only 503s), then wait for the
	# cool-down: HAProxy lets one probe in.
	local i
	for i in 1 2 3; do
		python3 "$SPOP_CLIENT" "$BREAKER_AGENT" notify \
			"[('breaker-observe', [('be', 'workers'), ('srv', 'w1'), ('status', 500)])]" >/dev/null
	done
	# Open, then half-open: read from the log, as the drain between them
	# lasts only the 1 s cool-down, which a loaded machine can look past.
	wait_until 10 bash -c "grep -q 'breaker workers/w1: closed -> open' '$RUN_DIR/agent.log'"
	wait_until 10 bash -c "grep -q 'breaker workers/w1: open -> half_open' '$RUN_DIR/agent.log'"
	wait_until 10 is_not_drained w1
	for i in $(seq 12); do
		run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/"
		assert_output 200
		grep -q "breaker workers/w1: half_open -> closed" "$RUN_DIR/agent.log" && break
		sleep 0.2
	done
	wait_until 10 bash -c "grep -q 'breaker workers/w1: half_open -> closed (backpressure, HAProxy counters: [0-9]* capacity statuses retried' '$RUN_DIR/agent.log'"
	run breaker_field workers/w1 state
	assert_output closed
}

# The default cool-down (60 s) keeps the breaker open, and w1 drained, for
# as long as the test needs: with a short one the drain lasts only until
# the half-open, and a test slowed by a loaded machine may ask HAProxy
# only after that.
@test "a worker wedged at 503 is found though HAProxy retries every one of its 503s elsewhere" {
	AGENT_EXTRA="--wedged-after 1s --minimum-volume 5" shipped_scene 503 200 200
	local i
	for i in $(seq 300); do
		[ "$(breaker_field workers/w1 state)" = open ] && break
		run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/"
		assert_output 200 # the retries: no client ever sees the 503
		sleep 0.02 # paces the traffic: the wedged rule counts time, not requests
	done
	run breaker_field workers/w1 opened_by
	assert_output wedged
	wait_until 10 is_drained w1
	# From the counters: the 503s reached SPOP never.
	grep -q "breaker workers/w1: closed -> open (backpressure, HAProxy counters: [0-9]* capacity statuses retried.*: wedged" \
		"$RUN_DIR/agent.log"
	is_not_drained w2
	is_not_drained w3
}

# Its half-open probe gets a 503 again: still wedged, open again - a
# capacity status is no sign of life from a worker opened for them. Read
# from the log, which keeps every transition: the drain of a 1 s cool-down
# can come and go between two questions of a slowed test.
@test "a worker opened as wedged whose half-open probe gets a 503 is still wedged" {
	AGENT_COOLDOWN=1s AGENT_EXTRA="--wedged-after 1s --minimum-volume 5" shipped_scene 503 200 200
	local i
	for i in $(seq 600); do
		grep -q "breaker workers/w1: half_open -> open .*still wedged" "$RUN_DIR/agent.log" && break
		run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/"
		assert_output 200
		sleep 0.02 # paces the traffic, as above
	done
	grep -q "breaker workers/w1: closed -> open (backpressure, HAProxy counters: [0-9]* capacity statuses retried.*: wedged" \
		"$RUN_DIR/agent.log"
	grep -q "breaker workers/w1: open -> half_open" "$RUN_DIR/agent.log"
	grep -q "breaker workers/w1: half_open -> open .*still wedged: the half-open probe got a capacity status" \
		"$RUN_DIR/agent.log"
	run grep -c "breaker workers/w1: half_open -> closed" "$RUN_DIR/agent.log"
	assert_output 0
}

# "STATUS CODE RETRY-AFTER" of one request (- for a missing header).
answer_of() { # PATH
	curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT$1" | tr -d '\r' | awk -F': ' '
		NR==1 {split($0, f, " "); s=f[2]}
		tolower($1)=="x-router-error-code" {c=$2} tolower($1)=="retry-after" {r=$2}
		END {print s, (c ? c : "-"), (r ? r : "-")}'
}

@test "HAProxy's own 503 when no worker can take a request carries Retry-After, nothing else does" {
	export BREAKER_RETRY_AFTER=12
	shipped_scene 503 200 200
	# A worker's own answers, and its 503 when every try was refused.
	run answer_of /
	assert_output "200 - -"
	run answer_of /status/503
	assert_output "503 - -"
	local s
	# Every server drained, as the breaker does: breaker_open.
	for s in w1 w2 w3; do haproxy_cli "set server workers/$s state drain" >/dev/null; done
	run answer_of /
	assert_output "503 breaker_open 12"
	# Every server down: no_healthy_workers.
	for s in w1 w2 w3; do haproxy_cli "set server workers/$s state maint" >/dev/null; done
	run answer_of /
	assert_output "503 no_healthy_workers 12"
	# Another error of HAProxy's own: a worker that refuses (502).
	haproxy_cli "set server workers/w1 addr 127.0.0.1 port $(free_port)" >/dev/null
	haproxy_cli "set server workers/w1 state ready" >/dev/null
	run answer_of /
	assert_output "502 upstream_unreachable -"
}

# The agent's entry for backend workers in breaker-retry-at.map, or nothing.
retry_moment() {
	haproxy_cli "show map breaker-retry-at.map" | awk '$2 == "workers" {print $3}'
}

retry_moment_set() { [ -n "$(retry_moment)" ]; }
retry_moment_gone() { [ -z "$(retry_moment)" ]; }

every_server_drained() { is_drained w1 && is_drained w2 && is_drained w3; }

# One request a worker answers 200, then whether every breaker is closed:
# for wait_until.
one_probe_then_all_closed() {
	curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/200"
	[ "$(breaker_field workers/w1 state)" = closed ] && [ "$(breaker_field workers/w2 state)" = closed ] &&
		[ "$(breaker_field workers/w3 state)" = closed ]
}

# Failing requests until every breaker is open and its server drained.
open_every_breaker() {
	local i
	for i in $(seq 60); do
		every_server_drained && return 0
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
	done
	every_server_drained
}

@test "HAProxy's own 503 tells the seconds until the backend's first breaker lets a probe through" {
	AGENT_COOLDOWN=40s AGENT_EXTRA="--max-ejection-percent 100 --drain-last-server" \
		shipped_scene 500 500 500
	open_every_breaker
	wait_until 10 retry_moment_set
	local moment now seconds
	moment=$(retry_moment)
	now=$(date +%s)
	# The moment the first of the three opened plus its cool-down.
	[ "$moment" -gt $((now + 30)) ]
	[ "$moment" -le $((now + 41)) ]
	run answer_of /
	assert_output --regexp '^503 breaker_open [0-9]+$'
	seconds=${output##* }
	[ "$seconds" -gt 30 ] && [ "$seconds" -le 40 ]
}

@test "the backend's retry moment is written again when HAProxy loses it, and goes when its breakers close" {
	# The entry lasts while every breaker is open: the cool-down leaves a
	# loaded machine seconds to look, delete and look again before the
	# first half-open takes it away.
	AGENT_COOLDOWN=6s AGENT_EXTRA="--max-ejection-percent 100 --drain-last-server" \
		shipped_scene 500 500 500
	open_every_breaker
	wait_until 10 retry_moment_set
	# Lost (an HAProxy restarted without the agent's entries starts from
	# the shipped, empty file; here an operator deletes it): the next
	# look writes it again. HAProxy's empty answer says it deleted it (a
	# `show map` after it could already see the agent's new entry).
	run haproxy_cli "del map breaker-retry-at.map workers"
	assert_output ""
	wait_until 10 retry_moment_set
	# Half-open after the cool-down: successful probes close every breaker.
	wait_until 60 one_probe_then_all_closed
	run breaker_field workers/w3 state
	assert_output closed
	# Gone from HAProxy's map: the agent deleted it (its log may not say
	# so: command lines are rate-limited).
	wait_until 10 retry_moment_gone
}
