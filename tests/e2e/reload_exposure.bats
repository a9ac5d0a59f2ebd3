#!/usr/bin/env bats
# A reload never leaves a running listener open to everyone. listen, admin
# and turning TLS on or off wait for a restart, so after a SIGHUP the
# running listeners stay: the new file's allow lists and TLS files are
# checked against them, not against the listeners the file names. A file
# that would leave one with nobody named to let in, or stop asking for
# client certificates, is refused whole, and the running configuration
# (its lists, its policies, its breakers) stays. 127.0.0.2 plays a host
# outside every list. --check, run first by `systemctl reload` with the
# agent's own command line, says the same while the agent runs (from the
# file it writes beside its state file), and judges the file as for a
# start once it stopped.

load helpers

REFUSED_SPOP='spoa_breaker_connections_refused_total{listener="spop",reason="not_allowed"}'

setup() {
	INI=$BATS_TEST_TMPDIR/agent.ini
	# A state file, so the agent writes what a reload leaves as it runs
	# beside it (start_agent's --state-file none comes first: this wins).
	STATE=$BATS_TEST_TMPDIR/state.msgpack
	RUNNING=$STATE.running
	export INI STATE RUNNING
}

teardown() {
	stop_all
}

hup_agent() {
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
}

# How many lines of the agent's log match the extended regexp.
log_count() { # REGEXP
	grep -c -E "$1" "$RUN_DIR/agent.log" || true
}

log_count_at_least() { # REGEXP N
	[ "$(log_count "$1")" -ge "$2" ]
}

# Signals a reload and waits until it is over, accepted or refused: the
# Nth outcome in the log.
reload_agent() { # N
	hup_agent
	wait_until 5 log_count_at_least "configuration reloaded|reload refused" "$1"
}

# A HELLO to the SPOP listener from SOURCE: prints what the agent answered.
hello_from() { # SOURCE
	python3 "$SPOP_CLIENT" --source "$1" "127.0.0.1:$AGENT_PORT" hello
}

# The HTTP status of GET /metrics on the admin listener from SOURCE; 000
# when the connection is closed before an answer.
admin_status_from() { # SOURCE
	curl -s -m 2 -o /dev/null -w '%{http_code}' --interface "$1" \
		"http://127.0.0.1:$ADMIN_PORT/metrics" || true
}

# A verdict comes back through HAProxy: the SPOE answered this request.
verdicts_flow() { [ -n "$(verdict_of /status/200 | awk '{print $1}')" ]; }

# Keeps the running agent's own command line, once it wrote its running
# file: check_as_reload gives it to --check, as systemd's ExecReload runs
# the unit's command line with --check before the signal.
agent_published() {
	wait_until 5 test -f "$RUNNING"
	mapfile -d '' AGENT_CMDLINE <"/proc/$(cat "$RUN_DIR/agent.pid")/cmdline"
}

check_as_reload() {
	"${AGENT_CMDLINE[0]}" --check "${AGENT_CMDLINE[@]:1}"
}

# Stops the agent: its running file goes with it, and --check on the same
# file judges it as for a start again.
stop_agent_then_check_passes() {
	stop agent
	[ ! -e "$RUNNING" ]
	run check_as_reload
	assert_success
	assert_output --partial "configuration valid"
	refute_output --partial "reload"
}

