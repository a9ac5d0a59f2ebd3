#!/usr/bin/env bats
# Steady-state mode: the shipped haproxy.cfg with spoe-breaker-steady.conf.
# HAProxy notifies a response only when it can change a breaker: a status
# that is not a success, or any response of a server whose breaker is
# dirty, which the agent lists in breaker-watched.map. A clean server's
# successes send nothing; a failing server trips as it does when every
# response is notified.

load helpers

setup() {
	shipped_cfg_env "$REPO/haproxy/spoe-breaker-steady.conf"
}

teardown() {
	stop_all
}

notifies() { metric 'spoa_breaker_spop_frames_total{type="notify"}'; }

# The watched map's keys, one a line.
watched() {
	haproxy_cli "show map ${WATCHED_MAP:-breaker-watched.map}" | awk 'NF >= 3 {print $2}'
}
is_watched() { watched | grep -qx "$1"; }
is_not_watched() { ! watched | grep -qx "$1"; }

# Every request to w1: the others in maintenance (an operator's, which the
# agent leaves alone).
only_w1() {
	haproxy_cli "set server workers/w2 state maint" >/dev/null
	haproxy_cli "set server workers/w3 state maint" >/dev/null
}

status_of() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$FE_PORT$1"; }

@test "steady-state: the agent finds breaker-watched.map and says so" {
	shipped_scene 200 200 200
	grep -q "loads breaker-watched.map: steady-state mode" "$RUN_DIR/agent.log"
	run watched
	assert_output ""
}

@test "steady-state: a clean server's successes send no NOTIFY, its failures do" {
	shipped_scene 200 200 200
	local before i
	before=$(notifies)
	for i in $(seq 30); do
		run status_of /
		assert_output 200
	done
	# HAProxy's counters saw them all; SPOP none.
	run notifies
	assert_output "$before"
	run status_of /status/500
	assert_output 500
	wait_until 5 metric_is 'spoa_breaker_spop_frames_total{type="notify"}' $((before + 1))
}

SPOP_SUCCESSES='spoa_breaker_server_responses_total{proxy="workers",server="w1",outcome="success",source="spop"}'
COUNTED_SUCCESSES='spoa_breaker_server_responses_total{proxy="workers",server="w1",outcome="success",source="haproxy_counters"}'

# HAProxy's own count of w1's 2xx answers (show stat, by column name).
hrsp_2xx_of_w1() {
	haproxy_cli "show stat" | awk -F, '
		NR == 1 {for (i = 1; i <= NF; i++) col[$i] = i; next}
		$1 == "workers" && $2 == "w1" {print $col["hrsp_2xx"]}'
}

looks_ok() { metric 'spoa_breaker_haproxy_looks_total{result="ok"}'; }

@test "steady-state: successes not notified are counted from HAProxy's counters, none twice" {
	shipped_scene 200 200 200
	only_w1
	# Watched for one success, which SPOP counts.
	run status_of /status/500
	assert_output 500
	wait_until 5 is_watched w1@workers
	run status_of /
	assert_output 200
	wait_until 5 is_not_watched w1@workers
	run metric "$SPOP_SUCCESSES"
	assert_output 1
	# Clean: ten successes HAProxy alone sees.
	local i
	for i in $(seq 10); do
		run status_of /
		assert_output 200
	done
	wait_until 10 metric_is "$COUNTED_SUCCESSES" 10
	# Two more looks change nothing: the notified one is not counted again,
	# and the sum is HAProxy's own count.
	local looks
	looks=$(looks_ok)
	wait_until 10 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((looks + 2))
	run metric "$COUNTED_SUCCESSES"
	assert_output 10
	run metric "$SPOP_SUCCESSES"
	assert_output 1
	run hrsp_2xx_of_w1
	assert_output 11
}

@test "steady-state: a failure makes the server watched, a success after it clears both" {
	shipped_scene 200 200 200
	only_w1
	run status_of /status/500
	assert_output 500
	wait_until 5 is_watched w1@workers
	run breaker_field workers/w1 failure_streak
	assert_output 1
	# Watched: its success is notified, and ends the streak.
	local before
	before=$(notifies)
	run status_of /
	assert_output 200
	wait_until 5 metric_is 'spoa_breaker_spop_frames_total{type="notify"}' $((before + 1))
	run breaker_field workers/w1 failure_streak
	assert_output 0
	wait_until 5 is_not_watched w1@workers
	is_not_watched w2@workers
}

@test "steady-state: a failing server trips, is drained, and stays watched while open" {
	shipped_scene 500 200 200
	local i
	for i in $(seq 60); do
		[ "$(breaker_field workers/w1 state)" = open ] && break
		status_of / >/dev/null
	done
	run breaker_field workers/w1 state
	assert_output open
	wait_until 5 is_drained w1
	is_watched w1@workers
	is_not_drained w2
	is_not_watched w2@workers
	# The same trip as in every-response mode: at the threshold, by the
	# failure streak.
	run breaker_field workers/w1 opened_by
	assert_output failure_streak
}

