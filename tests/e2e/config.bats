#!/usr/bin/env bats
# The configuration file: checked line by line, and obeyed through HAProxy.

load helpers

setup() {
	new_run_dir
}

teardown() {
	stop_all
}

@test "--check accepts the shipped example configuration" {
	run "$SPOA_BIN" --check -f "$REPO/packaging/spoa-breaker.ini"
	assert_success
	assert_output --partial "configuration valid"
}

@test "--check names every bad line of a broken configuration" {
	cat >"$RUN_DIR/bad.ini" <<-'INI'
	[agent]
	listen = 127.0.0.1:99999
	colour = blue
	[breaker]
	threshold = 0
	capacity_statuses = 99,503
	failure_statuses = 600
	this line is wrong
	[backend be;drop]
	threshold = 2
	[backend b1]
	capacity_statuses = 429,503
	failure_statuses = 500-599
	[frontend x]
	INI
	run "$SPOA_BIN" --check -f "$RUN_DIR/bad.ini"
	assert_failure 1
	local f="$RUN_DIR/bad.ini"
	assert_line "$f:2: listen '127.0.0.1:99999': expected HOST:PORT, [IPV6]:PORT or unix:PATH (port must be a number from 1 to 65535)"
	assert_line "$f:3: [agent]: unknown key 'colour'"
	assert_line "$f:5: threshold '0': expected 1..1000000"
	assert_line --partial "$f:6: capacity_statuses '99,503': item 1 \"99\": 99 is not an HTTP status"
	assert_line --partial "$f:7: failure_statuses '600': item 1 \"600\""
	assert_line "$f:8: expected 'key = value', got 'this line is wrong'"
	assert_line --partial "$f:9: [backend be;drop]: backend name 'be;drop' is not a valid HAProxy name"
	assert_line --partial "$f:13: [backend b1]: failure_statuses = 500-599 overlaps capacity_statuses = 429,503 at line 12 on 503"
	assert_line --partial "$f:14: unknown section [frontend x]"
	assert_line --partial "configuration refused"
}

@test "--check refuses backoff and failure-rate keys that contradict each other" {
	cat >"$RUN_DIR/fleet.ini" <<-'INI'
	[breaker]
	max_cooldown = 1m
	failure_rate_threshold = 140
	[server workers/w1]
	cooldown = 2m
	[backend flaky]
	failure_rate_threshold = 30
	window = 10
	minimum_volume = 20
	INI
	run "$SPOA_BIN" --check -f "$RUN_DIR/fleet.ini"
	assert_failure 1
	local f="$RUN_DIR/fleet.ini"
	assert_line "$f:3: failure_rate_threshold '140': expected 0..100"
	assert_line --partial "$f:4: [server workers/w1]: max_cooldown of 60000 ms is below cooldown of 120000 ms"
	assert_line --partial "$f:6: [backend flaky]: minimum_volume is 20, above the window of 10"
	run "$SPOA_BIN" --check --cooldown 10m --failure-rate-threshold 30 --window 10
	assert_success
}

@test "a missing configuration file is a clear error" {
	run "$SPOA_BIN" --check -f "$RUN_DIR/nope.ini"
	assert_failure 1
	assert_output --partial "$RUN_DIR/nope.ini: cannot open: No such file or directory"
}

@test "a directory given as the configuration file is refused by name" {
	run "$SPOA_BIN" --check -f "$RUN_DIR"
	assert_failure 1
	assert_output --partial "$RUN_DIR: is a directory, not a configuration file"
	refute_output --partial "configuration valid"
}

@test "the runtime-api and agent-check conflict is reported at the line that makes it" {
	cat >"$RUN_DIR/agent.ini" <<-'INI'
	[haproxy]
	runtime_api = unix:/run/haproxy/admin.sock
	agent_check = 127.0.0.1:12346
	poll_interval = 1s

	[breaker]
	threshold = 3
	INI
	run "$SPOA_BIN" --check -f "$RUN_DIR/agent.ini"
	assert_failure 1
	assert_line --partial "$RUN_DIR/agent.ini:3: agent_check cannot be combined with runtime_api at line 2: "
}

