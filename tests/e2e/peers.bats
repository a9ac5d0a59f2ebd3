#!/usr/bin/env bats
# A tier of HAProxy nodes sharing verdicts over HAProxy's own peers: three
# HAProxy processes on loopback, each with its own agent, running the
# shipped haproxy.cfg and breaker-peers.cfg, joined in one peers section.
# The same three workers sit behind all of them. A worker opened through
# node A is drained on B and C at their next look, the fleet pays the
# threshold once and not once per node, only A probes it, and stopping A
# mid-open strands no drain on B and C.

load helpers

setup() {
	RUN_DIR=$(mktemp -d "$BATS_TEST_TMPDIR/run.XXXXXX")
	export RUN_DIR
	export BREAKER_SPOE_CONF=$REPO/haproxy/spoe-breaker.conf
	export BREAKER_PEER1=127.0.0.1:$(free_port)
	export BREAKER_PEER2=127.0.0.1:$(free_port)
	export BREAKER_PEER3=127.0.0.1:$(free_port)
	local node
	for node in a b c; do
		mkdir -p "$RUN_DIR/$node"
		echo 1 >"$RUN_DIR/$node/server-state"
		printf -v "FE_$node" '%s' "$(free_port)"
		printf -v "AGENT_$node" '%s' "$(free_port)"
		printf -v "ADMIN_$node" '%s' "$(free_port)"
	done
	COOLDOWN=${COOLDOWN:-30s}
}

teardown() {
	stop_all
}

node_number() { case $1 in a) echo 1 ;; b) echo 2 ;; c) echo 3 ;; esac; }

# Runs COMMAND... against node NODE's HAProxy and agent.
on() { # NODE COMMAND...
	local node=$1 fe admin
	shift
	fe=FE_$node admin=ADMIN_$node
	(RUN_DIR=$RUN_DIR/$node FE_PORT=${!fe} ADMIN_PORT=${!admin} && "$@")
}

# A worker: W1 answers BEHAVIOUR and notes each request it gets.
start_workers() { # W1_BEHAVIOUR
	local i port
	for i in 1 2 3; do
		port=$(free_port)
		export "BREAKER_W$i=127.0.0.1:$port"
		if [ "$i" = 1 ]; then
			spawn W1 python3 "$WORKER" --name W1 --port "$port" --behaviour "$1" \
				--arrivals "$RUN_DIR/w1.arrivals"
			wait_port "$port"
		else
			start_worker "W$i" "$port" 200
		fi
	done
	touch "$RUN_DIR/w1.arrivals"
}

# Node NODE's agent (AGENT_ARGS: peers options; COOLDOWN_<node> and
# AGENT_EXTRA_<node>: that node's own cool-down and further options).
start_node_agent() { # NODE
	local node=$1 n agent admin cooldown extra peers_args
	n=$(node_number "$node")
	agent=AGENT_$node admin=ADMIN_$node cooldown=COOLDOWN_$node extra=AGENT_EXTRA_$node
	peers_args=${AGENT_ARGS-"--verdict-table breaker_verdicts --node-id $n"}
	# shellcheck disable=SC2086 # options, split on purpose
	start_agent "agent_$node" --listen "127.0.0.1:${!agent}" --admin "127.0.0.1:${!admin}" \
		--runtime-api "unix:$RUN_DIR/$node/admin.sock" --cooldown "${!cooldown:-$COOLDOWN}" \
		--poll-interval "${POLL:-500ms}" $peers_args ${!extra:-}
	wait_port "${!agent}"
}

# Node NODE: its agent and its HAProxy on the shipped files.
start_node() { # NODE
	local node=$1 n fe agent
	n=$(node_number "$node")
	fe=FE_$node agent=AGENT_$node
	start_node_agent "$node"
	BREAKER_NODE=node$n BREAKER_FRONTEND=127.0.0.1:${!fe} BREAKER_AGENT=127.0.0.1:${!agent} \
		BREAKER_ADMIN_SOCKET=$RUN_DIR/$node/admin.sock \
		BREAKER_STATE_FILE=$RUN_DIR/$node/server-state \
		spawn "haproxy_$node" "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg" \
		-f "$REPO/haproxy/breaker-peers.cfg"
	wait_port "${!fe}"
	wait_until 10 on "$node" agent_is_up
}

