#!/usr/bin/env bats
# The promise at the edges where rules meet, with the shipped haproxy.cfg,
# its default SPOE file (steady-state mode) and the agent on its defaults:
# - a Kubernetes ingress controller's parked server slots (in maintenance)
#   are not capacity: the ejection cap still drains a failing worker;
# - half-open never takes the last serving server out of rotation;
# - a half-open probe refused with a late 503, retried elsewhere by the
#   shipped `retry-on`, is backpressure and closes the breaker.

load helpers
load fleet_scene

teardown() {
	stop_all
}

# The shipped haproxy.cfg with its files, copied to $RUN_DIR/haproxy, with
# COUNT more server lines in backend `workers` after w3: FORMAT is a printf
# format given each slot's number (4 on).
shipped_cfg_with_slots() { # COUNT FORMAT
	mkdir -p "$RUN_DIR/haproxy"
	cp -r "$REPO/haproxy/." "$RUN_DIR/haproxy/"
	local i
	for i in $(seq 4 $((3 + $1))); do
		# shellcheck disable=SC2059 # the format is the argument
		printf "    $2\n" "$i"
	done >"$RUN_DIR/slots.cfg"
	sed "/^ *server w3 /r $RUN_DIR/slots.cfg" "$REPO/haproxy/haproxy.cfg" >"$RUN_DIR/haproxy/haproxy.cfg"
	[ "$(grep -c "^ *server " "$RUN_DIR/haproxy/haproxy.cfg")" -ge $((4 + $1)) ]
}

# shipped_cfg_env, then the workers W1 W2 W3 (each a behaviour), the agent on
# its defaults (AGENT_EXTRA: more options) and HAProxy on CFG, up once the
# agent's first looks have set the counters' baseline.
edge_scene() { # CFG W1 W2 W3
	local cfg=$1 name port behaviour i=0
	shift
	for behaviour in "$@"; do
		i=$((i + 1))
		name=W$i
		port=$(free_port)
		export "BREAKER_$name=127.0.0.1:$port"
		start_worker "$name" "$port" "$behaviour"
	done
	# shellcheck disable=SC2086 # AGENT_EXTRA is a list of options
	start_agent agent --listen "$BREAKER_AGENT" --admin "127.0.0.1:$ADMIN_PORT" \
		--runtime-api "unix:$BREAKER_ADMIN_SOCKET" ${AGENT_EXTRA:-}
	wait_port "$AGENT_PORT"
	"$HAPROXY_BIN" -c -f "$cfg" >"$RUN_DIR/check.log" 2>&1
	spawn haproxy "$HAPROXY_BIN" -db -f "$cfg"
	wait_port "$FE_PORT"
	wait_until 10 agent_is_up
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 2
}

# Requests, a few at a time, until workers/SERVER is drained (bounded: the
# loop watches HAProxy, so a changed threshold cannot make it vacuous).
drive_until_drained() { # SERVER
	local i
	for i in $(seq 60); do
		for _ in 1 2 3 4 5 6; do curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"; done
		is_drained "$1" && return 0
	done
	return 1
}

# A backend of the shipped three workers and 39 parked slots, w3 failing
# every request: the slots are in maintenance, not capacity lost, so w3 is
# drained as in a backend of three, and the others keep serving.
slots_scene_drains_failing_worker() { # FORMAT
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
	shipped_cfg_with_slots 39 "$1"
	edge_scene "$RUN_DIR/haproxy/haproxy.cfg" 200 200 500
	drive_until_drained w3
	is_not_drained w1
	is_not_drained w2
	grep -q "breaker workers/w3: closed -> open" "$RUN_DIR/agent.log"
	run grep "not drained on HAProxy" "$RUN_DIR/agent.log"
	assert_output ""
	# The clients are served by the two others.
	local i
	for i in $(seq 6); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT/")" = 200 ]
	done
}

@test "HAProxy Kubernetes Ingress Controller slots (42 a backend, unused ones disabled at 127.0.0.1:1): a failing worker is drained" {
	slots_scene_drains_failing_worker 'server SRV_%d 127.0.0.1:1 disabled'
}

@test "haproxy-ingress slots (disabled at 127.0.0.1:1023): a failing worker is drained" {
	slots_scene_drains_failing_worker 'server srv%03d 127.0.0.1:1023 disabled weight 1'
}

@test "slots parked at run time (set server state maint, as a controller does between reloads): a failing worker is drained" {
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
	shipped_cfg_with_slots 39 'server SRV_%d 127.0.0.1:1'
	edge_scene "$RUN_DIR/haproxy/haproxy.cfg" 200 200 500
	local i
	for i in $(seq 4 42); do
		haproxy_cli "set server workers/SRV_$i state maint" >/dev/null
	done
	[ "$(haproxy_cli "show servers state workers" | awk '$4 ~ /^SRV_/ && int($7) % 2 == 1' | wc -l)" -eq 39 ]
	drive_until_drained w3
	is_not_drained w1
	is_not_drained w2
}

