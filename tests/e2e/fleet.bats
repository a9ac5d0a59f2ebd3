#!/usr/bin/env bats
# Protecting the fleet from one worker, through a real HAProxy: a worker
# that keeps failing its probes stays out longer each time, and a flaky one
# that never fails three times in a row is opened by its failure rate; a
# hung worker is found among long answers and long streams, and the long
# answers themselves open nothing.

load helpers
load fleet_scene

setup() {
	ADMIN_PORT=$(free_port)
	export ADMIN_PORT
}

teardown() {
	stop_all
}

# Milliseconds since the epoch of the Nth (1-based) agent log line that
# contains TEXT; nothing when there is no such line.
logged_at_ms() { # TEXT N
	grep -F -- "$1" "$RUN_DIR/agent.log" | sed -n "${2}p" | python3 -c '
import datetime, sys
line = sys.stdin.read().strip()
if line:
    t = datetime.datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    print(int(t.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000))
'
}

# How many agent log lines contain TEXT.
logged_count() { grep -c -F -- "$1" "$RUN_DIR/agent.log" || true; }
logged_at_least() { [ "$(logged_count "$1")" -ge "$2" ]; }

@test "a worker failing its probes stays open longer on its second trip than on its first" {
	AGENT_ARGS="--cooldown 400ms --max-cooldown 5s --admin 127.0.0.1:$ADMIN_PORT"
	start_scene
	local i tripped=""
	for i in $(seq 50); do
		run verdict_of /status/500
		if [[ "$output" == "open failure "* ]]; then tripped=$output; break; fi
	done
	[ -n "$tripped" ]
	local streak
	streak=$(echo "$tripped" | awk '{print $3}')
	grep -q "closed -> open (failure, status 500, failure streak $streak): the failure streak reached the threshold of $streak; trip 1 in a row, open for 400 ms" "$RUN_DIR/agent.log"

	# The cool-down ends; the probe fails: a second trip in a row, twice as
	# long, and the streak stays the one that tripped.
	wait_until 5 logged_at_least "open -> half_open" 1
	run verdict_of /status/502
	assert_output "open failure $streak half_open->open"
	grep -q "half_open -> open (failure, status 502, failure streak $streak): the half-open probe failed; trip 2 in a row, open for 800 ms" "$RUN_DIR/agent.log"
	# One read of /state: the 800 ms may end while it is taken, and a
	# breaker no longer open shows the next trip's open time instead.
	local fields
	fields=$(curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" | python3 -c '
import json, sys
b = [b for b in json.load(sys.stdin)["breakers"] if b["server"] == "w1"][0]
print(b["state"], b["trips_in_a_row"], b["opened_by"], b["open_duration_ms"], b["failure_streak"])
')
	echo "# /state: $fields" >&3
	case "$fields" in
	"open 2 probe_failed 800 $streak") ;;
	"half_open 2 probe_failed 1600 $streak") ;;
	*) false ;;
	esac

	# Both open times, measured from the log lines.
	wait_until 5 logged_at_least "open -> half_open" 2
	local opened1 half1 opened2 half2 first second
	opened1=$(logged_at_ms "closed -> open" 1)
	half1=$(logged_at_ms "open -> half_open" 1)
	opened2=$(logged_at_ms "half_open -> open" 1)
	half2=$(logged_at_ms "open -> half_open" 2)
	first=$((half1 - opened1))
	second=$((half2 - opened2))
	echo "# open for $first ms, then $second ms" >&3
	# A log line is stamped as it is written, and a transition's time was
	# read with its batch of NOTIFYs, before: on a loaded machine (or an
	# ASan build) the opening's line can be stamped up to a few tens of ms
	# late, so the open times as logged may fall short of the cool-downs
	# by that much, never by a whole cool-down. The doubling is the point.
	[ "$first" -ge 300 ]
	[ "$second" -ge 700 ]
	[ "$second" -gt $((first + 200)) ]
	grep -q "open -> half_open (cool-down of 800 ms elapsed): trip 2 in a row" "$RUN_DIR/agent.log"

	# A probe that succeeds closes it; the trips in a row wait healthy_for.
	run verdict_of /status/200
	assert_output "closed success 0 half_open->closed"
	[ "$(breaker_field workers/w1 trips_in_a_row)" = 2 ]
	[ "$(breaker_field workers/w1 open_duration_ms)" = 1600 ]
}

# 500, 200, 500, 200, 200: 40 % failures, never two in a row.
flaky_request() { # N (0-based)
	case $(($1 % 5)) in
	0 | 2) echo /status/500 ;;
	*) echo /status/200 ;;
	esac
}

