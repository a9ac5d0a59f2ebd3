#!/usr/bin/env bats
# Servers are slots that DNS, the Runtime API and ingress controllers
# re-point at other workers, add and delete: a breaker follows the worker
# (the address a server points at), not the server's name
# (docs/dynamic-servers.md).

load helpers

setup() {
	W2_BEHAVIOUR=${W2_BEHAVIOUR:-500}
	ADMIN_PORT=$(free_port)
	W4_PORT=$(free_port)
	STATE=$BATS_TEST_TMPDIR/state.msgpack
	export ADMIN_PORT W4_PORT STATE
	# A long cool-down: an open breaker still wants its drain whenever a
	# test looks; a look every 100 ms.
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 60s
		--poll-interval 100ms --admin 127.0.0.1:$ADMIN_PORT ${EXTRA_AGENT_ARGS:-}"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	# w4: a healthy worker no server points at yet.
	start_worker w4 "$W4_PORT" 200
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

teardown() {
	stop_all
}

state_of() { breaker_field "workers/$1" state; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }
breaker_gone() { ! breaker_known "workers/$1"; }

# Where HAProxy points workers/SERVER: "ADDRESS:PORT" from show servers state.
address_of() {
	haproxy_cli "show servers state workers" | awk -v s="$1" '$4==s {print $5 ":" $19}'
}

looks() { metric 'spoa_breaker_haproxy_looks_total{result="ok"}'; }

# Waits for N more complete looks than now.
wait_looks() {
	local target=$(($(looks) + $1))
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' "$target"
}

@test "a drained server re-pointed at a healthy worker serves again within a look, with a clean breaker" {
	trip_server w2
	wait_until 10 is_drained w2
	run haproxy_cli "set server workers/w2 addr 127.0.0.1 port $W4_PORT"
	assert_output --partial "changed from"
	[ "$(address_of w2)" = "127.0.0.1:$W4_PORT" ]
	# The old worker's drain is lifted for the new one at once, not after
	# the old worker's cool-down (60 s) and a probe.
	wait_until 10 is_not_drained w2
	state_is w2 closed
	grep -q "breaker workers/w2: HAProxy points it at 127.0.0.1:$W4_PORT instead of 127.0.0.1:$W2_PORT: a clean breaker" "$RUN_DIR/agent.log"
	served_by w4
	# It stays served: nothing brings the old worker's drain back.
	wait_looks 3
	is_not_drained w2
	state_is w2 closed
}

@test "a failing worker moved into another server takes its open breaker along: drained there at once" {
	trip_server w2
	wait_until 10 is_drained w2
	haproxy_cli "set server workers/w2 addr 127.0.0.1 port $W4_PORT"
	wait_until 10 is_not_drained w2
	# The worker that failed behind w2 now behind w3: no threshold paid
	# again, w3 is drained as soon as a look sees it there.
	is_not_drained w3
	haproxy_cli "set server workers/w3 addr 127.0.0.1 port $W2_PORT"
	wait_until 10 is_drained w3
	state_is w3 open
	grep -q "breaker workers/w3: HAProxy points it at 127.0.0.1:$W2_PORT instead of 127.0.0.1:$W3_PORT: that worker's breaker" "$RUN_DIR/agent.log"
	state_is w2 closed
	is_not_drained w2
}

@test "a server added at runtime is guarded; deleted, it is forgotten within a look, with no warning" {
	stop_all
	W2_BEHAVIOUR=200 setup
	local w9_port
	w9_port=$(free_port)
	start_worker w9 "$w9_port" 500
	run haproxy_cli "add server workers/w9 127.0.0.1:$w9_port weight 100"
	assert_output --partial "New server registered"
	haproxy_cli "enable server workers/w9"
	wait_until 10 breaker_known workers/w9
	trip_server w9
	wait_until 10 is_drained w9
	state_is w9 open
	# What the agent did is in HAProxy's ownership record.
	haproxy_cli "show map $REPO/haproxy/breaker-owned.map" | grep -q "workers/w9"
	# The operator's way out: maintenance, then delete.
	haproxy_cli "disable server workers/w9"
	run haproxy_cli "del server workers/w9"
	assert_output --partial "Server deleted"
	wait_until 10 breaker_gone w9
	grep -q "breaker workers/w9 dropped: HAProxy no longer lists this server" "$RUN_DIR/agent.log"
	# Nothing of it left in HAProxy's record either.
	wait_until 10 bash -c "! echo 'show map $REPO/haproxy/breaker-owned.map' | socat -t 2 - UNIX-CONNECT:$RUN_DIR/admin.sock | grep -q workers/w9"
	# A normal event, not a missing runtime_api.
	wait_looks 3
	breaker_gone w9
	run grep "no configured HAProxy lists" "$RUN_DIR/agent.log"
	assert_failure
}

@test "a server deleted while the agent is down leaves no entry in the ownership record" {
	stop_all
	W2_BEHAVIOUR=200 setup
	local w9_port
	w9_port=$(free_port)
	start_worker w9 "$w9_port" 500
	haproxy_cli "add server workers/w9 127.0.0.1:$w9_port weight 100" >/dev/null
	haproxy_cli "enable server workers/w9"
	wait_until 10 breaker_known workers/w9
	trip_server w9
	wait_until 10 is_drained w9
	haproxy_cli "show map $REPO/haproxy/breaker-owned.map" | grep -q "workers/w9"
	# The agent stops (no snapshot: it will know nothing of w9), and the
	# server is deleted meanwhile.
	stop agent
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-previous.log"
	haproxy_cli "disable server workers/w9"
	run haproxy_cli "del server workers/w9"
	assert_output --partial "Server deleted"
	# Back, it finds the record of a server HAProxy no longer lists, with
	# no breaker of its own for it: the entry goes (a server added later
	# under the name must not read as drained by the agent).
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS}
	wait_port "$AGENT_PORT"
	wait_until 10 bash -c "! echo 'show map $REPO/haproxy/breaker-owned.map' | socat -t 2 - UNIX-CONNECT:$RUN_DIR/admin.sock | grep -q workers/w9"
	grep -q "del map .*breaker-owned.map workers/w9 (HAProxy does not list the server)" "$RUN_DIR/agent.log"
	# The other servers' entries are left: w2 serves, w1 and w3 too.
	breaker_gone w9
}

