#!/usr/bin/env bats
# SIGHUP and the link to HAProxy: a reload may change how decisions reach
# HAProxy ([haproxy]), is applied whole or not at all, names the settings
# only a restart changes, and leaves a working link alone; and a trip acts
# on HAProxy at once, without first looking at it.

load helpers

LOOKS_OK='spoa_breaker_haproxy_looks_total{result="ok"}'
LOOKS_FAILED='spoa_breaker_haproxy_looks_total{result="failed"}'
MODE_NONE='spoa_breaker_enforcement_mode{mode="none"}'
MODE_RUNTIME_API='spoa_breaker_enforcement_mode{mode="runtime-api"}'

setup() {
	# The file lives outside the scene's RUN_DIR (created later, by the
	# scene); the admin listener answers /metrics and /state.
	INI=$BATS_TEST_TMPDIR/agent.ini
	ADMIN_PORT=$(free_port)
	export INI ADMIN_PORT
	AGENT_ARGS="-f $INI --admin 127.0.0.1:$ADMIN_PORT"
	W2_BEHAVIOUR=500
}

teardown() {
	stop_all
}

# The agent's file under enforce none: no way to HAProxy at all.
write_none_ini() {
	cat >"$INI" <<-INI
	[breaker]
	threshold = ${THRESHOLD:-3}
	cooldown = 60s
	INI
}

# The agent's file in runtime-api mode, on HAProxy's socket in RUN_DIR; a
# long cool-down so that the breaker still wants its drain when looked for.
# POLL: poll_interval.
write_runtime_api_ini() {
	cat >"$INI" <<-INI
	[haproxy]
	runtime_api = unix:$RUN_DIR/admin.sock
	poll_interval = ${POLL:-500ms}
	[breaker]
	cooldown = 60s
	INI
}

# The enforcement scene in runtime-api mode. The socket's path is known
# once the scene exists, and the agent's start-up look must find HAProxy
# there: so the scene starts under enforce none and the agent is restarted on
# the runtime-api file.
start_runtime_api_scene() {
	write_none_ini
	start_enforce_scene
	write_runtime_api_ini
	restart_agent
	wait_until 5 metric_is "$MODE_RUNTIME_API" 1
}

hup_agent() {
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
}

# How many lines of the agent's log match the extended regexp.
log_count() { # REGEXP
	grep -c -E "$1" "$RUN_DIR/agent.log" || true
}

log_count_at_least() { # REGEXP N
	[ "$(log_count "$1")" -ge "$2" ]
}

# The reload the agent was signalled for is over, accepted or refused.
reload_done() {
	grep -q -E "configuration reloaded|reload refused" "$RUN_DIR/agent.log"
}

# Sends requests (round robin: w2 gets every third and answers 500) until
# HAProxy shows w2 drained; bounded by time, watching HAProxy, not the count.
requests_until_w2_drained() {
	local deadline=$((SECONDS + 10))
	until [ "$(server_status workers w2)" = DRAIN ]; do
		if ((SECONDS >= deadline)); then
			echo "w2 never drained: $(server_status workers w2)" >&2
			return 1
		fi
		curl -s -o /dev/null -m 2 "http://127.0.0.1:$FE_PORT/"
	done
}

# One request to PATH: "WORKER STATE OUTCOME FAILURES TRANSITION".
answer_of() { # PATH
	curl -s -o /dev/null -D - -m 2 "http://127.0.0.1:$FE_PORT$1" | tr -d '\r' | awk -F': ' '
		tolower($1)=="x-worker" {w=$2} tolower($1)=="x-breaker-state" {s=$2}
		tolower($1)=="x-breaker-outcome" {o=$2} tolower($1)=="x-breaker-failures" {f=$2}
		tolower($1)=="x-breaker-transition" {t=$2}
		END {print w, s, o, f, t}'
}

# Sends requests to / until w2 answers one (it gets every third); prints
# the agent's verdict on that one: "STATE OUTCOME FAILURES TRANSITION".
next_w2_verdict() {
	local i a
	for i in $(seq 6); do
		a=$(answer_of /)
		if [[ "$a" == "w2 "* ]]; then
			echo "${a#w2 }"
			return 0
		fi
	done
	echo "w2 answered none of 6 requests" >&2
	return 1
}

@test "a trip drains the server without a look at HAProxy in between" {
	POLL=60m # the start-up look, and no other unless a trip asks for one
	start_runtime_api_scene
	wait_until 5 metric_at_least "$LOOKS_OK" 1
	wait_until 5 breaker_known workers/w2
	local looks
	looks=$(metric "$LOOKS_OK")
	is_not_drained w2
	requests_until_w2_drained
	[ "$(logged_state_of w2)" = open ]
	# What the start-up look saw was enough: no look between trip and drain.
	run metric "$LOOKS_OK"
	assert_output "$looks"
}

