#!/bin/bash
# `make bench-fleet`: a seeded, simulated fleet behind a real HAProxy, the
# same open-loop load through each setup, and what the clients got. Figures,
# never pass/fail.
#
# The fleet (bench/fleet_workers.py, one process): six busy workers that
# answer 503 to a request finding 4 already in service, one crashed (its
# port refuses), one broken (500), one hung (never answers), one flaky
# (500 for FLEET_FLAKY of its requests) and one wedged at 503: five of
# eleven misbehave, within the default ejection cap of 50 %. Every answer
# takes 20-60 ms, so the busy ones refuse often once the others are out.
# The setups, each a fresh HAProxy, fleet and agent:
#
#   plain            HAProxy alone: health checks (GET /health), no retry
#                    on a capacity status
#   observe          plain + `observe layer7 on-error mark-down`: HAProxy's
#                    own passive outlier detection
#   retry            plain + the shipped retry on capacity (`retry-on
#                    conn-failure 503 ...`, `option redispatch 1`, `retries 2`)
#   breaker-noretry  the shipped haproxy.cfg and the agent, without its
#                    retry on capacity
#   lua              retry plus a Lua breaker inside HAProxy
#                    (bench/lua_breaker.lua, draining: three 5xx in a row
#                    open a server for 30 s), what one would write instead
#   breaker          the shipped haproxy.cfg and the agent, as shipped,
#                    with the protections the scenario calls for (below)
#   breaker-defaults the same, the agent on its shipped defaults: no option
#   plain-maxconn    plain + `maxconn K` on the server line of each busy
#                    worker (and of one back from a crash), K its true
#                    capacity: the operator who knows
#   breaker-maxconn  breaker-defaults + the same maxconn
#
# The LLM scenario (FLEET_SCENARIO=llm) is a fleet of inference engines:
# completions take seconds to a minute (log-normal, median 3 s), half the
# requests ask for a stream (head at the first token, then events until
# the end), the others get their head only when the completion ends;
# `timeout server` is minutes (FLEET_LLM_TIMEOUT_SERVER, 2m). Six workers
# serve 16 completions at a time and refuse beyond, three with 503 and
# `Retry-After: 2`, three with 429; one is broken (500), one hung (accepts,
# never answers, yet its /health answers: no health check sees it), one
# crashes 30 s in. The agent runs on its shipped
# defaults alone: nothing is tuned for the scenario.
#
# The capacity scenarios ask what the busy workers carry when they are the
# whole of the capacity. Six workers, answers in 20-60 ms: three busy ones
# (503 with `Retry-After: 1` beyond their capacity), one crashed until half
# the run (its port refuses, then it serves like a busy one of capacity 4),
# one broken (500) and one hung; 300 requests/s, about what three workers
# of capacity 4 serve. Every setup but breaker-noretry has the shipped
# retry on capacity (the busy workers carry the load through it), and the
# shipped `timeout queue` (5s): a request waiting for a maxconn slot waits
# in HAProxy's queue that long (FLEET_TIMEOUT_QUEUE sets another; 5s if
# the shipped haproxy.cfg has none, whose queue would time out with
# timeout connect, 1 s). The time of the run is the load's: the fleet
# counts from its first request.
#
#   saturated        the three busy workers serve 4 at a time
#   changing         4, then 2 from a third of the run, 6 from two thirds;
#                    *-maxconn sets each new value over the Runtime API
#                    (`set maxconn server workers/busyN K`) as it comes
#   hetero           capacities 2, 4 and 8
#
# After the usual tables, a capacity scenario prints per setup the limit
# each worker with a capacity had in HAProxy over time (`show stat` field
# slim, sampled every second) against its true capacity, a row whenever
# either or the status changes, and how often and how long the busy
# workers were drained (DRAIN or MAINT, polled every 100 ms): a busy
# worker drained is capacity thrown away. FLEET_LIMITS=1 prints the same
# for the classic and LLM scenarios.
#
#   FLEET_SCENARIO=saturated make bench-fleet        # five setups, a minute each
#   FLEET_SCENARIO=capacity make bench-fleet         # the three scenarios
#   FLEET_SCENARIO=changing FLEET_SECONDS=20 \
#     FLEET_SETUPS="breaker-defaults breaker-maxconn" make bench-fleet
#
# Every setup is the shipped haproxy.cfg with the fleet's server lines and
# `timeout server FLEET_TIMEOUT_SERVER`; the SPOE filter is taken out of
# those without the agent, the retry lines out of those without retry.
# Health checks (`check`, HAProxy's defaults) are what an operator without
# the agent relies on; the shipped configuration has none. The agent runs
# on its defaults and its Runtime API; in breaker and breaker-noretry of
# the classic and capacity scenarios, plus the three protections that are
# off by default and that the classic fleet calls for: `--failure-rate-threshold
# 20` (the flaky worker), `--wedged-after 5s` and `--stalled-after 300ms`
# (the hung worker: every answer here takes at most 60 ms, so 300 ms of
# silence with requests in flight is a hang), the latter with looks every
# 100 ms (`--poll-interval 100ms`): the rule judges at looks, and at the
# default 500 ms the second look comes as late as the 1 s timeout.
#
# Knobs: FLEET_SCENARIO (classic, llm, saturated, changing, hetero, or a
# list of them; both: classic and llm, the default; capacity: the last
# three; all), FLEET_RATE (300 requests/s; LLM: FLEET_LLM_RATE, 20),
# FLEET_SECONDS (60; LLM: FLEET_LLM_SECONDS, 90), FLEET_SEED (1),
# FLEET_AGENT_ARGS (the agent's options beyond the defaults: those above),
# FLEET_FLAKY (0.3), FLEET_TIMEOUT_SERVER (1s), FLEET_TIMEOUT_QUEUE (the
# shipped one),
# FLEET_SETUPS (classic: plain observe retry lua breaker-noretry breaker
# breaker-defaults; LLM: the same but breaker-defaults, which is its
# breaker; capacity scenarios: retry plain-maxconn breaker breaker-defaults
# breaker-maxconn), FLEET_LIMITS, FLEET_HAPROXY (haproxy: the system's 2.6;
# or a path, e.g. one tests/haproxy-versions.sh prints), FLEET_KEEP (keep
# the run's directory: configurations, logs, JSON). Everything listens on
# 127.0.0.1; only the processes started here are stopped, by PID.
set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)
BUILD=${BUILD:-build}
AGENT_BIN=$REPO/$BUILD/spoa-breaker
SEED=${FLEET_SEED:-1}
FLAKY=${FLEET_FLAKY:-0.3}
SCENARIO=${FLEET_SCENARIO:-both}
HAPROXY=${FLEET_HAPROXY:-haproxy}
# The protections off by default that the classic fleet calls for: a flaky
# worker (the failure rate), a wedged one, and a hung one (stalled, judged
# at looks every 100 ms).
TUNED_PROTECTIONS=${FLEET_AGENT_ARGS:-"--failure-rate-threshold 20 --wedged-after 5s --stalled-after 300ms --poll-interval 100ms"}
CLASSIC_WORKERS="busy1:busy:4 busy2:busy:4 busy3:busy:4 busy4:busy:4 busy5:busy:4 busy6:busy:4 crashed:crashed broken:broken hung:hung flaky:flaky:$FLAKY wedged:wedged"
LLM_WORKERS="llm1:llm503:16 llm2:llm429:16 llm3:llm503:16 llm4:llm429:16 llm5:llm503:16 llm6:llm429:16 broken:broken hung:stuck crashing:crashing:30"
# What one scenario runs: set by scenario().
WORKERS="" RATE="" SECS="" TIMEOUT_SERVER="" AGENT_PROTECTIONS="" SETUPS=""
LOAD_ARGS=() FLEET_ARGS=()
# The capacity scenarios (saturated, changing, hetero): every setup but
# breaker-noretry retries on capacity, a queue timeout is set if the
# shipped haproxy.cfg has none, and the fleet's clock is the load's.
CAPACITY=0 TIMEOUT_QUEUE=""
# The returning worker's capacity, and the hand-set maxconn the operator
# gives it (bench/fleet_workers.py --busy-k).
BUSY_K=4

