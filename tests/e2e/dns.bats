#!/usr/bin/env bats
# DNS re-points server-template slots while traffic runs: a real DNS server
# on loopback (dnsmasq) answers HAProxy's resolvers, and the test changes
# its records. The breaker follows the worker (docs/dynamic-servers.md).

load helpers

setup() {
	command -v dnsmasq >/dev/null || skip "dnsmasq is not installed (packaging/install-deps.sh)"
	new_scene ADMIN_PORT DNS_PORT WORKERS_PORT
	# Three workers on one port, each on its own loopback address: what
	# an A record can tell apart. .2 fails.
	spawn bad python3 "$WORKER" --name bad --host 127.0.0.2 --port "$WORKERS_PORT" --behaviour 500
	spawn good python3 "$WORKER" --name good --host 127.0.0.3 --port "$WORKERS_PORT" --behaviour 200
	spawn new python3 "$WORKER" --name new --host 127.0.0.4 --port "$WORKERS_PORT" --behaviour 200
	mkdir "$RUN_DIR/dns"
	set_records 127.0.0.2 127.0.0.3
	spawn dns dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
		--listen-address=127.0.0.1 --bind-interfaces --port="$DNS_PORT" --user=root \
		--pid-file= --local-ttl=0 --hostsdir="$RUN_DIR/dns" --log-facility=-
	start_agent agent --listen "$AGENT_ADDR" --runtime-api "unix:$RUN_DIR/admin.sock" \
		--cooldown 60s --poll-interval 100ms --admin "127.0.0.1:$ADMIN_PORT"
	wait_port "$AGENT_PORT"
	start_haproxy "$BATS_TEST_DIRNAME/haproxy-dns.cfg.in"
	wait_until 10 agent_is_up
}

teardown() {
	stop_all
}

# The A records of workers.test, replaced at once (dnsmasq reads a file
# that changes in its hosts directory).
set_records() {
	local ip
	for ip in "$@"; do echo "$ip workers.test"; done >"$RUN_DIR/records.tmp"
	mv "$RUN_DIR/records.tmp" "$RUN_DIR/dns/workers"
}

# The slot that points at ADDRESS ("" when none does).
slot_of() {
	haproxy_cli "show servers state workers" | awk -v a="$1" '$5==a {print $4}'
}
slot_filled() { [ -n "$(slot_of "$1")" ]; }
slot_empty() { [ -z "$(slot_of "$1")" ]; }
filled_slots() {
	haproxy_cli "show servers state workers" | awk 'NF > 10 && $1 != "#" && $5 != "-"' | wc -l
}
filled_slots_are() { [ "$(filled_slots)" = "$1" ]; }
state_of() { breaker_field "workers/$1" state; }
state_is() { [ "$(state_of "$1")" = "$2" ]; }
breakers_count() {
	curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/state" |
		python3 -c 'import json,sys; print(sum(1 for b in json.load(sys.stdin)["breakers"] if b["backend"] == "workers"))'
}
breakers_are() { [ "$(breakers_count)" = "$1" ]; }

@test "DNS: a failing worker is drained; replaced in its slot, the slot serves; moved to another slot, it is drained there" {
	wait_until 10 filled_slots_are 2
	# The empty slot is no breaker.
	wait_until 10 breakers_are 2
	local bad_slot
	bad_slot=$(slot_of 127.0.0.2)
	trip_server "$bad_slot"
	wait_until 10 is_drained "$bad_slot"

	# The failing worker's record is replaced by a healthy one's.
	set_records 127.0.0.3 127.0.0.4
	wait_until 5 slot_empty 127.0.0.2
	wait_until 5 slot_filled 127.0.0.4
	local new_slot
	new_slot=$(slot_of 127.0.0.4)
	wait_until 10 is_not_drained "$new_slot"
	wait_until 10 state_is "$new_slot" closed
	served_by new
	# The failing worker comes back, in whichever slot is free: its
	# breaker comes along, and it is drained there without a new trip.
	set_records 127.0.0.2 127.0.0.3 127.0.0.4
	wait_until 5 slot_filled 127.0.0.2
	bad_slot=$(slot_of 127.0.0.2)
	wait_until 10 is_drained "$bad_slot"
	state_is "$bad_slot" open
	is_not_drained "$new_slot"
	run grep "no configured HAProxy lists" "$RUN_DIR/agent.log"
	assert_failure
}
