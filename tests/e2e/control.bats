#!/usr/bin/env bats
# The operator's hand, through the control socket and `spoa-breaker ctl`,
# against a real HAProxy: hold out, hold in, unhold, reset, pause and
# resume, release all and resume all; holds that outlive a restart and a
# reload; the ejection cap over holds; and a socket that refuses what it
# should without ever stalling SPOP.

load helpers

setup() {
	W2_BEHAVIOUR=${W2_BEHAVIOUR:-500}
	ADMIN_PORT=$(free_port)
	STATE_DIR=$BATS_TEST_TMPDIR/state
	mkdir -p "$STATE_DIR"
	CONTROL=$STATE_DIR/control.sock
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 60s --admin 127.0.0.1:$ADMIN_PORT --state-file $STATE_DIR/state.msgpack ${EXTRA_AGENT_ARGS:-}"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 2
}

teardown() {
	stop_all
	[ -z "${OPEN_DIR:-}" ] || rm -rf "$OPEN_DIR"
}

ctl() {
	"$SPOA_BIN" ctl --socket "$CONTROL" "$@"
}

# The state `show breakers` gives workers/SERVER (its second column).
shown_state() { # SERVER
	ctl show breakers "workers/$1" | awk -v s="workers/$1" '$1==s {print $2}'
}

# One field of workers/SERVER in `show breakers json`.
shown_field() { # SERVER FIELD
	ctl show breakers "workers/$1" json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for b in doc["breakers"]:
    if b["server"] == sys.argv[1]:
        v = b[sys.argv[2]]
        print(str(v).lower() if isinstance(v, bool) else v)
' "$1" "$2"
}

# No request of a bounded series reaches worker NAME.
never_served_by() { # NAME
	local seen
	seen=$(for _ in $(seq 20); do worker_of /status/200; done | sort | uniq -c)
	echo "$seen"
	[[ "$seen" != *"$1"* ]]
}

@test "hold out: a healthy server is drained at once and stays out through its successes; unhold puts it back" {
	stop_all
	W2_BEHAVIOUR=200 setup
	run ctl hold out workers/w1
	assert_success
	assert_output --partial "workers/w1 held out"
	wait_until 10 is_drained w1
	never_served_by w1
	# Its successes elsewhere, looks, nothing undoes the hold.
	wait_more_looks 3
	is_drained w1
	[ "$(shown_field w1 hold)" = out ]
	grep -q "control: uid $(id -u) holds workers/w1 out" "$RUN_DIR/agent.log"
	run ctl unhold workers/w1
	assert_success
	wait_until 10 is_not_drained w1
	served_by w1
}

@test "hold out for a time ends on its own and the server serves again" {
	stop_all
	W2_BEHAVIOUR=200 setup
	run ctl hold out workers/w3 for 2s
	assert_success
	# The drain is sent as the command is answered.
	wait_until 10 grep -q "workers/w3 state drain" "$RUN_DIR/agent.log"
	wait_until 15 grep -q "breaker workers/w3: the operator's hold ran out" "$RUN_DIR/agent.log"
	wait_until 10 is_not_drained w3
	served_by w3
	[ "$(shown_field w3 hold)" = none ]
}

@test "hold in: a failing server is never drained, its failures still judged and logged; unhold lets the breaker act" {
	run ctl hold in workers/w2
	assert_success
	trip_w2
	grep -q "breaker workers/w2: closed -> open .*held in by the operator" "$RUN_DIR/agent.log"
	wait_more_looks 3
	is_not_drained w2
	[ "$(shown_state w2)" = open ]
	metric_at_least 'spoa_breaker_server_transitions_total{proxy="workers",server="w2",from="closed",to="open"}' 1
	[ "$(shown_field w2 trips)" -ge 1 ]
	run ctl unhold workers/w2
	assert_success
	wait_until 10 is_drained w2
}

@test "reset: an open breaker is closed and clean, its drain lifted" {
	trip_w2
	wait_until 10 is_drained w2
	run ctl reset workers/w2
	assert_success
	assert_output --partial "reset: closed, clean"
	wait_until 10 is_not_drained w2
	[ "$(shown_state w2)" = closed ]
	[ "$(shown_field w2 failures)" = 0 ]
}

@test "pause: the agent's drains in the backend are lifted and nothing new is done; resume acts again" {
	trip_w2
	wait_until 10 is_drained w2
	run ctl pause workers
	assert_success
	wait_until 10 is_not_drained w2
	# Still failing, still open in the breaker, and left alone.
	for _ in $(seq 10); do curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"; done
	wait_more_looks 3
	is_not_drained w2
	[ "$(shown_field w2 observe_only)" = true ]
	run ctl resume workers
	assert_success
	wait_until 10 is_drained w2
}

