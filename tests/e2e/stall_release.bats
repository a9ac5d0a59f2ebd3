#!/usr/bin/env bats
# What a hung worker holds, ended when its breaker opens as stalled
# (release_stalled, spoa/link/stall_release.c): without it, every request
# the worker took before the drain holds its client until HAProxy's
# `timeout server` (5 minutes here, as inference needs), and a
# closed-loop client held sends nothing else meanwhile. Only the stalled
# rule releases: a failing worker answers what it holds.

load helpers
load fleet_scene

teardown() {
	stop_all
}

# A column of SERVER's row of backend workers in `show stat`, by name.
stat_of() { # SERVER COLUMN
	haproxy_cli "show stat" | awk -F, -v srv="$1" -v col="$2" '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == col || $i == "# " col) c = i }
		$1 == "workers" && $2 == srv { print $c }'
}

in_flight_on() { stat_of "$1" scur; }
holds_nothing() { [ "$(in_flight_on "$1")" = 0 ]; }
# WORKER's log of spans (arrival, departure) counts at least N requests.
spans_cover() { # WORKER N
	[ -e "$RUN_DIR/$1.spans" ] && [ "$(wc -l <"$RUN_DIR/$1.spans")" -ge "$2" ]
}

# Answers of a couple of seconds, half of them streamed: the hung worker
# is found within seconds of its first requests (docs/design.md, "A hung
# worker").
PATHS=(/status/stream:0:2 /status/stream:0:2 /status/stream:0:3 /status/slow:1
	/status/slow:2 /status/slow:3 /status/slow:1.5 /status/stream:0.5:2.5)

# Milliseconds since the epoch of the first agent log line containing TEXT.
logged_at_ms() { # TEXT
	grep -F -- "$1" "$RUN_DIR/agent.log" | head -n1 | python3 -c '
import datetime, sys
line = sys.stdin.read().strip()
if line:
    t = datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    print(int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000))
'
}

# Under `timeout server 5m`, 12 closed-loop clients, w3 accepting and
# never answering: once w3 is opened as stalled and drained, the requests
# it holds end at once - HAProxy's 502 on 2.6, a close with no answer on
# 3.x (docs/operating.md, "A hung worker") - where they would wait the
# five minutes out. The log says how many and what HAProxy answered; no
# client waits for the timeout, and the neighbours are never touched.
@test "a worker opened as stalled has the requests it holds ended with its drain, not at timeout server" {
	TIMEOUT_SERVER=5m
	start_fleet_scene 200 200 'hang!' 200
	haproxy_cli "set server workers/w4 state maint" >/dev/null
	start_load 12 100000 60 "${PATHS[@]}"
	wait_until 60 is_drained w3
	grep -q "breaker workers/w3: closed -> open (.*): stalled: " "$RUN_DIR/agent.log"
	# Without the release, w3 holds its requests for the five minutes.
	wait_until 20 holds_nothing w3
	wait_until 10 grep -q "released [0-9]* held session(s) of workers/w3 on HAProxy .*: stalled (HAProxy answered nothing: done" "$RUN_DIR/agent.log"
	grep -q "HAProxy unix:.*: shutdown sessions server workers/w3 (breaker open, stalled" "$RUN_DIR/agent.log"
	# Its clients were answered (no head: 0 in load.out on 3.x, HAProxy's
	# 502 on 2.6), never by the timeout.
	wait_until 10 bash -c "awk '\$1 == 0 || \$1 == 502' '$RUN_DIR/load.out' | grep -q ."
	run awk '$1 == 504' "$RUN_DIR/load.out"
	assert_output ""
	run grep -c "shutdown sessions server" "$RUN_DIR/agent.log"
	assert_output 1
	is_not_drained w1
	is_not_drained w2
	local opened released
	opened=$(logged_at_ms "breaker workers/w3: closed -> open")
	released=$(logged_at_ms "released ")
	echo "# w3 held $(grep -o 'released [0-9]*' "$RUN_DIR/agent.log" | head -n1 | cut -d' ' -f2) request(s), ended $((released - opened)) ms after the open" >&3
}