# Hung requests and a fresh connection per request: room for descriptors.
ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true

RUN=$(mktemp -d /tmp/spoa-fleet.XXXXXX)
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	[ -n "${FLEET_KEEP:-}" ] && echo "bench-fleet: kept $RUN" >&2 && return
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_NAME=bench-fleet
# shellcheck source=bench/ports.bash
. bench/ports.bash # the repository root: cd above

spawn() { # NAME CMD...: in the background, logs to $RUN/NAME.log, sets SPAWNED
	local name=$1
	shift
	"$@" >"$RUN/$name.log" 2>&1 &
	SPAWNED=$!
	PIDS+=("$SPAWNED")
}

stop() { # PID
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	local keep=() pid
	for pid in "${PIDS[@]}"; do [ "$pid" != "$1" ] && keep+=("$pid"); done
	PIDS=("${keep[@]}")
}

admin() { # SOCKET COMMAND
	echo "$2" | socat -t 2 - "UNIX-CONNECT:$1" 2>/dev/null
}

# HAProxy's own PID: behind a wrapper (3.x through unshare) it is not ours,
# and the wrapper does not pass TERM on.
haproxy_pid() { # SOCKET
	admin "$1" "show info" | awk '/^Pid:/ {print $2}'
}

# The shipped haproxy.cfg, made into SETUP's: the fleet's servers, the
# scenario's timeout server, and for the setups without the agent or its
# retry on capacity those lines taken out.
render_config() { # SETUP SERVER_LINES_FILE
	local setup=$1 agent=0 retry=0 checks="" lua=0
	case $setup in
	plain | plain-maxconn) checks=" check" ;;
	observe) checks=" check observe layer7 on-error mark-down" ;;
	retry) retry=1 checks=" check" ;;
	lua) retry=1 checks=" check" lua=1 ;;
	breaker-noretry) agent=1 ;;
	breaker | breaker-defaults | breaker-maxconn) agent=1 retry=1 ;;
	*) echo "bench-fleet: unknown setup $setup" >&2; return 1 ;;
	esac
	# The capacity scenarios' busy workers carry the load through the
	# retry; breaker-noretry is there to show its absence.
	[ "$CAPACITY" = 1 ] && [ "$setup" != breaker-noretry ] && retry=1
	awk -v agent=$agent -v retry=$retry -v checks="$checks" -v ts="$TIMEOUT_SERVER" \
		-v servers="$2" -v lua=$lua -v lua_file="$REPO/bench/lua_breaker.lua" -v tq="$TIMEOUT_QUEUE" '
		/^global/ && lua && !lua_loaded { print; print "    lua-load " lua_file; lua_loaded = 1; next }
		/^[ \t]*timeout server  30s/ {
			print "    timeout server  " ts
			if (tq != "") print "    timeout queue   " tq
			next
		}
		/^[ \t]*timeout queue / && tq != "" { next }
		/^[ \t]*filter spoe / && lua { print "    http-response lua.breaker_observe"; next }
		/^[ \t]*filter spoe / && !agent { next }
		/^\.if version_atleast\(3\.0\.4\)/ && !retry { skip = 1; next }
		skip { if ($0 ~ /^\.endif/) skip = 0; next }
		/^[ \t]*option redispatch 1/ && !retry { next }
		/^[ \t]*retries 2/ && !retry { next }
		/^[ \t]*balance roundrobin/ && checks != "" { print; print "    option httpchk GET /health"; next }
		/^[ \t]*server w[0-9] / {
			if (!done) {
				while ((getline line < servers) > 0) print line checks
				done = 1
			}
			next
		}
		{ print }' haproxy/haproxy.cfg
}