@test "SPOP on 0.0.0.0 with allow, reloaded to a unix listen without allow: refused, 127.0.0.2 still shut out" {
	new_scene W1_PORT ADMIN_PORT
	start_worker w1 "$W1_PORT" 200
	# listen in the file, not on the command line: the command line would
	# win over both files.
	cat >"$INI" <<-INI
	[agent]
	listen = 0.0.0.0:$AGENT_PORT
	allow = 127.0.0.1
	admin = 127.0.0.1:$ADMIN_PORT
	[breaker]
	threshold = 3
	INI
	start_agent agent -f "$INI" --state-file "$STATE"
	wait_port "$AGENT_PORT"
	agent_published
	start_haproxy "$BATS_TEST_DIRNAME/haproxy.cfg.in"
	wait_until 10 agent_is_up
	wait_until 5 verdicts_flow
	wait_until 5 breaker_known workers/w1
	run hello_from 127.0.0.2
	assert_failure
	wait_until 5 metric_is "$REFUSED_SPOP" 1

	# The file now names a unix socket, which needs no allowlist, and no
	# allow: valid on its own, but 0.0.0.0 keeps running until a restart.
	cat >"$INI" <<-INI
	[agent]
	listen = unix:$RUN_DIR/spop.sock
	admin = 127.0.0.1:$ADMIN_PORT
	[breaker]
	threshold = 1
	INI
	cp "$INI" "$BATS_TEST_TMPDIR/refused.ini"
	# --check says what the reload will: valid alone, not as a reload.
	run check_as_reload
	assert_failure
	assert_output --partial "listen = 0.0.0.0:$AGENT_PORT is not a loopback address and nothing says who may connect"
	assert_output --partial "$INI: valid for a start, refused for a reload"
	reload_agent 1
	run hello_from 127.0.0.2
	assert_failure
	wait_until 5 metric_is "$REFUSED_SPOP" 2
	run log_count "reload refused"
	assert_output 1
	run log_count "configuration reloaded"
	assert_output 0
	grep -q "listen = 0.0.0.0:$AGENT_PORT is not a loopback address and nothing says who may connect" \
		"$RUN_DIR/agent.log"
	# The running configuration, whole: HAProxy still served, the policy
	# the one before.
	run hello_from 127.0.0.1
	assert_success
	run breaker_field workers/w1 policy.threshold
	assert_output 3
	verdicts_flow

	# Naming who may connect makes the same change reloadable; listen
	# itself waits for a restart, as always.
	cat >"$INI" <<-INI
	[agent]
	listen = unix:$RUN_DIR/spop.sock
	allow = 127.0.0.1
	admin = 127.0.0.1:$ADMIN_PORT
	[breaker]
	threshold = 1
	INI
	run check_as_reload
	assert_success
	assert_output --partial "warning: listen changed; a reload leaves it as it runs"
	reload_agent 2
	run log_count "configuration reloaded"
	assert_output 1
	grep -q "reload: listen changed; it takes effect at the next restart" "$RUN_DIR/agent.log"
	run breaker_field workers/w1 policy.threshold
	assert_output 1
	run hello_from 127.0.0.2
	assert_failure

	cp "$BATS_TEST_TMPDIR/refused.ini" "$INI"
	stop_agent_then_check_passes
}

@test "admin on 0.0.0.0 with admin_allow, reloaded to admin none without a list: refused, 127.0.0.2 still shut out" {
	ADMIN_PORT=$(free_port)
	export ADMIN_PORT
	cat >"$INI" <<-INI
	[agent]
	admin = 0.0.0.0:$ADMIN_PORT
	admin_allow = 127.0.0.1
	INI
	AGENT_ARGS="-f $INI --state-file $STATE"
	start_scene
	wait_port "$ADMIN_PORT"
	agent_published
	run admin_status_from 127.0.0.2
	assert_output 000
	run admin_status_from 127.0.0.1
	assert_output 200

	# No admin listener, no list: valid alone, but 0.0.0.0 keeps serving
	# the pages until a restart.
	printf '[agent]\nadmin = none\n' >"$INI"
	run check_as_reload
	assert_failure
	assert_output --partial "admin = 0.0.0.0:$ADMIN_PORT is not a loopback address and nothing says who may read it"
	assert_output --partial "$INI: valid for a start, refused for a reload"
	reload_agent 1
	run admin_status_from 127.0.0.2
	assert_output 000
	run log_count "reload refused"
	assert_output 1
	run log_count "configuration reloaded"
	assert_output 0
	grep -q "admin = 0.0.0.0:$ADMIN_PORT is not a loopback address and nothing says who may read it" \
		"$RUN_DIR/agent.log"
	run admin_status_from 127.0.0.1
	assert_output 200
	verdicts_flow

	stop_agent_then_check_passes
}

