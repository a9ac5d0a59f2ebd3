#!/usr/bin/env bats
# Capacity learning, against a real HAProxy: a worker that refuses with a
# capacity status beyond K requests in service gets maxconn K (or K + 1:
# the limit probes one above and is refused back) from the agent's looks,
# and HAProxy queues what is beyond it; a worker whose capacity grows gets
# a higher limit; one that sends Retry-After while it answers other
# requests is never drained; pin_maxconn leaves a server's own maxconn
# alone. Every load is bounded in count and time.

load helpers

teardown() {
	stop_all
}

# Three workers in `workers` (haproxy-enforce.cfg.in: round robin, no
# retries, w2 at maxconn 50 of its own), with a queue of 5 s: Wn_BEHAVIOUR
# (default 200; tests/lib/worker.py's cap:K:SECONDS is an engine of
# capacity K), Wn_RETRY_AFTER; w2 reads its behaviour from
# $RUN_DIR/w2.mode when that file says something. The agent on the
# Runtime API with $AGENT_ARGS, looks every 200 ms.
start_capacity_scene() {
	RUN_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/scene.XXXXXX")
	export RUN_DIR
	FE_PORT=$(free_port) W1_PORT=$(free_port) W2_PORT=$(free_port) W3_PORT=$(free_port)
	AGENT_PORT=$(free_port) ADMIN_PORT=$(free_port)
	AGENT_ADDR=127.0.0.1:$AGENT_PORT
	SPOE_CONF=${SPOE_CONF:-$REPO/haproxy/spoe-breaker.conf}
	AGENT_CHECK_DEFAULTS="" W1_AGENT="" W2_AGENT="" W3_AGENT=""
	TIMEOUT_SERVER=10s EXTRA_DEFAULTS='timeout queue 5s'
	export FE_PORT W1_PORT W2_PORT W3_PORT AGENT_PORT ADMIN_PORT AGENT_ADDR SPOE_CONF
	export AGENT_CHECK_DEFAULTS W1_AGENT W2_AGENT W3_AGENT TIMEOUT_SERVER EXTRA_DEFAULTS
	local n name port behaviour retry_after
	for n in 1 2 3; do
		name=w$n port=W${n}_PORT behaviour=W${n}_BEHAVIOUR retry_after=W${n}_RETRY_AFTER
		local args=(--name "$name" --port "${!port}" --behaviour "${!behaviour:-200}"
			--arrivals "$RUN_DIR/$name.arrivals" --no-override --backlog 64)
		[ -n "${!retry_after:-}" ] && args+=(--retry-after "${!retry_after}")
		[ "$name" = w2 ] && args+=(--mode-file "$RUN_DIR/w2.mode")
		spawn "$name" python3 "$WORKER" "${args[@]}"
		wait_port "${!port}"
	done
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" \
		--runtime-api "unix:$RUN_DIR/admin.sock" --poll-interval 200ms ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	echo 1 >"$RUN_DIR/server-state" # an empty state, version 1
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-enforce.cfg.in"
	wait_until 10 agent_is_up
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

# CLIENTS closed-loop clients, each sending requests back to back until
# $RUN_DIR/stop exists, at most 3000 each.
start_load() { # CLIENTS
	rm -f "$RUN_DIR/stop"
	local i
	for i in $(seq "$1"); do
		spawn "client$i" bash -c '
			for _ in $(seq 3000); do
				[ -e "$1/stop" ] && break
				curl -s -o /dev/null -m 12 "http://127.0.0.1:$2/"
			done' _ "$RUN_DIR" "$FE_PORT"
	done
}
stop_load() { touch "$RUN_DIR/stop"; }

# The maxconn HAProxy applies to workers/SERVER, 0 when unlimited.
limit_of() {
	local v
	v=$(maxconn_of "$1")
	echo "${v:-0}"
}
limit_between() { # SERVER LOW HIGH
	local v
	v=$(limit_of "$1")
	[ "$v" -ge "$2" ] && [ "$v" -le "$3" ]
}

backpressure_of() { # SERVER
	local v
	v=$(metric "spoa_breaker_worker_requests_total{backend=\"workers\",server=\"$1\",outcome=\"backpressure\",source=\"spop\"}")
	echo "${v:-0}"
}

@test "a worker refusing beyond 3 requests in service gets maxconn 3 or 4, and HAProxy queues the rest" {
	W1_BEHAVIOUR=cap:3:0.3 start_capacity_scene
	[ "$(limit_of w1)" = 0 ]
	start_load 9
	# Refused at first: the agent learns, and the limit settles where the
	# worker's capacity is.
	wait_until 30 limit_between w1 3 4
	[ "$(backpressure_of w1)" -gt 0 ]
	# It stays there: sampled over more looks, never out of K - 1 .. K + 1
	# (a look can see fewer in flight than the worker holds).
	local looks i
	looks=$(looks_ok)
	for i in $(seq 20); do
		limit_between w1 2 4
		sleep 0.1
	done
	wait_until 10 two_looks_after "$looks"
	limit_between w1 2 4
	# Busy is not dead: never drained, never opened.
	is_not_drained w1
	[ "$(breaker_field workers/w1 state)" = closed ]
	[ "$(breaker_field workers/w1 rests)" = 0 ]
	# The servers that never refused keep their own maxconn.
	[ "$(limit_of w3)" = 0 ]
	[ "$(limit_of w2)" = 50 ]
	stop_load
}

two_looks_after() { # N
	local now
	now=$(looks_ok)
	[ -n "$now" ] && [ "$now" -ge $(($1 + 2)) ]
}

@test "a worker whose capacity doubles gets a higher limit, never above its own maxconn" {
	W2_BEHAVIOUR=cap:2:0.3 start_capacity_scene
	start_load 9
	wait_until 30 limit_between w2 2 3
	# The engine's batch grows: the limit follows, while HAProxy queues.
	echo cap:5:0.3 >"$RUN_DIR/w2.mode"
	wait_until 30 limit_between w2 5 6
	[ "$(breaker_field workers/w2 state)" = closed ]
	is_not_drained w2
	stop_load
}

@test "a worker sending Retry-After on its refusals while it answers other requests is never drained" {
	W1_BEHAVIOUR=cap:2:0.3 W1_RETRY_AFTER=1 start_capacity_scene
	start_load 9
	# Words keep coming while it serves: each look finds its successes.
	local drains=0 i
	for i in $(seq 600); do
		is_drained w1 && drains=$((drains + 1))
		[ "$(backpressure_of w1)" -ge 20 ] && break
		sleep 0.1
	done
	[ "$(backpressure_of w1)" -ge 20 ]
	[ "$drains" = 0 ]
	[ "$(breaker_field workers/w1 rests)" = 0 ]
	run metric 'spoa_breaker_worker_rests_total{backend="workers",server="w1"}'
	assert_output 0
	[ "$(breaker_field workers/w1 state)" = closed ]
	stop_load
}

@test "pin_maxconn leaves a refusing worker's server at its own maxconn" {
	cat >"$BATS_TEST_TMPDIR/pinned.ini" <<-'INI'
		[server workers/w2]
		pin_maxconn = true
	INI
	AGENT_ARGS="--config $BATS_TEST_TMPDIR/pinned.ini" W1_BEHAVIOUR=cap:2:0.3 \
		W2_BEHAVIOUR=cap:2:0.3 start_capacity_scene
	[ "$(breaker_field workers/w2 policy.pin_maxconn)" = true ]
	start_load 9
	# w1 learns; w2 refuses as much and keeps its own 50.
	wait_until 30 limit_between w1 2 3
	[ "$(backpressure_of w2)" -gt 0 ]
	[ "$(limit_of w2)" = 50 ]
	stop_load
}