@test "SIGHUP from enforce none to runtime-api: the next trip drains in HAProxy" {
	write_none_ini
	start_enforce_scene
	wait_until 5 metric_is "$MODE_NONE" 1
	cat >"$INI" <<-INI
	[haproxy]
	runtime_api = unix:$RUN_DIR/admin.sock
	[breaker]
	threshold = 3
	cooldown = 60s
	INI
	hup_agent
	wait_until 5 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	run metric "$MODE_RUNTIME_API"
	assert_output 1
	run metric "$MODE_NONE"
	assert_output 0
	is_not_drained w2
	trip_w2
	wait_until 5 is_drained w2
	run server_status workers w2
	assert_output DRAIN
}

@test "a reload that fails in a later step keeps the whole running configuration" {
	THRESHOLD=3 write_none_ini
	start_enforce_scene
	# A breaker for each worker, with nothing against it: /status/200 goes
	# to w1, w2 and w3 in turn.
	local i
	for i in 1 2 3; do curl -s -o /dev/null -m 2 "http://127.0.0.1:$FE_PORT/status/200"; done
	wait_until 5 breaker_known workers/w1
	run breaker_field workers/w1 policy.threshold
	assert_output 3
	run metric "$MODE_NONE"
	assert_output 1
	# Something else holds the port the new agent-check listener wants.
	local busy_port
	busy_port=$(free_port)
	spawn holder python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
time.sleep(3600)' "$busy_port"
	wait_port "$busy_port"
	# Valid as a file: a new policy first, then a listener that cannot open.
	cat >"$INI" <<-INI
	[haproxy]
	agent_check = 127.0.0.1:$busy_port
	[breaker]
	threshold = 1
	cooldown = 60s
	INI
	hup_agent
	wait_until 5 reload_done
	# Nothing of the new file is in effect: not the policy, not the mode.
	run breaker_field workers/w1 policy.threshold
	assert_output 3
	run metric "$MODE_NONE"
	assert_output 1
	run log_count "reload refused"
	assert_output 1
	run log_count "configuration reloaded"
	assert_output 0
	# Still three failures to open, not one.
	run next_w2_verdict
	assert_output "closed failure 1 "
	run breaker_field workers/w2 state
	assert_output closed
	run next_w2_verdict
	assert_output "closed failure 2 "
	run next_w2_verdict
	assert_output "open failure 3 closed->open"
	kill -0 "$(cat "$RUN_DIR/agent.pid")"
}

@test "a restart-only key changed by SIGHUP is named in a warning" {
	cat >"$INI" <<-'INI'
	[agent]
	max_connections = 100
	INI
	start_scene
	# The same file again: nothing to warn about.
	hup_agent
	wait_until 5 log_count_at_least "configuration reloaded" 1
	run log_count "max_connections"
	assert_output 0
	sed -i 's/^max_connections = 100$/max_connections = 200/' "$INI"
	grep -q "^max_connections = 200$" "$INI"
	hup_agent
	wait_until 5 grep -q -E "max_connections.*restart|restart.*max_connections" "$RUN_DIR/agent.log"
	run grep -E "max_connections.*restart|restart.*max_connections" "$RUN_DIR/agent.log"
	assert_output --partial "[warning]"
	# And the agent still judges every response.
	run verdict_of /status/200
	assert_output "closed success 0 "
	kill -0 "$(cat "$RUN_DIR/agent.pid")"
}

@test "SIGHUP with no change to [haproxy] keeps the enforcement link" {
	POLL=200ms
	start_runtime_api_scene
	trip_w2
	wait_until 5 is_drained w2
	local failed looks
	failed=$(metric "$LOOKS_FAILED")
	[ -n "$failed" ]
	hup_agent
	wait_until 5 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	# A few looks on the reloaded configuration, each one able to undo the
	# drain or to fail.
	looks=$(metric "$LOOKS_OK")
	wait_until 5 metric_at_least "$LOOKS_OK" $((looks + 3))
	run server_status workers w2
	assert_output DRAIN
	[ "$(logged_state_of w2)" = open ]
	run metric "$LOOKS_FAILED"
	assert_output "$failed"
	run metric "$MODE_RUNTIME_API"
	assert_output 1
}

# One breaker-observe for BACKEND/SERVER with STATUS, as another HAProxy
# would send it; prints the ACK's actions.
observe_over_spop() { # BACKEND SERVER STATUS
	python3 "$SPOP_CLIENT" "$AGENT_ADDR" notify \
		"[('breaker-observe', [('be', '$1'), ('srv', '$2'), ('status', $3)])]"
}

@test "a breaker for a server no configured HAProxy lists is kept while SPOP speaks of it, said once" {
	start_runtime_api_scene
	run observe_over_spop other x9 500
	assert_output --partial "set:failures=1"
	# Looks at the one configured HAProxy, which has no other/x9.
	local looks
	looks=$(metric "$LOOKS_OK")
	wait_until 5 metric_at_least "$LOOKS_OK" $((looks + 3))
	run observe_over_spop other x9 500
	assert_output --partial "set:failures=2"
	wait_until 5 metric_at_least "$LOOKS_OK" $((looks + 6))
	[ "$(log_count 'breaker other/x9 dropped')" -eq 0 ]
	[ "$(log_count 'SPOP speaks of other/x9, which no configured HAProxy lists')" -eq 1 ]
}