@test "TLS with tls_ca, reloaded without it: refused, a client without a certificate still shut out" {
	CERTS=$BATS_TEST_TMPDIR/certs
	mkdir -p "$CERTS"
	make_ca ca
	make_cert agent ca agent serverAuth
	make_cert haproxy ca haproxy clientAuth
	printf '[agent]\ntls_cert = %s\ntls_key = %s\ntls_ca = %s\n' \
		"$CERTS/agent.pem" "$CERTS/agent.key" "$CERTS/ca.pem" >"$INI"
	ADMIN_PORT=$(free_port)
	AGENT_ARGS="-f $INI --admin 127.0.0.1:$ADMIN_PORT --state-file $STATE"
	AGENT_TLS="ssl verify required ca-file $CERTS/ca.pem crt $CERTS/haproxy-bundle.pem"
	start_enforce_scene
	agent_published
	wait_until 5 verdicts_flow
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" "$AGENT_ADDR" hello
	assert_failure
	assert_output --partial tls-error

	# The same files but the CA: valid alone (TLS without client
	# certificates), but the listener was opened for certified peers.
	printf '[agent]\ntls_cert = %s\ntls_key = %s\n' "$CERTS/agent.pem" "$CERTS/agent.key" >"$INI"
	run check_as_reload
	assert_failure
	assert_output --partial "tls_ca removed while the SPOP listeners serve TLS"
	assert_output --partial "$INI: valid for a start, refused for a reload"
	reload_agent 1
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" "$AGENT_ADDR" hello
	assert_failure
	assert_output --partial tls-error
	run log_count "reload refused"
	assert_output 1
	run log_count "configuration reloaded"
	assert_output 0
	grep -q "tls_ca removed while the SPOP listeners serve TLS" "$RUN_DIR/agent.log"
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" --cert "$CERTS/haproxy-bundle.pem" "$AGENT_ADDR" hello
	assert_success
	verdicts_flow

	stop_agent_then_check_passes
}

@test "TLS without tls_ca, reloaded with one: the running file follows, and --check refuses dropping it again" {
	CERTS=$BATS_TEST_TMPDIR/certs
	mkdir -p "$CERTS"
	make_ca ca
	make_cert agent ca agent serverAuth
	make_cert haproxy ca haproxy clientAuth
	printf '[agent]\ntls_cert = %s\ntls_key = %s\n' "$CERTS/agent.pem" "$CERTS/agent.key" >"$INI"
	ADMIN_PORT=$(free_port)
	AGENT_ARGS="-f $INI --admin 127.0.0.1:$ADMIN_PORT --state-file $STATE"
	AGENT_TLS="ssl verify required ca-file $CERTS/ca.pem crt $CERTS/haproxy-bundle.pem"
	start_enforce_scene
	agent_published
	wait_until 5 verdicts_flow
	cp "$INI" "$BATS_TEST_TMPDIR/no-ca.ini"

	# Adding a CA only narrows: reloaded, and from now on it runs.
	printf '[agent]\ntls_cert = %s\ntls_key = %s\ntls_ca = %s\n' \
		"$CERTS/agent.pem" "$CERTS/agent.key" "$CERTS/ca.pem" >"$INI"
	run check_as_reload
	assert_success
	reload_agent 1
	run log_count "configuration reloaded"
	assert_output 1
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" "$AGENT_ADDR" hello
	assert_failure
	assert_output --partial tls-error

	# The file without it again: --check knows the CA runs now.
	cp "$BATS_TEST_TMPDIR/no-ca.ini" "$INI"
	run check_as_reload
	assert_failure
	assert_output --partial "tls_ca removed while the SPOP listeners serve TLS: they would stop asking clients for a certificate; keep tls_ca = $CERTS/ca.pem"
	reload_agent 2
	run log_count "reload refused"
	assert_output 1
}
