#!/usr/bin/env bats
# What an HAProxy's configuration lacks for the agent, told once in the log
# and listed in /state with the line to add: a backend whose traffic no
# SPOP message names, a Runtime API below level admin, the ownership map
# not loaded; and `guarded = false`, which leaves a backend out on purpose.

load helpers

teardown() { stop_all; }

# The scene: w1 behind fe (notified), s1 (200) and s2 (STATIC_S2: a
# behaviour, or "refused") behind plain (never notified). SOCKET_LEVEL,
# OWNER_ACL and AGENT_ARGS as the test sets them.
start_wiring_scene() {
	RUN_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/scene.XXXXXX")
	export RUN_DIR
	FE_PORT=$(free_port) PLAIN_PORT=$(free_port) W1_PORT=$(free_port)
	S1_PORT=$(free_port) S2_PORT=$(free_port) AGENT_PORT=$(free_port) ADMIN_PORT=$(free_port)
	AGENT_ADDR=127.0.0.1:$AGENT_PORT
	SPOE_CONF=$REPO/haproxy/spoe-breaker.conf
	SOCKET_LEVEL=${SOCKET_LEVEL:-admin}
	OWNER_ACL=${OWNER_ACL-"acl breaker_owned str(),map($REPO/haproxy/breaker-owned.map) -m found"}
	export FE_PORT PLAIN_PORT W1_PORT S1_PORT S2_PORT AGENT_PORT AGENT_ADDR SPOE_CONF SOCKET_LEVEL OWNER_ACL
	start_worker w1 "$W1_PORT" 200
	start_worker s1 "$S1_PORT" 200
	[ "${STATIC_S2:-200}" = refused ] || start_worker s2 "$S2_PORT" "${STATIC_S2:-200}"
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" \
		--runtime-api "unix:$RUN_DIR/admin.sock" --poll-interval 100ms ${AGENT_ARGS:-}
	wait_port "$AGENT_PORT"
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-wiring.cfg.in"
	wait_until 10 agent_is_up
}

# A field of the first HAProxy in /state (a path of keys split by /; lists joined by
# spaces, booleans lower-case).
haproxy_field() { # FIELD
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" | python3 -c '
import json, sys
try:
    v = json.load(sys.stdin)["haproxy"][0]
except (ValueError, KeyError, IndexError):
    sys.exit(1)
for k in sys.argv[1].split("/"):
    v = v[k]
if isinstance(v, list):
    print(" ".join(v))
elif isinstance(v, bool):
    print(str(v).lower())
else:
    print(v)
' "$1"
}

field_is() { [ "$(haproxy_field "$1")" = "$2" ]; }
field_has() { [[ "$(haproxy_field "$1")" == *"$2"* ]]; }

# Requests through both frontends, spread over time: the report waits for
# traffic over its grace (20 looks, at least 2 s).
traffic() { # SECONDS
	local deadline=$((SECONDS + $1))
	while ((SECONDS < deadline)); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		curl -s -o /dev/null "http://127.0.0.1:$PLAIN_PORT/"
		sleep 0.02
	done
}

static_s2_econ() { # connection errors HAProxy counted on static/s2
	haproxy_cli "show stat" | awk -F, '$1=="static" && $2=="s2" {print $14}'
}

looks_above() { [ "$(looks)" -ge "$1" ]; }

traffic_then_unwired() { # BACKEND: a second of traffic, then the report
	traffic 1
	field_is unwired_backends "$1"
}

looks() { # the agent's complete looks so far
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/metrics" |
		awk '$1 ~ /^spoa_breaker_haproxy_looks_total/ && /result="ok"/ {print $2}'
}

@test "wiring: a backend whose frontend has no SPOE filter is reported once, naming the line" {
	start_wiring_scene
	traffic 1
	# Within its grace it is not judged: an agent just started is not
	# mistaken for a missing line.
	run haproxy_field unwired_backends
	assert_output ""
	# Traffic until it is judged: on a loaded machine the grace (counted
	# in looks) may outlast any fixed stretch of traffic.
	wait_until 30 traffic_then_unwired static
	run haproxy_field problems
	assert_output --partial "filter spoe engine breaker config spoe-breaker.conf"
	run grep -c "responses of backend static that no SPOP message named" "$RUN_DIR/agent.log"
	assert_output 1
	# The wired backend is not listed, and more traffic says nothing more.
	traffic 1
	run haproxy_field unwired_backends
	assert_output static
	run grep -c "no SPOP message named" "$RUN_DIR/agent.log"
	assert_output 1
	run grep "backend workers" "$RUN_DIR/agent.log"
	refute_output --partial "no SPOP message"
}