@test "per-server overrides win over per-backend over global, through HAProxy" {
	cat >"$RUN_DIR/agent.ini" <<-'INI'
	[breaker]
	threshold = 10
	[backend workers]
	; here 503 means an outage: only 429 is "busy"
	capacity_statuses = 429
	threshold = 5
	[server workers/w1]
	threshold = 2
	INI
	run "$SPOA_BIN" --check -f "$RUN_DIR/agent.ini"
	assert_success
	AGENT_ARGS="-f $RUN_DIR/agent.ini"
	start_scene
	run verdict_of /status/429
	assert_output "closed backpressure 0 "
	run verdict_of /status/503
	assert_output "closed failure 1 "
	run verdict_of /status/503
	assert_output "open failure 2 closed->open"
}

@test "command-line options override the file" {
	cat >"$RUN_DIR/agent.ini" <<-'INI'
	[breaker]
	threshold = 10
	INI
	AGENT_ARGS="-f $RUN_DIR/agent.ini --threshold 1"
	start_scene
	run verdict_of /status/500
	assert_output "open failure 1 closed->open"
}

@test "SIGHUP reloads the policies and keeps every breaker's state" {
	cat >"$RUN_DIR/agent.ini" <<-'INI'
	[breaker]
	threshold = 10
	INI
	local ini=$RUN_DIR/agent.ini # start_scene moves RUN_DIR
	AGENT_ARGS="-f $ini"
	start_scene
	run verdict_of /status/500
	assert_output "closed failure 1 "
	printf '[breaker]\nthreshold = 2\n' >"$ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 5 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	# The streak of 1 survived the reload: one more failure reaches 2.
	run verdict_of /status/500
	assert_output "open failure 2 closed->open"
}

@test "SIGHUP with a broken file keeps the running configuration" {
	cat >"$RUN_DIR/agent.ini" <<-'INI'
	[breaker]
	threshold = 2
	INI
	local ini=$RUN_DIR/agent.ini # start_scene moves RUN_DIR
	AGENT_ARGS="-f $ini"
	start_scene
	printf '[breaker]\nthreshold = 1\nthreshold = lots\n' >"$ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 5 grep -q "reload refused" "$RUN_DIR/agent.log"
	run grep -c "reload: .*agent.ini:3: threshold 'lots'" "$RUN_DIR/agent.log"
	assert_output "1"
	run verdict_of /status/500
	assert_output "closed failure 1 "
	run verdict_of /status/500
	assert_output "open failure 2 closed->open"
	kill -0 "$(cat "$RUN_DIR/agent.pid")"
}

@test "SIGHUP names each changed setting that only a restart applies" {
	cat >"$RUN_DIR/agent.ini" <<-'INI'
	[agent]
	max_connections = 100
	[breaker]
	threshold = 10
	INI
	local ini=$RUN_DIR/agent.ini # start_scene moves RUN_DIR
	AGENT_ARGS="-f $ini"
	start_scene
	printf '[agent]\nmax_connections = 200\nmax_breakers = 50\n[breaker]\nthreshold = 2\n' >"$ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 5 grep -q "configuration reloaded" "$RUN_DIR/agent.log"
	run grep -o "reload: .*changed; it takes effect at the next restart" "$RUN_DIR/agent.log"
	assert_output "reload: max_connections changed; it takes effect at the next restart
reload: max_breakers changed; it takes effect at the next restart"
	# The policy did change: two failures open.
	run verdict_of /status/500
	assert_output "closed failure 1 "
	run verdict_of /status/500
	assert_output "open failure 2 closed->open"
}

@test "the keys haproxy.cfg's comments name are keys the agent has" {
	run "$SPOA_BIN" --help
	assert_success
	local help=$output key names
	# Agent keys are snake_case words; HAProxy's own settings use dashes.
	names=$(grep '^[[:space:]]*#' "$REPO/haproxy/haproxy.cfg" |
		grep -oE '(^|[[:space:](])[a-z]+(_[a-z]+)+' | tr -d ' (' | sort -u)
	[ -n "$names" ]
	for key in $names; do
		if [[ $help != *"--${key//_/-}"* ]]; then
			echo "haproxy.cfg names '$key', which is no key of the agent" >&2
			return 1
		fi
	done
}

