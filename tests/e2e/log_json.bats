#!/usr/bin/env bats
# log_format = json: every line the agent writes is one JSON object with
# time, level and msg, and a breaker's transition carries its fields
# (event, backend, server, from, to, cause) for a collector to filter on,
# against a real HAProxy with a failing worker; a reload switches it.

load helpers

# The enforcement scene, w2 answering 500, the agent logging JSON.
start_json_scene() {
	W2_BEHAVIOUR=500
	# A short cool-down: the open -> half_open line, caused by the timer,
	# comes on its own.
	AGENT_ARGS="--log-format json --runtime-api unix:$BATS_TEST_TMPDIR/admin.sock --cooldown 1500ms"
	start_enforce_scene
	ln -sf "$RUN_DIR/admin.sock" "$BATS_TEST_TMPDIR/admin.sock"
}

teardown() {
	stop_all
}

# Reads the agent's log: fails unless every line is one JSON object whose
# time, level and msg are strings; prints the transition events, one
# "from to cause backend/server msg" line each.
transitions_of_log() { # FILE
	python3 - "$1" <<'PY'
import json, sys
keys = ("event", "backend", "server", "from", "to", "cause")
with open(sys.argv[1], encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        o = json.loads(line)
        assert isinstance(o, dict), f"line {n} is not an object: {line!r}"
        for k in ("time", "level", "msg"):
            assert isinstance(o.get(k), str), f"line {n} has no string {k}: {line!r}"
        assert o["time"].endswith("Z") and "T" in o["time"], f"line {n}: time {o['time']!r}"
        if o.get("event") == "transition":
            assert all(isinstance(o.get(k), str) for k in keys), f"line {n}: {line!r}"
            print(o["from"], o["to"], o["cause"], o["backend"] + "/" + o["server"], o["msg"])
PY
}

@test "json: every line is one object; the transitions carry event, backend, server, from, to and cause" {
	start_json_scene
	trip_w2
	# The timer's line: the log has both kinds of cause once it is there.
	wait_until 10 grep -q "breaker workers/w2: open -> half_open" "$RUN_DIR/agent.log"
	# Its last lines too (the goodbye), then every line is read.
	stop agent
	run transitions_of_log "$RUN_DIR/agent.log"
	assert_success
	assert_line --partial "closed open response workers/w2 breaker workers/w2: closed -> open (failure, status 500"
	assert_line --partial "open half_open cooldown workers/w2 breaker workers/w2: open -> half_open (cool-down"
	# Not a line written twice, once in each format.
	run grep -c '^{"time":"' "$RUN_DIR/agent.log"
	[ "$output" -eq "$(wc -l <"$RUN_DIR/agent.log")" ]
	grep -q '"level":"notice","msg":"spoa-breaker stopped"}$' "$RUN_DIR/agent.log"
}

@test "SIGHUP switches the log from text to json: every line after the reload is one object" {
	new_run_dir
	local port
	port=$(free_port)
	printf '[agent]\nlog_format = text\n' >"$RUN_DIR/agent.ini"
	start_agent agent -f "$RUN_DIR/agent.ini" --listen "127.0.0.1:$port" --admin none
	wait_until 10 grep -q "\[notice\] spoa-breaker .* started" "$RUN_DIR/agent.log"
	printf '[agent]\nlog_format = json\n' >"$RUN_DIR/agent.ini"
	kill -HUP "$(cat "$RUN_DIR/agent.pid")"
	wait_until 10 grep -q '"msg":"configuration reloaded"}$' "$RUN_DIR/agent.log"
	stop agent
	# Text up to the reload's own lines, JSON from then on, the last
	# lines (the goodbye) included.
	run python3 - "$RUN_DIR/agent.log" <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
first = next(i for i, l in enumerate(lines) if l.startswith("{"))
assert "[notice] spoa-breaker" in "\n".join(lines[:first]), lines[:first]
objects = [json.loads(l) for l in lines[first:]]
assert objects[-1]["msg"] == "spoa-breaker stopped", objects[-1]
assert any(o["msg"] == "configuration reloaded" for o in objects), objects
print(len(objects), "JSON lines")
PY
	assert_success
}