# `release_stalled = false` in the backend's section: the drain comes as
# before, and what w3 holds is left to `timeout server`.
@test "release_stalled = false leaves a stalled worker's requests to timeout server" {
	TIMEOUT_SERVER=5m
	local ini
	ini=$(mktemp "${BATS_TEST_TMPDIR}/agent.XXXXXX.ini")
	printf '[backend workers]\nrelease_stalled = false\n' >"$ini"
	AGENT_ARGS="--config $ini"
	start_fleet_scene 200 200 'hang!' 200
	haproxy_cli "set server workers/w4 state maint" >/dev/null
	start_load 12 100000 60 "${PATHS[@]}"
	wait_until 60 is_drained w3
	wait_more_looks 3
	[ "$(in_flight_on w3)" -gt 0 ]
	run grep -c "shutdown sessions" "$RUN_DIR/agent.log"
	assert_output 0
}

# A failing worker answers what it holds: w3 answers every request 500
# after 3 s (below the 5 s the silence reading ever weighs), so when its
# failure streak opens it, requests it took in the 3 s before are still in
# service there. They are answered, by w3 (its 500), never cut, and no
# shutdown is sent.
@test "a breaker opened by failures sends no shutdown: the requests its worker holds are answered" {
	TIMEOUT_SERVER=5m
	start_fleet_scene 200 200 'slow:3:500!' 200
	haproxy_cli "set server workers/w4 state maint" >/dev/null
	start_load 6 100000 40 /status/200
	wait_until 60 is_drained w3
	grep -q "breaker workers/w3: closed -> open (.*): the failure streak reached" "$RUN_DIR/agent.log"
	local opened held
	opened=$(logged_at_ms "breaker workers/w3: closed -> open")
	# Each request w3 took is answered by w3, 3 s after it came; the load
	# stops there, so that no request is cut by its own deadline.
	wait_until 20 holds_nothing w3
	# Requests in service at w3 when it opened: arrived by then, left
	# after (its own log of each request's span; not vacuous).
	wait_until 10 spans_cover w3 "$(wc -l <"$RUN_DIR/w3.arrivals")"
	held=$(awk -v t="$opened" '$1 <= t && $2 > t' "$RUN_DIR/w3.spans" | wc -l)
	[ "$held" -gt 0 ]
	wait_more_looks 3
	stop load
	run grep -c "shutdown sessions" "$RUN_DIR/agent.log"
	assert_output 0
	run awk '$1 == 0 || $1 == 502 || $1 == 504' "$RUN_DIR/load.out"
	assert_output ""
	[ "$(awk '$1 == 500 && $2 == "w3" && $3 == 1' "$RUN_DIR/load.out" | wc -l)" -ge "$held" ]
}

# `enforce none`: the stalled open is judged and logged, HAProxy is not
# changed - neither drained nor released - and the log says what would
# have been sent.
@test "under enforce none a stalled open says it would release, and sends nothing" {
	TIMEOUT_SERVER=5m
	AGENT_ARGS="--enforce none"
	start_fleet_scene 200 200 'hang!' 200
	haproxy_cli "set server workers/w4 state maint" >/dev/null
	start_load 12 100000 60 "${PATHS[@]}"
	wait_until 60 grep -q "breaker workers/w3: closed -> open (.*): stalled: " "$RUN_DIR/agent.log"
	wait_until 10 grep -q "enforce none: would send to HAProxy .*: shutdown sessions server workers/w3 (breaker open, stalled)" "$RUN_DIR/agent.log"
	wait_more_looks 3
	is_not_drained w3
	[ "$(in_flight_on w3)" -gt 0 ]
	run grep -c "released [0-9]* held session" "$RUN_DIR/agent.log"
	assert_output 0
}

# The operator's hand: w3 held in (`hold in`) is never drained, and what
# it holds is the operator's too - the stalled open is judged and logged,
# and nothing is released.
@test "a stalled worker held in by the operator keeps what it holds" {
	TIMEOUT_SERVER=5m
	local control="$BATS_TEST_TMPDIR/control.sock"
	AGENT_ARGS="--control unix:$control"
	start_fleet_scene 200 200 'hang!' 200
	haproxy_cli "set server workers/w4 state maint" >/dev/null
	"$SPOA_BIN" ctl --socket "$control" hold in workers/w3 for 10m
	start_load 12 100000 60 "${PATHS[@]}"
	wait_until 60 grep -q "breaker workers/w3: closed -> open (.*): stalled: .*; held in by the operator" "$RUN_DIR/agent.log"
	wait_until 10 grep -q "breaker workers/w3 opened as stalled: the sessions its server holds on HAProxy .* are left to timeout server: held in by the operator" "$RUN_DIR/agent.log"
	wait_more_looks 3
	is_not_drained w3
	[ "$(in_flight_on w3)" -gt 0 ]
	run grep -c "shutdown sessions" "$RUN_DIR/agent.log"
	assert_output 0
}
