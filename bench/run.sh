#!/bin/bash
# `make bench`: benchmarks of the agent on loopback, printed as tables.
# Figures only, never pass/fail: the machine is shared and noisy, so each
# table alternates its setups in rounds, prints medians, states the load
# average, and compares ratios taken within the same run.
#
#   1. the agent alone against ack_agent (the SPOE floor), same generator
#   2. ACK latency while /metrics and /state are scraped, 10k and 100k breakers
#   3. memory per tracked server and per SPOP connection
#   4. end to end: HAProxy alone, + SPOE to ack_agent, + SPOE to the agent
#      (every response, and steady-state mode: the shipped default), + a Lua
#      breaker, on every HAProxy tests/haproxy-versions.sh provides
#   5. reaction time: a tripping response to DRAIN in HAProxy (2.6)
#
# Knobs: BENCH_QUICK=1 (one short round each: a smoke run of a minute or
# two), BENCH_ROUNDS, BENCH_SECONDS, BENCH_TABLES (e.g. "1 3"),
# BENCH_HAPROXY=system (2.6 only). Every server listens on 127.0.0.1; only
# the processes started here are stopped, by PID; every load is bounded.
set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)
BUILD=${BUILD:-build}
AGENT_BIN=$REPO/$BUILD/spoa-breaker
LOAD_BIN=$REPO/$BUILD/bench/spop_load
ACK_BIN=$REPO/$BUILD/bench/ack_agent

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	ROUNDS=${BENCH_ROUNDS:-1} SECS=${BENCH_SECONDS:-1} E2E_ROUNDS=${BENCH_ROUNDS:-2}
	BIG=${BENCH_BIG:-20000} HAPROXY_CHOICE=${BENCH_HAPROXY:-system}
else
	ROUNDS=${BENCH_ROUNDS:-3} SECS=${BENCH_SECONDS:-3} E2E_ROUNDS=${BENCH_ROUNDS:-5}
	BIG=${BENCH_BIG:-100000} HAPROXY_CHOICE=${BENCH_HAPROXY:-all}
fi
[ "$E2E_ROUNDS" -lt "$ROUNDS" ] && E2E_ROUNDS=$ROUNDS
TABLES=${BENCH_TABLES:-"1 2 3 4 5"}

# Two cores at least: the agent on one, the load on the other.
if [ "$(nproc)" -ge 2 ]; then
	PIN_AGENT="taskset -c 0" PIN_LOAD="taskset -c 1"
else
	PIN_AGENT="" PIN_LOAD=""
fi

