#!/usr/bin/env bats
# SPOP over TLS: HAProxy speaks to the agent with `ssl verify required
# ca-file ... crt ...` on the agent's server line, and the agent, with
# tls_ca, requires a client certificate that CA signed. Certificates are
# made per test, by make_ca and make_cert (helpers.bash).

load helpers

setup() {
	CERTS=$BATS_TEST_TMPDIR/certs
	mkdir -p "$CERTS"
	make_ca ca
	make_ca other-ca
	make_cert agent ca agent-1 serverAuth
	make_cert haproxy ca haproxy clientAuth
	make_cert stranger other-ca haproxy clientAuth
	# The agent reads its TLS files from an INI file, so a HUP can read
	# them again.
	INI=$BATS_TEST_TMPDIR/agent.ini
	printf '[agent]\ntls_cert = %s\ntls_key = %s\ntls_ca = %s\n' \
		"$CERTS/agent.pem" "$CERTS/agent.key" "$CERTS/ca.pem" >"$INI"
	ADMIN_PORT=$(free_port)
	W2_BEHAVIOUR=500
	AGENT_ARGS="-f $INI --runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 60s --admin 127.0.0.1:$ADMIN_PORT"
	AGENT_TLS="ssl verify required ca-file $CERTS/ca.pem crt $CERTS/haproxy-bundle.pem"
	start_enforce_scene
	# The agent is told where HAProxy's socket will be before it exists.
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
}

teardown() {
	stop_all
}

# The subject of the certificate the agent serves a new connection now.
served_subject() {
	openssl s_client -connect "$AGENT_ADDR" -CAfile "$CERTS/ca.pem" \
		-cert "$CERTS/haproxy.pem" -key "$CERTS/haproxy.key" </dev/null 2>/dev/null |
		openssl x509 -noout -subject
}

served_subject_is() { [[ "$(served_subject)" == *"CN = $1"* ]]; }

# A verdict comes back through HAProxy: the SPOE answered this request.
verdicts_flow() { [ -n "$(verdict_of /status/200 | awk '{print $1}')" ]; }

@test "HAProxy over TLS with a client certificate: NOTIFYs flow, a failing worker trips and is drained" {
	# The agent's health check passed over TLS (the scene waits for it),
	# and every SPOP connection so far did its handshake.
	wait_until 5 metric_at_least 'spoa_breaker_spop_tls_handshakes_total{result="ok"}' 1
	run metric 'spoa_breaker_spop_tls_handshakes_total{result="failed"}'
	assert_output 0
	run verdict_of /status/200
	assert_output --regexp '^closed success'
	run is_not_drained w2
	assert_success
	trip_w2
	wait_until 10 is_drained w2
	is_not_drained w1
	is_not_drained w3
	# The listener speaks TLS only: a plaintext HELLO is refused.
	run python3 "$SPOP_CLIENT" "$AGENT_ADDR" hello
	assert_failure
	wait_until 5 grep -q "TLS handshake failed: wrong version number" "$RUN_DIR/agent.log"
}

@test "a client without a certificate, or with one another CA signed, is refused; the agent keeps serving" {
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" "$AGENT_ADDR" hello
	assert_failure
	assert_output --partial tls-error
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" --cert "$CERTS/stranger-bundle.pem" "$AGENT_ADDR" notify \
		"[('breaker-observe', [('be', 'workers'), ('srv', 'w1'), ('status', 500)])]"
	assert_failure
	assert_output --partial tls-error
	grep -q "TLS handshake failed: peer did not return a certificate" "$RUN_DIR/agent.log"
	grep -q "TLS handshake failed: certificate verify failed" "$RUN_DIR/agent.log"
	wait_until 5 metric_at_least 'spoa_breaker_spop_tls_handshakes_total{result="failed"}' 2
	# openssl s_client without a certificate fares no better.
	run bash -c "echo | openssl s_client -connect '$AGENT_ADDR' -CAfile '$CERTS/ca.pem' 2>&1"
	wait_until 5 metric_at_least 'spoa_breaker_spop_tls_handshakes_total{result="failed"}' 3
	# The stranger's 500 opened nothing; HAProxy's NOTIFYs still flow, and
	# the right certificate still gets in.
	[ "$(logged_state_of w1)" = closed ]
	wait_until 5 verdicts_flow
	run python3 "$SPOP_CLIENT" --tls "$CERTS/ca.pem" --cert "$CERTS/haproxy-bundle.pem" "$AGENT_ADDR" hello
	assert_success
}

@test "a handshake that stalls is closed by the HELLO timer, and never holds the loop" {
	# Half a TLS record header, then nothing.
	spawn stalled python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"\x16\x03\x01")