# w2 and w3 in maintenance (an operator's), w1 failing slowly: w1 is the
# last serving server. Its breaker opens and the cap keeps it in rotation;
# when the cool-down ends with requests in flight, half-open must not drain
# it either, nor limit it to its probes: HAProxy would answer every request
# with its own 503.
@test "half-open never drains the last serving server, requests in flight" {
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
	AGENT_EXTRA="--cooldown 1s" edge_scene "$REPO/haproxy/haproxy.cfg" slow:0.5:500 200 200
	haproxy_cli "set server workers/w2 state maint" >/dev/null
	haproxy_cli "set server workers/w3 state maint" >/dev/null
	start_load 6 100000 60 /
	# Open, kept in rotation by the cap, then half-open (at least twice:
	# each episode's answers are w1's 500s, which re-open it).
	wait_until 40 grep -q "breaker workers/w1: closed -> open" "$RUN_DIR/agent.log"
	wait_until 40 bash -c "[ \$(grep -c 'breaker workers/w1: half_open -> open' '$RUN_DIR/agent.log') -ge 2 ]"
	two_more_looks
	stop load
	# Never drained, never limited: no such command was sent, and HAProxy
	# holds neither.
	run grep -E "set server workers/w1 state drain|set maxconn server workers/w1" "$RUN_DIR/agent.log"
	assert_output ""
	is_not_drained w1
	[ "$(maxconn_of w1)" = "" ]
	# Held back by the cap as it opened, and so through half-open.
	grep -q "breaker workers/w1 is open, not drained on HAProxy" "$RUN_DIR/agent.log"
	# Every answer the clients got was w1's own (HAProxy's 503 names no worker).
	[ "$(awk '$1 != 0' "$RUN_DIR/load.out" | wc -l)" -ge 10 ]
	run awk '$1 != 0 && $2 != "W1"' "$RUN_DIR/load.out"
	assert_output ""
}

# w3 fails (500) until its breaker opens and its server is drained, then
# turns busy: it refuses every request with a 503 after DELAY seconds (a
# late refusal: an engine that queues a moment before it gives up). The
# shipped `retry-on ... 503` retries each refusal on w1 or w2, so the agent
# hears of it from HAProxy's counters alone. The half-open probe's late 503
# is backpressure whatever its latency: the breaker closes, as with an
# instant one, never re-opens.
w3_drained_then_busy() { # DELAY
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
	local port
	port=$(free_port)
	export BREAKER_W3=127.0.0.1:$port
	spawn W3 python3 "$WORKER" --name W3 --port "$port" --behaviour 500 \
		--mode-file "$RUN_DIR/w3.mode"
	wait_port "$port"
	AGENT_EXTRA="--cooldown 2s ${AGENT_MORE:-}" edge_scene "$REPO/haproxy/haproxy.cfg" 200 200
	drive_until_drained w3
	echo "slow:$1:503" >"$RUN_DIR/w3.mode"
}

late_503_probe_closes() { # DELAY
	w3_drained_then_busy "$1"
	# The log from here on: a half-open episode may have come and gone
	# (re-opened by a 500) while the test looked for the drain.
	local from
	from=$(($(wc -l <"$RUN_DIR/agent.log") + 1))
	# Requests until the first half-open episode since has an outcome (bounded).
	local i
	for i in $(seq 300); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		tail -n "+$from" "$RUN_DIR/agent.log" | grep -q -E "breaker workers/w3: half_open -> (open|closed)" && break
		sleep 0.05
	done
	tail -n "+$from" "$RUN_DIR/agent.log" | grep -E "breaker workers/w3: half_open -> " | head -n1 >"$RUN_DIR/first-outcome"
	run cat "$RUN_DIR/first-outcome"
	assert_output --partial "half_open -> closed"
	wait_until 5 is_not_drained w3
	# Not vacuous: the probe reached w3 and was refused there, retried.
	[ "$(metric spoa_breaker_capacity_retries_total)" -ge 1 ]
}

@test "a half-open probe refused with a 503 after 1.5 s (retried elsewhere) closes the breaker" {
	late_503_probe_closes 1.5
}

@test "a half-open probe refused with a 503 after 0.4 s (retried elsewhere) closes the breaker" {
	late_503_probe_closes 0.4
}

