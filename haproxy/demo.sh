#!/bin/bash
# The demo: HAProxy with haproxy.cfg, the agent, and three loopback workers
# -- w1 healthy, w2 busy (503), w3 broken (500) -- then requests showing the
# breaker at work: w2's 503s never count against it, w3 opens after three
# 500s, and after the cool-down (5 s here instead of 30 s, to keep the demo
# short; long enough that a busy machine still shows the drain) w3's probe
# fails and it opens again. Everything runs on 127.0.0.1
# and is stopped on exit. DEMO_REQUESTS sets how many requests per round.
set -eu
cd "$(dirname "$0")/.."

RUN=$(mktemp -d /tmp/spoa-breaker-demo.XXXXXX)
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$RUN"
}
trap cleanup EXIT INT TERM

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in 8080 8101 8102 8103 12345; do
	port_free "$port" || { echo "demo: 127.0.0.1:$port is already in use" >&2; exit 1; }
done

python3 tests/lib/worker.py --name w1 --port 8101 --behaviour 200 2>/dev/null & PIDS+=($!)
python3 tests/lib/worker.py --name w2 --port 8102 --behaviour 503 2>/dev/null & PIDS+=($!)
python3 tests/lib/worker.py --name w3 --port 8103 --behaviour 500 2>/dev/null & PIDS+=($!)
# Each worker listens before HAProxy sends it anything: a port still
# closed would be refused connections, failures that open its breaker.
for port in 8101 8102 8103; do
	for _ in $(seq 600); do
		port_free "$port" || break
		sleep 0.05
	done
	port_free "$port" && { echo "demo: no worker listens on 127.0.0.1:$port" >&2; exit 1; }
done
# The shipped default: steady-state mode, HAProxy sends the agent only the
# responses that can change a breaker.
export BREAKER_SPOE_CONF=$PWD/haproxy/spoe-breaker-steady.conf
export BREAKER_ADMIN_SOCKET=$RUN/admin.sock
export BREAKER_STATE_FILE=$RUN/server-state
# The demo reads the agent's verdicts in x-breaker-* headers: loopback may
# ask for them here (the shipped file lets no client by default).
export BREAKER_DEBUG_FROM=127.0.0.1
echo 1 >"$BREAKER_STATE_FILE"

haproxy -db -f haproxy/haproxy.cfg 2>"$RUN/haproxy.log" & PIDS+=($!)

for _ in $(seq 600); do
	port_free 8080 || break
	sleep 0.05
done
# After HAProxy, so that its admin socket is there from the agent's first look.
build/spoa-breaker --cooldown 5s --runtime-api "unix:$BREAKER_ADMIN_SOCKET" --state-file "$RUN/state.msgpack" 2>"$RUN/agent.log" & PIDS+=($!)

haproxy_stat() { echo "show stat" | socat -t 2 - "UNIX-CONNECT:$BREAKER_ADMIN_SOCKET"; }
# until COMMAND... holds, for at most 30 s: the demo waits on what it
# shows, never on a guess of how long it takes (a busy machine is slower).
until_shown() {
	for _ in $(seq 300); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
# HAProxy checked the agent and found it up (a SPOP check passed): from
# then on, each response's message reaches it.
agent_checked() { haproxy_stat | awk -F, '$1=="spoa-breaker" && $2=="agent" && $18=="UP" && $37=="L7OK" {ok=1} END {exit !ok}'; }
until_shown agent_checked || { echo "demo: HAProxy never saw the agent up" >&2; sed 's/^/  /' "$RUN/agent.log" >&2; exit 1; }

echo "HAProxy on 127.0.0.1:8080 -> w1 (200), w2 (503, busy), w3 (500, broken); agent on 127.0.0.1:12345"
echo
show_requests() { # COUNT [UNTIL]: COUNT requests, or fewer if one's variables match UNTIL
	local headers status worker vars
	for _ in $(seq "$1"); do
		headers=$(curl -s -o /dev/null -D - -H 'x-breaker-debug: 1' http://127.0.0.1:8080/ | tr -d '\r')
		status=$(echo "$headers" | sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p')
		worker=$(echo "$headers" | sed -n 's/^x-worker: //Ip')
		vars=$(echo "$headers" | sed -n 's/^x-breaker-\([^:]*\): \(.*\)/\1=\2/Ip' | grep -v upstream-status | tr '\n' ' ')
		if [ -z "$vars" ] && [ -z "$worker" ]; then
			vars="(HAProxy's own answer: no worker's response)"
		elif [ -z "$vars" ]; then
			vars="(a clean worker's success: not sent to the agent)"
		fi
		printf '  %-8s %-7s %s\n' "${worker:--}" "$status" "$vars"
		if [ -n "${2:-}" ] && [[ $vars == *"$2"* ]]; then return 0; fi
	done
}

# The servers as the last check read them: what the demo shows is the
# state it waited for, not a later one (on a slow machine w3's cool-down
# may end between a second read and the check).
servers() {
	awk -F, '$1=="workers" && $2 ~ /^w/ {printf "  HAProxy: %s %s%s\n", $2, $18, ($7 ? " maxconn " $7 : "")}' "$RUN/stat"
}
# w3's state in HAProxy is (or is not) drained; the read kept for servers.
w3_drained() {
	haproxy_stat >"$RUN/stat"
	awk -F, '$1=="workers" && $2=="w3" && $18=="DRAIN" {ok=1} END {exit !ok}' "$RUN/stat"
}
w3_ready() { ! w3_drained; }

echo "Round 1: w2's 503s are retried on another worker (backpressure, never a failure); w3's 500s are failures"
# Until w3 opens: its cool-down (5 s) runs from then, and a slow machine
# would spend it on the rest of the round.
show_requests "${DEMO_REQUESTS:-12}" transition=closed-\>open
until_shown w3_drained || true # shown as it is, drained or not
servers
echo
echo "Round 2: w3 is drained: the requests go to w1, and w2's 503s are retried there"
show_requests 4
echo
echo "(waiting out the 5 s cool-down: w3 becomes half-open, ready for one probe)"
until_shown w3_ready || true
servers
echo
echo "Round 3: w3's probe answers 500 and it is drained again"
show_requests 6
until_shown w3_drained || true
servers
echo
echo "Agent log:"
sed 's/^/  /' "$RUN/agent.log"