print("sent", flush=True)
s.settimeout(30)
print("closed" if s.recv(1) == b"" else "answered", flush=True)
' "$AGENT_PORT"
	wait_until 5 grep -qx sent "$RUN_DIR/stalled.log"
	# Meanwhile HAProxy's requests are answered.
	wait_until 5 verdicts_flow
	wait_until 15 grep -q "no HAPROXY-HELLO within" "$RUN_DIR/agent.log"
	wait_until 5 grep -qx closed "$RUN_DIR/stalled.log"
	verdicts_flow
}

@test "SIGHUP reads the certificate again: new connections get the new one, a broken one keeps the old" {
	wait_until 5 served_subject_is agent-1
	# A renewed certificate under the same file names.
	make_cert agent ca agent-2 serverAuth
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 5 grep -q "new SPOP connections use the TLS files" "$RUN_DIR/agent.log"
	wait_until 5 served_subject_is agent-2
	# HAProxy's new connections verify it as before.
	restart_haproxy_connections
	wait_until 5 verdicts_flow
	# A broken one: the reload is refused, and agent-2 is still served.
	echo "not a certificate" >"$CERTS/agent.pem"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 5 grep -q "reload refused" "$RUN_DIR/agent.log"
	grep -q "tls_cert $CERTS/agent.pem: no certificate in it" "$RUN_DIR/agent.log"
	served_subject_is agent-2
	verdicts_flow
}

# Makes HAProxy open new SPOP connections: the agent's server goes through
# maintenance, which closes its connections (shutdown-sessions).
restart_haproxy_connections() {
	local before
	before=$(metric 'spoa_breaker_spop_tls_handshakes_total{result="ok"}')
	haproxy_cli "disable server spoa-breaker/agent" >/dev/null
	haproxy_cli "shutdown sessions server spoa-breaker/agent" >/dev/null
	haproxy_cli "enable server spoa-breaker/agent" >/dev/null
	wait_until 10 agent_is_up
	wait_until 5 metric_at_least 'spoa_breaker_spop_tls_handshakes_total{result="ok"}' $((before + 1))
}

@test "--check says which TLS file is missing, unreadable or wrong" {
	run "$SPOA_BIN" --check --state-file none --tls-cert "$CERTS/missing.pem"
	assert_failure 1
	assert_output --partial "tls_cert $CERTS/missing.pem: cannot read it: No such file or directory"
	run "$SPOA_BIN" --check --state-file none --tls-cert "$CERTS/agent.pem" --tls-key "$CERTS/missing.key"
	assert_failure 1
	assert_output --partial "tls_key $CERTS/missing.key: cannot read it: No such file or directory"
	run "$SPOA_BIN" --check --state-file none --tls-cert "$CERTS/agent.pem" --tls-key "$CERTS/haproxy.key"
	assert_failure 1
	assert_output --partial "tls_key $CERTS/haproxy.key: not the private key of tls_cert $CERTS/agent.pem"
	run "$SPOA_BIN" --check --state-file none --tls-cert "$CERTS"
	assert_failure 1
	assert_output --partial "tls_cert $CERTS: not a regular file"
	run "$SPOA_BIN" --check --state-file none --tls-cert "$CERTS/agent.pem" --tls-key "$CERTS/agent.key" \
		--tls-ca "$CERTS/agent.key"
	assert_failure 1
	assert_output --partial "tls_ca $CERTS/agent.key: no CA certificate in it"
	# In the file: at the line that names it.
	printf '[agent]\ntls_cert = %s\ntls_key = %s\n' "$CERTS/agent.pem" "$CERTS/gone.key" >"$BATS_TEST_TMPDIR/bad.ini"
	run "$SPOA_BIN" --check --state-file none -f "$BATS_TEST_TMPDIR/bad.ini"
	assert_failure 1
	assert_output --partial "bad.ini:3: tls_key $CERTS/gone.key: cannot read it"
	# Unreadable for the user the agent runs as (root reads anything): a
	# directory nobody may enter, the certificate readable, the key not.
	local open_dir
	open_dir=$(mktemp -d /tmp/tls-check.XXXXXX)
	chmod 0755 "$open_dir"
	install -m 0644 "$CERTS/agent.pem" "$open_dir/agent.pem"
	install -m 0600 "$CERTS/agent.key" "$open_dir/agent.key"
	run setpriv --reuid=nobody --regid=nogroup --clear-groups "$SPOA_BIN" --check --state-file none \
		--tls-cert "$open_dir/agent.pem" --tls-key "$open_dir/agent.key"
	rm -rf "$open_dir"
	assert_failure 1
	assert_output --partial "tls_key $open_dir/agent.key: cannot read it: Permission denied"
	run "$SPOA_BIN" --check --state-file none --tls-cert "$CERTS/agent.pem" --tls-key "$CERTS/agent.key" \
		--tls-ca "$CERTS/ca.pem"
	assert_success
}
