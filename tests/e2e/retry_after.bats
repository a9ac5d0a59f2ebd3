#!/usr/bin/env bats
# A busy worker's own Retry-After, against a real HAProxy: a worker that
# answers nothing but a capacity status with "Retry-After: N" is drained at
# the next look and is ready again when the N s it asked for have passed,
# with no probe and its breaker closed throughout; one that answers other
# requests meanwhile is never drained (capacity.bats); retry_after_max bounds N; the ejection cap holds a rest back
# like a drain, and never rests the last serving server; a 503 without the
# header (or with one that is not seconds) rests nothing. HAProxy passes
# the header as the breaker-observe argument retry_after
# (res.fhdr(retry-after)), in every-response and steady-state mode alike;
# a capacity status HAProxy retries elsewhere (retry-on 503) never shows it.

load helpers
load rest_scene

teardown() {
	stop_all
}


# Requests that reached worker NAME so far.
arrivals_of() { # NAME
	[ -f "$RUN_DIR/$1.arrivals" ] && wc -l <"$RUN_DIR/$1.arrivals" || echo 0
}

arrivals_above() { [ "$(arrivals_of "$1")" -gt "$2" ]; } # NAME N

# Sends requests, one at a time, until COMMAND holds (bounded: 60
# requests, then it fails).
requests_until() { # COMMAND...
	local i
	for i in $(seq 60); do
		"$@" && return 0
		curl -s -o /dev/null -m 5 "http://127.0.0.1:$FE_PORT/"
	done
	"$@"
}

looks_ok() { metric 'spoa_breaker_haproxy_looks_total{result="ok"}'; }


drained_count() {
	local n=0 s
	for s in w1 w2 w3; do is_drained "$s" && n=$((n + 1)); done
	echo "$n"
}
drained_count_is() { [ "$(drained_count)" -eq "$1" ]; }
none_drained() { drained_count_is 0; }

# The rest of workers/w2, in both modes: drained at the next look, no request while
# it rests, ready again on its own, the breaker closed all along.
rest_and_return() {
	requests_until is_drained w2
	# Busy is not dead: no failure, no transition.
	[ "$(breaker_field workers/w2 state)" = closed ]
	[ "$(breaker_field workers/w2 failure_streak)" = 0 ]
	[ "$(breaker_field workers/w2 rests)" = 1 ]
	local left
	left=$(breaker_field workers/w2 rest_left_ms)
	[ "$left" -le 2000 ]
	# Until the end its word asked for: the look that found it answering
	# nothing else came a moment after the word.
	grep -Eq "breaker workers/w2: worker resting for [0-9]+ ms \(Retry-After, and no success since the previous look\)" \
		"$RUN_DIR/agent.log"
	run metric 'spoa_breaker_server_rests_total{proxy="workers",server="w2"}'
	assert_output 1
	is_not_drained w1
	is_not_drained w3
	# No request is sent now; the rest ends on its own.
	local seen
	seen=$(arrivals_of w2)
	wait_until 10 is_not_drained w2
	# Nothing reached w2 meanwhile: no probe was needed to let it back.
	[ "$(arrivals_of w2)" = "$seen" ]
	[ "$(breaker_field workers/w2 state)" = closed ]
	[ "$(breaker_field workers/w2 rest_left_ms)" = 0 ]
	run metric 'spoa_breaker_server_resting{proxy="workers",server="w2"}'
	assert_output 0
	run metric 'spoa_breaker_server_transitions_total{proxy="workers",server="w2",from="closed",to="open"}'
	assert_output 0
	# And it serves again (/status/200: no 503, no new rest).
	served_by w2
}

@test "a worker answering 503 with Retry-After: 2 to every request is drained at the next look and ready again on its own, its breaker closed" {
	W2_BEHAVIOUR=503 W2_RETRY_AFTER=2 start_rest_scene
	rest_and_return
}

@test "steady-state mode notifies every capacity status: the same rest" {
	sed "s|map(breaker-watched.map)|map($REPO/haproxy/breaker-watched.map)|" \
		"$REPO/haproxy/spoe-breaker-steady.conf" >"$BATS_TEST_TMPDIR/spoe-steady.conf"
	grep -q 'retry_after=res.fhdr(retry-after)' "$BATS_TEST_TMPDIR/spoe-steady.conf"
	SPOE_CONF=$BATS_TEST_TMPDIR/spoe-steady.conf W2_BEHAVIOUR=503 W2_RETRY_AFTER=2 \
		start_rest_scene
	rest_and_return
	metric_at_least spoa_breaker_spop_steady_messages_total 1
}

@test "Retry-After: 3600 is bounded by retry_after_max" {
	AGENT_ARGS="--retry-after-max 2s" W2_BEHAVIOUR=503 W2_RETRY_AFTER=3600 start_rest_scene
	[ "$(breaker_field workers/w2 policy.retry_after_max_ms)" = 2000 ]
	requests_until is_drained w2
	local left
	left=$(breaker_field workers/w2 rest_left_ms)
	[ "$left" -le 2000 ]
	grep -Eq "breaker workers/w2: worker resting for [0-9]+ ms \(Retry-After, and no success since the previous look\)" \
		"$RUN_DIR/agent.log"
	# Ready again long before an hour.
	wait_until 10 is_not_drained w2
	[ "$(breaker_field workers/w2 state)" = closed ]
}