@test "--check validates every address, from the file and the command line" {
	run "$SPOA_BIN" --check --listen nonsense
	assert_failure 2
	assert_output "spoa-breaker: --listen 'nonsense': expected HOST:PORT, [IPV6]:PORT or unix:PATH"
	local key
	for key in runtime-api agent-check admin; do
		run "$SPOA_BIN" --check "--$key" nonsense
		assert_failure 2
		assert_output --partial "spoa-breaker: --$key 'nonsense': expected HOST:PORT"
	done
	cat >"$RUN_DIR/agent.ini" <<-'INI'
	[agent]
	listen = nonsense
	admin = localhost
	[haproxy]
	runtime_api = unix:
	agent_check = 127.0.0.1:0
	enforce = none
	INI
	run "$SPOA_BIN" --check -f "$RUN_DIR/agent.ini"
	assert_failure 1
	assert_line --partial "agent.ini:2: listen 'nonsense': expected"
	assert_line --partial "agent.ini:3: admin 'localhost': expected"
	assert_line --partial "agent.ini:5: runtime_api 'unix:': expected"
	assert_line --partial "agent.ini:6: agent_check '127.0.0.1:0': expected"
	# HAProxy's own spellings of every IPv4 address are addresses (and,
	# every address, need an allowlist).
	run "$SPOA_BIN" --check --listen '*:12345' --listen :12346 --allow 10.0.0.0/8
	assert_success
}

@test "a listener other hosts can reach without an allowlist: start refused, --check says why naming the key" {
	local port
	port=$(free_port)
	# Refused before anything is opened: nothing ever binds 0.0.0.0.
	run "$SPOA_BIN" --state-file none --listen "0.0.0.0:$port" --admin none
	assert_failure 1
	assert_output --partial "--listen 0.0.0.0:$port is not a loopback address and nothing says who may connect: set allow"
	printf '[agent]\nlisten = [::]:%s\nadmin = none\n' "$port" >"$RUN_DIR/exposed.ini"
	run "$SPOA_BIN" --check -f "$RUN_DIR/exposed.ini"
	assert_failure 1
	assert_output --partial "$RUN_DIR/exposed.ini:2: listen = [::]:$port is not a loopback address"
	run "$SPOA_BIN" --check --listen "127.0.0.1:$port" --admin "0.0.0.0:$port"
	assert_failure 1
	assert_output --partial "set admin_allow (or allow)"
	# The agent-check listener tells every server's state: the same rule.
	run "$SPOA_BIN" --check --state-file none --agent-check "0.0.0.0:$port"
	assert_failure 1
	assert_output --partial "--agent-check 0.0.0.0:$port is not a loopback address and nothing says who may connect: set allow"
	run "$SPOA_BIN" --check --state-file none --agent-check "0.0.0.0:$port" --allow 10.1.0.0/16
	assert_success
	# Said on purpose: accepted.
	run "$SPOA_BIN" --check -f "$RUN_DIR/exposed.ini" --allow any
	assert_success
}

@test "allow = any is said in the start log; a unix listener gets socket_mode" {
	local port
	port=$(free_port)
	start_agent agent --listen "127.0.0.1:$port" --listen "unix:$RUN_DIR/spop.sock" --allow any \
		--socket-mode 0600 --admin none
	wait_port "$port"
	wait_until 5 test -S "$RUN_DIR/spop.sock"
	[ "$(stat -c %a "$RUN_DIR/spop.sock")" = 600 ]
	grep -q "SPOP on 127.0.0.1:$port accepts connections from any address (allow = any)" "$RUN_DIR/agent.log"
	# The unix socket is not filtered by address: its file decides.
	run python3 "$REPO/tests/lib/spop_client.py" "unix:$RUN_DIR/spop.sock" hello
	assert_success
}

@test "socket_mode and socket_group: the unix SPOP socket gets that mode and group, and the group decides who connects" {
	# A directory others may enter (the test's own is root's alone), so
	# that the socket's file is what decides.
	local dir
	dir=$(mktemp -d /tmp/spop-group.XXXXXX)
	chmod 0755 "$dir"
	printf '[agent]\nlisten = unix:%s/spop.sock\nsocket_mode = 0660\nsocket_group = nogroup\nadmin = none\n' \
		"$dir" >"$RUN_DIR/group.ini"
	start_agent agent -f "$RUN_DIR/group.ini"
	wait_until 5 test -S "$dir/spop.sock"
	run stat -c '%a %G' "$dir/spop.sock"
	assert_output "660 nogroup"
	# In the group: served. Outside it (nobody with group daemon): the
	# kernel refuses the connect. (The system python: these users may
	# not read one installed under root's home.)
	run setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 "$SPOP_CLIENT" "unix:$dir/spop.sock" hello
	assert_success
	run setpriv --reuid=nobody --regid=daemon --clear-groups /usr/bin/python3 "$SPOP_CLIENT" "unix:$dir/spop.sock" hello
	assert_failure
	assert_output --partial "Permission denied"
	stop agent
	rm -rf "$dir"
}