run_setup() { # SETUP: one run; its JSON in $RUN/SETUP.json
	local setup=$1 dir=$RUN/$1 fe agent_port admin_port spec name kind arg port
	local fleet_pid hap_pid agent_pid="" own
	mkdir -p "$dir"
	cp -r haproxy/router-errors haproxy/router-errors.map haproxy/router-conditions.map \
		haproxy/breaker-owned.map haproxy/breaker-retry-at.map haproxy/breaker-watched.map \
		haproxy/spoe-breaker-steady.conf "$dir/"
	echo 1 >"$dir/server-state"
	fe=$(free_port) agent_port=$(free_port) admin_port=$(free_port)
	local fleet_args=() servers=$dir/servers load_args=("${LOAD_ARGS[@]}") limit change
	: >"$servers"
	for spec in $WORKERS; do
		IFS=: read -r name kind arg <<<"$spec"
		port=$(free_port)
		fleet_args+=(--worker "$name:$port:$kind${arg:+:$arg}")
		limit=""
		case $setup in *-maxconn)
			limit=$(hand_maxconn "$kind" "$arg")
			# The operator follows a change of capacity as it happens.
			[ "$kind" = busy ] && for change in $(changes_of "$arg"); do
				load_args+=(--at "${change#*@}:set maxconn server workers/$name ${change%@*}")
			done ;;
		esac
		echo "    server $name 127.0.0.1:$port weight 100${limit:+ maxconn $limit}" >>"$servers"
	done
	render_config "$setup" "$servers" >"$dir/haproxy.cfg" || return 1
	export BREAKER_FRONTEND=127.0.0.1:$fe BREAKER_AGENT=127.0.0.1:$agent_port
	# The shipped default: steady-state mode, the agent on the Runtime API.
	export BREAKER_SPOE_CONF=$dir/spoe-breaker-steady.conf BREAKER_ADMIN_SOCKET=$dir/admin.sock
	export BREAKER_STATE_FILE=$dir/server-state
	if ! $HAPROXY -c -q -f "$dir/haproxy.cfg" >"$dir/check.log" 2>&1; then
		echo "bench-fleet: HAProxy refuses the $setup configuration:" >&2
		cat "$dir/check.log" >&2
		return 1
	fi
	spawn "$setup-fleet" python3 bench/fleet_workers.py --seed "$SEED" "${FLEET_ARGS[@]}" \
		--busy-k "$BUSY_K" --stats "$dir/answers.json" "${fleet_args[@]}"
	fleet_pid=$SPAWNED
	[ "$CAPACITY" = 1 ] && load_args+=(--start-signal "$fleet_pid")
	BREAKER_LUA_DRAIN=1 spawn "$setup-haproxy" $HAPROXY -db -f "$dir/haproxy.cfg"
	hap_pid=$SPAWNED
	wait_port "$fe" || return 1
	if [ "${setup#breaker}" != "$setup" ]; then
		local protections=$AGENT_PROTECTIONS
		case $setup in breaker-defaults | breaker-maxconn) protections="" ;; esac
		# shellcheck disable=SC2086 # the options, one word each
		spawn "$setup-agent" "$AGENT_BIN" --listen "127.0.0.1:$agent_port" \
			--admin "127.0.0.1:$admin_port" --runtime-api "unix:$dir/admin.sock" \
			--state-file none $protections
		agent_pid=$SPAWNED
		wait_port "$agent_port" || return 1
		# The load starts once HAProxy's check sees the agent up.
		local i
		for i in $(seq 100); do
			admin "$dir/admin.sock" "show stat" |
				awk -F, '$1=="spoa-breaker" && $2=="agent" {print $18}' | grep -q '^UP' && break
			sleep 0.1
		done
	else
		sleep 2 # the first health checks
	fi
	python3 bench/fleet_load.py --target "127.0.0.1:$fe" --rate "$RATE" --seconds "$SECS" \
		--seed "$SEED" "${load_args[@]}" --stats-socket "$dir/admin.sock" >"$RUN/$setup.json" \
		2>"$RUN/$setup-load.err"
	[ -n "$agent_pid" ] && grep -E '^[^ ]+ \[[a-z]+\] breaker workers/[^:]+: [a-z_]+ -> open' \
		"$RUN/$setup-agent.log" | sed 's/^[^ ]* \[[a-z]*\] breaker workers\/\([^:]*\):.*/\1/' |
		sort | uniq -c | awk '{printf "%s%s:%s", (NR > 1 ? " " : ""), $2, $1}' >"$RUN/$setup.opened"
	own=$(haproxy_pid "$dir/admin.sock")
	[ -n "$agent_pid" ] && stop "$agent_pid"
	[ -n "$own" ] && [ "$own" != "$hap_pid" ] && kill "$own" 2>/dev/null
	stop "$hap_pid"
	stop "$fleet_pid" # writes answers.json on TERM
	[ -f "$dir/answers.json" ] && cp "$dir/answers.json" "$RUN/$setup.answers.json"
}

