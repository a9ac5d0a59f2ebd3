#!/usr/bin/env bats
# The admin listener: /metrics scraped during a scenario -- a 503 storm on
# w1, 500s on w2 -- counts backpressure for the first, failures and a
# closed->open transition for the second, and its state gauge agrees with
# /state and with HAProxy's `show servers state`. The output passes a format
# check (ours always; promtool's too when it is installed).

load helpers

setup() {
	W2_BEHAVIOUR=500
	ADMIN_PORT=$(free_port)
	# HAProxy's own exporter beside the scene, in a file of its own (a
	# second -f): what an operator's Prometheus already scrapes.
	PROMEX_PORT=$(free_port)
	cat >"$BATS_TEST_TMPDIR/promex.cfg" <<-EOF
	frontend promex
	    mode http
	    bind 127.0.0.1:$PROMEX_PORT
	    timeout client 10s
	    http-request use-service prometheus-exporter
	EOF
	HAPROXY_EXTRA_ARGS="-f $BATS_TEST_TMPDIR/promex.cfg"
	AGENT_ARGS="--runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 60s --admin 127.0.0.1:$ADMIN_PORT"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
	# w1 answers 503 to everything: alive and busy.
	stop w1
	start_worker w1 "$W1_PORT" 503
	wait_port "$ADMIN_PORT"
}

teardown() {
	stop_all
}

admin() { # PATH [CURL ARGS...]
	local path=$1
	shift
	curl -s "$@" "http://127.0.0.1:$ADMIN_PORT$path"
}

# The value of one series, written exactly as the agent writes it.
metric() { # 'name{labels}'
	admin /metrics | awk -v s="spoa_breaker_$1" '$1 == s {print $2}'
}

# A breaker's field in /state.
state_field() { # SERVER FIELD
	admin /state | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for b in doc["breakers"]:
    if b["backend"] == "workers" and b["server"] == sys.argv[1]:
        print(b[sys.argv[2]])' "$1" "$2"
}

# Our own check of the text format 0.0.4, from the format's rules rather
# than from the agent's code: HELP then TYPE before each family's samples,
# each family once, every sample `name{labels} value` with valid escapes,
# counters (and only they) in *_total, histogram buckets cumulative with
# +Inf equal to _count. Prints what is wrong and fails.
check_format() { # FILE
	python3 - "$1" <<'PY'
import math, re, sys
NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r'^(%s)(\{(?:%s(?:,%s)*)?\})? (\S+)$' % (NAME, LABEL, LABEL))
text = open(sys.argv[1]).read()
errors, families, fam, ftype, help_seen = [], set(), None, None, False
inf = last_le = last_bucket = None
samples = 0
def fail(n, msg): errors.append('line %d: %s' % (n, msg))
if not text.endswith('\n'): fail(0, 'no final newline')
for n, line in enumerate(text.splitlines(), 1):
    if line.startswith('# HELP '):
        name = line.split(' ')[2]
        if name in families: fail(n, 'family %s twice' % name)
        families.add(name); fam, ftype, help_seen = name, None, True
        inf, last_le, last_bucket = None, -math.inf, 0
        continue
    if line.startswith('# TYPE '):
        parts = line.split(' ')
        if len(parts) != 4 or parts[2] != fam or not help_seen: fail(n, 'TYPE without its HELP: ' + line)
        ftype = parts[3]
        if ftype not in ('counter', 'gauge', 'histogram'): fail(n, 'type ' + ftype)
        if (ftype == 'counter') != fam.endswith('_total'): fail(n, fam + ': counters, and only counters, end in _total')
        continue
    m = SAMPLE.match(line)
    if not m: fail(n, 'not a sample: ' + line); continue
    name, labels, value = m.group(1), m.group(2) or '', m.group(3)
    samples += 1
    try: v = float(value)
    except ValueError: fail(n, 'bad value ' + value); continue
    if ftype is None: fail(n, 'sample before HELP/TYPE: ' + line); continue
    if ftype == 'histogram':
        if name == fam + '_bucket':
            le = re.search(r'le="([^"]*)"', labels)
            b = float(le.group(1)) if le else None
            if b is None or b <= last_le: fail(n, 'le missing or not increasing')
            elif v < last_bucket: fail(n, 'buckets not cumulative')
            else:
                last_le, last_bucket = b, v
                if math.isinf(b): inf = v
        elif name == fam + '_count':
            if inf is None or v != inf: fail(n, '_count is not the +Inf bucket')
        elif name != fam + '_sum': fail(n, name + ' outside histogram ' + fam)
    elif name != fam: fail(n, name + ' outside its family ' + str(fam))
if samples == 0: fail(0, 'no samples at all')
for e in errors: print(e)
sys.exit(1 if errors else 0)
PY
}

