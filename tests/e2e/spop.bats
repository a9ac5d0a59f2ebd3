#!/usr/bin/env bats
# The agent speaks SPOP with a real HAProxy, and survives peers that do not.

load helpers

setup_file() {
	start_scene
	echo "$(cat "$RUN_DIR/agent.pid")" >"$RUN_DIR/agent.first-pid"
}

teardown_file() {
	stop_all
}

client() {
	python3 "$SPOP_CLIENT" "$AGENT_ADDR" "$@"
}

@test "variables the agent returns reach HAProxy's response headers" {
	local code # not $status: bats' run sets that
	for code in 200 429 500 503; do
		run header_of "/status/$code" x-breaker-upstream-status
		assert_output "$code"
	done
	run header_of / x-breaker-agent-error
	assert_output ""
}

@test "option spop-check health checks keep the agent's server UP" {
	run server_status spoa-breaker agent
	assert_output --regexp '^UP'
	run haproxy_cli "show stat"
	assert_line --regexp '^spoa-breaker,agent,.*,L7OK,'
	# Several check intervals later it is still up: every probe was answered.
	sleep 1.5
	run server_status spoa-breaker agent
	assert_output --regexp '^UP'
}

@test "concurrent requests through HAProxy each get their own answer" {
	# 200 requests, 20 at a time, statuses mixed: a misrouted ACK would put
	# one request's status on another's response. One line a request:
	# "SENT=ANSWERED", ANSWERED the agent's upstream_status, or "timeout"
	# when the agent's answer came after `timeout processing` (100 ms: a
	# loaded machine may miss it, and the request goes on untouched).
	cat >"$BATS_TEST_TMPDIR/one.sh" <<-'SH'
	curl -s -o /dev/null -D - "http://127.0.0.1:$1/status/$2" | tr -d '\r' |
		awk -v s="$2" -F': ' '
			tolower($1) == "x-breaker-upstream-status" {a = $2}
			tolower($1) == "x-breaker-agent-error" && $2 == 1 {t = 1}
			END {print s "=" (a ? a : (t ? "timeout" : "none"))}'
	SH
	run bash -c "for i in \$(seq 200); do echo \$((i % 2 ? 200 : 503)); done |
		xargs -P 20 -I{} sh '$BATS_TEST_TMPDIR/one.sh' $FE_PORT {}"
	assert_success
	local answers=$output
	[ "$(wc -l <<<"$answers")" -eq 200 ]
	# Never another request's status, never an answer missing unexplained.
	run grep -v -E '^(200=200|503=503|200=timeout|503=timeout)$' <<<"$answers"
	assert_output ""
	# Not vacuous: most of each were answered.
	[ "$(grep -c '^200=200$' <<<"$answers")" -ge 50 ]
	[ "$(grep -c '^503=503$' <<<"$answers")" -ge 50 ]
}

@test "many NOTIFYs in flight on one connection are each ACKed with their ids" {
	run client pipeline 500
	assert_output "acks=500 mismatched=0"
}

@test "AGENT-HELLO offers version 2.0, the smaller frame size and pipelining only" {
	run client hello 4096
	assert_output "version=2.0 max-frame-size=4096 capabilities='pipelining'"
	run client hello
	assert_output "version=2.0 max-frame-size=16380 capabilities='pipelining'"
}

# Every HAProxy of the suite (2.6 to 3.4) announces pipelining in its HELLO
# without `option pipelining` in the SPOE file, and the agent takes it:
# the option would change nothing, so the shipped files leave it out.
@test "HAProxy's own HELLO announces pipelining without option pipelining, and the agent takes it" {
	run grep -l "option pipelining" "$SPOE_CONF" "$REPO/haproxy/spoe-breaker-steady.conf"
	assert_failure
	assert_output ""
	curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"
	wait_until 5 grep -q "HELLO: max-frame-size [0-9]*, pipelining on, engine-id" "$RUN_DIR/agent.log"
	run grep -c "HELLO: max-frame-size [0-9]*, pipelining off" "$RUN_DIR/agent.log"
	assert_output 0
}

@test "a health-check HELLO is answered with capabilities, then closed" {
	run client healthcheck
	assert_output "version=2.0 capabilities='' closed=True"
}

@test "a HELLO arriving one byte at a time is reassembled" {
	run client split-hello
	assert_output "type=101"
}