@test "a flaky worker at 40 % failures is opened by the failure rate, not by the streak" {
	AGENT_ARGS="--cooldown 5s --failure-rate-threshold 30 --window 10 --minimum-volume 10 --admin 127.0.0.1:$ADMIN_PORT"
	start_scene
	local i opened=""
	for i in $(seq 0 99); do
		run verdict_of "$(flaky_request "$i")"
		if [[ "$output" == open* ]]; then opened=$output; break; fi
		# Until then closed, and the streak never reaches the threshold.
		[[ "$output" == "closed "* ]]
		[ "$(echo "$output" | awk '{print $3}')" -le 1 ]
	done
	[ -n "$opened" ]
	assert_equal "$opened" "open failure 1 closed->open"
	grep -q "closed -> open (failure, status 500, failure streak 1): the failure rate reached [0-9]*%: [0-9]* of the last 10 judged requests failed (threshold 30%)" "$RUN_DIR/agent.log"
	run grep -c "the failure streak reached" "$RUN_DIR/agent.log"
	assert_output 0
	[ "$(breaker_field workers/w1 opened_by)" = failure_rate ]
	[ "$(breaker_field workers/w1 window_volume)" = 10 ]
	[ "$(metric 'spoa_breaker_server_trips_total{proxy="workers",server="w1",rule="failure_rate"}')" = 1 ]
	[ "$(metric 'spoa_breaker_server_trips_total{proxy="workers",server="w1",rule="failure_streak"}')" = 0 ]
}

@test "the same flaky worker with the rate rule off, and busy answers between, stays closed" {
	AGENT_ARGS="--cooldown 5s --admin 127.0.0.1:$ADMIN_PORT"
	start_scene
	local i
	for i in $(seq 0 39); do
		run verdict_of "$(flaky_request "$i")"
		[[ "$output" == "closed "* ]]
	done
	# Backpressure is no sample of the rate: 503s move neither number.
	local volume failures
	volume=$(breaker_field workers/w1 window_volume)
	failures=$(breaker_field workers/w1 window_failures)
	for i in $(seq 10); do
		run verdict_of /status/503
		assert_output --regexp '^closed backpressure [01] $'
	done
	[ "$(breaker_field workers/w1 window_volume)" = "$volume" ]
	[ "$(breaker_field workers/w1 window_failures)" = "$failures" ]
	[ "$(breaker_field workers/w1 failure_rate_percent)" = 40 ]
}

@test "the backoff survives a restart of the agent: a worker that failed its probe stays out longer" {
	local state=$BATS_TEST_TMPDIR/state.msgpack
	AGENT_ARGS="--cooldown 1s --max-cooldown 10s --state-file $state --state-interval 100ms --admin 127.0.0.1:$ADMIN_PORT"
	start_scene
	local i
	for i in $(seq 50); do
		[[ "$(verdict_of /status/500)" == open* ]] && break
	done
	wait_until 5 logged_at_least "open -> half_open" 1
	run verdict_of /status/500
	assert_output --regexp '^open failure [0-9]+ half_open->open$'
	[ "$(breaker_field workers/w1 trips_in_a_row)" = 2 ]

	# TERM writes the snapshot; the next agent reads it back.
	stop agent
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-stopped.log"
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS:-}
	wait_port "$ADMIN_PORT"
	wait_until 5 breaker_known workers/w1
	[ "$(breaker_field workers/w1 trips_in_a_row)" = 2 ]
	[ "$(breaker_field workers/w1 opened_by)" = probe_failed ]
	# Still open with the backed-off time (2 s), or its cool-down ran out
	# during the restart and the next trip would get 4 s. One read of
	# /state: the 2 s may end between two reads, and a breaker no longer
	# open shows the next trip's open time.
	local fields
	fields=$(curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" | python3 -c '
import json, sys
b = [b for b in json.load(sys.stdin)["breakers"] if b["server"] == "w1"][0]
print(b["state"], b["open_duration_ms"])
')
	echo "# /state: $fields" >&3
	case "$fields" in
	"open 2000" | "half_open 4000") ;;
	*) false ;;
	esac
}

# A worker wedged at 503 beside two that serve: with wedged_after, its
# breaker opens (and the server is drained) with its own reason.
@test "a worker answering only 503 while its neighbours serve is opened as wedged" {
	W2_BEHAVIOUR=503
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --wedged-after 1s --minimum-volume 5 --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	local i
	for i in $(seq 200); do
		curl -s -o /dev/null -m 3 "http://127.0.0.1:$FE_PORT/" || true
		is_drained w2 && break
		sleep 0.02
	done
	is_drained w2
	is_not_drained w1
	is_not_drained w3
	grep -q "breaker workers/w2: closed -> open (backpressure, status 503.*wedged: only capacity statuses for 1000 ms" "$RUN_DIR/agent.log"
	[ "$(breaker_field workers/w2 opened_by)" = wedged ]
	metric_is 'spoa_breaker_server_trips_total{proxy="workers",server="w2",rule="wedged"}' 1
}

