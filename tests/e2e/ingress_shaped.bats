#!/usr/bin/env bats
# The agent beside an ingress controller, in the configuration the HAProxy
# Kubernetes Ingress Controller (haproxytech) writes
# (haproxy-ingress-shaped.cfg.in), with the very lines
# packaging/kubernetes/ingress-haproxytech/ ships: its ConfigMap's snippets
# where the controller puts them, the SPOE file and maps of its files
# ConfigMap, the agent's backend in haproxy-aux.cfg (put together by
# tests/lib/ingress_cfg.py, which kube.sh uses too). HAProxy runs as the
# controller runs it (master-worker, a master socket, the two files); the
# agent drives it through the snippet's socket, and the test plays the
# controller's Runtime API commands: a pod's slot parked (addr 127.0.0.1
# port 1, state maint), a slot re-pointed at a pod (addr, state ready).
# Three pods in SRV_1..SRV_3, 39 slots parked: 42, the controller's default.

load helpers

KUBE_DIR=$REPO/packaging/kubernetes/ingress-haproxytech
BACKEND=default_svc_vllm_http

setup() {
	new_scene P1_PORT P2_PORT P3_PORT P4_PORT ADMIN_PORT
	export BACKEND
	start_worker p1 "$P1_PORT" 200
	start_worker p2 "$P2_PORT" 500
	start_worker p3 "$P3_PORT" 200
	start_worker p4 "$P4_PORT" 200
	render_controller_cfg
	# A long cool-down: an open breaker still wants its drain whenever a
	# test looks; a look every 200 ms.
	start_agent agent --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" \
		--runtime-api "unix:$RUN_DIR/haproxy.sock" --poll-interval 200ms --cooldown 60s
	wait_port "$AGENT_PORT"
	# As the controller starts it: master-worker, its master socket, its
	# configuration and the auxiliary file.
	spawn haproxy "$HAPROXY_BIN" -W -db -S "$RUN_DIR/haproxy-master.sock,level,admin" \
		-f "$RUN_DIR/haproxy.cfg" -f "$RUN_DIR/haproxy-aux.cfg"
	wait_port "$FE_PORT"
	wait_until 10 agent_up
	wait_until 5 metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 1
}

teardown() {
	stop_all
}

# The shipped pieces into $RUN_DIR, their paths and the agent's address
# made this test's, then the template around them, checked by haproxy -c.
render_controller_cfg() {
	local slot servers=""
	for slot in 1 2 3; do
		local port_var=P${slot}_PORT
		servers+="  server SRV_$slot 127.0.0.1:${!port_var} enabled"$'\n'
	done
	for slot in $(seq 4 42); do
		servers+="  server SRV_$slot 127.0.0.1:1 disabled"$'\n'
	done
	SERVERS=$servers python3 "$REPO/tests/lib/ingress_cfg.py" "$BATS_TEST_DIRNAME/haproxy-ingress-shaped.cfg.in" \
		"$KUBE_DIR" "$RUN_DIR" "$RUN_DIR" "$AGENT_ADDR" || return 1
	"$HAPROXY_BIN" -c -f "$RUN_DIR/haproxy.cfg" -f "$RUN_DIR/haproxy-aux.cfg" >"$RUN_DIR/haproxy-check.log" 2>&1 || {
		cat "$RUN_DIR/haproxy-check.log" >&2
		return 1
	}
}