@test "a NOTIFY with no messages is still ACKed with one action" {
	run client notify "[]"
	assert_output "sid=7 fid=1 actions=1 unset:error=None"
}

@test "a breaker-observe without status is answered with an error variable" {
	run client notify "[('breaker-observe', [('be', 'be_app'), ('srv', 'w1')])]"
	assert_output "sid=7 fid=1 actions=1 set:error=missing argument: status"
	run client notify "[('breaker-observe', [('be', 'b'), ('srv', 's'), ('status', None)])]"
	assert_output --partial "set:error=argument status is not an HTTP status"
}

@test "unknown messages and unknown arguments are ignored" {
	run client notify "[('other', [('x', 1)]), ('breaker-observe', [('junk', 'x'), ('status', 404), ('be', 'b'), ('srv', 's')])]"
	assert_output "sid=7 fid=1 actions=4 set:upstream_status=404 set:outcome=client_error set:state=closed set:failures=0"
}

@test "an open breaker's answer says when it may let traffic in: retry_after" {
	local msg="[('breaker-observe', [('be', 'be_ra'), ('srv', 'w9'), ('status', 500)])]"
	run client notify "$msg"
	refute_output --partial retry_after
	client notify "$msg"
	run client notify "$msg"
	assert_output "sid=7 fid=1 actions=6 set:upstream_status=500 set:outcome=failure set:state=open set:failures=3 set:transition=closed->open set:retry_after=30"
	run client notify "$msg"
	assert_output --regexp ' set:state=open .*set:retry_after=(30|29)$'
}

@test "HAPROXY-DISCONNECT is answered with AGENT-DISCONNECT status 0" {
	run client disconnect
	assert_output --partial "disconnect status=0 closed=True"
}

@test "a peer's engine-id and DISCONNECT message reach the log escaped: a newline forges no line" {
	local forged='2000-01-01T00:00:00.000Z [notice] FORGED by the peer'
	run client disconnect $'bye\r\n'"$forged"
	assert_output --partial "disconnect status=0 closed=True"
	wait_until 5 grep -qF "HAProxy disconnects: status 0, \"bye\\r\\n$forged\"" "$RUN_DIR/agent.log"
	# The engine-id, cut to its room, says so.
	grep -qE 'engine-id bye\\r\\n2000-01-01T[^"]*\.\.\.$' "$RUN_DIR/agent.log"
	run grep -c -e '^2000-01-01T' -e $'\r' "$RUN_DIR/agent.log"
	assert_output "0"
}

@test "hostile peers get a DISCONNECT with a meaningful status, then a close" {
	run client garbage
	assert_output --partial "disconnect status=3 closed=True"
	run client huge-length # a 4 GiB length prefix
	assert_output --partial "disconnect status=3 closed=True"
	run client no-hello
	assert_output --partial "disconnect status=4 closed=True"
	run client fragmented
	assert_output --partial "disconnect status=10 closed=True"
	run client unknown-frame
	assert_output --partial "disconnect status=4 closed=True"
	run client bad-version
	assert_output --partial "disconnect status=8 closed=True"
	run client truncated
	assert_output "sent=half"
}

@test "frames are held to the max-frame-size agreed in the HELLO, not to the agent's own" {
	# Agreed on 1024 (SPOE.txt: "used for all subsequent frames"): a
	# 5,000-byte NOTIFY is refused with status 3, where it used to be ACKed...
	run client oversize-notify "1024 5000"
	assert_output --partial "disconnect status=3 closed=True"
	# ... and its length prefix alone is enough: no waiting for the rest.
	run client oversize-prefix "1024 5000 101"
	assert_output --partial "disconnect status=3 closed=True"
	# A frame of exactly the agreed size is answered.
	run client oversize-notify "1024 1024"
	assert_output "ack sid=1 fid=1"
}

@test "after all the hostile peers, the same agent still serves HAProxy" {
	run cat "$RUN_DIR/agent.pid"
	assert_output "$(cat "$RUN_DIR/agent.first-pid")"
	kill -0 "$(cat "$RUN_DIR/agent.pid")"
	run header_of /status/503 x-breaker-upstream-status
	assert_output "503"
	run grep -c -E 'AddressSanitizer|runtime error|Segmentation' "$RUN_DIR/agent.log"
	assert_output "0"
}
