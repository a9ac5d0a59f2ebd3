#!/usr/bin/env bats
# A step of the wall clock (NTP, `date -s`) moves none of the agent's
# timers: they all run on the monotonic clock. The agent runs under
# libfaketime, which steps its CLOCK_REALTIME (and so libev's ev_now())
# when the test rewrites a file, and leaves CLOCK_MONOTONIC alone; HAProxy,
# the workers and the test keep the real clock.

load helpers

# libfaketime is in the test packages (packaging/install-deps.sh): a
# machine without it fails here, it does not skip.
LIBFAKETIME=$(dpkg -L libfaketime 2>/dev/null | grep '/libfaketimeMT\.so\.1$' | head -n1)

setup() {
	if [ -z "$LIBFAKETIME" ] || [ ! -f "$LIBFAKETIME" ]; then
		echo "libfaketime is missing: packaging/install-deps.sh installs it" >&2
		return 1
	fi
	CLOCK_FILE=$BATS_TEST_TMPDIR/faketime
	echo "+0" >"$CLOCK_FILE"
	STATE=$BATS_TEST_TMPDIR/state.msgpack
	ADMIN_PORT=$(free_port)
	# One HAProxy thread: one SPOP connection carries the traffic.
	printf 'global\n    nbthread 1\n' >"$BATS_TEST_TMPDIR/threads.cfg"
	# SPOE_IDLE: HAProxy's own idle timeout for its SPOP connections.
	sed "s/^\( *timeout idle\).*/\1 ${SPOE_IDLE:-30s}/" "$REPO/haproxy/spoe-breaker.conf" \
		>"$BATS_TEST_TMPDIR/spoe.conf"
	HAPROXY_EXTRA_ARGS="-f $BATS_TEST_TMPDIR/threads.cfg"
	W2_BEHAVIOUR=500
	export CLOCK_FILE STATE ADMIN_PORT HAPROXY_EXTRA_ARGS W2_BEHAVIOUR
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown ${COOLDOWN:-60s}
		--state-file $STATE --state-interval 1s --idle-timeout 4s --admin 127.0.0.1:$ADMIN_PORT
		--poll-interval ${POLL_INTERVAL:-500ms}"
}

teardown() {
	stop_all
}

# The agent of helpers.bash, its wall clock read from CLOCK_FILE (read at
# every call: no cache). FAKETIME_DONT_FAKE_MONOTONIC keeps the monotonic
# clock real. An ASan build accepts a library loaded before its runtime.
start_agent() { # NAME ARGS...
	local name=$1
	shift
	spawn "$name" env LD_PRELOAD="$LIBFAKETIME" FAKETIME_TIMESTAMP_FILE="$CLOCK_FILE" \
		FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$SPOA_BIN" --log-level info --state-file none "$@"
}

# The scene of helpers.bash, with the SPOE file of setup.
eval "helpers_$(declare -f new_scene)"
new_scene() {
	helpers_new_scene "$@"
	SPOE_CONF=$BATS_TEST_TMPDIR/spoe.conf
}

start_clock_scene() {
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

# The agent's wall clock is now the real one plus OFFSET (libfaketime's
# syntax: +3h, -2h).
step_clock() { # OFFSET
	echo "$1" >"$CLOCK_FILE"
}

state_of() { breaker_field "workers/$1" state; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }

# The snapshot on disk holds every change the agent has seen.
state_written() {
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" |
		python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["state"]["up_to_date"] else 1)'
}

# Requests w1 answers 500 (and w3, in turn) until w1's breaker opens
# (bounded, watching the state).
trip_w1() {
	local i
	for i in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/500"
		[ "$(logged_state_of w1)" = open ] && return 0
	done
	return 1
}

IDLE_CLOSES='spoa_breaker_spop_connections_closed_total{reason="idle_timeout"}'

# The hours between the stamp of the agent's last log line matching
# PATTERN and the real clock (negative: behind): proof that the agent
# runs on the stepped clock, or the test would prove nothing.
log_hours_ahead() { # PATTERN
	local line stamp
	line=$(grep -E "$1" "$RUN_DIR/agent.log" | tail -n1)
	stamp=${line%%Z *}
	[ -n "$line" ] && [ -n "$stamp" ] || return 1
	echo $((($(date -u -d "${stamp/T/ }" +%s) - $(date -u +%s)) / 3600))
}

