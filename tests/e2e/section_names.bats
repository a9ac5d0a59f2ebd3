#!/usr/bin/env bats
# INI sections checked against the backends and servers HAProxy lists: a
# misspelt [backend] or [server] section configures nothing, so --check
# names it (with the name it likely meant) and the running agent says it
# once and lists it in /state; correct sections are never named. A
# warning only: HAProxy may be reloaded to add the name.

load helpers

teardown() { stop_all; }

# HAProxy on haproxy-section-names.cfg.in, its workers s1 and s2 up.
start_names_haproxy() {
	new_scene S1_PORT S2_PORT ADMIN_PORT
	start_worker s1 "$S1_PORT" 200
	start_worker s2 "$S2_PORT" 200
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-section-names.cfg.in"
}

# The agent's file: the sections the tests judge, correct ones and typos.
write_ini() { # FILE
	cat >"$1" <<INI
[haproxy]
runtime_api = unix:$RUN_DIR/admin.sock
poll_interval = 100ms

[backend be_statc]
guarded = false

[backend be_static]
threshold = 4

[server be_static/s9]
threshold = 5

[server be_static/s1]
threshold = 6

[backend empty]
threshold = 7
INI
}

# The same sections, each naming what HAProxy lists.
correct_ini() { # FILE
	sed -i -e 's/be_statc/empty/' -e 's|be_static/s9|be_static/s2|' "$1"
}

@test "section names: --check names a misspelt backend and a missing server, at their lines, and passes" {
	start_names_haproxy
	write_ini "$RUN_DIR/agent.ini"
	run "$SPOA_BIN" --check -f "$RUN_DIR/agent.ini"
	assert_success
	assert_output --partial "$RUN_DIR/agent.ini:5: warning: [backend be_statc]: no HAProxy lists backend be_statc (did you mean be_static?)"
	assert_output --partial "$RUN_DIR/agent.ini:11: warning: [server be_static/s9]: no HAProxy lists server s9 in backend be_static:"
	assert_output --partial "HAProxy may be reloaded to add it later, so the check does not fail"
	# s9 is one letter from s1 and s2, another server: no guess offered.
	refute_output --partial "did you mean be_static/s"
	# The correct ones, a backend without servers among them, are not named.
	refute_output --partial "[backend be_static]"
	refute_output --partial "[server be_static/s1]"
	refute_output --partial "[backend empty]"
	run grep -c "no HAProxy lists" <<<"$output"
	assert_output 2
}

@test "section names: --check with every section right says so and names none" {
	start_names_haproxy
	write_ini "$RUN_DIR/agent.ini"
	correct_ini "$RUN_DIR/agent.ini"
	run "$SPOA_BIN" --check -f "$RUN_DIR/agent.ini"
	assert_success
	assert_output --partial "INI sections: each of the 4 [backend] and [server] sections names what HAProxy lists"
	refute_output --partial "warning: ["
}

@test "section names: --check says the names were not checked against an HAProxy it cannot reach" {
	start_names_haproxy
	write_ini "$RUN_DIR/agent.ini"
	sed -i "s|admin.sock|nobody.sock|" "$RUN_DIR/agent.ini"
	run "$SPOA_BIN" --check -f "$RUN_DIR/agent.ini"
	assert_success
	assert_output --partial "runtime_api unix:$RUN_DIR/nobody.sock: its backends and servers could not be read"
	assert_output --partial "the INI sections were not checked against it"
	refute_output --partial "be_statc"
	# Beside one that answers (the options replace the file's list):
	# named, as none of those that answered lists it.
	run "$SPOA_BIN" --check -f "$RUN_DIR/agent.ini" --runtime-api "unix:$RUN_DIR/admin.sock" \
		--runtime-api "unix:$RUN_DIR/nobody.sock"
	assert_success
	assert_output --partial "[backend be_statc]: none of the HAProxies that answered lists backend be_statc"
}

# The agent on the test's file (CORRECT_INI=1: correct_ini's), its admin
# page on ADMIN_PORT, then HAProxy.
start_names_scene() {
	new_scene S1_PORT S2_PORT ADMIN_PORT
	write_ini "$RUN_DIR/agent.ini"
	[ -z "${CORRECT_INI:-}" ] || correct_ini "$RUN_DIR/agent.ini"
	start_worker s1 "$S1_PORT" 200
	start_worker s2 "$S2_PORT" 200
	start_agent agent --listen "$AGENT_ADDR" --admin "127.0.0.1:$ADMIN_PORT" -f "$RUN_DIR/agent.ini"
	wait_port "$AGENT_PORT"
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-section-names.cfg.in"
}

# /state's unknown_sections: its entries joined by commas, "null" when not
# known; fails while /state does not answer.
unknown_sections() {
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" | python3 -c '
import json, sys
try:
    v = json.load(sys.stdin)["unknown_sections"]
except (ValueError, KeyError):
    sys.exit(1)
print("null" if v is None else ",".join(v))
'
}

unknown_sections_are() { [ "$(unknown_sections)" = "$1" ]; }

@test "section names: the running agent says a misspelt backend and a missing server once, and /state lists them" {
	start_names_scene
	wait_until 10 unknown_sections_are "backend be_statc,server be_static/s9"
	# More looks say nothing more.
	wait_more_looks 5
	run grep -c "INI section \[backend be_statc\] names a backend no HAProxy lists" "$RUN_DIR/agent.log"
	assert_output 1
	run grep -c "INI section \[server be_static/s9\] names a server no HAProxy lists" "$RUN_DIR/agent.log"
	assert_output 1
	run grep -E "INI section \[(backend be_static|server be_static/s1|backend empty)\]" "$RUN_DIR/agent.log"
	assert_output ""
	run unknown_sections
	assert_output "backend be_statc,server be_static/s9"
}

@test "section names: /state lists none when every section is right, and a reload that adds a typo says it" {
	CORRECT_INI=1 start_names_scene
	wait_until 10 unknown_sections_are ""
	run grep "INI section" "$RUN_DIR/agent.log"
	assert_output ""
	# A reload of the agent with a misspelt section: judged again.
	printf '[server be_static/s3]\nthreshold = 9\n' >>"$RUN_DIR/agent.ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 10 unknown_sections_are "server be_static/s3"
	wait_until 10 grep -q "INI section \[server be_static/s3\] names a server no HAProxy lists" "$RUN_DIR/agent.log"
}