@test "controller: a ready on the failing worker is drained again; a new address with ready serves" {
	trip_server w2
	wait_until 10 is_drained w2
	local drains
	drains=$(grep -c "set server workers/w2 state drain" "$RUN_DIR/agent.log")
	# Made ready behind the agent's back, same worker: its breaker is
	# still open, so the agent drains it again (an operator overrides
	# with maintenance or guarded = false, never with ready).
	haproxy_cli "set server workers/w2 state ready"
	wait_until 10 bash -c "[ \$(grep -c 'set server workers/w2 state drain' '$RUN_DIR/agent.log') -gt $drains ]"
	wait_until 10 is_drained w2
	state_is w2 open
	# What an ingress controller sends when the pod is replaced: a new
	# address, then ready. The new worker is served and stays so.
	haproxy_cli "set server workers/w2 addr 127.0.0.1 port $W4_PORT; set server workers/w2 state ready"
	wait_until 10 state_is w2 closed
	is_not_drained w2
	served_by w4
	wait_looks 3
	is_not_drained w2
}

@test "a restart between a trip and a move restores nothing stale: the new worker serves" {
	stop_all
	EXTRA_AGENT_ARGS="--state-file $STATE --state-interval 100ms" setup
	trip_server w2
	wait_until 10 is_drained w2
	# Stopped (its last snapshot holds the open breaker and its drain) ...
	stop agent
	mv "$RUN_DIR/agent.log" "$RUN_DIR/agent-previous.log"
	grep -q "state snapshot written" "$RUN_DIR/agent-previous.log"
	# ... the slot moves meanwhile ...
	haproxy_cli "set server workers/w2 addr 127.0.0.1 port $W4_PORT"
	is_drained w2 # nobody has lifted it yet
	# ... and the agent comes back with its snapshot.
	# shellcheck disable=SC2086 # AGENT_ARGS is a list of options
	start_agent agent --listen "$AGENT_ADDR" ${AGENT_ARGS} --state-file "$STATE" --state-interval 100ms
	wait_port "$AGENT_PORT"
	grep -q "restored 1 breaker(s) from $STATE" "$RUN_DIR/agent.log"
	wait_until 10 is_not_drained w2
	state_is w2 closed
	grep -q "points it at 127.0.0.1:$W4_PORT instead of 127.0.0.1:$W2_PORT" "$RUN_DIR/agent.log"
	served_by w4
	wait_looks 3
	is_not_drained w2
}
