#!/usr/bin/env bats
# Retries told apart by what happened, whatever `retry-on` lists: HAProxy
# retries on another worker (retries 2, option redispatch 1) with a short
# `timeout server`, under each of `retry-on all-retryable-errors`,
# `response-timeout` and `conn-failure 500 502 503 504`. A hung worker is
# opened and stays open through its half-open probes; a busy one (503,
# 429) is never charged; a failing one (500) retried elsewhere passes for
# a busy one - no counter of HAProxy's tells its retried 500 from a
# retried 503 (docs/operating.md, "Retrying capacity statuses").

load helpers
load fleet_scene

teardown() {
	stop_all
}

# retry_scene SETTING B1 B2 B3 B4: the fleet scene under `retry-on
# SETTING`, every retry to another worker, `timeout server 1s`.
retry_scene() {
	# shellcheck disable=SC2034 # read by start_fleet_scene
	RETRY_ON=$1 RETRIES=2 REDISPATCH="option redispatch 1" TIMEOUT_SERVER=${TIMEOUT_SERVER:-1s}
	shift
	start_fleet_scene "$@"
}

# HAProxy >= 3.0.4 can retry a 429 (retry-on 429); older ones cannot.
retries_429() {
	local v
	v=$("$HAPROXY_BIN" -v | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p')
	[ "$(printf '%s\n' 3.0.4 "$v" | sort -V | head -n1)" = 3.0.4 ]
}

logged_count() { grep -c -F -- "$1" "$RUN_DIR/agent.log" || true; }
logged_at_least() { [ "$(logged_count "$1")" -ge "$2" ]; }

# No breaker but w2's ever left closed, and no server but w2 was drained.
only_w2_touched() {
	run grep -E -- "breaker workers/w[134]: " "$RUN_DIR/agent.log"
	assert_output ""
	run grep -v -x w2 "$RUN_DIR/drained"
	assert_output ""
}

# A hung w2 (it accepts, never answers): opened, then each half-open probe
# hangs and times out. Under a retry-on that covers response timeouts the
# probe is retried elsewhere, and the agent, told so (retried_timeouts),
# reads that retry as no sign of life (the probe was held across a look)
# and opens it again; under one that does not, the timeout is an eresp, a
# failure. Watched over two probe rounds, never closed. The clients are
# served by the three others.
hung_stays_open() { # SETTING
	local told=""
	[[ "$1" == *response-timeout* || "$1" == all-retryable-errors* ]] && told=--retried-timeouts
	AGENT_ARGS="--cooldown 1s --max-cooldown 2s $told" retry_scene "$1" 200 'hang!' 200 200
	start_load 8 100000 45 /
	wait_until 30 logged_at_least "breaker workers/w2: closed -> open" 1
	# The first round may end on requests sent before it opened, timing
	# out then: three rounds, so that two of them are the probes'.
	wait_until 30 logged_at_least "breaker workers/w2: half_open -> open" 3
	: >"$RUN_DIR/drained"
	drained_servers >>"$RUN_DIR/drained"
	stop load
	run grep -c -F -- "breaker workers/w2: half_open -> closed" "$RUN_DIR/agent.log"
	assert_output 0
	# Not vacuous: HAProxy let a probe in, in at least two rounds.
	local counts
	counts=$(arrivals_per_episode)
	echo "# requests at w2 per half-open round: $(echo "$counts" | tr '\n' ' ')" >&3
	[ "$(echo "$counts" | awk '$1 >= 1' | wc -l)" -ge 2 ]
	only_w2_touched
	# No client got a worker's answer from w2.
	run awk '$2 == "w2"' "$RUN_DIR/load.out"
	assert_output ""
}

@test "all-retryable-errors: a hung worker is opened and stays open through its probes" {
	hung_stays_open all-retryable-errors
}

@test "response-timeout: a hung worker is opened and stays open through its probes" {
	hung_stays_open response-timeout
}

@test "conn-failure 500 502 503 504: a hung worker is opened and stays open through its probes" {
	hung_stays_open "conn-failure 500 502 503 504"
}

# Does `retry-on SETTING` retry STATUS?
retried_by() { # SETTING STATUS
	[[ " $1 " == *" $2 "* ]] || { [ "$1" = all-retryable-errors ] && [[ "$2" == 50[0234] ]]; }
}

# A busy w2 answering only STATUS (503 or 429) beside three that serve,
# 200 answers to 8 clients: nothing is opened or drained. When HAProxy
# retries the status the clients never see it, and the agent counts it a
# capacity status retried; when it does not, it reaches the client and
# SPOE as itself. The agent is told what the retry-on retries, as an
# operator would tell it (retried_timeouts). No worker hangs here: a long
# `timeout server` keeps a healthy answer slowed by a loaded machine from
# timing out, its retry landing on w2 last and its status reaching the
# client although HAProxy retries it.
busy_never_charged() { # SETTING STATUS
	local told=""
	[[ "$1" == *response-timeout* || "$1" == all-retryable-errors* ]] && told=--retried-timeouts
	AGENT_ARGS="$told" TIMEOUT_SERVER=30s retry_scene "$1" 200 "$2" 200 200
	start_load 8 200 30 /
	watch_drains_while_loaded
	[ "$(load_answered)" -ge 200 ]
	two_more_looks
	run grep -c -- "-> open" "$RUN_DIR/agent.log"
	assert_output 0
	run cat "$RUN_DIR/drained"
	assert_output ""
	[ "$(breaker_field workers/w2 failure_streak)" = 0 ]
	if retried_by "$1" "$2"; then
		run awk '$1 != 200' "$RUN_DIR/load.out"
		assert_output ""
		wait_until 5 metric_at_least 'spoa_breaker_capacity_retries_total' 1
	else
		run awk '$1 != 200 && !($1 == '"$2"' && $2 == "w2")' "$RUN_DIR/load.out"
		assert_output ""
		grep -q "^$2 w2 " "$RUN_DIR/load.out"
	fi
}

@test "all-retryable-errors: a busy worker's 503 is never charged" {
	busy_never_charged all-retryable-errors 503
}

@test "response-timeout: a busy worker's 503 is never charged" {
	busy_never_charged response-timeout 503
}

@test "conn-failure 500 502 503 504: a busy worker's 503 is never charged" {
	busy_never_charged "conn-failure 500 502 503 504" 503
}

# 429 is in none of the three; HAProxy >= 3.0.4 retries it when listed.
@test "a busy worker's 429, retried where HAProxy can, is never charged under any of the three" {
	local setting extra=""
	retries_429 && extra=" 429"
	for setting in all-retryable-errors response-timeout "conn-failure 500 502 503 504"; do
		busy_never_charged "$setting$extra" 429
		stop_all
	done
}

# A failing w2 (500 to everything) under a retry-on that lists 500: HAProxy
# retries each 500 on another worker, and the clients are served. The
# agent cannot see a retried failure status: SPOE never gets the retried
# response, and HAProxy counts it exactly as a retried 503 (wretr and
# wredis, no hrsp_5xx, no eresp; docs/operating.md). So w2 passes for a
# busy worker - what is pinned here - and no healthy worker is ever
# charged for it.
failing_passes_for_busy() { # SETTING
	retry_scene "$1" 200 500 200 200
	start_load 8 200 30 /
	watch_drains_while_loaded
	[ "$(load_answered)" -ge 200 ]
	run awk '$1 != 200 || $2 == "w2"' "$RUN_DIR/load.out"
	assert_output ""
	# HAProxy did send w2 its share, and retried every one of its 500s.
	[ "$(wc -l <"$RUN_DIR/w2.arrivals")" -ge 20 ]
	two_more_looks
	wait_until 5 metric_at_least 'spoa_breaker_capacity_retries_total' 20
	run grep -c -- "-> open" "$RUN_DIR/agent.log"
	assert_output 0
	run cat "$RUN_DIR/drained"
	assert_output ""
	[ "$(breaker_field workers/w2 state)" = closed ]
}

@test "all-retryable-errors: a failing worker's retried 500s pass for busy ones, the clients are served" {
	failing_passes_for_busy all-retryable-errors
}

@test "conn-failure 500 502 503 504: a failing worker's retried 500s pass for busy ones, the clients are served" {
	failing_passes_for_busy "conn-failure 500 502 503 504"
}

# Where retry-on lists no 500, the 500 reaches the client and SPOE, and
# the failing worker is opened and drained as ever.
@test "response-timeout: a failing worker's 500s reach SPOE and open it" {
	retry_scene response-timeout 200 500 200 200
	start_load 8 200 30 /
	watch_drains_while_loaded
	was_drained w2
	grep -q "breaker workers/w2: closed -> open (failure, status 500" "$RUN_DIR/agent.log"
	only_w2_touched
	run awk '$1 != 200 && !($1 == 500 && $2 == "w2")' "$RUN_DIR/load.out"
	assert_output ""
}