@test "the wall clock stepped forward by hours, again and again: the busy SPOP connection stays open, the breakers keep their states, the snapshot is written" {
	# HAProxy closes its idle SPOP connections before the agent does (3 s;
	# the agent's idle_timeout is 4 s): HAProxy 3.0 opens a spare now and
	# then and never uses it, and the agent's idle closes must count only
	# the connections HAProxy uses.
	SPOE_IDLE=3s
	setup
	start_clock_scene
	trip_w2
	wait_until 2 is_drained w2
	wait_until 5 state_written
	# The connection of the trip goes silent and closes: the next request
	# opens a fresh one.
	wait_until 10 metric_is spoa_breaker_spop_connections_open 0
	local idle_before
	idle_before=$(metric "$IDLE_CLOSES")
	# HAProxy's connection to the agent carries a NOTIFY every 2.5 s, well
	# within idle_timeout (4 s); each time, a moment after it, the clock
	# jumps an hour ahead. The idle timer then fires about 1.5 s after the
	# last NOTIFY: on the wall clock, that silence was hours long. (The
	# sleeps pace the traffic; nothing waits on them.)
	local i
	for i in 1 2 3 4 5; do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/status/200")" = 200 ]
		sleep 0.3
		step_clock "+${i}h"
		sleep 2.2
	done
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/status/200")" = 200 ]
	# No connection was closed for a silence it never had.
	run metric "$IDLE_CLOSES"
	assert_output "$idle_before"
	# The breakers are as they were: w2 open (its cool-down is 60 s of
	# the monotonic clock, not hours of the wall clock), still drained.
	run state_of w2
	assert_output open
	run state_of w1
	assert_output closed
	run state_of w3
	assert_output closed
	is_drained w2
	# The snapshot keeps being written: a change (w1 trips) is on disk
	# within the interval.
	trip_w1
	wait_until 5 state_written
	# The agent did run 5 h ahead: the line of that trip says so.
	run log_hours_ahead 'breaker workers/w1: closed -> open'
	echo "agent log ahead by $output h"
	[ "$output" -ge 4 ]
}

@test "the wall clock stepped back by hours: a silent connection is closed at idle_timeout, and a change is written within the interval" {
	COOLDOWN=4s
	setup
	start_clock_scene
	trip_w2
	wait_until 5 state_written
	local idle_before
	idle_before=$(metric "$IDLE_CLOSES")
	# A silent SPOP connection of the test's own, its HELLO answered just
	# before the step: with the wall clock, its silence would start hours
	# in the future. HAProxy's own connections make a poor witness: whether
	# one is open and silent at the step is HAProxy's to decide, and in one
	# run on 3.4 none was timed out within 10 s of it.
	spawn silent_peer python3 "$SPOP_CLIENT" "$AGENT_ADDR" wait-disconnect
	wait_until 5 grep -q -x ready "$RUN_DIR/silent_peer.log"
	step_clock "-3h"
	# Closed by the agent within its idle_timeout (4 s) of the monotonic
	# clock, and counted as such.
	wait_until 10 grep -q "^disconnect " "$RUN_DIR/silent_peer.log"
	wait_until 5 metric_at_least "$IDLE_CLOSES" $((idle_before + 1))
	# The cool-down ends on the monotonic clock (half-open, a change), and
	# the snapshot takes it within its interval, not hours later.
	wait_until 10 state_is w2 half_open
	wait_until 5 state_written
	run log_hours_ahead 'breaker workers/w2: open -> half_open'
	echo "agent log ahead by $output h"
	[ "$output" -le -2 ]
}

@test "the wall clock stepped forward by hours: an admin client halfway through its request is not cut" {
	# Looks at HAProxy every 100 ms: the loop wakes often, and the looks
	# count the agent's time below.
	POLL_INTERVAL=100ms
	setup
	start_clock_scene
	# A client that sends half its request, then the rest once the test
	# says so (well within the 5 s an admin client has per request).
	spawn admin_client python3 -c '
import os, socket, sys, time
port, ready, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: agent\r\n")
open(ready, "w").close()
for _ in range(200):
    if os.path.exists(go):
        break
    time.sleep(0.05)
try:
    s.sendall(b"\r\n")
    answer = s.recv(64).split(b"\r\n")[0].decode() or "closed"
except OSError as e:
    answer = type(e).__name__
print(answer, flush=True)
' "$ADMIN_PORT" "$RUN_DIR/ready" "$RUN_DIR/go"
	wait_until 5 test -e "$RUN_DIR/ready"
	step_clock "+3h"
	# Twenty looks at HAProxy later (at least 1.9 s of the agent's
	# monotonic clock), a sweep of the admin clients (once a second) has
	# seen the step (libev reads the wall clock again within 0.5 s).
	local looks
	looks=$(metric 'spoa_breaker_haproxy_looks_total{result="ok"}')
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((looks + 20))
	touch "$RUN_DIR/go"
	wait_until 10 grep -q . "$RUN_DIR/admin_client.log"
	run cat "$RUN_DIR/admin_client.log"
	assert_output "HTTP/1.1 200 OK"
	run grep -c "a client took more than" "$RUN_DIR/agent.log"
	assert_output 0
}
