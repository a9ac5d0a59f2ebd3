#!/usr/bin/env bats
# A downgrade: an agent finds the snapshot a later agent wrote, in a format
# newer than its own. It refuses the file (said, moved aside), starts
# clean, and still lifts the drain HAProxy's ownership record says is the
# agent's; an operator's drain, which the record does not list, stays.
# (docs/operating.md, "Roll back".)

load helpers

setup() {
	W2_BEHAVIOUR=500
	STATE=$BATS_TEST_TMPDIR/state.msgpack
	ADMIN_PORT=$(free_port)
	export STATE ADMIN_PORT
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 60s
		--state-file $STATE --state-interval 100ms --admin 127.0.0.1:$ADMIN_PORT"
}

teardown() {
	stop_all
}

state_of() { breaker_field "workers/$1" state; }
source_is() {
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["state"]["source"])' |
		grep -qx "$1"
}
owner_map_has() { # ENTRY: the agent's record in HAProxy
	haproxy_cli "show map $REPO/haproxy/breaker-owned.map" | grep -qE " $1( |\$)"
}
owner_map_lacks() { ! owner_map_has "$1"; }

# The snapshot at PATH as a later agent would write it: the same header and
# breakers, under the next format number. Prints the number it now says.
bump_snapshot_format() { # PATH
	python3 - "$1" <<-'PY'
	import sys
	path = sys.argv[1]
	data = bytearray(open(path, "rb").read())
	key = b"\xa6format"  # the header's key, a 6-byte msgpack string
	at = data.index(key) + len(key)
	assert data.count(key) == 1 and data[at] < 0x7f, data[:64]  # a positive fixint
	data[at] += 1
	open(path, "wb").write(data)
	print(data[at])
	PY
}

@test "a snapshot of a newer format: refused and said, a clean start, the agent's recorded drain lifted, an operator's kept" {
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
	trip_w2
	wait_until 10 is_drained w2
	wait_until 10 owner_map_has "workers/w2 drain"
	# TERM: the last snapshot is written, and HAProxy keeps the drain with
	# its record.
	stop agent
	grep -q "state snapshot written to $STATE" "$RUN_DIR/agent.log"
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-later.log"
	is_drained w2
	owner_map_has "workers/w2 drain"
	# While no agent runs, an operator drains w3.
	haproxy_cli "set server workers/w3 state drain" >/dev/null
	local format
	format=$(bump_snapshot_format "$STATE")

	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	wait_until 10 source_is refused
	grep "state snapshot" "$RUN_DIR/agent.log"
	[ "$(grep -c "state snapshot $STATE: newer (header at byte 0: format $format (this agent reads $((format - 1)))); moved aside to $STATE.corrupt-[0-9]*; starting clean" \
		"$RUN_DIR/agent.log")" -eq 1 ]
	ls "$STATE".corrupt-* >/dev/null

	# Nothing of the snapshot is used: w2's breaker is a fresh, closed one,
	# and the drain HAProxy records as the agent's is lifted with its record.
	wait_until 10 grep -q "records that the agent drained workers/w2: taken back as its own" "$RUN_DIR/agent.log"
	wait_until 10 is_not_drained w2
	wait_until 10 owner_map_lacks workers/w2
	run state_of w2
	assert_output closed
	# The operator's drain is not in the record: it stays, look after look.
	wait_more_looks 3
	is_drained w3
	owner_map_lacks workers/w3
}
