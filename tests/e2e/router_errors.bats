#!/usr/bin/env bats
# The router error contract (docs/haproxy.md, "Router errors") against a real HAProxy
# running the shipped haproxy/haproxy.cfg: every condition HAProxy can meet
# is driven for real, and what the client gets -- status,
# x-router-error-code, x-router-upstream-status, the body's error.code -- is
# pinned against haproxy/router-errors.map, the contract's single source.
# Worker responses must come back as the worker sent them, with neither
# header.
#
# The shipped configuration runs unchanged but for three timeouts, shortened
# so that the timeouts can be waited for: connect 1s -> 300ms, queue 5s ->
# 300ms, server 30s -> 1s.

load helpers

ROUTER_HTTP=$REPO/tests/lib/router_http.py
CONTRACT=$REPO/haproxy/router-errors.map
CONDITIONS=$REPO/haproxy/router-conditions.map

# THE TABLE. One row per condition the test drives, then the condition
# expected on HAProxy < 2.9, on 2.9 to 3.1, and on 3.2 and later:
#   name  expected(<2.9)  expected(2.9-3.1)  expected(>=3.2)
# An expected condition is a line of router-errors.map, which gives the
# expected status and codes. Besides:
#   builtin-NNN  HAProxy's built-in NNN page, with neither header: before
#                3.2 (measured: 2.6 and 3.0 do, 3.2 does not) HAProxy's H1
#                layer answers a request it cannot parse with it whatever
#                the errorfile says
#   cut          a body that dies after the worker's head: the client gets
#                that head (200) with neither header, or on 3.x nothing at
#                all when the worker's close overtakes the head; never a
#                router error (docs/design.md, "Router errors are not
#                re-signalled")
# HAProxy < 2.9 cannot see the termination state, so some conditions fold
# into a coarser one there (connect_failed, bad_response). `internal`
# (HAProxy's own 500) cannot be caused from outside: its static errorfile
# is checked against the map instead.
TABLE="
bad_request       builtin-400      builtin-400       bad_request
no_server         no_server        no_server         no_server
connect_refused   connect_failed   connect_refused   connect_refused
connect_timeout   connect_failed   connect_timeout   connect_timeout
server_timeout    server_timeout   server_timeout    server_timeout
closed_early      bad_response     closed_early      closed_early
invalid_response  bad_response     invalid_response  invalid_response
queue_timeout     queue_timeout    queue_timeout     queue_timeout
body_cut_short    cut              cut               cut
breaker_drained   breaker_drained  breaker_drained   breaker_drained
"
STATIC_ROWS="internal"

# The TABLE column of expectations for HAPROXY_BIN: 2 (< 2.9), 3 (2.9 to
# 3.1) or 4 (>= 3.2).
table_column() {
	"$HAPROXY_BIN" -v | sed -n 's/^HAProxy version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' |
		awk '{v = $1 * 100 + $2; print (v >= 302 ? 4 : v >= 209 ? 3 : 2)}'
}

# "STATUS CODE UPSTREAM BODYCODE" a condition must produce (alternatives
# separated by "|").
expected_of() { # CONDITION
	case $1 in
	cut) echo "200 - - -|none - - -"; return ;;
	builtin-*) echo "${1#builtin-} - - -"; return ;;
	esac
	awk -v c="$1" '$1==c {print $2, $3, "-", $3; found=1} END {exit !found}' "$CONTRACT"
}