@test "503s on w1 count as backpressure; 500s on w2 as failures that open it; gauge, /state and HAProxy agree" {
	trip_w2
	# Keep the storm going: w1 keeps answering 503, w2 is drained.
	local i
	for i in $(seq 10); do curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"; done
	wait_until 10 is_drained w2

	# Backpressure for the busy worker, never a failure, never a transition.
	local busy
	busy=$(metric 'server_responses_total{proxy="workers",server="w1",outcome="backpressure",source="spop"}')
	echo "w1 backpressure: $busy"
	[ "$busy" -ge 3 ]
	[ "$(metric 'server_responses_total{proxy="workers",server="w1",outcome="failure",source="spop"}')" = 0 ]
	[ "$(metric 'server_transitions_total{proxy="workers",server="w1",from="closed",to="open"}')" = 0 ]
	[ "$(metric 'server_failure_streak{proxy="workers",server="w1"}')" = 0 ]

	# Failures for the broken one, and exactly one trip.
	local failed
	failed=$(metric 'server_responses_total{proxy="workers",server="w2",outcome="failure",source="spop"}')
	echo "w2 failures: $failed"
	[ "$failed" -ge 3 ]
	[ "$(metric 'server_responses_total{proxy="workers",server="w2",outcome="backpressure",source="spop"}')" = 0 ]
	[ "$(metric 'server_transitions_total{proxy="workers",server="w2",from="closed",to="open"}')" = 1 ]
	[ "$(metric 'server_failure_streak{proxy="workers",server="w2"}')" = 3 ]

	# The gauge, /state and HAProxy's `show servers state` tell one story.
	# One state sample per state, 1 for the state the breaker is in.
	local s st state
	for s in w1 w2 w3; do
		state=$(state_field "$s" state)
		echo "$s: state=$state admin_state=$(admin_state_of "$s")"
		for st in closed open half_open; do
			[ "$(metric "server_state{proxy=\"workers\",server=\"$s\",state=\"$st\"}")" = \
				"$([ "$st" = "$state" ] && echo 1 || echo 0)" ]
		done
		case "$state" in
		closed) is_not_drained "$s" ;;
		open) is_drained "$s" ;;
		*) false ;;
		esac
	done
	[ "$(state_field w2 state)" = open ]
	[ "$(state_field w1 state)" = closed ]
	[ "$(state_field w2 failure_streak)" = 3 ]
	local left
	left=$(state_field w2 cooldown_left_ms)
	[ "$left" -gt 0 ]
	[ "$left" -le 60000 ]

	# The Runtime API carried the drain, and its counters say so.
	[ "$(metric 'runtime_api_commands_total{result="ok"}')" -ge 1 ]
	[ "$(metric 'enforcement_mode{mode="runtime-api"}')" = 1 ]
	[ "$(metric 'table_entries')" = 3 ]

	# One log line for the transition, naming its reason.
	grep -q "breaker workers/w2: closed -> open (failure, status 500, failure streak 3)" "$RUN_DIR/agent.log"
}

@test "/metrics passes the format check (and promtool's when installed)" {
	for _ in $(seq 12); do curl -s -o /dev/null "http://127.0.0.1:$FE_PORT/"; done
	# The per-backend gauges come from the last complete look at HAProxy:
	# scraped before one, they are not there yet (a slow machine's first
	# look may come after the requests above).
	wait_until 10 metric_at_least 'haproxy_looks_total{result="ok"}' 2
	admin /metrics >"$RUN_DIR/metrics.txt"
	run check_format "$RUN_DIR/metrics.txt"
	assert_success
	# Each family has HELP and TYPE, and NOTIFYs were timed.
	[ "$(grep -c '^# HELP ' "$RUN_DIR/metrics.txt")" = "$(grep -c '^# TYPE ' "$RUN_DIR/metrics.txt")" ]
	local notifies count
	count=$(awk '$1 == "spoa_breaker_notify_duration_seconds_count" {print $2}' "$RUN_DIR/metrics.txt")
	notifies=$(awk '$1 == "spoa_breaker_spop_frames_total{type=\"notify\"}" {print $2}' "$RUN_DIR/metrics.txt")
	[ "$count" -ge 12 ]
	[ "$count" = "$notifies" ]
	if command -v promtool >/dev/null; then
		run promtool check metrics <"$RUN_DIR/metrics.txt"
		echo "$output"
		assert_success
	fi

	# Every series the shipped Grafana dashboard queries exists.
	local name
	for name in $(grep -o 'spoa_breaker_[a-z_]*[a-z]' "$REPO/packaging/grafana-dashboard.json" | sort -u); do
		grep -q "^$name[{ ]" "$RUN_DIR/metrics.txt" || { echo "dashboard queries $name: not served"; false; }
	done

	# The check is not vacuous: it refuses broken text.
	printf '# HELP a_total h\n# TYPE a_total counter\na_total{x="1} 1\n' >"$RUN_DIR/bad.txt"
	run check_format "$RUN_DIR/bad.txt"
	assert_failure
	printf '# HELP a h\n# TYPE a counter\na 1\n' >"$RUN_DIR/bad.txt"
	run check_format "$RUN_DIR/bad.txt"
	assert_failure
	printf 'a_total 1\n' >"$RUN_DIR/bad.txt"
	run check_format "$RUN_DIR/bad.txt"
	assert_failure
}