# Both remote peers of NODE established.
peers_up() { # NODE
	[ "$(on "$1" haproxy_cli "show peers breaker_peers" | grep -c 'remote.*last_status=ESTA')" -eq 2 ]
}

start_tier() { # W1_BEHAVIOUR
	start_workers "$1"
	local node
	for node in a b c; do start_node "$node"; done
	for node in a b c; do
		wait_until 10 peers_up "$node"
		wait_until 10 on "$node" metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' 2
	done
}

get() { # NODE PATH
	local fe=FE_$1
	curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:${!fe}$2"
}

# Requests through NODE until its breaker of w1 opens (bounded).
trip_through() { # NODE
	local i
	for i in $(seq 100); do
		[ "$(on "$1" breaker_field workers/w1 state)" = open ] && return 0
		get "$1" / >/dev/null
	done
	on "$1" breaker_field workers/w1 state
	return 1
}

# NODE's snapshot on disk holds every change its agent has seen.
state_written() { # NODE
	local admin=ADMIN_$1
	curl -s -m 2 "http://127.0.0.1:${!admin}/state" |
		python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["state"]["up_to_date"] else 1)'
}

# w1 answers 200 again: a new worker on its port.
heal_w1() {
	stop W1
	spawn W1 python3 "$WORKER" --name W1 --port "${BREAKER_W1##*:}" --behaviour 200
	wait_port "${BREAKER_W1##*:}"
}
looks() { on "$1" metric 'spoa_breaker_haproxy_looks_total{result="ok"}'; }
# NODE's HAProxy holds node 1's open verdict on w1 in the shared table.
verdict_there() { # NODE
	on "$1" haproxy_cli "show table breaker_verdicts" | grep -q "key=workers/w1 .*gpt0=1 .*gpc1=1"
}
arrivals() { wc -l <"$RUN_DIR/w1.arrivals"; }
# Requests HAProxy on NODE sent to w1 (stot).
sent_to_w1() { on "$1" haproxy_cli "show stat" | awk -F, '$1=="workers" && $2=="w1" {print $8}'; }

@test "peers: a worker opened through node A is drained on B and C at their next look" {
	# Looks 2 s apart: counting them is then far coarser than polling.
	POLL=2s start_tier 500
	trip_through a
	local threshold at_trip_b at_trip_c drained_b drained_c
	threshold=$(on a breaker_field workers/w1 policy.threshold)
	at_trip_b=$(looks b) at_trip_c=$(looks c)
	wait_until 5 on a is_drained w1
	# B and C watched together: the look count when A's verdict was first
	# seen in each one's table, and when w1 was first seen drained there.
	# Carrying the verdict between nodes is HAProxy's peers' work, which a
	# loaded machine slows; the agent's promise starts once it is there.
	local node count seen_b="" seen_c="" deadline=$((SECONDS + 60))
	while { [ -z "$drained_b" ] || [ -z "$drained_c" ]; } && ((SECONDS < deadline)); do
		for node in b c; do
			local seen=seen_$node drained=drained_$node
			count=$(looks "$node")
			[ -z "${!seen}" ] && verdict_there "$node" && printf -v "$seen" '%s' "$count"
			[ -z "${!drained}" ] && on "$node" is_drained w1 && printf -v "$drained" '%s' "$count"
		done
		sleep 0.05
	done
	# The first look to start after the verdict reached the node's table
	# drains: the one in flight then may have read the table just before.
	echo "B: trip at look $at_trip_b, verdict there by $seen_b, drained by $drained_b;" \
		"C: $at_trip_c, $seen_c, $drained_c"
	[ -n "$drained_b" ] && [ -n "$drained_c" ]
	[ -n "$seen_b" ] && [ -n "$seen_c" ]
	[ "$drained_b" -le $((seen_b + 2)) ]
	[ "$drained_c" -le $((seen_c + 2)) ]
	run on b breaker_field workers/w1 state
	assert_output open
	grep -q "breaker workers/w1: closed -> open (node 1 holds it open" "$RUN_DIR/agent_b.log"
	# Clients through B and C never reach w1 now; the fleet paid the
	# threshold once, at A.
	local i
	for i in $(seq 20); do
		run get b /
		assert_output 200
		run get c /
		assert_output 200
	done
	run arrivals
	[ "$output" -le $((threshold + 1)) ]
	run sent_to_w1 b
	assert_output 0
	run sent_to_w1 c
	assert_output 0
	# Only the owner writes the verdict.
	run on b haproxy_cli "show table breaker_verdicts"
	assert_output --regexp "key=workers/w1 .*gpt0=1 .*gpc1=1"
	# A verdict on a server this tier does not have, one on a name HAProxy
	# would refuse, one with a state nobody writes: left alone everywhere,
	# and no breaker is made for them.
	on b haproxy_cli "set table breaker_verdicts key workers/w9 data.gpt0 1 data.gpc0 0 data.gpc1 2" >/dev/null
	on b haproxy_cli "set table breaker_verdicts key bad\\;name/w1 data.gpt0 1 data.gpc1 2" >/dev/null
	on b haproxy_cli "set table breaker_verdicts key workers/w2 data.gpt0 7 data.gpc1 2" >/dev/null
	local node at
	at=$(looks c)
	wait_until 5 on c metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((at + 2))
	for node in a b c; do
		run on "$node" breaker_field workers/w9 state
		assert_failure
		run on "$node" breaker_field workers/w2 state
		assert_output closed
		on "$node" is_not_drained w2
	done
}

