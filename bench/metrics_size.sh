#!/bin/bash
# The size of /metrics beside HAProxy's own exporter (promex) for the same
# servers: one HAProxy with a backend of N servers (be_bench/s0 ..
# s<N-1>), its exporter scraped whole and with scope=server only; and the
# agent, which holds a breaker for each of those servers (one NOTIFY each,
# through spop_load), scraped under each metrics_names and metrics_detail.
# Prints bytes and series (sample lines) per scrape and per server.
#
#   bench/metrics_size.sh            N=10000, Debian's HAProxy
#   METRICS_SERVERS=N HAPROXY_BIN=... BUILD=... bench/metrics_size.sh
#
# Everything listens on 127.0.0.1 and is stopped by its PID at the end.
# Needs `make all bench-tools` (make bench-metrics builds them first).
set -u
cd "$(dirname "$0")/.."

N=${METRICS_SERVERS:-10000}
BUILD=${BUILD:-build}
HAPROXY_BIN=${HAPROXY_BIN:-$(command -v haproxy || echo /usr/sbin/haproxy)}
AGENT_BIN=$BUILD/spoa-breaker
LOAD_BIN=$BUILD/bench/spop_load
RUN=$(mktemp -d)
PIDS=()

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for bin in "$AGENT_BIN" "$LOAD_BIN" "$HAPROXY_BIN"; do
	[ -x "$bin" ] || { echo "metrics_size: no $bin (make all bench-tools)" >&2; exit 1; }
done

BENCH_NAME=metrics_size
# shellcheck source=bench/ports.bash
. bench/ports.bash # the repository root: cd above

# One scrape: "BYTES SERIES" (series: the lines that are not comments).
scrape() { # URL
	curl -s --max-time 60 "$1" | awk '{bytes += length($0) + 1} !/^#/ && NF {n++}
		END {printf "%d %d\n", bytes, n}'
}

row() { # WHAT BYTES SERIES
	awk -v w="$1" -v b="$2" -v s="$3" -v n="$N" 'BEGIN {
		printf "%-50s %12d %8.1f %10d %8.1f\n", w, b, b / n, s, s / n }'
}

# HAProxy: N servers that are never connected to (no check, no traffic:
# promex writes every server whatever its state).
promex_port=$(free_port)
{
	printf 'global\n    maxconn 1000\n\ndefaults\n    mode http\n    timeout connect 1s\n'
	printf '    timeout client 10s\n    timeout server 10s\n\n'
	printf 'frontend promex\n    bind 127.0.0.1:%s\n' "$promex_port"
	printf '    http-request use-service prometheus-exporter\n\nbackend be_bench\n'
	for ((i = 0; i < N; i++)); do printf '    server s%d 127.0.0.1:9\n' "$i"; done
} >"$RUN/haproxy.cfg"
"$HAPROXY_BIN" -db -f "$RUN/haproxy.cfg" >"$RUN/haproxy.log" 2>&1 &
PIDS+=("$!")
wait_port "$promex_port" || { cat "$RUN/haproxy.log" >&2; exit 1; }

printf '%s, %d servers, %s; load %s\n' "$("$HAPROXY_BIN" -v | head -n1 | cut -d' ' -f1-3)" "$N" \
	"$("$AGENT_BIN" --version 2>/dev/null | head -n1)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-50s %12s %8s %10s %8s\n' "scrape" bytes "/server" series "/server"
read -r b s <<<"$(scrape "http://127.0.0.1:$promex_port/metrics")"
row "HAProxy promex, every scope" "$b" "$s"
read -r b s <<<"$(scrape "http://127.0.0.1:$promex_port/metrics?scope=server")"
row "HAProxy promex, scope=server" "$b" "$s"

# The agent: a breaker for each server, then one scrape per naming and
# detail (reloaded with SIGHUP between them, the breakers kept).
for setup in "promex server" "legacy server" "both server" "promex backend"; do
	read -r names detail <<<"$setup"
	port=$(free_port) admin=$(free_port)
	"$AGENT_BIN" --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" --state-file none \
		--log-level warning --max-breakers $((N + 100)) --metrics-names "$names" \
		--metrics-detail "$detail" >"$RUN/agent.log" 2>&1 &
	pid=$!
	PIDS+=("$pid")
	wait_port "$port" && wait_port "$admin" || { cat "$RUN/agent.log" >&2; exit 1; }
	"$LOAD_BIN" -a "127.0.0.1:$port" -c 1 -w 64 -s "$N" -n "$N" -d 120 --backend be_bench >/dev/null
	read -r b s <<<"$(scrape "http://127.0.0.1:$admin/metrics")"
	row "spoa-breaker, metrics_names=$names, detail=$detail" "$b" "$s"
	kill "$pid"
	wait "$pid" 2>/dev/null
done
