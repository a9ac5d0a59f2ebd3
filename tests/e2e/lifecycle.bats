#!/usr/bin/env bats
# The daemon's life: command line, unix sockets, graceful stop, fail-open.

load helpers

setup() {
	new_run_dir
}

teardown() {
	stop_all
}

@test "--help and --version answer and exit 0" {
	run "$SPOA_BIN" --help
	assert_success
	assert_output --partial "Usage: spoa-breaker"
	assert_output --partial "--listen"
	run "$SPOA_BIN" --version
	assert_success
	assert_output --regexp '^spoa-breaker [0-9]+\.[0-9]+\.[0-9]+( \(git [^)]+\))?$'
}

@test "bad command lines are refused with a message naming the problem" {
	run "$SPOA_BIN" --max-frame-size 12
	assert_failure 2
	assert_output --partial "--max-frame-size '12': expected 256..1048576"
	run "$SPOA_BIN" --log-level loud
	assert_failure 2
	assert_output --partial "--log-level 'loud'"
	# Checked with the command line, not when the listener opens.
	run "$SPOA_BIN" --listen 127.0.0.1:notaport
	assert_failure 2
	assert_output --partial "spoa-breaker: --listen '127.0.0.1:notaport': expected HOST:PORT, [IPV6]:PORT or unix:PATH (port must be a number"
	run "$SPOA_BIN" stray
	assert_failure 2
	assert_output --partial "unexpected argument 'stray'"
}

@test "with no arguments it listens on 127.0.0.1:12345" {
	# Another run of this suite (another HAProxy version) or the demo
	# may want the port meanwhile: whoever binds a default port holds
	# this lock (released as the test's shell exits).
	exec 8>/run/lock/spoa-breaker-default-ports.lock
	flock -w 600 8
	if (exec 3<>/dev/tcp/127.0.0.1/12345) 2>/dev/null; then
		skip "something else already listens on 127.0.0.1:12345"
	fi
	start_agent agent
	wait_port 12345
	run python3 "$SPOP_CLIENT" 127.0.0.1:12345 hello
	assert_output --partial "version=2.0"
}

@test "it serves a unix socket and an IPv6 address at once" {
	local port
	port=$(free_port)
	start_agent agent --listen "unix:$RUN_DIR/agent.sock" --listen "[::1]:$port"
	wait_until 5 test -S "$RUN_DIR/agent.sock"
	run python3 "$SPOP_CLIENT" "unix:$RUN_DIR/agent.sock" notify
	assert_output --partial "set:upstream_status=200 set:outcome=success set:state=closed"
	run python3 "$SPOP_CLIENT" "[::1]:$port" hello
	assert_output --partial "version=2.0"
}

@test "SIGTERM sends AGENT-DISCONNECT to connected peers and exits 0" {
	local port
	port=$(free_port)
	start_agent agent --listen "127.0.0.1:$port"
	wait_port "$port"
	python3 "$SPOP_CLIENT" "127.0.0.1:$port" wait-disconnect >"$RUN_DIR/peer.out" 2>&1 &
	local peer=$!
	wait_until 5 grep -q ready "$RUN_DIR/peer.out"
	local agent
	agent=$(cat "$RUN_DIR/agent.pid")
	kill -TERM "$agent"
	local rc=0
	wait "$agent" || rc=$?
	[ "$rc" -eq 0 ]
	wait "$peer"
	run cat "$RUN_DIR/peer.out"
	assert_line --partial "disconnect status=0 closed=True message='agent is shutting down'"
	rm -f "$RUN_DIR/agent.pid"
}

@test "a connection beyond --max-connections is served: the idle one makes room" {
	local port
	port=$(free_port)
	start_agent agent --listen "127.0.0.1:$port" --max-connections 1
	wait_port "$port"
	python3 "$SPOP_CLIENT" "127.0.0.1:$port" wait-disconnect >"$RUN_DIR/peer.out" 2>&1 &
	local peer=$!
	wait_until 5 grep -q ready "$RUN_DIR/peer.out"
	run python3 "$SPOP_CLIENT" "127.0.0.1:$port" hello
	assert_output --partial "version=2.0"
	wait "$peer"
	run cat "$RUN_DIR/peer.out"
	assert_line --partial "disconnect status=0 closed=True message='making room for a new connection'"
}

@test "killing the agent leaves requests succeeding (fail-open), and it comes back" {
	start_scene
	run header_of /status/200 x-breaker-upstream-status
	assert_output "200"
	stop agent
	# Every request still succeeds while HAProxy notices, and after.
	for _ in $(seq 20); do
		run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/"
		assert_output "200"
	done
	wait_until 10 agent_is_down
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/"
	assert_output "200"
	run header_of / x-breaker-upstream-status
	assert_output ""
	# A restarted agent is picked up again by the health check.
	start_agent agent --listen "$AGENT_ADDR"
	wait_until 10 agent_is_up
	wait_until 10 bash -c "[ \"\$(curl -s -o /dev/null -D - http://127.0.0.1:$FE_PORT/status/429 | tr -d '\r' | grep -i '^x-breaker-upstream-status' | cut -d' ' -f2)\" = 429 ]"
}

@test "a table sized for a million servers costs what it holds, not a million entries" {
	local port rss
	port=$(free_port)
	start_agent agent --listen "127.0.0.1:$port" --max-breakers 1048576 --admin none
	wait_port "$port"
	run python3 "$SPOP_CLIENT" "127.0.0.1:$port" notify
	assert_success
	rss=$(awk '/^VmRSS/ {print $2}' "/proc/$(cat "$RUN_DIR/agent.pid")/status")
	echo "RSS with room for 1,048,576 servers and one tracked: $rss kB"
	# Up front it was ~1.2 KB a slot (over 1 GB); now the hash index (4 MB a
	# million slots, at most half full: 8 MB) and one chunk of entries.
	[ "$rss" -lt 65536 ]
}