RUN=$(mktemp -d /tmp/spoa-bench.XXXXXX)
PIDS=()
cleanup() {
	local pid sock
	# HAProxy behind a wrapper first (see stop_haproxy), found by its socket.
	for sock in "$RUN"/haproxy-*.sock; do
		[ -S "$sock" ] || continue
		pid=$(echo "show info" | socat -t 2 - "UNIX-CONNECT:$sock" 2>/dev/null | awk '/^Pid:/ {print $2}')
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BENCH_NAME=bench
# shellcheck source=bench/ports.bash
. bench/ports.bash # the repository root: cd above

spawn() { # NAME CMD...: starts in the background, logs to $RUN/NAME.log, sets SPAWNED
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

# The agent, needing no HAProxy: no Runtime API (enforce none), no state
# file. ADMIN and the extra arguments vary.
start_agent() { # NAME PORT ADMIN_PORT ARGS...
	local name=$1 port=$2 admin=$3
	shift 3
	spawn "$name" $PIN_AGENT "$AGENT_BIN" --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" \
		--state-file none --log-level warning "$@"
	wait_port "$port"
}

kv() { # KEY LINE: the value of KEY=value in LINE
	printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n1
}

median() { # values on stdin, one a line
	sort -g | awk '{v[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) printf "%.1f\n", v[(NR+1)/2];
		else printf "%.1f\n", (v[NR/2]+v[NR/2+1])/2}'
}

ratio() { # A B: A/B with two decimals
	awk -v a="$1" -v b="$2" 'BEGIN {if (b+0 == 0) print "-"; else printf "%.2f\n", a/b}'
}

loadavg() {
	cut -d' ' -f1-3 /proc/loadavg
}

metric() { # ADMIN_PORT NAME: one unlabelled sample of /metrics
	curl -s --max-time 30 "http://127.0.0.1:$1/metrics" | awk -v n="spoa_breaker_$2" '$1==n {print $2}'
}

# The agent's loop turns so far: "all over-1ms over-5ms", from the head of
# /metrics only (the read stops there, so it adds no long scrape itself).
loop_turns() { # ADMIN_PORT
	curl -s --max-time 30 "http://127.0.0.1:$1/metrics" | awk '
		/^spoa_breaker_loop_iteration_seconds_bucket\{le="0.001"\}/ {ms1 = $2}
		/^spoa_breaker_loop_iteration_seconds_bucket\{le="0.005"\}/ {ms5 = $2}
		/^spoa_breaker_loop_iteration_seconds_count/ {print $2, $2 - ms1, $2 - ms5; exit}'
}

turns_delta() { # BEFORE AFTER: "over-1ms over-5ms" between two loop_turns
	echo "$1 $2" | awk '{print $5 - $2, $6 - $3}'
}

rss_kb() { # PID
	awk '/^VmRSS:/ {print $2}' "/proc/$1/status"
}

load() { # ARGS...: one spop_load run pinned to the load core, its line
	$PIN_LOAD "$LOAD_BIN" "$@" 2>>"$RUN/spop_load.err"
}

header() { # TITLE [WHERE]
	printf '\n== %s\n(load average %s; %d cores; %s)\n' "$1" "$(loadavg)" "$(nproc)" \
		"${2:-the agent on core 0, the load on core 1}"
}

# --- 1. the agent alone ------------------------------------------------------
table_agent_alone() {
	local bport aport bport_admin r agent port c w s line
	bport=$(free_port) aport=$(free_port) bport_admin=$(free_port)
	start_agent t1-agent "$bport" "$bport_admin" --max-breakers 20000 || return 1
	local breaker_pid=$SPAWNED
	spawn t1-ack $PIN_AGENT "$ACK_BIN" --listen "127.0.0.1:$aport"
	local ack_pid=$SPAWNED
	wait_port "$aport" || return 1
	mkdir -p "$RUN/t1"
	header "1. Agent alone: NOTIFY/s and ACK latency, spoa-breaker vs ack-only (${ROUNDS} rounds x ${SECS}s, medians)"
	for r in $(seq "$ROUNDS"); do
		for c in 1 4; do for w in 1 64; do for s in 10 10000; do
			for agent in breaker ack; do
				port=$bport
				[ $agent = ack ] && port=$aport
				line=$(load -a "127.0.0.1:$port" -c $c -w $w -s $s -d "$SECS")
				echo "$(kv notify_per_s "$line") $(kv p50_us "$line") $(kv p99_us "$line")" \
					>>"$RUN/t1/$agent-$c-$w-$s"
			done
		done; done; done
	done
	printf '%-5s %-6s %-7s | %12s %12s %6s | %16s %16s\n' conns window servers \
		"breaker/s" "ack-only/s" ratio "breaker p50/p99" "ack p50/p99 us"
	for c in 1 4; do for w in 1 64; do for s in 10 10000; do
		local b a bp50 bp99 ap50 ap99
		b=$(cut -d' ' -f1 "$RUN/t1/breaker-$c-$w-$s" | median)
		a=$(cut -d' ' -f1 "$RUN/t1/ack-$c-$w-$s" | median)
		bp50=$(cut -d' ' -f2 "$RUN/t1/breaker-$c-$w-$s" | median)
		bp99=$(cut -d' ' -f3 "$RUN/t1/breaker-$c-$w-$s" | median)
		ap50=$(cut -d' ' -f2 "$RUN/t1/ack-$c-$w-$s" | median)
		ap99=$(cut -d' ' -f3 "$RUN/t1/ack-$c-$w-$s" | median)
		printf '%-5s %-6s %-7s | %12.0f %12.0f %6s | %16s %16s\n' $c $w $s "$b" "$a" \
			"$(ratio "$b" "$a")" "$bp50/$bp99" "$ap50/$ap99"
	done; done; done
	echo "(ratio: spoa-breaker's NOTIFY/s over ack_agent's; latency: send->ACK in us)"
	echo "loop_iteration_max_seconds after the table: $(metric "$bport_admin" loop_iteration_max_seconds)"
	stop "$breaker_pid"
	stop "$ack_pid"
}

# --- 2. scrapes under load ---------------------------------------------------
scrape_loop() { # ADMIN_PORT SECONDS OUT: /metrics then /state, back to back
	local end=$((SECONDS + $2)) n=0
	while [ $SECONDS -lt "$end" ] && [ $n -lt 100000 ]; do
		$PIN_LOAD curl -s -o /dev/null --max-time 20 -w '%{time_total} %{size_download}\n' \
			"http://127.0.0.1:$1/metrics" >>"$3.metrics"
		$PIN_LOAD curl -s -o /dev/null --max-time 20 -w '%{time_total} %{size_download}\n' \
			"http://127.0.0.1:$1/state" >>"$3.state"
		n=$((n + 1))
	done
}

table_scrapes() {
	local port admin n r line dir=$RUN/t2
	port=$(free_port) admin=$(free_port)
	mkdir -p "$dir"
	start_agent t2-agent "$port" "$admin" --max-breakers $((BIG * 2)) || return 1
	local pid=$SPAWNED
	local rate=2000 secs=$((SECS + 2))
	header "2. ACK latency while /metrics and /state are scraped back to back (1 connection, window 4, ${rate} NOTIFY/s, ${ROUNDS} rounds x ${secs}s, medians; target: max < 5 ms)"
	printf '%-9s %-9s | %9s %9s %9s | %7s %12s %12s | %9s %9s\n' breakers scrapes "p50 us" "p99 us" \
		"max us" scrapes "/metrics ms" "/state ms" "turns>1ms" "turns>5ms"
	for n in 10000 "$BIG"; do
		# Populate: one NOTIFY for each of n servers (a success: nothing
		# trips, nothing is logged).
		load -a "127.0.0.1:$port" -c 1 -w 64 -s "$n" -n "$n" -d 120 >/dev/null
		local entries loop_before
		entries=$(metric "$admin" table_entries)
		loop_before=$(metric "$admin" loop_iteration_max_seconds)
		for r in $(seq "$ROUNDS"); do
			local t0 t1 t2
			t0=$(loop_turns "$admin")
			line=$(load -a "127.0.0.1:$port" -c 1 -w 4 -s "$n" -r $rate -d "$secs")
			t1=$(loop_turns "$admin")
			echo "$(kv p50_us "$line") $(kv p99_us "$line") $(kv max_us "$line") $(turns_delta "$t0" "$t1")" \
				>>"$dir/$n-quiet"
			scrape_loop "$admin" "$secs" "$dir/$n-scrape-$r" &
			local scraper=$!
			line=$(load -a "127.0.0.1:$port" -c 1 -w 4 -s "$n" -r $rate -d "$secs")
			wait "$scraper"
			t2=$(loop_turns "$admin")
			echo "$(kv p50_us "$line") $(kv p99_us "$line") $(kv max_us "$line") $(turns_delta "$t1" "$t2")" \
				>>"$dir/$n-scraped"
			cat "$dir/$n-scrape-$r.metrics" >>"$dir/$n-all.metrics"
			cat "$dir/$n-scrape-$r.state" >>"$dir/$n-all.state"
		done
		local mode
		for mode in quiet scraped; do
			local count="-" mt="-" st="-"
			if [ $mode = scraped ]; then
				count=$(($(wc -l <"$dir/$n-all.metrics") / ROUNDS))
				mt=$(awk '{print $1 * 1000}' "$dir/$n-all.metrics" | median)
				st=$(awk '{print $1 * 1000}' "$dir/$n-all.state" | median)
			fi
			printf '%-9s %-9s | %9s %9s %9s | %7s %12s %12s | %9s %9s\n' "$entries" \
				"$([ $mode = quiet ] && echo none || echo yes)" \
				"$(cut -d' ' -f1 "$dir/$n-$mode" | median)" \
				"$(cut -d' ' -f2 "$dir/$n-$mode" | median)" \
				"$(cut -d' ' -f3 "$dir/$n-$mode" | median)" "$count" "$mt" "$st" \
				"$(cut -d' ' -f4 "$dir/$n-$mode" | median)" \
				"$(cut -d' ' -f5 "$dir/$n-$mode" | median)"
		done
		local msize ssize
		msize=$(cut -d' ' -f2 "$dir/$n-all.metrics" | sort -g | tail -n1)
		ssize=$(cut -d' ' -f2 "$dir/$n-all.state" | sort -g | tail -n1)
		echo "  $entries breakers: /metrics $((msize / 1024)) KiB, /state $((ssize / 1024)) KiB;" \
			"loop_iteration_max_seconds: ${loop_before} after populating, $(metric "$admin" loop_iteration_max_seconds) after the scrapes"
	done
	echo "(ACK latency: spop_load's, which shares core 1 with curl; scrapes: per round; /metrics ms,"
	echo " /state ms: median time of one whole scrape, curl's; turns>1ms, turns>5ms: the agent's own"
	echo " loop_iteration_seconds, turns longer than that per round)"
	stop "$pid"
}

# --- 3. memory -----------------------------------------------------------------
table_memory() {
	local port admin conns=500
	port=$(free_port) admin=$(free_port)
	start_agent t3-agent "$port" "$admin" --max-breakers $((BIG * 2)) --max-connections 1000 || return 1
	local pid=$SPAWNED rss0 rss1 rss2
	header "3. Memory (VmRSS of the agent)"
	# One NOTIFY first, so what a first NOTIFY allocates once is not
	# counted per server.
	load -a "127.0.0.1:$port" -c 1 -w 1 -s 1 -n 1 >/dev/null
	rss0=$(rss_kb "$pid")
	load -a "127.0.0.1:$port" -c 1 -w 64 -s "$BIG" -n "$BIG" -d 120 >/dev/null
	rss1=$(rss_kb "$pid")
	# Idle connections after their HELLO, held while RSS is read.
	spawn t3-idle $PIN_LOAD "$LOAD_BIN" -a "127.0.0.1:$port" -c $conns --idle -d 30
	local idle=$SPAWNED i
	for i in $(seq 100); do
		grep -q ready "$RUN/t3-idle.log" && break
		sleep 0.1
	done
	sleep 0.3
	rss2=$(rss_kb "$pid")
	stop "$idle"
	printf '%-28s %10s %10s %10s %14s\n' what before after count "bytes each"
	printf '%-28s %8s kB %7s kB %10s %14s\n' "tracked server (breaker)" "$rss0" "$rss1" "$BIG" \
		"$(((rss1 - rss0) * 1024 / BIG))"
	printf '%-28s %8s kB %7s kB %10s %14s\n' "SPOP connection, idle" "$rss1" "$rss2" "$conns" \
		"$(((rss2 - rss1) * 1024 / conns))"
	stop "$pid"
}

# --- 4. end to end -------------------------------------------------------------
SETUPS="plain spoe-ack spoe-ack4 spoe-breaker spoe-steady spoe-steady-fail lua"

# Renders and starts one HAProxy for SETUP; sets SPAWNED and FE_PORT_<setup>.
start_haproxy() { # HAPROXY SETUP AGENT_PORT
	local bin=$1 setup=$2 agent_port=$3 fe resp fail cfg=$RUN/haproxy-$2.cfg keep
	fe=$(free_port) resp=$(free_port) fail=$(free_port)
	case $setup in
	plain) keep="" ;;
	spoe-steady) keep=steady ;;
	spoe-steady-fail) keep="steady fail" ;;
	spoe-*) keep=spoe ;;
	lua) keep=lua ;;
	esac
	local k keep_args=()
	for k in $keep; do keep_args+=(-e "s|^#$k||"); done
	sed -e "s|@RUN@|$RUN|g" -e "s|@REPO@|$REPO|g" -e "s|@SETUP@|$setup|g" \
		-e "s|@FE_PORT@|$fe|g" -e "s|@RESP_PORT@|$resp|g" -e "s|@AGENT_PORT@|$agent_port|g" \
		-e "s|@FAIL_PORT@|$fail|g" "${keep_args[@]}" bench/haproxy.cfg.in |
		grep -v '^#[a-z]' >"$cfg"
	cp haproxy/breaker-watched.map "$RUN/"
	if ! "$bin" -c -q -f "$cfg" >"$RUN/haproxy-$setup-check.log" 2>&1; then
		echo "bench: HAProxy refuses the $setup configuration:" >&2
		cat "$RUN/haproxy-$setup-check.log" >&2
		return 1
	fi
	spawn "haproxy-$setup" $PIN_AGENT "$bin" -db -f "$cfg"
	wait_port "$fe" || return 1
	eval "FE_PORT_${setup//-/_}=$fe"
}