# The maxconn an operator who knows the worker sets on its server line: a
# busy worker's capacity at the start, a returning crashed one's; none for
# the others (what would it be?).
hand_maxconn() { # KIND ARG
	case $1 in
	busy) local k=${2%%[,:]*}; echo "${k:-$BUSY_K}" ;;
	crashed) [ -n "$2" ] && echo "$BUSY_K" ;;
	esac
	return 0
}

changes_of() { # ARG: a busy worker's changes of capacity, K@T each
	local schedule=${1%%:*}
	[ "${schedule#*,}" != "$schedule" ] && echo "${schedule#*,}" | tr , ' '
	return 0
}

# The scenario's fleet, load, timeouts, agent options and setups.
scenario() { # classic | llm | saturated | changing | hetero
	local ra=retry-after=1 half third two_thirds tail k
	RATE=${FLEET_RATE:-300} SECS=${FLEET_SECONDS:-60}
	TIMEOUT_SERVER=${FLEET_TIMEOUT_SERVER:-1s}
	AGENT_PROTECTIONS=$TUNED_PROTECTIONS
	LOAD_ARGS=(--timeout 30)
	FLEET_ARGS=(--service-ms 20:60)
	CAPACITY=0 TIMEOUT_QUEUE=${FLEET_TIMEOUT_QUEUE:-}
	case $1 in
	classic)
		WORKERS=$CLASSIC_WORKERS
		SETUPS=${FLEET_SETUPS:-"plain observe retry lua breaker-noretry breaker breaker-defaults"} ;;
	llm)
		WORKERS=$LLM_WORKERS
		RATE=${FLEET_LLM_RATE:-20} SECS=${FLEET_LLM_SECONDS:-90}
		TIMEOUT_SERVER=${FLEET_LLM_TIMEOUT_SERVER:-2m}
		local ts_s
		ts_s=$(awk -v t="$TIMEOUT_SERVER" 'BEGIN {v = t + 0; if (t ~ /m$/) v *= 60; if (t ~ /ms$/) v /= 60000; print int(v) + 10}')
		LOAD_ARGS=(--stream-share 0.5 --whole --timeout "$ts_s")
		FLEET_ARGS=()
		AGENT_PROTECTIONS=${FLEET_LLM_AGENT_ARGS:-}
		SETUPS=${FLEET_SETUPS:-"plain observe retry lua breaker-noretry breaker"} ;;
	saturated | changing | hetero)
		CAPACITY=1
		FLEET_ARGS+=(--start-on-signal)
		# A request beyond a maxconn waits in HAProxy's queue: for as long
		# as timeout connect (1 s) if nothing sets timeout queue.
		[ -z "$TIMEOUT_QUEUE" ] && ! grep -q '^[[:space:]]*timeout queue' haproxy/haproxy.cfg &&
			TIMEOUT_QUEUE=5s
		read -r half third two_thirds < <(awk -v s="$SECS" 'BEGIN {printf "%g %g %g\n", s / 2, s / 3, 2 * s / 3}')
		# The crashed worker comes back half-way (30 s of 60).
		tail="crashed:crashed:$half broken:broken hung:hung"
		case $1 in
		saturated) WORKERS="busy1:busy:4:$ra busy2:busy:4:$ra busy3:busy:4:$ra $tail" ;;
		changing)
			k="4,2@$third,6@$two_thirds"
			WORKERS="busy1:busy:$k:$ra busy2:busy:$k:$ra busy3:busy:$k:$ra $tail" ;;
		hetero) WORKERS="busy1:busy:2:$ra busy2:busy:4:$ra busy3:busy:8:$ra $tail" ;;
		esac
		SETUPS=${FLEET_SETUPS:-"retry plain-maxconn breaker breaker-defaults breaker-maxconn"} ;;
	esac
}