# Everyone answers 503 - the backend is overloaded as a whole - for three
# times wedged_after, well past the volume: nobody is wedged, nothing opens.
@test "a backend answering only 503 everywhere has no wedged worker" {
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --wedged-after 1s --minimum-volume 5 --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	# At least 4 s and at least 60 requests (20 a worker): a loaded
	# machine's slower loop still makes runs long and large enough.
	local end=$((SECONDS + 4)) bound=$((SECONDS + 60)) sent=0
	while { [ "$SECONDS" -lt "$end" ] || [ "$sent" -lt 60 ]; } && [ "$SECONDS" -lt "$bound" ]; do
		curl -s -o /dev/null -m 3 "http://127.0.0.1:$FE_PORT/status/503" || true
		sent=$((sent + 1))
		sleep 0.02
	done
	# The runs were long enough and large enough: only the neighbours'
	# success was missing.
	[ "$(breaker_field workers/w2 capacity_run)" -ge 5 ]
	[ "$(breaker_field workers/w2 capacity_run_ms)" -ge 1000 ]
	run grep -c "closed -> open" "$RUN_DIR/agent.log"
	assert_output "0"
	is_not_drained w1
	is_not_drained w2
	is_not_drained w3
}

# A hung probe holds HAProxy's one slot until `timeout server`; when it
# frees, HAProxy would send the next request before the agent's next look
# reports the timeout - two probes an episode. The look that sees the probe
# out (scur at half_open_probes) drains the server until an outcome.
@test "a hung worker gets one probe per half-open episode" {
	W2_BEHAVIOUR=hang
	TIMEOUT_SERVER=1500ms
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 1s --max-cooldown 1s --half-open-probes 1 --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	# Six clients for 12 s (each request bounded by curl's 3 s).
	local c pids=()
	for c in $(seq 6); do
		(
			end=$((SECONDS + 12))
			while [ "$SECONDS" -lt "$end" ]; do
				curl -s -o /dev/null -m 3 "http://127.0.0.1:$FE_PORT/" || true
			done
		) &
		pids+=($!)
	done
	wait "${pids[@]}"
	local counts
	counts=$(arrivals_per_episode)
	echo "requests at w2 per half-open episode: $(echo $counts)" >&3
	# Not vacuous: at least two episodes got their probe ...
	[ "$(echo "$counts" | awk '$1 >= 1' | wc -l)" -ge 2 ]
	# ... and none got more than half_open_probes.
	[ "$(echo "$counts" | awk '$1 > 1' | wc -l)" -eq 0 ]
}

