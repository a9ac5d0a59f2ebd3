# shellcheck shell=bash
# The scene of the rest and capacity suites (retry_after.bats,
# capacity.bats): three workers behind HAProxy and the agent.

# Three workers in `workers` (haproxy-enforce.cfg.in: round robin, no
# retries); Wn_BEHAVIOUR (default 200) and Wn_RETRY_AFTER (default none:
# no header) say how each answers. The agent on HAProxy's Runtime API with
# $AGENT_ARGS; SPOE_CONF the SPOE file (the shipped spoe-breaker.conf
# unless a test names another); EXTRA_DEFAULTS more lines of HAProxy's
# defaults section (\n between them); TIMEOUT_SERVER HAProxy's (5s);
# WORKER_ARGS more options of every worker (tests/lib/worker.py); with
# W2_MODE_FILE set, w2 reads its behaviour from $RUN_DIR/w2.mode whenever
# that file says something. ENFORCE_MODE=agent-check: the agent answers
# the servers' agent-check instead, and has no Runtime API.
start_rest_scene() {
	RUN_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/scene.XXXXXX")
	export RUN_DIR
	FE_PORT=$(free_port) W1_PORT=$(free_port) W2_PORT=$(free_port) W3_PORT=$(free_port)
	AGENT_PORT=$(free_port) ADMIN_PORT=$(free_port)
	AGENT_ADDR=127.0.0.1:$AGENT_PORT
	SPOE_CONF=${SPOE_CONF:-$REPO/haproxy/spoe-breaker.conf}
	AGENT_CHECK_DEFAULTS="" W1_AGENT="" W2_AGENT="" W3_AGENT=""
	local enforce=(--runtime-api "unix:$RUN_DIR/admin.sock")
	if [ "${ENFORCE_MODE:-}" = agent-check ]; then
		local check_port
		check_port=$(free_port)
		AGENT_CHECK_DEFAULTS="default-server agent-check agent-addr 127.0.0.1 agent-port $check_port agent-inter 200ms"
		W1_AGENT='agent-send "workers/w1\\n"'
		W2_AGENT='agent-send "workers/w2\\n"'
		W3_AGENT='agent-send "workers/w3\\n"'
		enforce=(--agent-check "127.0.0.1:$check_port")
	fi
	TIMEOUT_SERVER=${TIMEOUT_SERVER:-5s} EXTRA_DEFAULTS=${EXTRA_DEFAULTS:-}
	export FE_PORT W1_PORT W2_PORT W3_PORT AGENT_PORT ADMIN_PORT AGENT_ADDR SPOE_CONF
	export AGENT_CHECK_DEFAULTS W1_AGENT W2_AGENT W3_AGENT TIMEOUT_SERVER EXTRA_DEFAULTS
	local n name port behaviour retry_after
	for n in 1 2 3; do
		name=w$n port=W${n}_PORT behaviour=W${n}_BEHAVIOUR retry_after=W${n}_RETRY_AFTER
		local args=(--name "$name" --port "${!port}" --behaviour "${!behaviour:-200}"
			--arrivals "$RUN_DIR/$name.arrivals")
		[ -n "${!retry_after:-}" ] && args+=(--retry-after "${!retry_after}")
		[ "$name" = w2 ] && [ -n "${W2_MODE_FILE:-}" ] && args+=(--mode-file "$RUN_DIR/w2.mode")
		# shellcheck disable=SC2206 # WORKER_ARGS is a list of options
		args+=(${WORKER_ARGS:-})
		spawn "$name" python3 "$WORKER" "${args[@]}"
		wait_port "${!port}"
	done
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" \
		"${enforce[@]}" --poll-interval 200ms ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	echo 1 >"$RUN_DIR/server-state" # an empty state, version 1
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-enforce.cfg.in"
	wait_until 10 agent_is_up
	# The ejection cap counts what a look saw: wait for the first one.
	[ "${ENFORCE_MODE:-}" = agent-check ] ||
		wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

# Two more complete looks than N: whatever the agent would do about what
# the workers said before, it has done by then.
two_looks_after() { # N
	local now
	now=$(looks_ok)
	[ -n "$now" ] && [ "$now" -ge $(($1 + 2)) ]
}