# Stops one HAProxy: its own process first, as a wrapper (3.x through
# unshare) does not pass TERM on; then the PID started here.
stop_haproxy() { # SETUP SPAWNED_PID
	local own
	own=$(haproxy_pid "$1")
	[ -n "$own" ] && [ "$own" != "$2" ] && kill "$own" 2>/dev/null
	stop "$2"
}

haproxy_pid() { # SETUP: HAProxy's own PID (behind a wrapper, it is not ours)
	echo "show info" | socat -t 2 - "UNIX-CONNECT:$RUN/haproxy-$1.sock" 2>/dev/null |
		awk '/^Pid:/ {print $2}'
}

cpu_ticks() { # PID: user + system time in clock ticks
	awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0
}

agent_up_in() { # SETUP: HAProxy's health check sees the agent UP
	echo "show stat" | socat -t 2 - "UNIX-CONNECT:$RUN/haproxy-$1.sock" 2>/dev/null |
		awk -F, '$1=="spoa-breaker" && $2=="agent" {print $18}' | grep -q '^UP'
}

table_e2e_one() { # VERSION HAPROXY_BIN
	local version=$1 bin=$2 setup r i pids=() aport bport badmin line rps p99
	local dir=$RUN/t4-$version
	mkdir -p "$dir"
	local haproxies=()
	aport=$(free_port) bport=$(free_port) badmin=$(free_port)
	# The agents share the load core with wrk: HAProxy has core 0 to itself.
	spawn "t4-ack-$version" $PIN_LOAD "$ACK_BIN" --listen "127.0.0.1:$aport"
	pids+=("$SPAWNED")
	wait_port "$aport" || return 1
	# The same floor with four variables per ACK, as many as the agent
	# usually sets: the difference is what three set-vars cost HAProxy.
	local a4port
	a4port=$(free_port)
	spawn "t4-ack4-$version" $PIN_LOAD "$ACK_BIN" --listen "127.0.0.1:$a4port" --vars 4
	pids+=("$SPAWNED")
	wait_port "$a4port" || return 1
	PIN_AGENT="$PIN_LOAD" start_agent "t4-agent-$version" "$bport" "$badmin" || return 1
	pids+=("$SPAWNED")
	# Steady-state mode needs its agent on the Runtime API (it keeps the
	# watched map): an agent of its own, started once its HAProxy is up.
	local sport sadmin fport fadmin
	sport=$(free_port) sadmin=$(free_port) fport=$(free_port) fadmin=$(free_port)
	for setup in $SETUPS; do
		local agent_port=$aport
		[ "$setup" = spoe-breaker ] && agent_port=$bport
		[ "$setup" = spoe-steady ] && agent_port=$sport
		[ "$setup" = spoe-ack4 ] && agent_port=$a4port
		[ "$setup" = spoe-steady-fail ] && agent_port=$fport
		if ! start_haproxy "$bin" "$setup" "$agent_port"; then
			for i in "${haproxies[@]}"; do stop_haproxy ${i/:/ }; done
			for i in "${pids[@]}"; do stop "$i"; done
			return 1
		fi
		haproxies+=("$setup:$SPAWNED")
		if [ "$setup" = spoe-steady ]; then
			PIN_AGENT="$PIN_LOAD" start_agent "t4-steady-$version" "$sport" "$sadmin" \
				--runtime-api "unix:$RUN/haproxy-spoe-steady.sock" || return 1
			pids+=("$SPAWNED")
		fi
		if [ "$setup" = spoe-steady-fail ]; then
			PIN_AGENT="$PIN_LOAD" start_agent "t4-steady-fail-$version" "$fport" "$fadmin" \
				--runtime-api "unix:$RUN/haproxy-spoe-steady-fail.sock" || return 1
			pids+=("$SPAWNED")
		fi
	done
	for setup in spoe-ack spoe-ack4 spoe-breaker spoe-steady spoe-steady-fail; do
		for i in $(seq 50); do agent_up_in "$setup" && break; sleep 0.2; done
		agent_up_in "$setup" || echo "bench: HAProxy $version never saw its agent UP ($setup)" >&2
	done
	# Warm-up, not counted: the first connections, Lua's first calls.
	for setup in $SETUPS; do
		local warm="FE_PORT_${setup//-/_}"
		$PIN_LOAD wrk -t1 -c20 -d1s "http://127.0.0.1:${!warm}/" >/dev/null 2>&1
	done
	local notify_before steady_before
	notify_before=$(curl -s "http://127.0.0.1:$badmin/metrics" | awk '$1=="spoa_breaker_spop_frames_total{type=\"notify\"}" {print $2}')
	steady_before=$(curl -s "http://127.0.0.1:$sadmin/metrics" | awk '$1=="spoa_breaker_spop_frames_total{type=\"notify\"}" {print $2}')
	local fail_before fail_after fail_requests
	fail_before=$(curl -s "http://127.0.0.1:$fadmin/metrics" | awk '$1=="spoa_breaker_spop_frames_total{type=\"notify\"}" {print $2}')
	header "4. End to end, HAProxy $version (nbthread 1): wrk -t1 -c20, ${E2E_ROUNDS} rounds x ${SECS}s alternating, medians" \
		"HAProxy on core 0; wrk and the agents on core 1"
	for r in $(seq "$E2E_ROUNDS"); do
		for setup in $SETUPS; do
			local var="FE_PORT_${setup//-/_}" hpid t0 t1 w0 w1
			hpid=$(haproxy_pid "$setup")
			t0=$(cpu_ticks "$hpid") w0=$(date +%s%N)
			line=$($PIN_LOAD wrk -t1 -c20 -d"${SECS}s" --latency "http://127.0.0.1:${!var}/" 2>&1)
			t1=$(cpu_ticks "$hpid") w1=$(date +%s%N)
			rps=$(printf '%s\n' "$line" | awk '/^Requests\/sec:/ {print $2}')
			# wrk picks the unit (us, ms, s): in ms here, to compare.
			p99=$(printf '%s\n' "$line" | awk '$1=="99%" {v=$2+0; if ($2 ~ /us$/) v/=1000;
				else if ($2 ~ /[0-9]s$/) v*=1000; else if ($2 ~ /m$/) v*=60000; printf "%.2f", v}')
			local total errs
			errs=$(printf '%s\n' "$line" | awk '/Non-2xx|Socket errors/' | tr '\n' ' ')
			total=$(printf '%s\n' "$line" | awk '/requests in/ {print $1}')
			# HAProxy's CPU: busy share of its core, and CPU time per request.
			local busy per_req
			busy=$(awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v w=$((w1 - w0)) \
				'BEGIN {printf "%.0f", 100 * t / hz / (w / 1e9)}')
			per_req=$(awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="${total:-0}" \
				'BEGIN {if (n > 0) printf "%.2f", 1e6 * t / hz / n; else print 0}')
			echo "${rps:-0} $p99 $busy $per_req" >>"$dir/$setup"
			[ "$setup" = spoe-breaker ] && echo "${total:-0}" >>"$dir/breaker-requests"
			[ "$setup" = spoe-steady ] && echo "${total:-0}" >>"$dir/steady-requests"
			[ "$setup" = spoe-steady-fail ] && echo "${total:-0}" >>"$dir/steady-fail-requests"
			[ -n "$errs" ] && echo "  round $r $setup: $errs" >>"$dir/errors"
		done
	done
	printf '%-17s %10s %8s %10s %10s %12s %8s\n' setup "req/s" ratio "p99 ms" "HAProxy %" \
		"CPU us/req" ratio
	local plain plain_cpu
	plain=$(cut -d' ' -f1 "$dir/plain" | median)
	plain_cpu=$(cut -d' ' -f4 "$dir/plain" | median)
	for setup in $SETUPS; do
		local m cpu
		m=$(cut -d' ' -f1 "$dir/$setup" | median)
		cpu=$(cut -d' ' -f4 "$dir/$setup" | median)
		printf '%-17s %10.0f %8s %10s %10s %12s %8s\n' "$setup" "$m" "$(ratio "$m" "$plain")" \
			"$(cut -d' ' -f2 "$dir/$setup" | median)" \
			"$(cut -d' ' -f3 "$dir/$setup" | median)" "$cpu" "$(ratio "$cpu" "$plain_cpu")"
	done
	local notify_after requests steady_after steady_requests
	notify_after=$(curl -s "http://127.0.0.1:$badmin/metrics" | awk '$1=="spoa_breaker_spop_frames_total{type=\"notify\"}" {print $2}')
	steady_after=$(curl -s "http://127.0.0.1:$sadmin/metrics" | awk '$1=="spoa_breaker_spop_frames_total{type=\"notify\"}" {print $2}')
	requests=$(awk '{s += $1} END {print s}' "$dir/breaker-requests")
	steady_requests=$(awk '{s += $1} END {print s}' "$dir/steady-requests")
	fail_after=$(curl -s "http://127.0.0.1:$fadmin/metrics" | awk '$1=="spoa_breaker_spop_frames_total{type=\"notify\"}" {print $2}')
	fail_requests=$(awk '{s += $1} END {print s}' "$dir/steady-fail-requests")
	echo "(ratios: to plain HAProxy; p99: wrk's, median of the rounds; HAProxy %: its busy share of core 0;"
	echo " CPU us/req: HAProxy's CPU time per request, what SPOE or Lua adds to HAProxy itself;"
	echo " spoa-breaker saw $((${notify_after:-0} - ${notify_before:-0})) NOTIFYs for $requests requests;"
	echo " in steady-state mode (spoe-breaker-steady.conf, every worker healthy)" \
		"$((${steady_after:-0} - ${steady_before:-0})) for $steady_requests;"
	echo " with a fourth worker failing every request (drained by its agent after the warm-up)" \
		"$((${fail_after:-0} - ${fail_before:-0})) for $fail_requests;"
	echo " spoe-ack4: the ack-only agent setting 4 variables per ACK instead of 1;"
	echo " spoe-steady is the shipped default (spoe-breaker-steady.conf), spoe-breaker every response (spoe-breaker.conf))"
	[ -f "$dir/errors" ] && cat "$dir/errors"
	for i in "${haproxies[@]}"; do stop_haproxy ${i/:/ }; done
	for i in "${pids[@]}"; do stop "$i"; done
}