# The same busy w3 under half_open_backpressure = ignore: a probe's
# refusal frees the probe and closes nothing, so the breaker stays
# half-open and the next request is the next probe, each refused after
# 0.4 s and retried elsewhere. Half-open's in-flight guard drains a server
# whose probe a look sees out, for a hung probe; w3 answers every probe,
# and a look that saw it answer since the one before leaves it in.
@test "half_open_backpressure = ignore: a busy worker answering its probes is not drained between them" {
	AGENT_MORE="--half-open-backpressure ignore" w3_drained_then_busy 0.4
	local from
	from=$(($(wc -l <"$RUN_DIR/agent.log") + 1))
	wait_until 30 bash -c "tail -n +$from '$RUN_DIR/agent.log' | grep -q 'breaker workers/w3: open -> half_open'"
	local retries looks
	retries=$(metric spoa_breaker_capacity_retries_total)
	looks=$(metric 'spoa_breaker_haproxy_looks_total{result="ok"}')
	start_load 4 100000 60 /
	# Eight looks with probes refused in between (bounded by the load's
	# own minute).
	wait_until 60 metric_at_least spoa_breaker_capacity_retries_total $((retries + 8))
	wait_until 60 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((looks + 8))
	stop load
	echo "probes refused and retried: $(($(metric spoa_breaker_capacity_retries_total) - retries)), looks: $(($(metric 'spoa_breaker_haproxy_looks_total{result="ok"}') - looks))" >&3
	# Still half-open: every probe was refused, none closed or re-opened it.
	run bash -c "tail -n +$from '$RUN_DIR/agent.log' | grep 'breaker workers/w3: half_open -> '"
	assert_output ""
	# Drained at most once: by the look that saw the first probe out
	# before any answer (a hung probe would look the same), lifted by the
	# next, and never again while it answers.
	local drains
	drains=$(tail -n +"$from" "$RUN_DIR/agent.log" | grep -c 'set server workers/w3 state drain' || true)
	echo "drains of w3 while half-open: $drains" >&3
	[ "$drains" -le 1 ]
	is_not_drained w3
}

# A busy w3 refusing every request with a 503 after 0.4 s, beside two that
# serve, under a closed-loop load: each refusal is retried elsewhere by the
# shipped `retry-on`, so the agent hears of it from the counters alone.
# Closed, those late refusals are answers, not requests held: neither the
# stall rule nor any other opens w3, and the clients are all served.
@test "a busy worker's late 503s, retried elsewhere, never open it (the stall rule included)" {
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
	edge_scene "$REPO/haproxy/haproxy.cfg" 200 200 slow:0.4:503
	start_load 12 600 60 /
	watch_drains_while_loaded
	[ "$(load_answered)" -ge 600 ]
	two_more_looks
	run grep -E -- "breaker workers/w3: .*-> open" "$RUN_DIR/agent.log"
	assert_output ""
	run cat "$RUN_DIR/drained"
	assert_output ""
	run awk '$1 != 200' "$RUN_DIR/load.out"
	assert_output ""
	# Not vacuous: w3 was sent requests, and its refusals were read as
	# such, none as a request held. (About 46 on a quiet machine; a
	# loaded one answers w1 and w2 slower, and w3 gets fewer: under 30
	# once.)
	echo "capacity retries: $(metric spoa_breaker_capacity_retries_total)"
	[ "$(metric spoa_breaker_capacity_retries_total)" -ge 10 ]
}

# w1 wedged at 503 beside two that serve, under wedged_after: opened as
# wedged (from the counters: every 503 is retried elsewhere). A reload
# then turns the rule off while it is open: its breaker is an ordinary one
# from then on, and its half-open probe's 503 closes it (policy close), no
# "still wedged".
@test "a breaker opened as wedged is an ordinary one once a reload turns wedged_after off" {
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
	local ini=$RUN_DIR/agent.ini
	printf '[breaker]\nwedged_after = 1s\nminimum_volume = 5\ncooldown = 6s\n' >"$ini"
	AGENT_EXTRA="-f $ini" edge_scene "$REPO/haproxy/haproxy.cfg" 503 200 200
	local i
	for i in $(seq 300); do
		grep -q "breaker workers/w1: closed -> open" "$RUN_DIR/agent.log" && break
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		sleep 0.02 # paces the traffic: the wedged rule counts time, not requests
	done
	run breaker_field workers/w1 opened_by
	assert_output wedged
	run breaker_field workers/w1 state
	assert_output open
	printf '[breaker]\nwedged_after = 0\nminimum_volume = 5\ncooldown = 6s\n' >"$ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 10 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	# Still open: the reload came within its cool-down (no half-open
	# before it, which the log would keep).
	run grep "breaker workers/w1: open -> half_open" "$RUN_DIR/agent.log"
	assert_output ""
	for i in $(seq 600); do
		grep -q "breaker workers/w1: half_open -> " "$RUN_DIR/agent.log" && break
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		sleep 0.02
	done
	grep "breaker workers/w1: half_open -> " "$RUN_DIR/agent.log" | head -n1 >"$RUN_DIR/first-outcome"
	run cat "$RUN_DIR/first-outcome"
	assert_output --partial "half_open -> closed"
	run grep "still wedged" "$RUN_DIR/agent.log"
	assert_output ""
}
