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
	sed -i -e 's/be_statc/empty/' -e 's|be_static/s9|be_static/s2|' "$RUN_DIR/agent.ini"
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