# The order HAProxy served is the order the breaker sees: once the client
# of the response that made its server watched has its answer, HAProxy has
# the entry, so every later response of that server is notified.
@test "steady-state: the ACK of the response that makes a server watched waits for its add map" {
	# Each `add map` reaches HAProxy 300 ms late; HAProxy waits up to 5 s
	# for an ACK, so the wait shows at the client, not as a timeout.
	sed -e 's/timeout processing .*/timeout processing 5s/' \
		-e "s|map(breaker-watched.map)|map($REPO/haproxy/breaker-watched.map)|" \
		"$REPO/haproxy/spoe-breaker-steady.conf" >"$RUN_DIR/spoe-steady.conf"
	export BREAKER_SPOE_CONF=$RUN_DIR/spoe-steady.conf
	WATCHED_MAP=$REPO/haproxy/breaker-watched.map
	spawn relay python3 "$REPO/tests/lib/runtime_api_relay.py" --listen "$RUN_DIR/relay.sock" \
		--upstream "$BREAKER_ADMIN_SOCKET" --add-map-delay 0.3 --answered "$RUN_DIR/answered"
	wait_until 5 test -S "$RUN_DIR/relay.sock"
	AGENT_RUNTIME_API="unix:$RUN_DIR/relay.sock" shipped_scene 200 200 200
	only_w1
	run status_of /status/500
	assert_output 500
	# Answered: HAProxy had the entry first (the relay notes it before
	# the agent can know it). Without the hold the client would have its
	# 500 some 300 ms before the entry lands.
	run cat "$RUN_DIR/answered"
	assert_success
	assert_output --partial "add map"
	is_watched w1@workers
	run metric spoa_breaker_spop_acks_held_total
	assert_output 1
	# Clean again: the `del map` holds nothing.
	run status_of /
	assert_output 200
	wait_until 5 is_not_watched w1@workers
	run metric spoa_breaker_spop_acks_held_total
	assert_output 1
}

@test "steady-state: an entry HAProxy lost is written again at the next look, a stray one removed" {
	shipped_scene 500 200 200
	local i
	for i in $(seq 60); do
		is_watched w1@workers && break
		status_of / >/dev/null
	done
	wait_until 5 is_watched w1@workers
	# The agent's next look may write it back before any check here could
	# see it gone: what shows the rewrite is the agent's own add after the
	# del, in its log.
	local adds
	adds=$(grep -c "add map [^ ]*breaker-watched.map w1@workers" "$RUN_DIR/agent.log")
	haproxy_cli "del map breaker-watched.map w1@workers" >/dev/null
	wait_until 10 bash -c "[ \$(grep -c 'add map [^ ]*breaker-watched.map w1@workers' '$RUN_DIR/agent.log') -gt $adds ]"
	wait_until 5 is_watched w1@workers
	# A server with no breaker has nothing to watch.
	haproxy_cli "add map breaker-watched.map nobody@workers 1" >/dev/null
	wait_until 5 is_not_watched nobody@workers
}

@test "steady-state: under enforce none the agent changes no server, and keeps the watched map" {
	AGENT_EXTRA="--enforce none" shipped_scene 500 200 200
	local i
	for i in $(seq 60); do
		[ "$(breaker_field workers/w1 state)" = open ] && break
		status_of / >/dev/null
	done
	run breaker_field workers/w1 state
	assert_output open
	# Watched, so that its probes' answers come; not drained: enforce none.
	wait_until 5 is_watched w1@workers
	is_not_drained w1
}

# A link rebuilt by SIGHUP counts its commands and looks from zero.
@test "steady-state: after a reload rebuilds the HAProxy link, the watched map is still kept" {
	cat >"$RUN_DIR/agent.ini" <<INI
[haproxy]
poll_interval = 500ms
INI
	AGENT_EXTRA="-f $RUN_DIR/agent.ini" shipped_scene 200 200 200
	only_w1
	local i
	# Map commands on the first link: watched, clean, several times.
	for i in 1 2 3; do
		run status_of /status/500
		assert_output 500
		wait_until 5 is_watched w1@workers
		run status_of /
		assert_output 200
		wait_until 5 is_not_watched w1@workers
	done
	run status_of /status/500
	assert_output 500
	wait_until 5 is_watched w1@workers
	sed -i 's/^poll_interval = .*/poll_interval = 400ms/' "$RUN_DIR/agent.ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 5 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	# Lost in HAProxy: the new link's next looks write it again. HAProxy
	# answers an empty line to a del that removed the entry; whether the
	# entry is seen missing after it is a race with the agent's own look,
	# which may already have written it again (it did once, loaded).
	[ -z "$(haproxy_cli "del map breaker-watched.map w1@workers" | tr -d '[:space:]')" ]
	wait_until 5 is_watched w1@workers
}

# Its neighbours are clean, so their successes are never notified: only
# HAProxy's counters tell the agent that the backend is serving.
@test "steady-state: a worker wedged at 503 beside clean ones that serve is opened as wedged" {
	AGENT_EXTRA="--wedged-after 1s --minimum-volume 5" shipped_scene 503 200 200
	local i
	for i in $(seq 300); do
		[ "$(breaker_field workers/w1 state)" = open ] && break
		run status_of /
		assert_output 200 # its 503s are retried on the others
		sleep 0.02
	done
	run breaker_field workers/w1 opened_by
	assert_output wedged
	wait_until 5 is_drained w1
	is_not_watched w2@workers
	is_not_watched w3@workers
}