@test "peers: with verdicts off each node pays the threshold itself (the comparison)" {
	AGENT_ARGS="" start_tier 500
	trip_through a
	local threshold i
	threshold=$(on a breaker_field workers/w1 policy.threshold)
	for i in $(seq 100); do
		[ "$(on b breaker_field workers/w1 state)" = open ] &&
			[ "$(on c breaker_field workers/w1 state)" = open ] && break
		get b / >/dev/null
		get c / >/dev/null
	done
	run on b breaker_field workers/w1 state
	assert_output open
	run on c breaker_field workers/w1 state
	assert_output open
	run arrivals
	echo "w1 got $output failing requests with verdicts off (threshold $threshold, 3 nodes)"
	[ "$output" -ge $((3 * threshold)) ]
}

@test "peers: in half-open only the owner probes" {
	COOLDOWN=3s start_tier 500
	trip_through a
	wait_until 5 on b is_drained w1
	wait_until 5 on c is_drained w1
	local b_before c_before a_before i
	b_before=$(sent_to_w1 b) c_before=$(sent_to_w1 c) a_before=$(sent_to_w1 a)
	# Past A's cool-down, traffic through every node.
	for i in $(seq 50); do
		get a / >/dev/null
		get b / >/dev/null
		get c / >/dev/null
		[ "$(sent_to_w1 a)" -gt "$a_before" ] && break
		sleep 0.1
	done
	# A probed (its probe failed: open again, backed off).
	[ "$(sent_to_w1 a)" -gt "$a_before" ]
	wait_until 5 on a is_drained w1
	for i in $(seq 10); do get b / >/dev/null; get c / >/dev/null; done
	run sent_to_w1 b
	assert_output "$b_before"
	run sent_to_w1 c
	assert_output "$c_before"
	grep -q "breaker workers/w1: open -> half_open" "$RUN_DIR/agent_a.log"
	! grep -q "breaker workers/w1: open -> half_open" "$RUN_DIR/agent_b.log"
	! grep -q "breaker workers/w1: open -> half_open" "$RUN_DIR/agent_c.log"
}

