#!/usr/bin/env bats
# The breakers' state survives the agent: a snapshot brings back a drained
# worker's open breaker with what is left of its cool-down after kill -9,
# and a snapshot that cannot be used is said, moved aside, and ignored;
# what is at the path is never waited on, written through, or read past
# its limit.

load helpers

setup() {
	W2_BEHAVIOUR=500
	STATE=$BATS_TEST_TMPDIR/state.msgpack
	ADMIN_PORT=$(free_port)
	export STATE ADMIN_PORT
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown ${COOLDOWN:-60s}
		--state-file $STATE --state-interval ${STATE_INTERVAL:-100ms} --admin 127.0.0.1:$ADMIN_PORT"
}

teardown() {
	stop_all
}

start_state_scene() {
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

# kill -9: no goodbye, no last snapshot.
crash_agent() {
	kill -9 "$(cat "$RUN_DIR/agent.pid")"
	rm -f "$RUN_DIR/agent.pid"
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-crashed.log"
}

# The same command line again (EXTRA: options added to it).
start_agent_again() {
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-} "$@"
	wait_port "$AGENT_PORT"
}

crash_and_restart_agent() {
	crash_agent
	start_agent_again
	wait_until 10 agent_is_up
}

# Requests w2 answers 200 until its breaker says closed (bounded).
probe_w2_until_state_closed() {
	local i
	for i in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/200"
		state_is w2 closed && return 0
	done
	return 1
}

state_of() { breaker_field "workers/$1" state; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }
# The snapshot on disk holds every change the agent has seen.
state_written() {
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" |
		python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["state"]["up_to_date"] else 1)'
}

source_is() {
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["state"]["source"])' |
		grep -qx "$1"
}

@test "kill -9 and a restart: the breaker is still open, HAProxy still drains, then it closes on a good probe" {
	# Long enough that a loaded machine restarts the agent well within it.
	COOLDOWN=20s
	setup
	start_state_scene
	trip_w2
	wait_until 2 is_drained w2
	# The trip is written within the interval.
	wait_until 5 state_written
	crash_and_restart_agent
	grep -q "restored 1 breaker(s) from $STATE" "$RUN_DIR/agent.log"
	source_is snapshot
	run state_of w2
	assert_output open
	# What is left of the cool-down, not a new one.
	local left
	left=$(breaker_field workers/w2 cooldown_left_ms)
	echo "cool-down left: $left ms"
	[ "$left" -gt 0 ]
	[ "$left" -lt 20000 ]
	is_drained w2
	# Its remaining cool-down runs out: half-open, ready with one probe.
	wait_until 25 state_is w2 half_open
	wait_until 3 is_not_drained w2
	wait_until 2 maxconn_is w2 1
	probe_w2_until_state_closed
	wait_until 3 maxconn_is w2 50
	is_not_drained w2
}

@test "a half-open server limited to maxconn 1 at the restart gets its own maxconn back when it closes" {
	COOLDOWN=1500ms
	setup
	start_state_scene
	trip_w2
	wait_until 5 state_is w2 half_open
	wait_until 2 maxconn_is w2 1
	wait_until 5 state_written
	crash_and_restart_agent
	run state_of w2
	assert_output half_open
	maxconn_is w2 1
	probe_w2_until_state_closed
	wait_until 3 maxconn_is w2 50
}

owner_map_has() { # ENTRY: the agent's record in HAProxy
	haproxy_cli "show map $REPO/haproxy/breaker-owned.map" | grep -qE " $1( |\$)"
}
owner_map_lacks() { ! owner_map_has "$1"; }