# Clients for SECONDS_ seconds, each request bounded by curl's 3 s: those
# that reach a hung w2 wait the 3 s out, the others are answered at once.
# Prints how many requests were answered 200 and how many were not.
load_for() { # SECONDS_ CLIENTS
	local c pids=()
	for c in $(seq "$2"); do
		(
			end=$((SECONDS + $1))
			while [ "$SECONDS" -lt "$end" ]; do
				code=$(curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:$FE_PORT/") || true
				echo "$code" >>"$RUN_DIR/codes.$c"
			done
		) &
		pids+=($!)
	done
	wait "${pids[@]}"
}

# A hung worker (it accepts, never answers) beside two that serve, under a
# `timeout server` of 30 s: with stalled_after it is opened and drained on
# the looks' evidence - requests in flight, nothing answered, neighbours
# answering - long before a single timeout could tell the failure rules.
@test "a hung worker is opened as stalled and drained long before timeout server" {
	W2_BEHAVIOUR=hang
	TIMEOUT_SERVER=30s
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --poll-interval 200ms --stalled-after 500ms --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	local start=$SECONDS
	# Eight seconds of load: on a loaded machine the clients start late
	# and the looks come late, and the rule needs a look while requests
	# are in flight there.
	load_for 8 4 &
	local load=$!
	# Found on the looks' evidence, not by a timeout: the rule that opened
	# it is checked below, and the time it took is printed (on a loaded
	# machine the looks come late; the bound only keeps a broken run short).
	wait_until 60 is_drained w2
	echo "# w2 drained within $((SECONDS - start + 1)) s of the first request (timeout server 30 s)" >&3
	wait "$load"
	# What the breakers did, shown if an assertion below fails.
	grep -E -- "-> |HAProxy counters:" "$RUN_DIR/agent.log" || true
	is_not_drained w1
	is_not_drained w3
	# By stalled_after's watch; on a machine so loaded that the looks
	# come seconds apart, the silence reading may see it first: stalled
	# either way, from the looks.
	grep -Eq "breaker workers/w2: closed -> open \(HAProxy look: [0-9]* requests in flight \(scur\), no response\): stalled: requests in flight for 500 ms with no response while another server of the backend succeeded|breaker workers/w2: closed -> open \(HAProxy looks: .*\): stalled: " "$RUN_DIR/agent.log"
	[ "$(breaker_field workers/w2 opened_by)" = stalled ]
	[ "$(breaker_field workers/w2 policy.stalled_after_ms)" = 500 ]
	metric_is 'spoa_breaker_server_trips_total{proxy="workers",server="w2",rule="stalled"}' 1
	# Nothing else opened, and no counter fault was recorded: the
	# timeouts that would have told of w2 had not come yet.
	[ "$(grep -c -- "-> open" "$RUN_DIR/agent.log")" = 1 ]
	run grep -c "HAProxy counters:" "$RUN_DIR/agent.log"
	assert_output 0
	# Drained, the neighbours serve every request.
	local i
	for i in $(seq 20); do
		run curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:$FE_PORT/"
		assert_output 200
	done
}

# The same hung worker under the shipped defaults (no stalled_after): the
# counted form finds it - 16 requests sent there since it last answered,
# none answered, while its neighbours answered theirs - with no bound on
# how long an answer may take.
@test "with the shipped defaults the same hung worker is opened by counts, its neighbours never" {
	W2_BEHAVIOUR=hang
	TIMEOUT_SERVER=30s
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --poll-interval 200ms --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	local start=$SECONDS
	load_for 12 8 &
	local load=$!
	wait_until 25 is_drained w2
	echo "# w2 drained within $((SECONDS - start + 1)) s of the first request (timeout server 30 s)" >&3
	wait "$load"
	is_not_drained w1
	is_not_drained w3
	grep -q "breaker workers/w2: closed -> open (HAProxy looks: [0-9]* requests sent (stot) since it last answered, none answered.*): stalled: at least 16 requests sent, none answered, while the backend's other servers answered [0-9]*% of theirs" "$RUN_DIR/agent.log"
	[ "$(breaker_field workers/w2 opened_by)" = stalled ]
	[ "$(breaker_field workers/w2 policy.stalled_after_ms)" = 0 ]
	[ "$(breaker_field workers/w2 policy.stalled_requests)" = 16 ]
	[ "$(grep -c -- "-> open" "$RUN_DIR/agent.log")" = 1 ]
}

# Every worker hangs at once (a shared dependency down): no one worker is
# at fault, and none is opened as stalled, however long it lasts.
@test "a backend hung as a whole has no stalled worker" {
	W2_BEHAVIOUR=hang
	TIMEOUT_SERVER=30s
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --poll-interval 200ms --stalled-after 500ms --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	# All of them serve first, so that each has answered ...
	local i
	for i in $(seq 30); do
		run curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:$FE_PORT/status/200"
		assert_output 200
	done
	# ... then every request hangs (the path overrides each behaviour).
	local c pids=()
	for c in $(seq 6); do
		(
			end=$((SECONDS + 5))
			while [ "$SECONDS" -lt "$end" ]; do
				curl -s -o /dev/null -m 3 "http://127.0.0.1:$FE_PORT/status/hang" || true
			done
		) &
		pids+=($!)
	done
	wait "${pids[@]}"
	run grep -c -- "-> open" "$RUN_DIR/agent.log"
	assert_output 0
	is_not_drained w1
	is_not_drained w2
	is_not_drained w3
}

# Long streamed answers, as an inference fleet serves them: the head at the
# first token, within a second, then an event every 100 ms for 10 to 20 s.
STREAMS=(/status/stream:0.2:10 /status/stream:0.5:13 /status/stream:1:16 /status/stream:0.7:20)
# Long answers that are not streamed: the head only when the whole
# completion is ready, 5 to 15 s after the request.
SLOW=(/status/slow:5 /status/slow:8 /status/slow:11 /status/slow:15)

# The load's answers by worker: "WORKER STATUS COMPLETE COUNT" a line.
answers_by_worker() {
	awk '{print $2, $1, $3}' "$RUN_DIR/load.out" | sort | uniq -c | awk '{print $2, $3, $4, $1}'
}

# Three workers streaming, one hung (it accepts, never answers), `timeout
# server 5m`, the agent as shipped (no stall option): 40 clients, each
# request to the hung worker holds its client. The counted stalled rule
# finds the hung one from HAProxy's looks, minutes before the timeout
# would tell; the streaming ones, judged mid-stream, are never opened.
@test "a hung worker among long-streaming ones is drained with the shipped defaults, they never" {
	start_fleet_scene 200 'hang!' 200 200
	start_load 40 100000 80 "${STREAMS[@]}"
	watch_drains_until 45 is_drained w2
	# The load goes on: 20 more streams answered whole after the drain.
	watch_drains_until 30 answers_at_least $(($(answers_so_far) + 20))
	stop load
	was_drained w2
	never_drained w1
	never_drained w3
	never_drained w4
	grep -q "breaker workers/w2: closed -> open (HAProxy looks: [0-9]* requests sent (stot) since it last answered, none answered.*): stalled: at least 16 requests sent" "$RUN_DIR/agent.log"
	run grep -c -- "-> open" "$RUN_DIR/agent.log"
	assert_output 1
	# Every answer came whole from a streaming worker; the hung one's
	# requests were released at its open (release_stalled): HAProxy's 502
	# on 2.6, a close with no answer (status 0 here) on 3.x - never more
	# of them than requests reached it.
	run awk '$2 == "w2" || (($1 != 200 || $3 != 1) && $1 != 502 && $1 != 0)' "$RUN_DIR/load.out"
	assert_output ""
	[ "$(awk '$1 == 502 || $1 == 0' "$RUN_DIR/load.out" | wc -l)" -le "$(wc -l <"$RUN_DIR/w2.arrivals")" ]
	local first opened
	first=$(head -n1 "$RUN_DIR/w2.arrivals")
	opened=$(logged_at_ms "breaker workers/w2: closed -> open" 1)
	echo "# w2 opened $(((opened - first) / 100))00 ms after its first request (timeout server 5m); $(wc -l <"$RUN_DIR/w2.arrivals") requests reached it" >&3
}

# Every worker healthy, each request a long stream or a long answer that
# is not streamed, drawn at random: 64 clients, so that every worker has
# 16 requests in flight at once, some of them unanswered for 15 s while
# its neighbours' streams have their heads. Nothing opens over the run.
@test "long streamed and long unstreamed answers everywhere open nothing with the shipped defaults" {
	start_fleet_scene 200 200 200 200
	start_load 64 96 55 "${STREAMS[@]}" "${SLOW[@]}"
	watch_drains_while_loaded
	[ "$(load_answered)" -ge 96 ]
	run grep -c -- "-> open" "$RUN_DIR/agent.log"
	assert_output 0
	run cat "$RUN_DIR/drained"
	assert_output ""
	# Not vacuous: each worker was sent at least 16 requests.
	local w
	for w in w1 w2 w3 w4; do
		[ "$(wc -l <"$RUN_DIR/$w.arrivals")" -ge 16 ]
	done
	run awk '$1 != 200 || $3 != 1' "$RUN_DIR/load.out"
	assert_output ""
}

# One healthy worker whose answers are not streamed (each whole after
# 10 s) among three streaming ones (each head within a second): 64
# clients, 16 requests at each worker at once, nothing hung. Before its
# first answer it is, by counts, a hung worker, and it may be opened once
# (docs/design.md, "A hung worker"); its probe's answer proves how long it
# can be silent, and it is never opened again for being slow. A short
# cool-down brings the probe within the test.
@test "a worker answering whole after 10 s among streaming ones is opened at most once, never again once it answered" {
	AGENT_ARGS="--cooldown 1s"
	start_fleet_scene 'slow:10!' 'stream:0.5:15!' 'stream:0.5:15!' 'stream:0.5:15!'
	start_load 64 160 75 /
	watch_drains_while_loaded
	[ "$(load_answered)" -ge 160 ]
	run grep -c -- "-> open" "$RUN_DIR/agent.log"
	[ "$output" -le 1 ]
	# It answered, and after that it was never opened.
	grep -q "breaker workers/w1: half_open -> closed" "$RUN_DIR/agent.log" ||
		[ "$(grep -c -- "-> open" "$RUN_DIR/agent.log")" -eq 0 ]
	run grep -c "breaker workers/w1: half_open -> open" "$RUN_DIR/agent.log"
	assert_output 0
	# The streaming ones are never touched.
	run grep -E -c "breaker workers/w[234]: .*-> open" "$RUN_DIR/agent.log"
	assert_output 0
	# Not vacuous: the slow worker answered whole.
	[ "$(awk '$1 == 200 && $2 == "w1" && $3 == 1' "$RUN_DIR/load.out" | wc -l)" -ge 1 ]
}