@test "wiring: guarded = false leaves a backend out: no report, no breaker, a refusing server never drained" {
	printf '[backend static]\nguarded = false\n' >"$BATS_TEST_TMPDIR/agent.ini"
	STATIC_S2=refused AGENT_ARGS="--config $BATS_TEST_TMPDIR/agent.ini" start_wiring_scene
	local before i
	# Until HAProxy has counted s2's refused connections (what would trip
	# it, were the backend guarded), bounded.
	for i in $(seq 200); do
		curl -s -o /dev/null "http://127.0.0.1:$PLAIN_PORT/"
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		[ "$(static_s2_econ)" -ge 5 ] 2>/dev/null && break
	done
	run static_s2_econ
	[ "$output" -ge 5 ]
	# Looks made after all that traffic have read its counters.
	before=$(looks)
	wait_until 10 looks_above $((before + 3))
	# Yet the agent keeps no breaker of static, drains nothing there
	# and reports nothing; workers is guarded as ever.
	run breaker_field static/s2 state
	assert_failure
	run breaker_field workers/w1 state
	assert_output closed
	run haproxy_field unwired_backends
	assert_output ""
	run bash -c "echo 'show servers state static' | socat -t 2 - UNIX-CONNECT:$RUN_DIR/admin.sock | awk '\$4==\"s2\" {print \$7}'"
	assert_output 0
	run grep -E "static/s2|backend static" "$RUN_DIR/agent.log"
	assert_output ""
}

@test "wiring: a Runtime API at level operator is reported once, naming the line" {
	SOCKET_LEVEL=operator start_wiring_scene
	wait_until 10 field_is level operator
	run haproxy_field problems
	assert_output --partial "add \`level admin\` to the \`stats socket\` line"
	wait_until 5 grep -q "the Runtime API is at level operator, not admin" "$RUN_DIR/agent.log"
	traffic 1
	run grep -c "not admin" "$RUN_DIR/agent.log"
	assert_output 1
}

@test "wiring: at level admin, nothing is reported" {
	start_wiring_scene
	wait_until 10 field_is level admin
	wait_until 10 field_is maps/breaker-owned.map true
	run haproxy_field problems
	assert_output ""
	run grep -E "not admin|loads no breaker-owned.map" "$RUN_DIR/agent.log"
	assert_output ""
}

@test "wiring: an ownership map not loaded is listed in /state with the line that loads it" {
	OWNER_ACL="" start_wiring_scene
	wait_until 10 field_is maps/breaker-owned.map false
	run haproxy_field problems
	assert_output --partial "acl breaker_owned str(),map(breaker-owned.map) -m found"
	run grep -c "loads no breaker-owned.map" "$RUN_DIR/agent.log"
	assert_output 1
}

@test "wiring: --check asks a live runtime_api for its level and the agent's maps" {
	SOCKET_LEVEL=operator OWNER_ACL="" start_wiring_scene
	run "$SPOA_BIN" --check --runtime-api "unix:$RUN_DIR/admin.sock"
	assert_failure 1
	assert_output --partial "configuration valid"
	assert_output --partial "level operator, not admin: every drain would be refused; add \`level admin\`"
	assert_output --partial "breaker-owned.map not loaded: add \`acl breaker_owned str(),map(breaker-owned.map) -m found\`"
	# One that is not running yet is said, and fails nothing.
	run "$SPOA_BIN" --check --runtime-api "unix:$RUN_DIR/nobody.sock"
	assert_success
	assert_output --partial "runtime_api unix:$RUN_DIR/nobody.sock: not reachable"
}

@test "wiring: --check against a runtime_api at level admin passes and names the mode" {
	start_wiring_scene
	run "$SPOA_BIN" --check --runtime-api "unix:$RUN_DIR/admin.sock"
	assert_success
	assert_output --partial "runtime_api unix:$RUN_DIR/admin.sock: level admin"
	assert_output --partial "breaker-owned.map loaded"
	assert_output --partial "every-response mode"
}