table_e2e() {
	local versions
	if [ "$HAPROXY_CHOICE" = system ]; then
		versions="$(haproxy -v | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p') $(command -v haproxy)"
	else
		versions=$(tests/haproxy-versions.sh 2>"$RUN/haproxy-versions.err")
		sed 's/^/bench: /' "$RUN/haproxy-versions.err" >&2
	fi
	while read -r version bin; do
		[ -n "$bin" ] && table_e2e_one "$version" "$bin"
	done <<<"$versions"
}

# --- 5. reaction time ---------------------------------------------------------
table_reaction() {
	local fe resp aport admin cfg=$RUN/haproxy-reaction.cfg trips=30 line
	[ "${BENCH_QUICK:-0}" = 1 ] && trips=5
	fe=$(free_port) resp=$(free_port) aport=$(free_port) admin=$(free_port)
	sed -e "s|@RUN@|$RUN|g" -e "s|@REPO@|$REPO|g" -e "s|@FE_PORT@|$fe|g" \
		-e "s|@RESP_PORT@|$resp|g" -e "s|@AGENT_PORT@|$aport|g" bench/haproxy-reaction.cfg.in >"$cfg"
	# A fleet beside the three workers (in maintenance, never connected
	# to): every look streams a `show stat` of that size, and a trip's
	# drain must not wait for it.
	local fleet=${BENCH_REACTION_SERVERS:-10000}
	[ "${BENCH_QUICK:-0}" = 1 ] && fleet=${BENCH_REACTION_SERVERS:-1000}
	{
		printf 'backend fleet\n'
		seq "$fleet" | awk '{printf "    server s%d 127.0.0.1:9 disabled\n", $1}'
	} >>"$cfg"
	spawn haproxy-reaction $PIN_AGENT haproxy -db -f "$cfg"
	local hpid=$SPAWNED
	wait_port "$fe" || return 1
	start_agent t5-agent "$aport" "$admin" --runtime-api "unix:$RUN/haproxy-reaction.sock" \
		--threshold 3 --cooldown 300ms --max-cooldown 300ms --max-breakers $((fleet + 100)) || return 1
	local apid=$SPAWNED i
	for i in $(seq 50); do agent_up_in reaction && break; sleep 0.2; done
	# The agent's first look at HAProxy (every poll_interval) before a trip.
	sleep 1
	header "5. Reaction: from the tripping response to DRAIN in 'show servers state' (HAProxy $(haproxy -v | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p'), $trips trips, $((fleet + 3)) servers in HAProxy)" \
		"HAProxy and the agent on core 0, the client on core 1; threshold 3, cool-down 300 ms (no backoff: max_cooldown 300 ms)"
	line=$($PIN_LOAD python3 bench/reaction.py --frontend "$fe" --socket "$RUN/haproxy-reaction.sock" \
		--admin "$admin" --trips $trips --cooldown-ms 300 2>&1 | tail -n1)
	printf '%-7s %-7s %9s %9s %9s\n' trips missed "p50 ms" "p99 ms" "max ms"
	printf '%-7s %-7s %9s %9s %9s\n' "$(kv trips "$line")" "$(kv missed "$line")" \
		"$(kv p50_ms "$line")" "$(kv p99_ms "$line")" "$(kv max_ms "$line")"
	echo "(polled over the stats socket every 0.5 ms, so about 1 ms of each figure is the polling)"
	stop "$apid"
	stop "$hpid"
}

echo "spoa-breaker benchmarks: $(date -u +%H:%M) UTC start, load average $(loadavg), $(nproc) cores," \
	"rounds $ROUNDS (end to end $E2E_ROUNDS), ${SECS}s each"
for t in $TABLES; do
	case $t in
	1) table_agent_alone ;;
	2) table_scrapes ;;
	3) table_memory ;;
	4) table_e2e ;;
	5) table_reaction ;;
	esac
done
if [ -s "$RUN/spop_load.err" ]; then
	echo
	echo "spop_load reported:"
	sort "$RUN/spop_load.err" | uniq -c | head -n 20
fi
echo
echo "done, load average $(loadavg)"