@test "without the snapshot: the agent's own drain and limit are lifted, an operator's drain stays" {
	COOLDOWN=1500ms
	setup
	start_state_scene
	trip_w2
	wait_until 5 state_is w2 half_open
	wait_until 2 maxconn_is w2 1
	# HAProxy records that the limit is the agent's, with w2's own maxconn.
	wait_until 3 owner_map_has "workers/w2 maxconn=50"
	crash_agent
	rm -f "$STATE"
	# While no agent runs, an operator drains w3.
	haproxy_cli "set server workers/w3 state drain" >/dev/null
	start_agent_again
	source_is fresh
	# A fresh breaker is closed: the limit it finds recorded as its own
	# is lifted, w2's own maxconn back, and the record goes.
	wait_until 5 maxconn_is w2 50
	wait_until 3 owner_map_lacks workers/w2
	grep -q "records that the agent limited workers/w2" "$RUN_DIR/agent.log"
	# The operator's drain is not the agent's: it stays, look after look.
	local looks
	looks=$(metric 'spoa_breaker_haproxy_looks_total{result="ok"}')
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((looks + 3))
	is_drained w3
	owner_map_lacks workers/w3
}

@test "without the snapshot, an open breaker's drain is the agent's too" {
	start_state_scene
	trip_w2
	wait_until 2 is_drained w2
	wait_until 3 owner_map_has "workers/w2 drain"
	crash_agent
	rm -f "$STATE"
	start_agent_again
	wait_until 5 is_not_drained w2
	wait_until 3 owner_map_lacks workers/w2
}

@test "kill -9 after a failed probe, before the snapshot has the re-trip: the recorded drain is the agent's, lifted when w2 closes" {
	# At most one snapshot write per 8 s: a re-trip right after a write
	# stays out of the file for that long. A failed probe opens for twice
	# the cool-down (6 s): w2 stays drained until the kill.
	COOLDOWN=3s STATE_INTERVAL=8s
	setup
	start_state_scene
	trip_w2
	wait_until 5 state_is w2 half_open
	wait_until 3 is_not_drained w2
	wait_until 2 maxconn_is w2 1
	# The snapshot says half-open: w2 ready, limited to its probe.
	wait_until 12 state_written
	local half_open=$BATS_TEST_TMPDIR/half-open.msgpack
	cp "$STATE" "$half_open"
	# A probe w2 fails (it answers 500): open again, drained, and HAProxy
	# records the drain as the agent's, beside the limit it already had.
	trip_w2
	wait_until 2 is_drained w2
	wait_until 3 owner_map_has "workers/w2 drain,maxconn=50"
	# The snapshot has not caught up with the re-trip.
	run state_written
	assert_failure
	crash_agent
	# What the kill left: the half-open snapshot, not a later one, and
	# HAProxy draining w2 with the record of it.
	cmp "$STATE" "$half_open"
	is_drained w2
	owner_map_has "workers/w2 drain,maxconn=50"
	start_agent_again
	wait_until 10 agent_is_up
	source_is snapshot
	run state_of w2
	assert_output half_open
	# The record is newer than the snapshot: the drain is the agent's,
	# not an operator's, so the half-open breaker lifts it for its probe.
	wait_until 5 grep -q "records that the agent drained workers/w2: taken back as its own" "$RUN_DIR/agent.log"
	wait_until 3 is_not_drained w2
	probe_w2_until_state_closed
	wait_until 3 maxconn_is w2 50
	wait_until 3 owner_map_lacks workers/w2
	is_not_drained w2
}

@test "a restored breaker of a server HAProxy no longer has is dropped; another policy keeps the states" {
	start_state_scene
	trip_w2
	wait_until 2 is_drained w2
	wait_until 5 state_written
	stop agent
	# The same snapshot, but its breaker is for a w9 this HAProxy lacks
	# (same length: the msgpack string header stays right).
	python3 - "$STATE" <<-'PY'
	import sys
	p = sys.argv[1]
	data = open(p, "rb").read()
	assert data.count(b"\xa2w2") == 1, data
	open(p, "wb").write(data.replace(b"\xa2w2", b"\xa2w9"))
	PY
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-before.log"
	# shellcheck disable=SC2086
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-} --threshold 4
	wait_port "$AGENT_PORT"
	grep -q "restored 1 breaker(s)" "$RUN_DIR/agent.log"
	grep -q "1 of them followed another policy then" "$RUN_DIR/agent.log"
	wait_until 5 grep -q "breaker workers/w9 dropped: no HAProxy has this server" "$RUN_DIR/agent.log"
	run breaker_field workers/w9 state
	assert_failure
}

