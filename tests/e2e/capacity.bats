#!/usr/bin/env bats
# Capacity learning, against a real HAProxy: a worker that refuses with a
# capacity status beyond K requests in service gets maxconn K (or K + 1:
# the limit probes one above and is refused back) from the agent's looks,
# and HAProxy queues what is beyond it; a worker whose capacity grows gets
# a higher limit; one that sends Retry-After while it answers other
# requests is never drained; one that refuses everything gives its
# neighbours no limit; pin_maxconn leaves a server's own maxconn alone.
# Every load is bounded in count and time.

load helpers
load rest_scene

teardown() {
	stop_all
}

# The rest scene (rest_scene.bash), with a queue of 5 s, and workers that
# keep their behaviour whatever the path (tests/lib/worker.py's
# cap:K:SECONDS is an engine of capacity K), w2's read from
# $RUN_DIR/w2.mode when that file says something.
start_capacity_scene() {
	TIMEOUT_SERVER=10s EXTRA_DEFAULTS='timeout queue 5s' W2_MODE_FILE=1 \
		WORKER_ARGS="--no-override --backlog 64" start_rest_scene
}

# CLIENTS closed-loop clients, each sending requests back to back until
# $RUN_DIR/stop exists, at most 3000 each and for at most 120 s: threads of
# one process, so that a loaded machine, which is slow to start processes,
# still keeps CLIENTS requests in flight (a curl per request did not: at
# load 16 the worker never held more than its capacity).
start_load() { # CLIENTS
	rm -f "$RUN_DIR/stop"
	spawn load python3 -c '
import http.client, os, sys, threading, time
port, stop, clients = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
end = time.monotonic() + 120
def client():
    for _ in range(3000):
        if os.path.exists(stop) or time.monotonic() > end:
            return
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=12)
        try:
            c.request("GET", "/")
            c.getresponse().read()
        except Exception:
            pass
        finally:
            c.close()
