#!/usr/bin/env bats
# The breaker acts on HAProxy through the Runtime API: drain on open, ready
# with maxconn = probes on half-open, the server's own maxconn back on close;
# reconciliation after an HAProxy reload; SPOP never waits for the socket.

load helpers

setup() {
	W2_BEHAVIOUR=500
	# A long cool-down unless a test needs it to elapse: the breaker must
	# still want the drain when the test looks for it.
	ADMIN_PORT=$(free_port) # its /metrics count the looks
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown ${COOLDOWN:-60s} --admin 127.0.0.1:$ADMIN_PORT"
	# The scene's RUN_DIR is new; the agent is told where HAProxy's socket
	# will be before it exists, so point both at one path.
	start_enforce_scene_with_socket
}

teardown() {
	stop_all
}

# start_enforce_scene with HAProxy's admin socket where AGENT_ARGS says.
start_enforce_scene_with_socket() {
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
}

@test "a worker answering 500 is drained right after the threshold, and gets no new requests" {
	run is_not_drained w2
	assert_success
	trip_w2
	wait_until 10 is_drained w2
	run server_status workers w2
	assert_output "DRAIN"
	# Its neighbours are left alone.
	is_not_drained w1
	is_not_drained w3
	# No new request reaches w2 while the others keep serving.
	local seen
	seen=$(for _ in $(seq 30); do worker_of /; done | sort | uniq -c)
	echo "$seen"
	[[ "$seen" != *w2* ]] # (a bare "! cmd" never fails a bats test)
	grep -q w1 <<<"$seen"
	grep -q w3 <<<"$seen"
}

@test "after the cool-down it is ready with maxconn = probes, and a good probe brings its own maxconn back" {
	stop_all
	COOLDOWN=1500ms setup
	[ "$(maxconn_of w2)" = 50 ]
	trip_w2
	# The drain lasts only the 1.5 s cool-down, which a loaded machine can
	# look past (the first test holds it open and sees it): the log tells
	# when the timer moved the breaker to half-open: ready, one probe at a
	# time.
	wait_until 10 grep -q "breaker workers/w2: open -> half_open" "$RUN_DIR/agent.log"
	wait_until 10 is_not_drained w2
	wait_until 10 maxconn_is w2 1
	[ "$(logged_state_of w2)" = half_open ]
	probe_w2_until_closed
	wait_until 10 maxconn_is w2 50
	is_not_drained w2
}

# The agent has read HAProxy's `show info`: the level `show cli level`
# answers in the same exchange is known (admin). For wait_until.
agent_read_show_info() {
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" |
		python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["haproxy"][0].get("level") != "admin")'
}

@test "an HAProxy reload forgets the drain; reconciliation restores it" {
	trip_w2
	wait_until 10 is_drained w2
	# The agent must know the process before the reload to see a new one.
	# The drain can land before the agent first reads `show info` (its
	# looks before HAProxy was up failed, and a look that read the
	# servers counts as done without it): had the new process answered
	# that first, the agent would see no change of process at all.
	wait_until 10 agent_read_show_info
	# A master-worker reload without a server-state-file: the new process
	# starts with w2 ready.
	echo reload | socat - "UNIX-CONNECT:$RUN_DIR/master.sock" >/dev/null
	wait_until 10 grep -q "new process" "$RUN_DIR/agent.log"
	wait_until 10 is_drained w2
}

@test "reload-haproxy.sh keeps the drain across a reload, with no agent to restore it" {
	trip_w2
	wait_until 10 is_drained w2
	# Only the state file can keep the drain now.
	stop agent
	local pid_before
	pid_before=$(haproxy_pid)
	BREAKER_ADMIN_SOCKET=$RUN_DIR/admin.sock BREAKER_STATE_FILE=$RUN_DIR/server-state \
		HAPROXY_MASTER_SOCKET=$RUN_DIR/master.sock "$REPO/haproxy/reload-haproxy.sh"
	grep -q "^1$" "$RUN_DIR/server-state"
	wait_until 10 pid_changed_from "$pid_before"
	is_drained w2
	local seen
	seen=$(for _ in $(seq 12); do worker_of /; done)
	[[ "$seen" != *w2* ]] # (a bare "! cmd" never fails a bats test)
}

@test "a dead Runtime API socket does not stall SPOP; the commands catch up when it returns" {
	# Take the socket away from the agent (HAProxy keeps it).
	rm -f "$BATS_TEST_TMPDIR/admin.sock"
	trip_w2
	# SPOP answers at once meanwhile: every response still has a verdict.
	local i
	for i in $(seq 20); do
		run curl -s -o /dev/null -D - -m 2 "http://127.0.0.1:$FE_PORT/status/200"
		assert_output --partial "x-breaker-state: "
	done
	is_not_drained w2 # nothing could reach HAProxy
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	wait_until 10 is_drained w2
}

@test "a worker answering 503 under load is never drained" {
	stop_all
	W2_BEHAVIOUR=503
	start_enforce_scene_with_socket
	run bash -c "seq 300 | xargs -P 10 -I{} curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:$FE_PORT/ | sort | uniq -c"
	assert_output --partial "503"
	is_not_drained w2
	[ "$(logged_state_of w2)" = closed ]
	# And it still gets its share of requests.
	local seen
	seen=$(for _ in $(seq 12); do worker_of /; done)
	grep -q w2 <<<"$seen"
}

@test "an operator's drain is never lifted by the agent" {
	haproxy_cli "set server workers/w1 state drain"
	is_drained w1
	# w1 stays healthy (its breaker closed), and reconciliation runs a few
	# times; the agent must not make it ready.
	wait_more_looks 4
	is_drained w1
	[ "$(breaker_field workers/w1 state)" = closed ]
}