@test "peers: node A stopping mid-open strands no drain on B and C" {
	COOLDOWN=3s start_tier 500
	trip_through a
	wait_until 5 on b is_drained w1
	wait_until 5 on c is_drained w1
	stop haproxy_a
	stop agent_a
	# Still drained on both: A's verdict lives until the table expires it.
	on b is_drained w1
	on c is_drained w1
	# The worker recovers while A is away.
	heal_w1
	# A's verdict expires; B and C fall back on their own breakers, probe,
	# and take w1 back - and agree.
	local i
	for i in $(seq 300); do
		if [ "$(on b breaker_field workers/w1 state)" = closed ] &&
			[ "$(on c breaker_field workers/w1 state)" = closed ]; then
			break
		fi
		get b / >/dev/null
		get c / >/dev/null
		sleep 0.1
	done
	run on b breaker_field workers/w1 state
	assert_output closed
	run on c breaker_field workers/w1 state
	assert_output closed
	wait_until 5 on b is_not_drained w1
	wait_until 5 on c is_not_drained w1
	cat "$RUN_DIR"/agent_[bc].log | grep -q "open -> half_open (another node's verdict was no longer renewed"
}

@test "peers: a node restarted from its snapshot while held by A's verdict lifts the drain once A closes" {
	# B's own cool-down is long: a B that came back open as if on its own
	# evidence would keep w1 drained far past the waits below.
	COOLDOWN=3s COOLDOWN_b=60s
	AGENT_EXTRA_b="--state-file $RUN_DIR/b/state.msgpack --state-interval 100ms"
	start_tier 500
	trip_through a
	wait_until 5 on b is_drained w1
	run on b breaker_field workers/w1 peer_adopted
	assert_output true
	wait_until 5 state_written b
	# kill -9: no goodbye, no last snapshot; B's HAProxy keeps running.
	kill -9 "$(cat "$RUN_DIR/agent_b.pid")"
	rm -f "$RUN_DIR/agent_b.pid"
	mv "$RUN_DIR/agent_b.log" "$RUN_DIR/agent_b-crashed.log"
	on b is_drained w1
	# The worker recovers; A probes it and closes while B is away.
	heal_w1
	local i
	for i in $(seq 100); do
		[ "$(on a breaker_field workers/w1 state)" = closed ] && break
		get a / >/dev/null
		sleep 0.1
	done
	run on a breaker_field workers/w1 state
	assert_output closed
	wait_until 5 on a is_not_drained w1
	# B comes back with its snapshot: A's verdict no longer holds w1, and
	# the drain, remembered as B's own, is lifted at B's first looks.
	start_node_agent b
	wait_until 10 on b agent_is_up
	grep -q "restored 1 breaker(s) from $RUN_DIR/b/state.msgpack" "$RUN_DIR/agent_b.log"
	wait_until 5 on b is_not_drained w1
	run on b breaker_field workers/w1 state
	assert_output closed
	run on b breaker_field workers/w1 peer_adopted
	assert_output false
	# And it stays so: B took no verdict of its own from the snapshot.
	local at
	at=$(looks b)
	wait_until 5 on b metric_at_least 'spoa_breaker_haproxy_looks_total{result="ok"}' $((at + 2))
	on b is_not_drained w1
	on a is_not_drained w1
	run get b /
	assert_output 200
}

@test "peers: a node without the table says so and keeps its own breakers" {
	start_workers 500
	# A lone node: haproxy.cfg alone, no table, no peers.
	start_agent agent_a --listen "127.0.0.1:$AGENT_a" --admin "127.0.0.1:$ADMIN_a" \
		--runtime-api "unix:$RUN_DIR/a/admin.sock" --cooldown 30s --poll-interval 500ms \
		--verdict-table breaker_verdicts --node-id 1
	wait_port "$AGENT_a"
	BREAKER_FRONTEND=127.0.0.1:$FE_a BREAKER_AGENT=127.0.0.1:$AGENT_a \
		BREAKER_ADMIN_SOCKET=$RUN_DIR/a/admin.sock BREAKER_STATE_FILE=$RUN_DIR/a/server-state \
		spawn haproxy_a "$HAPROXY_BIN" -db -f "$REPO/haproxy/haproxy.cfg"
	wait_port "$FE_a"
	wait_until 10 on a agent_is_up
	wait_until 5 grep -q "has no stick table breaker_verdicts" "$RUN_DIR/agent_a.log"
	trip_through a
	wait_until 5 on a is_drained w1
	! grep -q "set table" "$RUN_DIR/agent_a.log"
}