@test "the ejection cap holds a rest back, and never rests the last serving worker" {
	# Everything the cap allows a drain: all of the backend, the last
	# server too. A rest still leaves the last serving one. Rests of 10 s
	# (30 asked, bounded): the checks below are done long before the first
	# ends and makes room.
	AGENT_ARGS="--max-ejection-percent 100 --drain-last-server --retry-after-max 10s" \
		W1_BEHAVIOUR=503 W1_RETRY_AFTER=30 W2_BEHAVIOUR=503 W2_RETRY_AFTER=30 \
		W3_BEHAVIOUR=503 W3_RETRY_AFTER=30 start_rest_scene
	requests_until drained_count_is 2
	local last s
	for s in w1 w2 w3; do is_not_drained "$s" && last=$s; done
	[ -n "$last" ]
	# The last one keeps asking to rest: it keeps serving all the same.
	local looks before
	looks=$(looks_ok)
	before=$(arrivals_of "$last")
	requests_until arrivals_above "$last" $((before + 2))
	wait_until 5 two_looks_after "$looks"
	is_not_drained "$last"
	drained_count_is 2
	[ "$(breaker_field "workers/$last" rest_ejection_capped)" = true ]
	grep -q "worker workers/$last asked to rest (Retry-After), not drained on HAProxy .*never the last serving one" \
		"$RUN_DIR/agent.log"
	metric_at_least spoa_breaker_ejections_held_back_total 1
	# No breaker moved, and all come back on their own.
	for s in w1 w2 w3; do [ "$(breaker_field "workers/$s" state)" = closed ]; done
	wait_until 30 none_drained
}

@test "a 503 without Retry-After, or with one that is not seconds, rests nothing" {
	W1_BEHAVIOUR=503 W1_RETRY_AFTER="Wed, 21 Oct 2015 07:28:00 GMT" \
		W2_BEHAVIOUR=503 W3_BEHAVIOUR=503 W3_RETRY_AFTER=soon start_rest_scene
	local looks
	looks=$(looks_ok)
	requests_until metric_at_least \
		'spoa_breaker_server_responses_total{proxy="workers",server="w2",outcome="backpressure",source="spop"}' 3
	# Each worker answered several 503s; none of them rests.
	metric_at_least 'spoa_breaker_server_responses_total{proxy="workers",server="w1",outcome="backpressure",source="spop"}' 2
	metric_at_least 'spoa_breaker_server_responses_total{proxy="workers",server="w3",outcome="backpressure",source="spop"}' 2
	wait_until 5 two_looks_after "$looks"
	none_drained
	local s
	for s in w1 w2 w3; do
		[ "$(breaker_field "workers/$s" rests)" = 0 ]
		[ "$(breaker_field "workers/$s" state)" = closed ]
	done
	# The values it could not honour are counted, by reason.
	metric_at_least 'spoa_breaker_retry_after_ignored_total{reason="date"}' 2
	metric_at_least 'spoa_breaker_retry_after_ignored_total{reason="invalid"}' 2
}

@test "with retry-on 503, a capacity status HAProxy retries elsewhere never shows its header" {
	# HAProxy retries before any filter sees the response: w2's 503s are
	# known from HAProxy's counters only, without their Retry-After.
	EXTRA_DEFAULTS='retry-on conn-failure 503\n    retries 2\n    option redispatch 1' \
		W2_BEHAVIOUR=503 W2_RETRY_AFTER=2 start_rest_scene
	grep -q 'retry-on conn-failure 503' "$RUN_DIR/haproxy.cfg"
	requests_until arrivals_above w2 2
	wait_until 5 metric_at_least spoa_breaker_capacity_retries_total 1
	local looks
	looks=$(looks_ok)
	wait_until 5 two_looks_after "$looks"
	is_not_drained w2
	[ "$(breaker_field workers/w2 rests)" = 0 ]
	run metric 'spoa_breaker_server_responses_total{proxy="workers",server="w2",outcome="backpressure",source="spop"}'
	assert_output 0
}

@test "agent-check mode: a resting worker is answered drain, then ready again" {
	# A rest of 5 s: long enough that a loaded machine's polls of the
	# server state cannot fall on either side of it.
	ENFORCE_MODE=agent-check W2_BEHAVIOUR=503 W2_RETRY_AFTER=5 start_rest_scene
	# HAProxy asks every 200 ms: the drain lands at its next question.
	requests_until metric_at_least 'spoa_breaker_server_rests_total{proxy="workers",server="w2"}' 1
	wait_until 10 is_drained w2
	[ "$(breaker_field workers/w2 state)" = closed ]
	wait_until 20 is_not_drained w2
	[ "$(breaker_field workers/w2 state)" = closed ]
	is_not_drained w1
	is_not_drained w3
}