report() { # SETUPS...: the tables, from each setup's JSON
	python3 - "$RUN" "$@" <<'EOF'
import json, os, sys
run, setups = sys.argv[1], sys.argv[2:]
res = {}
for s in setups:
    try:
        with open(os.path.join(run, s + ".json")) as f:
            res[s] = json.load(f)
    except (OSError, ValueError):
        res[s] = None
def answers_of(setup):
    """What each worker of SETUP's fleet answered, or None."""
    try:
        with open(os.path.join(run, setup + ".answers.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


print("%-16s %9s %9s %8s %8s %8s" % ("setup", "requests", "success%", "p50 ms", "p99 ms", "max ms"))
for s in setups:
    r = res[s]
    if r is None:
        print("%-16s (no result: see above)" % s)
        continue
    print("%-16s %9d %9.2f %8s %8s %8s" % (s, r["requests"], r["success_pct"], r["p50_ms"], r["p99_ms"], r["max_ms"]))
print()
print("errors by class (who answered: worker = its own response passed on; router = HAProxy's own):")
for s in setups:
    r = res[s]
    if r:
        errs = ", ".join("%s %d" % kv for kv in r["errors"].items()) or "none"
        print("  %-16s %s" % (s, errs))
print()
print("errors in each tenth of the run:")
for s in setups:
    r = res[s]
    if r:
        print("  %-16s %s" % (s, " ".join("%5d" % n for n in r["errors_by_tenth"])))
print()
names = []
for s in setups:
    if res[s]:
        for n in res[s]["out_of_rotation_s"]:
            if n not in names:
                names.append(n)
print("seconds out of rotation (status not UP in show stat, polled every 100 ms):")
print("  %-16s" % "setup" + "".join("%9s" % n for n in names))
for s in setups:
    r = res[s]
    if r:
        print("  %-16s" % s + "".join("%9s" % r["out_of_rotation_s"].get(n, "-") for n in names))
print()
print("requests each worker received (health checks apart):")
print("  %-16s" % "setup" + "".join("%9s" % n for n in names))
for s in setups:
    a = answers_of(s)
    if a is None:
        continue
    got = {n: sum(v for k, v in w["answers"].items() if k != "health") for n, w in a.items()}
    # A crashed worker's count, if it came back (crashed:T).
    shown = lambda n: a.get(n, {}).get("kind") != "crashed" or "capacity" in a[n]
    print("  %-16s" % s + "".join("%9s" % (got.get(n, "-") if shown(n) else "-") for n in names))
print()
print("the hung worker: requests it received, and the second of the run it first left rotation:")
for s in setups:
    a = answers_of(s)
    if a is None:
        continue
    hung = a.get("hung", {}).get("answers", {}).get("hung", 0)
    r = res[s] or {}
    print("  %-16s %6d requests, out of rotation %s" % (s, hung, "at %ss" % r["first_out_s"]["hung"]
          if "hung" in r.get("first_out_s", {}) else "never"))
print()
print("workers that never fail, yet left rotation (a health check, a breaker, or a rest their own Retry-After asked for):")
for s in setups:
    a = answers_of(s)
    if a is None:
        continue
    healthy = [n for n, w in a.items() if w.get("kind") in ("busy", "llm503", "llm429")]
    r = res[s] or {}
    out = ["%s %ss" % (n, r["out_of_rotation_s"][n]) for n in healthy
           if r.get("out_of_rotation_s", {}).get(n, 0) > 0]
    opened = ""
    try:
        with open(os.path.join(run, s + ".opened")) as f:
            opened = f.read().strip()
    except OSError:
        pass
    print("  %-16s %s%s" % (s, ", ".join(out) or "none",
                              "; breakers opened: " + opened if opened else ""))
print()
print("busy workers drained (DRAIN or MAINT in show stat, polled every 100 ms: the agent's or a Lua breaker's doing):")
for s in setups:
    a, r = answers_of(s), res[s]
    if a is None or r is None or "drains" not in r:
        continue
    busy = [n for n, w in a.items() if w.get("kind") in ("busy", "llm503", "llm429")]
    times = sum(r["drains"].get(n, 0) for n in busy)
    secs = sum(r["drained_s"].get(n, 0) for n in busy)
    each = ", ".join("%s %d/%.1fs" % (n, r["drains"][n], r["drained_s"][n])
                     for n in busy if r["drains"].get(n))
    print("  %-16s %d times, %.1f s%s" % (s, times, secs, " (" + each + ")" if each else ""))


def truth_at(schedule, t):
    """The capacity a worker had T seconds into the run: 'down' while its
    port refused."""
    k = schedule[0][1]
    for at, step in schedule:
        if at <= t:
            k = step
    return str(k) if k else "down"


if os.environ.get("LIMITS") == "1":
    print()
    print("limits over time against the truth, for each worker with a capacity (show stat every second;"
          " a row when the truth, slim or the status changes, and the last; slim -: no maxconn):")
    for s in setups:
        a, r = answers_of(s), res[s]
        if a is None or r is None or "samples" not in r:
            continue
        print("  %s:" % s)
        for cmd in r.get("commands", []):
            print("    at %5.1fs the bench sent `%s`%s" % (cmd[0], cmd[1], ": " + cmd[2] if cmd[2] else ""))
        for n, w in a.items():
            if "capacity" not in w:
                continue
            samples = r["samples"].get(n, [])
            print("    %-10s %7s %6s %6s  %s" % (n, "t s", "true", "slim", "status"))
            last = None
            for i, (t, status, slim) in enumerate(samples):
                row = (truth_at(w["capacity"], t), slim or "-", status)
                if row != last or i == len(samples) - 1:
                    print("    %-10s %7.1f %6s %6s  %s" % ("", t, row[0], row[1], row[2]))
                last = row
            # The whole run in one line: how often the limit was the truth.
            sides = {"at": 0, "below": 0, "above": 0, "none": 0}
            for t, _, slim in samples:
                truth = truth_at(w["capacity"], t)
                if truth == "down":
                    continue
                side = ("none" if not slim or slim == "0" else "at" if int(slim) == int(truth)
                        else "below" if int(slim) < int(truth) else "above")
                sides[side] += 1
            alive = sum(sides.values())
            if alive:
                print("    %-10s slim at the truth %d%% of the seconds, below %d%%, above %d%%, none %d%%" % (
                    "", *(round(100.0 * sides[k] / alive) for k in ("at", "below", "above", "none"))))
            if w.get("kind") == "busy":
                print("    %-10s drained %d times, %.1f s" % ("", r["drains"].get(n, 0), r["drained_s"].get(n, 0)))
        busy = [n for n, w in a.items() if w.get("kind") == "busy"]
        print("    busy workers drained: %d times, %.1f seconds" % (
            sum(r["drains"].get(n, 0) for n in busy), sum(r["drained_s"].get(n, 0) for n in busy)))
late = max((r["late_ms"] for r in res.values() if r), default=0)
print()
print("(the load generator's worst lateness against its schedule: %.1f ms)" % late)
EOF
}

[ -x "$AGENT_BIN" ] || { echo "bench-fleet: $AGENT_BIN is missing: run make first" >&2; exit 1; }
version=$($HAPROXY -v 2>/dev/null | awk 'NR==1 {print $3}')
case $SCENARIO in
both) scenarios="classic llm" ;;
capacity) scenarios="saturated changing hetero" ;;
all) scenarios="classic llm saturated changing hetero" ;;
*) scenarios=$SCENARIO ;;
esac
for sc in $scenarios; do
	case $sc in
	classic | llm | saturated | changing | hetero) ;;
	*)
		echo "bench-fleet: FLEET_SCENARIO is classic, llm, saturated, changing, hetero (or a list of them), both, capacity or all, not $SCENARIO" >&2
		exit 2 ;;
	esac
