#!/usr/bin/env bats
# One agent for several HAProxies: three HAProxy processes on loopback, each
# with its own stats socket and frontend, the same three workers behind
# them, all sending SPOP to one agent that has a runtime_api for each. A
# trip seen through one drains the worker in all of them; one HAProxy going
# away and coming back disturbs neither the others nor the verdict, and the
# newcomer gets the drain back.

load helpers

setup() {
	W2_BEHAVIOUR=500
	ADMIN_PORT=$(free_port)
	NODE_B=$BATS_TEST_TMPDIR/b
	NODE_C=$BATS_TEST_TMPDIR/c
	mkdir -p "$NODE_B" "$NODE_C"
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --runtime-api unix:$NODE_B/admin.sock --runtime-api unix:$NODE_C/admin.sock --cooldown 60s --admin 127.0.0.1:$ADMIN_PORT"
}

teardown() {
	stop_all
}

# Starts another HAProxy from the enforcement template in DIR, listening
# on PORT, with the scene's workers and agent; its PID is kept as NAME.
start_node() { # NAME DIR PORT
	(
		RUN_DIR=$2 FE_PORT=$3
		echo 1 >"$RUN_DIR/server-state"
		render_haproxy_cfg "$BATS_TEST_DIRNAME/haproxy-enforce.cfg.in"
	)
	spawn "$1" "$HAPROXY_BIN" -db -f "$2/haproxy.cfg"
	wait_port "$3"
	wait_until 10 on_node "$2" agent_is_up
}

# Runs COMMAND... against the HAProxy whose stats socket is in DIR.
on_node() { # DIR COMMAND...
	local dir=$1
	shift
	(RUN_DIR=$dir && "$@")
}

start_three() {
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	FE_B=$(free_port)
	FE_C=$(free_port)
	start_node haproxy_b "$NODE_B" "$FE_B"
	start_node haproxy_c "$NODE_C" "$FE_C"
}

drained_everywhere() {
	is_drained w2 && on_node "$NODE_B" is_drained w2 && on_node "$NODE_C" is_drained w2
}

@test "a worker failing through one HAProxy is drained in all three" {
	start_three
	# Traffic through node A only.
	local i
	for i in $(seq 60); do
		curl -s -o /dev/null -m 3 "http://127.0.0.1:$FE_PORT/" || true
		is_drained w2 && break
	done
	wait_until 10 drained_everywhere
	for dir in "$RUN_DIR" "$NODE_B" "$NODE_C"; do
		on_node "$dir" is_not_drained w1
		on_node "$dir" is_not_drained w3
	done
	# One trip, one verdict: drained once per HAProxy, not three trips.
	run grep -c "breaker workers/w2: closed -> open" "$RUN_DIR/agent.log"
	assert_output "1"
}

@test "one HAProxy restarting disturbs neither the others nor the verdict, and gets its drain back" {
	start_three
	local i
	for i in $(seq 60); do
		curl -s -o /dev/null -m 3 "http://127.0.0.1:$FE_PORT/" || true
		is_drained w2 && break
	done
	wait_until 10 drained_everywhere

	stop haproxy_b
	# While B is away: A and C keep the drain and keep the agent up, and
	# clients through them are served. From when the agent has found B
	# gone, and looked at A and C a few times since.
	wait_until 20 metric_is "spoa_breaker_runtime_api_up{socket=\"unix:$NODE_B/admin.sock\"}" 0
	wait_more_looks 6
	is_drained w2
	on_node "$NODE_C" is_drained w2
	agent_is_up
	on_node "$NODE_C" agent_is_up
	for i in $(seq 10); do
		run curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:$FE_C/"
		assert_output "200"
	done

	# B comes back as a new process that remembers nothing: the agent's
	# next look gives it the drain back.
	start_node haproxy_b "$NODE_B" "$FE_B"
	wait_until 10 on_node "$NODE_B" is_drained w2
	is_drained w2
	on_node "$NODE_C" is_drained w2
	grep -q "unix:$NODE_B/admin.sock" "$RUN_DIR/agent.log"
	run grep -c "breaker workers/w2: closed -> open" "$RUN_DIR/agent.log"
	assert_output "1"
}