threads = [threading.Thread(target=client) for _ in range(clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
' "$FE_PORT" "$RUN_DIR/stop" "$1"
}
stop_load() { touch "$RUN_DIR/stop"; }

# The maxconn HAProxy applies to workers/SERVER, 0 when unlimited.
limit_of() {
	local v
	v=$(maxconn_of "$1")
	echo "${v:-0}"
}
limit_between() { # SERVER LOW HIGH
	local v
	v=$(limit_of "$1")
	[ "$v" -ge "$2" ] && [ "$v" -le "$3" ]
}

learnt_at_least() { # SERVER N
	[ "$(breaker_field "workers/$1" maxconn_learnt)" -ge "$2" ]
}

# holds_through_looks N CONDITION...: CONDITION holds at every sample, one
# each 0.1 s, until the agent has made N more looks than now (at most 600
# samples); fails at the first sample where it does not.
holds_through_looks() {
	local n=$1 looks i
	shift
	looks=$(looks_ok)
	for i in $(seq 600); do
		"$@" || return 1
		[ "$(looks_ok)" -ge $((looks + n)) ] && return 0
		sleep 0.1
	done
	echo "# $n looks were not made in 600 samples" >&3
	return 1
}

# w2 at its own maxconn, w3 at none: no limit of the agent's on either.
neighbours_unlimited() { [ "$(limit_of w3)" = 0 ] && [ "$(limit_of w2)" = 50 ]; }

backpressure_of() { # SERVER
	local v
	v=$(metric "spoa_breaker_server_responses_total{proxy=\"workers\",server=\"$1\",outcome=\"backpressure\",source=\"spop\"}")
	echo "${v:-0}"
}

@test "a worker refusing beyond 3 requests in service gets maxconn 3 or 4, and keeps it" {
	W1_BEHAVIOUR=cap:3:0.3 start_capacity_scene
	[ "$(limit_of w1)" = 0 ]
	start_load 9
	# Refused at first: the agent learns, and the limit settles where the
	# worker's capacity is.
	wait_until 30 limit_between w1 3 4
	[ "$(backpressure_of w1)" -gt 0 ]
	# It stays there: through ten more looks, never out of K - 1 .. K + 1.
	holds_through_looks 10 limit_between w1 2 4
	# /state says what the agent holds there.
	local learnt
	learnt=$(breaker_field workers/w1 maxconn_learnt)
	[ "$learnt" -ge 2 ]
	[ "$learnt" -le 4 ]
	# Busy is not dead: never drained, never opened.
	is_not_drained w1
	[ "$(breaker_field workers/w1 state)" = closed ]
	[ "$(breaker_field workers/w1 rests)" = 0 ]
	# The servers that never refused have a limit too, their neighbour's
	# to start with (an unlimited one would take nothing from HAProxy's
	# queue), never above their own.
	[ "$(limit_of w3)" -ge 2 ]
	local w2_limit
	w2_limit=$(limit_of w2)
	[ "$w2_limit" -ge 2 ]
	[ "$w2_limit" -le 50 ]
	stop_load
}

@test "a worker whose capacity doubles gets a higher limit, never above its own maxconn" {
	W2_BEHAVIOUR=cap:2:0.3 start_capacity_scene
	start_load 9
	wait_until 30 limit_between w2 2 3
	# The engine's batch grows: the limit follows, while HAProxy queues.
	echo cap:5:0.3 >"$RUN_DIR/w2.mode"
	wait_until 30 limit_between w2 5 6
	[ "$(breaker_field workers/w2 state)" = closed ]
	is_not_drained w2
	stop_load
}

@test "a worker sending Retry-After on its refusals while it answers other requests is never drained" {
	W1_BEHAVIOUR=cap:2:0.3 W1_RETRY_AFTER=1 start_capacity_scene
	start_load 9
	# Words keep coming while it serves: each look finds its successes.
	# At least 5 of them, then five more looks: once its limit is learnt
	# it may refuse no more (HAProxy queues for it instead), so a count
	# of words alone could wait for ever.
	local drains=0 i
	for i in $(seq 600); do
		is_drained w1 && drains=$((drains + 1))
		[ "$(backpressure_of w1)" -ge 5 ] && break
		sleep 0.1
	done
	[ "$(backpressure_of w1)" -ge 5 ]
	[ "$drains" = 0 ]
	holds_through_looks 5 is_not_drained w1
	[ "$(breaker_field workers/w1 rests)" = 0 ]
	run metric 'spoa_breaker_server_rests_total{proxy="workers",server="w1"}'
	assert_output 0
	[ "$(breaker_field workers/w1 state)" = closed ]
	stop_load
}

# A worker that refuses every request, 0.3 s after it came: the closed-loop
# clients pile up there, a look finds it holding several, and the agent
# limits it above the floor. It answered nothing under that limit, so the
# limit says nothing of its neighbours': they are not started there (once
# they were, and HAProxy's queue then handed a retried refusal back to
# whichever server freed a slot first - the refusing one).
@test "a worker refusing every request, slowly, gets a limit its neighbours do not start from" {
	W1_BEHAVIOUR=slow:0.3:429 start_capacity_scene
	start_load 9
	# Not vacuous: w1 is limited above the floor, the limit a neighbour
	# would start from.
	wait_until 30 learnt_at_least w1 2
	holds_through_looks 10 neighbours_unlimited
	[ "$(breaker_field workers/w3 maxconn_learnt)" = 0 ]
	# Its refusals reached SPOP as what they are.
	[ "$(backpressure_of w1)" -gt 0 ]
	# Busy is not dead: never opened, never drained, never rested.
	[ "$(breaker_field workers/w1 state)" = closed ]
	is_not_drained w1
	[ "$(breaker_field workers/w1 rests)" = 0 ]
	stop_load
}

@test "pin_maxconn leaves a refusing worker's server at its own maxconn" {
	cat >"$BATS_TEST_TMPDIR/pinned.ini" <<-'INI'
		[server workers/w2]
		pin_maxconn = true
	INI
	AGENT_ARGS="--config $BATS_TEST_TMPDIR/pinned.ini" W1_BEHAVIOUR=cap:2:0.3 \
		W2_BEHAVIOUR=cap:2:0.3 start_capacity_scene
	[ "$(breaker_field workers/w2 policy.pin_maxconn)" = true ]
	start_load 9
	# w1 learns; w2 refuses as much and keeps its own 50.
	wait_until 30 limit_between w1 2 3
	[ "$(backpressure_of w2)" -gt 0 ]
	[ "$(limit_of w2)" = 50 ]
	[ "$(breaker_field workers/w2 maxconn_learnt)" = 0 ]
	stop_load
}