done
for sc in $scenarios; do
	scenario "$sc"
	printf 'spoa-breaker fleet, %s scenario: HAProxy %s, %s requests/s for %ss (Poisson, seed %s), timeout server %s\n' \
		"$sc" "${version:-?}" "$RATE" "$SECS" "$SEED" "$TIMEOUT_SERVER"
	printf 'fleet: %s\n' "$WORKERS"
	printf 'agent options beyond the defaults: %s\n' "${AGENT_PROTECTIONS:-none}"
	case " $SETUPS " in *" breaker-defaults "* | *" breaker-maxconn "*)
		printf '(breaker-defaults and breaker-maxconn: none, the agent on its shipped defaults)\n' ;;
	esac
	if [ "$CAPACITY" = 1 ]; then
		queue="the shipped haproxy.cfg's $(grep -m1 -o 'timeout queue .*' haproxy/haproxy.cfg | tr -s ' ')"
		[ -n "$TIMEOUT_QUEUE" ] && queue="timeout queue $TIMEOUT_QUEUE"
		printf 'every setup but breaker-noretry retries on capacity; %s\n' "$queue"
		printf '*-maxconn: maxconn on the server lines of the busy workers and the returning one, their true capacity%s\n' \
			"$([ "$sc" = changing ] && echo ', set again over the Runtime API at each change')"
	fi
	printf '(load average %s; %d cores)\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
	for setup in $SETUPS; do
		run_setup "$setup" || echo "bench-fleet: the $setup setup did not run" >&2
	done
	LIMITS=${FLEET_LIMITS:-$CAPACITY} report $SETUPS
	printf '\n(load average %s after the runs)\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	mkdir -p "$RUN/$sc" && mv "$RUN"/*.json "$RUN"/*.opened "$RUN/$sc/" 2>/dev/null
	# Each setup's directory and logs too: the next scenario's would overwrite them.
	for setup in $SETUPS; do mv "$RUN/$setup" "$RUN/$setup"-* "$RUN/$sc/" 2>/dev/null; done
done
