#!/usr/bin/env bats
# What HAProxy does with a message that does not fit the max-frame-size the
# agent agreed on, measured on every version the suite runs: 2.6, 3.0 and
# 3.2 never send a larger frame (the agent refuses one with status 3, so a
# version that did would lose every such message). 3.2 gives up at once
# (agent_error 259: too big, on HAProxy's side); 2.6 and 3.0 drop the
# connection with "fragmentation not supported" and retry until `timeout
# processing`. Either way the request passes untouched: fail-open.

load helpers

setup_file() {
	RUN_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/scene.XXXXXX")
	export RUN_DIR
	FE_PORT=$(free_port)
	W1_PORT=$(free_port)
	AGENT_PORT=$(free_port)
	ADMIN_PORT=$(free_port)
	AGENT_ADDR=127.0.0.1:$AGENT_PORT
	export FE_PORT W1_PORT AGENT_PORT ADMIN_PORT AGENT_ADDR
	# The shipped SPOE file with one more argument, as big as the request's
	# x-big header (the files live in RUN_DIR: HAProxy 3.x runs chrooted).
	SPOE_CONF=$RUN_DIR/spoe-breaker.conf
	export SPOE_CONF
	sed 's/^\(    args be=be_name srv=srv_name status=status .*\)$/\1 big=var(txn.big)/' \
		"$REPO/haproxy/spoe-breaker.conf" >"$SPOE_CONF"
	grep -q 'big=var(txn.big)' "$SPOE_CONF"
	sed 's/^\(    filter spoe .*\)$/    http-request set-var(txn.big) req.hdr(x-big)\n\1/' \
		"$BATS_TEST_DIRNAME/haproxy.cfg.in" >"$RUN_DIR/haproxy-big.cfg.in"
	start_worker w1 "$W1_PORT" 200
	start_agent agent --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" --max-frame-size 1024
	wait_port "$AGENT_PORT"
	start_haproxy "$RUN_DIR/haproxy-big.cfg.in"
	wait_until 10 agent_is_up
}

teardown_file() {
	stop_all
}

# The x-breaker-* headers of a request with an x-big header of N bytes.
headers_with_big() { # N
	curl -s -m 5 -o /dev/null -D - -H "x-big: $(head -c "$1" /dev/zero | tr '\0' a)" \
		"http://127.0.0.1:$FE_PORT/" | tr -d '\r' | grep -i '^x-breaker-\(upstream-status\|agent-error\)'
}

@test "a message that fits the agreed size is answered" {
	run headers_with_big 500
	assert_line "x-breaker-upstream-status: 200"
	assert_line "x-breaker-agent-error: "
}

@test "a message too big for the agreed size never reaches the agent, and the request passes" {
	run headers_with_big 1500
	assert_line "x-breaker-upstream-status: "
	assert_line --regexp '^x-breaker-agent-error: [0-9]+$'
	run curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/status/200"
	assert_output "200"
	# Nothing over 1024 bytes arrived: no AGENT-DISCONNECT status 3.
	run metric 'spoa_breaker_spop_disconnects_sent_total{code="3"}'
	assert_output "0"
	run grep -c "exceeds max-frame-size" "$RUN_DIR/agent.log"
	assert_output "0"
	# And the agent goes on answering.
	run headers_with_big 500
	assert_line "x-breaker-upstream-status: 200"
}
