#!/usr/bin/env bats
# A reload never leaves a running listener open to everyone. listen, admin
# and turning TLS on or off wait for a restart, so after a SIGHUP the
# running listeners stay: the new file's allow lists and TLS files are
# checked against them, not against the listeners the file names. A file
# that would leave one with nobody named to let in, or stop asking for
# client certificates, is refused whole, and the running configuration
# (its lists, its policies, its breakers) stays. 127.0.0.2 plays a host
# outside every list.

load helpers

REFUSED_SPOP='spoa_breaker_connections_refused_total{listener="spop",reason="not_allowed"}'

setup() {
	INI=$BATS_TEST_TMPDIR/agent.ini
	export INI
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
	start_agent agent -f "$INI"
	wait_port "$AGENT_PORT"
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
	"$SPOA_BIN" --check --state-file none -f "$INI"
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
	reload_agent 2
	run log_count "configuration reloaded"
	assert_output 1
	grep -q "reload: listen changed; it takes effect at the next restart" "$RUN_DIR/agent.log"
	run breaker_field workers/w1 policy.threshold
	assert_output 1
	run hello_from 127.0.0.2
	assert_failure
}

@test "admin on 0.0.0.0 with admin_allow, reloaded to admin none without a list: refused, 127.0.0.2 still shut out" {
	ADMIN_PORT=$(free_port)
	export ADMIN_PORT
	cat >"$INI" <<-INI
	[agent]
	admin = 0.0.0.0:$ADMIN_PORT
	admin_allow = 127.0.0.1
	INI
	AGENT_ARGS="-f $INI"
	start_scene
	wait_port "$ADMIN_PORT"
	run admin_status_from 127.0.0.2
	assert_output 000
	run admin_status_from 127.0.0.1
	assert_output 200

	# No admin listener, no list: valid alone, but 0.0.0.0 keeps serving
	# the pages until a restart.
	printf '[agent]\nadmin = none\n' >"$INI"
	"$SPOA_BIN" --check --state-file none -f "$INI"
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
}

# make_ca NAME, make_cert NAME CA CN USAGE: as tls.bats makes them, in $CERTS.
make_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=$1" -keyout "$CERTS/$1.key" -out "$CERTS/$1.pem" 2>/dev/null
}

make_cert() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-subj "/CN=$3" -keyout "$CERTS/$1.key" -out "$CERTS/$1.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' "$4" >"$CERTS/$1.ext"
	openssl x509 -req -in "$CERTS/$1.csr" -CA "$CERTS/$2.pem" -CAkey "$CERTS/$2.key" \
		-CAcreateserial -days 2 -extfile "$CERTS/$1.ext" -out "$CERTS/$1.pem" 2>/dev/null
	cat "$CERTS/$1.pem" "$CERTS/$1.key" >"$CERTS/$1-bundle.pem"
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
	AGENT_ARGS="-f $INI --admin 127.0.0.1:$ADMIN_PORT"
	AGENT_TLS="ssl verify required ca-file $CERTS/ca.pem crt $CERTS/haproxy-bundle.pem"
	start_enforce_scene
	wait_until 5 verdicts_flow
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" "$AGENT_ADDR" hello
	assert_failure
	assert_output --partial tls-error

	# The same files but the CA: valid alone (TLS without client
	# certificates), but the listener was opened for certified peers.
	printf '[agent]\ntls_cert = %s\ntls_key = %s\n' "$CERTS/agent.pem" "$CERTS/agent.key" >"$INI"
	"$SPOA_BIN" --check --state-file none -f "$INI"
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
}