@test "TERM writes the last snapshot; a breaker whose cool-down ran out while the agent was down comes back half-open" {
	COOLDOWN=1s
	setup
	start_state_scene
	trip_w2
	wait_until 2 is_drained w2
	stop agent
	grep -q "state snapshot written to $STATE" "$RUN_DIR/agent.log"
	sleep 1.5 # the cool-down runs out while no agent runs
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-stopped.log"
	# shellcheck disable=SC2086
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	wait_until 5 state_is w2 half_open
	wait_until 3 is_not_drained w2
}

@test "corrupt, truncated, empty, foreign and newer snapshots: one line each, moved aside, a clean start" {
	start_state_scene
	trip_w2
	wait_until 5 state_written
	stop agent
	local good=$BATS_TEST_TMPDIR/good.msgpack
	cp "$STATE" "$good"
	local size
	size=$(stat -c %s "$good")
	local case expect
	for case in truncated corrupt empty foreign newer; do
		case $case in
		truncated) head -c $((size - 7)) "$good" >"$STATE"; expect="truncated" ;;
		corrupt) cp "$good" "$STATE"; printf '\xc1' | dd of="$STATE" bs=1 seek=$((size - 20)) conv=notrunc 2>/dev/null
			expect="corrupt" ;;
		empty) : >"$STATE"; expect="empty" ;;
		foreign) echo "threshold = 3" >"$STATE"; expect="foreign" ;;
		newer) python3 -c 'import sys; sys.stdout.buffer.write(bytes([0x82, 0xa5]) + b"magic" + bytes([0xb2]) + b"spoa-breaker/state" + bytes([0xa6]) + b"format" + bytes([0x63]))' >"$STATE"
			expect="newer" ;;
		esac
		rm -f "$STATE".corrupt-*
		mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-before-$case.log"
		# shellcheck disable=SC2086
		start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-}
		wait_port "$AGENT_PORT"
		wait_until 5 source_is refused
		echo "--- $case:"
		grep "state snapshot" "$RUN_DIR/agent.log"
		[ "$(grep -c "state snapshot $STATE: $expect" "$RUN_DIR/agent.log")" -eq 1 ]
		grep -q "moved aside to $STATE.corrupt-" "$RUN_DIR/agent.log"
		ls "$STATE".corrupt-* >/dev/null
		# A clean start: w2's breaker is a fresh one (or none yet).
		run state_of w2
		[ "$output" != open ]
		stop agent
	done
}