# The socket of the global snippet: the one the agent uses.
cli() { echo "$*" | socat -t 2 - "UNIX-CONNECT:$RUN_DIR/haproxy.sock"; }
agent_up() { [[ "$(cli "show stat" | awk -F, '$1=="spoa-breaker" && $2=="agent" {print $18}')" == UP* ]]; }
admin_state() { cli "show servers state $BACKEND" | awk -v s="$1" '$4==s {print $7}'; }
drained() { [ "$(($(admin_state "$1") & 8))" -ne 0 ]; }
not_drained() { ! drained "$1"; }
# srv_admin_state's 1: forced maintenance, as the controller parks a slot.
parked() { [ "$(($(admin_state "$1") & 1))" -ne 0 ]; }
state_is() { [ "$(breaker_field "$BACKEND/$1" state)" = "$2" ]; }
pod_of() { curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT/status/200" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-worker" {print $2}'; }
served_by_pod() {
	for _ in $(seq 40); do [ "$(pod_of)" = "$1" ] && return 0; done
	return 1
}
# Requests until SLOT is drained (bounded, watching HAProxy).
drain_by_traffic() { # SLOT
	for _ in $(seq 60); do
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
		drained "$1" && return 0
	done
	cli "show servers state $BACKEND" | head -n 6 >&2
	return 1
}

@test "a failing pod behind 42 slots is drained: the 39 parked ones count for nothing in the ejection cap" {
	# Counted, 39 slots in maintenance would be 39 of 42 servers out, far
	# beyond max_ejection_percent (50): the failing pod would stay in,
	# its breaker open and capped. The cap counts the three pods.
	drain_by_traffic SRV_2
	state_is SRV_2 open
	[ "$(breaker_field "$BACKEND/SRV_2" ejection_capped)" = false ]
	not_drained SRV_1
	not_drained SRV_3
	# The parked slots are left as the controller put them.
	parked SRV_4
	parked SRV_42
	not_drained SRV_42
	# Steady-state mode through the backend snippet's txn.breaker_be: the
	# failing pod is watched (its successes would be notified), the
	# others not, and no problem is reported.
	run cli "show map $RUN_DIR/spoa-breaker/breaker-watched.map"
	assert_output --partial "SRV_2@$BACKEND"
	refute_output --partial "SRV_1@$BACKEND"
	run curl -s "http://127.0.0.1:$ADMIN_PORT/state"
	assert_output --partial '"steady_state":{"messages":'
	refute_output --regexp '"steady_state":\{[^}]*"problem":"'
}

@test "a slot parked then re-pointed at a new pod with ready: a clean breaker, served, never drained again" {
	drain_by_traffic SRV_2
	# The pod behind SRV_2 is gone: the controller parks its slot. Both
	# commands in one line: sent apart, a look of the agent's between them
	# sees the slot moved, not yet in maintenance, and lifts the agent's
	# drain there with `state ready` - which in HAProxy clears a
	# maintenance set meanwhile too (docs/kubernetes.md).
	cli "set server $BACKEND/SRV_2 addr 127.0.0.1 port 1; set server $BACKEND/SRV_2 state maint"
	wait_more_looks 3
	# The agent leaves a parked slot parked.
	parked SRV_2
	# A new pod takes the slot: the controller's two commands.
	run cli "set server $BACKEND/SRV_2 addr 127.0.0.1 port $P4_PORT"
	assert_output --partial "changed from"
	cli "set server $BACKEND/SRV_2 state ready"
	wait_until 10 state_is SRV_2 closed
	not_drained SRV_2
	served_by_pod p4
	wait_more_looks 3
	not_drained SRV_2
	state_is SRV_2 closed
}

# A slot the controller wrote `disabled` and later readied keeps HAProxy's
# CMAINT flag (srv_admin_state 4) while it serves: HAProxy's own mask of
# maintenance (SRV_ADMF_MAINT) leaves that flag out, and so does the agent
# (spoa/link/looks.c): the pod there is guarded and counted by the cap.
@test "a pod put in a parked slot is guarded: failing there, it is drained" {
	local p5_port
	p5_port=$(free_port)
	start_worker p5 "$p5_port" 500
	# p2 is the pod that fails now: give SRV_2 a healthy one first.
	cli "set server $BACKEND/SRV_2 addr 127.0.0.1 port $P4_PORT"
	cli "set server $BACKEND/SRV_4 addr 127.0.0.1 port $p5_port"
	cli "set server $BACKEND/SRV_4 state ready"
	wait_until 10 breaker_known "$BACKEND/SRV_4"
	drain_by_traffic SRV_4
	state_is SRV_4 open
	not_drained SRV_2
}