setup_file() {
	RUN_DIR=$(mktemp -d "$BATS_FILE_TMPDIR/run.XXXXXX")
	export RUN_DIR
	FE_PORT=$(free_port)
	AGENT_PORT=$(free_port)
	REFUSED_PORT=$(free_port) # nothing will listen there
	BLACKHOLE_PORT=$(free_port)
	export FE_PORT AGENT_PORT REFUSED_PORT BLACKHOLE_PORT
	local name port
	for name in W1 W2 W3; do
		port=$(free_port)
		start_worker "$name" "$port" 200
		export "BREAKER_$name=127.0.0.1:$port" "${name}_PORT=$port"
	done
	spawn blackhole python3 "$REPO/tests/lib/blackhole.py" --port "$BLACKHOLE_PORT"
	wait_until 5 bash -c "ss -ltn \"sport = :$BLACKHOLE_PORT\" | grep -q LISTEN"
	export BREAKER_FRONTEND=127.0.0.1:$FE_PORT
	export BREAKER_AGENT=127.0.0.1:$AGENT_PORT
	export BREAKER_SPOE_CONF=$REPO/haproxy/spoe-breaker.conf
	export BREAKER_ADMIN_SOCKET=$RUN_DIR/admin.sock
	export BREAKER_STATE_FILE=$RUN_DIR/server-state
	echo 1 >"$BREAKER_STATE_FILE"
	# Failures must not open breakers while the table is driven (the
	# breaker row restarts the agent with the default threshold).
	start_agent agent --listen "$BREAKER_AGENT" --runtime-api "unix:$RUN_DIR/admin.sock" \
		--threshold 1000000 --admin none
	wait_port "$AGENT_PORT"
	# The shipped configuration and the files it reads, timeouts shortened.
	mkdir "$RUN_DIR/haproxy"
	cp -r "$REPO/haproxy/haproxy.cfg" "$REPO/haproxy/router-errors.map" \
		"$REPO/haproxy/router-conditions.map" "$REPO/haproxy/breaker-owned.map" \
		"$REPO/haproxy/breaker-retry-at.map" \
		"$REPO/haproxy/router-errors" "$RUN_DIR/haproxy/"
	sed -i -e 's/^\( *timeout connect\) .*/\1 300ms/' -e 's/^\( *timeout server\) .*/\1 1s/' \
		-e 's/^\( *timeout queue\) .*/\1 300ms/' "$RUN_DIR/haproxy/haproxy.cfg"
	grep -q '^    timeout server 1s' "$RUN_DIR/haproxy/haproxy.cfg"
	grep -q '^    timeout queue 300ms' "$RUN_DIR/haproxy/haproxy.cfg"
	"$HAPROXY_BIN" -c -f "$RUN_DIR/haproxy/haproxy.cfg" >"$RUN_DIR/check.log" 2>&1 || {
		cat "$RUN_DIR/check.log" >&2
		return 1
	}
	spawn haproxy "$HAPROXY_BIN" -db -f "$RUN_DIR/haproxy/haproxy.cfg"
	wait_port "$FE_PORT"
	wait_until 10 agent_is_up
}

teardown_file() {
	stop_all
}

cli() { haproxy_cli "$@" >/dev/null; }

# Every server ready, at its own address, with no maxconn.
reset_servers() {
	local s port
	for s in w1 w2 w3; do
		port=$(eval echo "\$$(echo "$s" | tr a-z A-Z)_PORT")
		cli "set server workers/$s state ready"
		cli "set server workers/$s addr 127.0.0.1 port $port"
		cli "set maxconn server workers/$s 0"
	done
}

# Only w1 takes requests, at 127.0.0.1:PORT (its own by default).
only_w1() { # [PORT]
	cli "set server workers/w2 state maint"
	cli "set server workers/w3 state maint"
	[ -z "${1:-}" ] || cli "set server workers/w1 addr 127.0.0.1 port $1"
}

get() { python3 "$ROUTER_HTTP" summary "$FE_PORT" "$1"; }

# drive_NAME: causes condition NAME; prints what the client got
# ("STATUS CODE UPSTREAM BODYCODE", then the body).
drive_bad_request() {
	python3 "$ROUTER_HTTP" summary-raw "$FE_PORT" 'GET / HTTP/1.1\r\nhost: x\r\nthis is not a header\r\n\r\n'
}
drive_no_server() {
	only_w1
	cli "set server workers/w1 state maint"
	get /
}
drive_connect_refused() { only_w1 "$REFUSED_PORT" && get /; }
drive_connect_timeout() { only_w1 "$BLACKHOLE_PORT" && get /; }
drive_server_timeout() { only_w1 && get /status/hang; }
drive_closed_early() { only_w1 && get /status/close; }
drive_invalid_response() { only_w1 && get /status/garbage; }
drive_body_cut_short() { only_w1 && get /status/midbody; }
# w1's sessions since HAProxy started (stot in `show stat`).
w1_sessions() { haproxy_cli "show stat" | awk -F, '$1=="workers" && $2=="w1" {print $8}'; }
# w1 has taken a session since it had N: for wait_until.
w1_sessions_above() { [ "$(w1_sessions)" -gt "$1" ]; }
drive_queue_timeout() {
	only_w1
	cli "set maxconn server workers/w1 1"
	# One request holds w1's only slot, a stream of an event every 100 ms
	# (no server timeout ends it), until it is ended below; the next waits
	# in the queue for the queue timeout (300 ms). Not a hang: that holds
	# the slot only for the server timeout (1 s), which a loaded machine
	# can spend before the next request's client has started.
	local before holder
	before=$(w1_sessions)
	curl -s -o /dev/null -m 60 "http://127.0.0.1:$FE_PORT/status/stream:0:60" &
	holder=$!
	wait_until 15 w1_sessions_above "$before" # it holds the slot now
	get /status/200
	kill "$holder" 2>/dev/null || true
	wait "$holder" || true
}
drive_breaker_drained() {
	# The agent, with its default threshold and no ejection cap, drains
	# every server after their 500s; HAProxy then has no server left to try.
	stop agent
	start_agent agent --listen "$BREAKER_AGENT" --runtime-api "unix:$RUN_DIR/admin.sock" \
		--cooldown 60s --admin none --max-ejection-percent 100 --drain-last-server
	wait_port "$AGENT_PORT"
	wait_until 10 agent_is_up
	local i
	for i in $(seq 90); do
		is_drained w1 && is_drained w2 && is_drained w3 && break
		curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/status/500"
	done
	is_drained w1 && is_drained w2 && is_drained w3 || {
		echo "the agent did not drain every server" >&2
		return 1
	}
	get /
}