# The agent reached HAProxy and answers on its admin port: it serves.
agent_serves() {
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

@test "a FIFO at the snapshot path: not waited on, said once, the agent serves and its first snapshot replaces it" {
	mkfifo "$STATE"
	# Opening a FIFO for reading waits for a writer: the agent would never
	# reach its listeners.
	start_state_scene
	agent_serves
	source_is fresh
	grep "state snapshot" "$RUN_DIR/agent.log"
	[ "$(grep -c "state snapshot $STATE: a FIFO, not a regular file: not read; starting clean" \
		"$RUN_DIR/agent.log")" -eq 1 ]
	trip_w2
	wait_until 5 state_written
	[ -f "$STATE" ]
	[ ! -p "$STATE" ]
}

@test "a link planted at the snapshot's .tmp is removed, never written through: its target stays as it was" {
	local target=$BATS_TEST_TMPDIR/not-the-agents
	echo "left alone" >"$target"
	chmod 0644 "$target"
	ln -s "$target" "$STATE.tmp"
	start_state_scene
	trip_w2
	wait_until 5 state_written
	run cat "$target"
	assert_output "left alone"
	[ "$(stat -c %a "$target")" = 644 ]
	# The snapshot is a file of its own, and the link is gone.
	[ -f "$STATE" ]
	[ ! -L "$STATE" ]
	[ ! -e "$STATE.tmp" ]
	[ ! -L "$STATE.tmp" ]
	grep -q "spoa-breaker/state" "$STATE"
	[ "$(grep -c "state snapshot $STATE not written" "$RUN_DIR/agent.log")" -eq 0 ]
}

@test "a snapshot longer than its header's count allows is refused unread with its size and the limit; the agent serves, clean" {
	start_state_scene
	trip_w2
	wait_until 5 state_written
	stop agent
	# The same snapshot, its breaker carrying a key no agent writes and
	# 1 MiB of it: skipped by a reader that does not bound the file, so
	# read and restored.
	python3 - "$STATE" <<-'PY'
	import struct, sys
	p = sys.argv[1]
	data = bytearray(open(p, "rb").read())
	assert data.count(b"\xa2be") == 1, data
	at = data.index(b"\xa2be") - 1  # the breaker's map, "be" its first key
	assert 0x80 <= data[at] < 0x8f, data[at]
	data[at] += 1
	pad = b"\xa7padding" + b"\xdb" + struct.pack(">I", 1 << 20) + b"x" * (1 << 20)
	data[at + 1:at + 1] = pad
	open(p, "wb").write(data)
	PY
	local size
	size=$(stat -c %s "$STATE")
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-before.log"
	start_agent_again
	agent_serves
	wait_until 5 source_is refused
	grep "state snapshot" "$RUN_DIR/agent.log"
	grep -q "state snapshot $STATE: $size bytes, over the limit of 4608 for the 1 breaker(s) its header announces; moved aside to $STATE.corrupt-" \
		"$RUN_DIR/agent.log"
	run state_of w2
	[ "$output" != open ]
}

w1_and_w3_failed_once() {
	[ "$(breaker_field workers/w1 failure_streak)" = 1 ] && [ "$(breaker_field workers/w3 failure_streak)" = 1 ]
}

@test "a snapshot longer than max_breakers breakers can take is refused unread, whatever its header announces" {
	start_state_scene
	trip_w2
	# w1 and w3 one failure each (w2 is drained): three breakers to save.
	curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/500"
	curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/500"
	wait_until 5 w1_and_w3_failed_once
	wait_until 5 state_written
	stop agent
	# Each breaker carries 3,000 bytes of a key no agent writes: within
	# what its header's count of 3 allows (12,800), over what one breaker
	# (max_breakers 1: 4,608) can take.
	python3 - "$STATE" <<-'PY'
	import struct, sys
	p = sys.argv[1]
	data = bytearray(open(p, "rb").read())
	at = 0
	assert data.count(b"\xa2be") == 3, data
	for _ in range(3):
	    at = data.index(b"\xa2be", at) - 1  # a breaker's map, "be" its first key
	    assert 0x80 <= data[at] < 0x8f, data[at]
	    data[at] += 1
	    pad = b"\xa7padding" + b"\xda" + struct.pack(">H", 3000) + b"x" * 3000
	    data[at + 1:at + 1] = pad
	    at += len(pad) + 4
	open(p, "wb").write(data)
	PY
	local size
	size=$(stat -c %s "$STATE")
	[ "$size" -gt 4608 ]
	[ "$size" -lt 12800 ]
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-before.log"
	start_agent_again --max-breakers 1
	agent_serves
	wait_until 5 source_is refused
	grep -q "state snapshot $STATE: $size bytes, over the limit of 4608 for max_breakers 1; moved aside to $STATE.corrupt-" \
		"$RUN_DIR/agent.log"
}

@test "a state_file in a directory that cannot be written stops the agent when set, warns by default" {
	run "$SPOA_BIN" --listen "127.0.0.1:$(free_port)" --admin none \
		--state-file /nonexistent/dir/state.msgpack
	assert_failure
	assert_output --partial "state_file /nonexistent/dir/state.msgpack: directory /nonexistent/dir"
}