@test "release all lifts every drain and map entry the agent set, leaves the operator's own drain, and does nothing until resume all" {
	trip_w2
	wait_until 10 is_drained w2
	wait_until 10 bash -c "echo 'show map $REPO/haproxy/breaker-owned.map' | socat - unix:$RUN_DIR/admin.sock | grep -q w2"
	haproxy_cli "set server workers/w3 state drain"
	run ctl release all
	assert_success
	wait_until 10 is_not_drained w2
	wait_until 10 bash -c "! echo 'show map $REPO/haproxy/breaker-owned.map' | socat - unix:$RUN_DIR/admin.sock | grep -q w2"
	is_drained w3
	for _ in $(seq 10); do curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"; done
	wait_more_looks 3
	is_not_drained w2
	is_drained w3
	grep -q "control: uid $(id -u) releases the agent" "$RUN_DIR/agent.log"
	# The operator's drain counts against the ejection cap: lifted by
	# hand, so that the room is w2's again.
	haproxy_cli "set server workers/w3 state ready"
	run ctl resume all
	assert_success
	wait_until 10 is_drained w2
}

@test "holds and pauses survive a restart (kill -9) and a reload" {
	stop_all
	# A file to reload (options still override it).
	printf '[breaker]\ncooldown = 60s\n' >"$BATS_TEST_TMPDIR/agent.ini"
	W2_BEHAVIOUR=200 EXTRA_AGENT_ARGS="-f $BATS_TEST_TMPDIR/agent.ini" setup
	ctl hold out workers/w1
	ctl pause workers
	ctl resume workers
	ctl hold in workers/w3
	wait_until 10 is_drained w1
	# The agent's record of its drain in HAProxy (or its snapshot) is
	# what a restarted agent knows the drain by: in place before the kill.
	wait_until 10 bash -c "echo 'show map $REPO/haproxy/breaker-owned.map' | socat - unix:$RUN_DIR/admin.sock | grep -q 'workers/w1'"
	kill -9 "$(cat "$RUN_DIR/agent.pid")"
	restart_agent
	wait_until 10 bash -c "[ -S '$CONTROL' ]"
	[ "$(shown_field w1 hold)" = out ]
	[ "$(shown_field w3 hold)" = in ]
	wait_more_looks 3
	is_drained w1
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 10 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	[ "$(shown_field w1 hold)" = out ]
	wait_more_looks 3
	is_drained w1
	# A pause survives a restart too.
	ctl pause workers
	ctl unhold workers/w1
	wait_until 10 is_not_drained w1
	kill -9 "$(cat "$RUN_DIR/agent.pid")"
	restart_agent
	wait_until 10 bash -c "[ -S '$CONTROL' ]"
	[ "$(shown_field w2 observe_only)" = true ]
}

@test "the ejection cap holds back a hold out unless forced" {
	trip_w2
	wait_until 10 is_drained w2
	run ctl hold out workers/w1
	assert_success
	assert_output --partial "ejection cap"
	wait_more_looks 3
	is_not_drained w1
	run ctl hold out workers/w1 force
	assert_success
	wait_until 10 is_drained w1
}

@test "bad commands get a clear error and change nothing; unknown and hostile names are refused" {
	stop_all
	W2_BEHAVIOUR=200 setup
	run ctl hold out workers/nosuch
	[ "$status" -eq 1 ]
	assert_output --partial "no breaker for workers/nosuch"
	run ctl frobnicate
	[ "$status" -eq 1 ]
	assert_output --partial "unknown command"
	run ctl hold out 'workers/w1;shutdown'
	[ "$status" -eq 1 ]
	assert_output --partial "not one HAProxy accepts"
	run ctl hold sideways workers/w1
	[ "$status" -eq 1 ]
	run ctl hold in workers/w1 for forever
	[ "$status" -eq 1 ]
	assert_output --partial "not a duration"
	run ctl pause nosuch
	[ "$status" -eq 1 ]
	run ctl "$(head -c 2000 /dev/zero | tr '\0' x)"
	[ "$status" -eq 2 ]
	run bash -c "head -c 5000 /dev/zero | tr '\\0' x | socat - unix:$CONTROL"
	assert_output --partial "error: line longer than"
	# A line with a second command after its newline runs the first only.
	run bash -c "printf 'show breakers workers/w1\nhold out workers/w1\n' | socat - unix:$CONTROL"
	assert_output --partial "workers/w1 closed"
	run "$SPOA_BIN" ctl --socket "$BATS_TEST_TMPDIR/none.sock" show breakers
	[ "$status" -eq 3 ]
	run "$SPOA_BIN" ctl --bogus
	[ "$status" -eq 2 ]
	# Nothing changed: no hold, nothing drained.
	[ "$(shown_field w1 hold)" = none ]
	is_not_drained w1
	run ctl help
	assert_success
	assert_output --partial "release all"
}