# First: the table leaves every server drained by the agent.
@test "worker responses 200, 429, 500 and 503 pass byte for byte, with neither header" {
	reset_servers
	only_w1
	local status
	for status in 200 429 500 503; do
		run python3 "$ROUTER_HTTP" compare "$W1_PORT" "$FE_PORT" "/status/$status"
		echo "$status: $output"
		assert_success
	done
}

@test "every HAProxy-generated error follows the contract, row by row of the table" {
	local column name got want failures="" body cond
	column=$(table_column)
	while read -r name; do
		[ -n "$name" ] || continue
		cond=$(awk -v n="$name" -v c="$column" '$1==n {print $c}' <<<"$TABLE")
		want=$(expected_of "$cond") || {
			failures+="$name: $cond is not in router-errors.map"$'\n'
			continue
		}
		reset_servers
		got=$("drive_$name") || true
		body=$(sed -n 2p <<<"$got")
		got=$(head -n1 <<<"$got")
		echo "$name -> $cond: got '$got', want '$want' (body $body)"
		[[ "|$want|" == *"|$got|"* ]] || failures+="$name: got '$got', want '$want'"$'\n'
		# A router error's body never names an address or a server.
		if [ "$cond" != cut ] && [[ $cond != builtin-* ]] && grep -E -q '[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+|:[0-9]{2,5}\b|\<[Ww][123]\>' <<<"$body"; then
			failures+="$name: the body leaks an internal name: $body"$'\n'
		fi
	done < <(awk 'NF {print $1}' <<<"$TABLE")
	[ -z "$failures" ] || {
		echo "$failures" >&2
		return 1
	}
}

@test "every condition of router-errors.map and router-conditions.map has a row" {
	local cond missing=""
	# Every condition the contract lists is expected by a row (on one
	# HAProxy version or the other), or is a static one checked below.
	for cond in $(awk '!/^#/ && NF {print $1}' "$CONTRACT"); do
		awk -v c="$cond" 'NF && ($2==c || $3==c || $4==c) {f=1} END {exit !f}' <<<"$TABLE" ||
			grep -qw "$cond" <<<"$STATIC_ROWS" || missing+=" $cond"
	done
	# Every condition HAProxy can classify an error as is in the contract.
	for cond in $(awk '!/^#/ && NF {print $2}' "$CONDITIONS" | sort -u); do
		awk -v c="$cond" '$1==c {f=1} END {exit !f}' "$CONTRACT" || missing+=" $cond(not in router-errors.map)"
	done
	# And every row expects a condition the contract has.
	for cond in $(awk 'NF {print $2; print $3; print $4}' <<<"$TABLE" | sort -u); do
		[ "$cond" = cut ] || [[ $cond == builtin-* ]] || awk -v c="$cond" '$1==c {f=1} END {exit !f}' "$CONTRACT" ||
			missing+=" $cond(row without a contract line)"
	done
	[ -z "$missing" ] || {
		echo "uncovered:$missing" >&2
		return 1
	}
}

@test "the static 400 and 500 errorfiles say what router-errors.map says" {
	local file cond want_status code type message
	for file in 400:bad_request 500:internal; do
		cond=${file#*:}
		file=$REPO/haproxy/router-errors/${file%%:*}.http
		read -r want_status code type message < <(awk -v c="$cond" '$1==c {$1=""; print}' "$CONTRACT")
		run head -n1 "$file"
		assert_output --regexp "^HTTP/1.1 $want_status "
		run grep -c $'^x-router-error-code: '"$code"$'\r$' "$file"
		assert_output 1
		run tail -n1 "$file"
		assert_output "{\"error\":{\"type\":\"$type\",\"code\":\"$code\",\"message\":\"$message\"}}"
		# content-length is the body's length.
		[ "$(grep -i '^content-length:' "$file" | tr -dc 0-9)" = "$(tail -n1 "$file" | tr -d '\n' | wc -c)" ]
	done
}