# An instant PromQL query against the Prometheus on PROM_PORT: the result's
# series, one "proxy/server value" a line.
prom_query() { # EXPR
	curl -s -m 2 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
		python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["status"] == "success", doc
for r in doc["data"]["result"]:
    m = r["metric"]
    print("%s/%s %s" % (m.get("proxy", ""), m.get("server", ""), r["value"][1]))'
}

prom_query_says() { # EXPR LINE
	prom_query "$1" | grep -qxF "$2"
}

@test "a Prometheus scraping the agent and HAProxy's exporter joins their servers on proxy and server, with no relabelling" {
	command -v prometheus >/dev/null || { echo "prometheus is not installed (make deps installs it)"; false; }
	trip_w2
	wait_until 10 is_drained w2
	PROM_PORT=$(free_port)
	cat >"$RUN_DIR/prometheus.yml" <<-EOF
	global:
	  scrape_interval: 1s
	scrape_configs:
	  - job_name: spoa-breaker
	    static_configs: [{targets: ['127.0.0.1:$ADMIN_PORT']}]
	  - job_name: haproxy
	    static_configs: [{targets: ['127.0.0.1:$PROMEX_PORT']}]
	EOF
	spawn prometheus prometheus --config.file="$RUN_DIR/prometheus.yml" \
		--storage.tsdb.path="$RUN_DIR/tsdb" --web.listen-address="127.0.0.1:$PROM_PORT"
	wait_port "$PROM_PORT"
	# The open breaker, and the state HAProxy's exporter gives its server:
	# one series from two exporters, matched on the labels they share.
	local join='spoa_breaker_server_state{state="open"} == 1 and on (proxy, server) haproxy_server_status == 1'
	wait_until 20 prom_query_says "$join" "workers/w2 1"
	run prom_query "$join"
	echo "$output"
	assert_output "workers/w2 1"
	# Every server the agent tracks has its twin in HAProxy's exporter.
	wait_until 10 prom_query_says 'count(group by (proxy, server) (spoa_breaker_server_state) and on (proxy, server) haproxy_server_status)' "/ 3"
}

@test "/state is JSON with every breaker and its policy; /healthz says ok; others 404 or 405" {
	trip_w2
	run bash -c "curl -s http://127.0.0.1:$ADMIN_PORT/state | python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc[\"enforce\"] == \"runtime-api\", doc
b = {x[\"server\"]: x for x in doc[\"breakers\"]}
assert set(b) == {\"w1\", \"w2\", \"w3\"}, b
p = b[\"w2\"][\"policy\"]
assert p[\"threshold\"] == 3 and p[\"cooldown_ms\"] == 60000, p
assert p[\"capacity_statuses\"] == \"429,503,529\", p
assert p[\"failure_statuses\"] == \"500-502,504-528,530-599\", p
for k in (\"since_ms\", \"cooldown_left_ms\", \"failure_streak\"):
    assert isinstance(b[\"w2\"][k], int), k
print(\"ok\")'"
	echo "$output"
	assert_success
	assert_output ok

	run admin /healthz -i
	assert_line --partial "200 OK"
	assert_line ok
	[ "$(admin /nothing -o /dev/null -w '%{http_code}')" = 404 ]
	[ "$(admin /metrics -o /dev/null -w '%{http_code}' -X POST -d x=1)" = 405 ]
	[ "$(admin /metrics -o /dev/null -w '%{content_type}')" = "text/plain; version=0.0.4; charset=utf-8" ]
	# Served from the agent's one thread.
	[ "$(ls "/proc/$(cat "$RUN_DIR/agent.pid")/task" | wc -l)" = 1 ]
}

@test "an admin address asked for must open; unix sockets are refused; none disables it" {
	run timeout 5 "$SPOA_BIN" --listen "127.0.0.1:$(free_port)" --admin "127.0.0.1:$ADMIN_PORT"
	assert_failure
	assert_output --partial "127.0.0.1:$ADMIN_PORT"
	run "$SPOA_BIN" --admin unix:/tmp/x.sock --check
	assert_failure
	assert_output --partial "--admin"
	run "$SPOA_BIN" --admin none --check
	assert_success
}