# A client still writing a line too long when the agent answers: it reads
# the error and may go on writing (the agent reads and drops the rest; had
# it closed, the next write would fail with EPIPE, and socat would exit
# without printing the error); one that never ends its stream is closed at
# the socket's timeout, and SPOP is answered meanwhile.
@test "a line too long is answered while its client still writes, whose rest is dropped until the timeout" {
	stop_all
	W2_BEHAVIOUR=200 setup
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)  # a bound on every wait below, not a measure
s.connect(sys.argv[1])
s.sendall(b"x" * 1100)
reply = b""
while True:  # the answer, then the end of the agent'"'"'s side
    chunk = s.recv(4096)
    if not chunk:
        break
    reply += chunk
print(reply.decode(), end="", flush=True)
try:
    s.sendall(b"x" * 100000)
except BrokenPipeError:
    sys.exit("the agent closed before the client had written its line")
print("the rest of the line went through", flush=True)
start = time.monotonic()
while time.monotonic() - start < 60:
    try:
        s.send(b"x" * 512)
    except (BrokenPipeError, ConnectionResetError):
        print("closed while the client still wrote")
        sys.exit(0)
    time.sleep(0.1)
sys.exit("still open 60 s after the answer")
' "$CONTROL" >"$BATS_TEST_TMPDIR/writer.out" 2>&1 3>&- &
	local writer=$!
	wait_until 10 bash -c "grep -q 'the rest of the line went through' '$BATS_TEST_TMPDIR/writer.out' ||
		! kill -0 $writer 2>/dev/null"
	grep -q "the rest of the line went through" "$BATS_TEST_TMPDIR/writer.out" ||
		{ cat "$BATS_TEST_TMPDIR/writer.out"; false; }
	grep -qx "error: line longer than 1024 bytes" "$BATS_TEST_TMPDIR/writer.out"
	# While it writes on, SPOP and the socket serve.
	run header_of / x-breaker-state
	assert_output closed
	run ctl show breakers workers/w1
	assert_success
	local status=0
	wait "$writer" || status=$?
	cat "$BATS_TEST_TMPDIR/writer.out"
	[ "$status" -eq 0 ]
	grep -q "closed while the client still wrote" "$BATS_TEST_TMPDIR/writer.out"
}

@test "a client that never finishes its line does not stall SPOP, and is answered and closed" {
	stop_all
	W2_BEHAVIOUR=200 setup
	local holders=() i
	for i in $(seq 20); do
		# Connected, a few bytes, never a newline (nor the end of the stream).
		# (bats' fd 3 closed: a background process holding it would
		# hold the test open; the sleep ends on its own after the test.)
		(printf 'show br'; sleep 15) 3>&- 2>/dev/null |
			socat - "unix:$CONTROL" >"$BATS_TEST_TMPDIR/holder.$i" 2>&1 3>&- &
		holders+=($!)
	done
	# SPOP is answered meanwhile: the breaker's header comes back.
	for _ in $(seq 10); do
		run header_of / x-breaker-state
		assert_output closed
	done
	# And the socket still serves a command (the clients beyond its
	# bound were told it was busy and closed).
	wait_until 20 bash -c "'$SPOA_BIN' ctl --socket '$CONTROL' show breakers | grep -q workers/w1"
	# Those the socket took (16 at once, its bound, so at least 16) were
	# answered at its timeout and closed; any beyond were refused as busy
	# (a refusal the client may not read: its unread line resets it).
	wait_until 20 bash -c "[ \$(grep -l '^error: no complete line in time' '$BATS_TEST_TMPDIR'/holder.* | wc -l) -ge 16 ]"
	kill "${holders[@]}" 2>/dev/null || true
}

@test "who may connect is who may write to the socket: another user is refused" {
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	[ "$(id -u)" = 0 ] || skip "needs root to become another user"
	stop_all
	OPEN_DIR=$(mktemp -d /tmp/spoa-ctl.XXXXXX)
	chmod 755 "$OPEN_DIR"
	W2_BEHAVIOUR=200 EXTRA_AGENT_ARGS="--control unix:$OPEN_DIR/ctl.sock" setup
	CONTROL=$OPEN_DIR/ctl.sock
	wait_until 10 bash -c "[ -S '$CONTROL' ]"
	run setpriv --reuid=nobody --regid=nogroup --clear-groups "$SPOA_BIN" ctl --socket "$CONTROL" show breakers
	[ "$status" -eq 3 ]
	assert_output --partial "Permission denied"
	run ctl show breakers
	assert_success
}

@test "[backend NAME] enforce = none: the file's pause; a reload that drops it lets the breaker act" {
	stop_all
	printf '[backend workers]\nenforce = none\n' >"$BATS_TEST_TMPDIR/agent.ini"
	EXTRA_AGENT_ARGS="-f $BATS_TEST_TMPDIR/agent.ini" setup
	trip_w2
	grep -q "breaker workers/w2: closed -> open .*observe only" "$RUN_DIR/agent.log"
	wait_more_looks 3
	is_not_drained w2
	# [haproxy]'s own enforce is still read as the mode.
	printf '[haproxy]\nenforce = none\n[backend workers]\nenforce = inherit\n' >"$BATS_TEST_TMPDIR/agent.ini"
	run "$SPOA_BIN" --check -f "$BATS_TEST_TMPDIR/agent.ini"
	assert_success
	assert_output --partial "enforce: none"
	printf '[backend workers]\nenforce = inherit\n' >"$BATS_TEST_TMPDIR/agent.ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 10 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	wait_until 10 is_drained w2
}

@test "release all gives a half-open server its own maxconn back" {
	stop_all
	EXTRA_AGENT_ARGS="--cooldown 1s" setup
	trip_w2
	# No traffic: the breaker waits in half-open, at its probes' maxconn.
	wait_until 15 maxconn_is w2 1
	run ctl release all
	assert_success
	wait_until 10 maxconn_is w2 50
	is_not_drained w2
	wait_more_looks 3
	maxconn_is w2 50
}

@test "a hold and a release outlive HAProxy pointing the server at another worker" {
	run ctl hold in workers/w1
	assert_success
	# w1 now points at the worker answering 500: a clean breaker, its
	# hold kept (the operator's word is about the server).
	haproxy_cli "set server workers/w1 addr 127.0.0.1 port $W2_PORT"
	wait_until 10 grep -q "breaker workers/w1: HAProxy points it at" "$RUN_DIR/agent.log"
	local i
	for i in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		[ "$(logged_state_of w1)" = open ] && break
	done
	[ "$(logged_state_of w1)" = open ]
	wait_more_looks 3
	is_not_drained w1
	[ "$(shown_field w1 hold)" = in ]
	# Released, a server re-pointed at the failing worker is left alone too.
	run ctl release all
	assert_success
	haproxy_cli "set server workers/w3 addr 127.0.0.1 port $W2_PORT"
	wait_until 10 grep -q "breaker workers/w3: HAProxy points it at" "$RUN_DIR/agent.log"
	for i in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		[ "$(logged_state_of w3)" = open ] && break
	done
	wait_more_looks 3
	is_not_drained w3
	[ "$(shown_field w3 observe_only)" = true ]
}

@test "--check names the operator's holds and pauses that no HAProxy lists" {
	stop_all
	W2_BEHAVIOUR=200 setup
	local dir=$BATS_TEST_TMPDIR/check
	mkdir -p "$dir"
	printf '%s\n' "spoa-breaker operator 1" "pause nosuch 1 0" "hold out workers/w9 0 1 0" \
		"hold in workers/w1 0 1 0" >"$dir/state.msgpack.operator"
	run "$SPOA_BIN" --check --state-file "$dir/state.msgpack" --runtime-api "unix:$RUN_DIR/admin.sock"
	assert_success
	assert_output --partial "2 holds, 1 backends paused"
	assert_output --partial "the operator's hold on workers/w9: no HAProxy lists server w9 in backend workers"
	assert_output --partial "the operator's pause of backend nosuch: no HAProxy lists it"
	refute_output --partial "hold on workers/w1:"
	# A broken record is said, line and all.
	printf '%s\n' "spoa-breaker operator 1" "hold sideways workers/w1 0 1 0" >"$dir/state.msgpack.operator"
	run "$SPOA_BIN" --check --state-file "$dir/state.msgpack" --runtime-api "unix:$RUN_DIR/admin.sock"
	assert_output --partial "unreadable, the agent would start without it"
	assert_output --partial "line 2"
}
