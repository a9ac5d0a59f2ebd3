#!/bin/bash
# Every test, one command: unit tests (cmocka), a short fuzz run, and the
# end-to-end suites (bats) against each HAProxy that tests/haproxy-versions.sh
# provides (2.6 always; 3.0 and 3.2 when they can be fetched). Ends with the
# line "N passed, N failed" and exits non-zero if anything failed.
#
# HAPROXY_VERSIONS=system limits the end-to-end runs to the system HAProxy.
set -u
cd "$(dirname "$0")/.."

# Debian's interpreters and tools first (make deps installs them), before
# any per-user shim on PATH: a version manager's python3 shim runs a shell
# pipeline per call, seconds each on a loaded machine, and the tests call
# python3 in their polling loops (/usr/bin/python3 -c pass: 0.5 s against
# 4.2 s through the shim, with the three lanes running).
export PATH="/usr/bin:/bin:/usr/sbin:/sbin:$PATH"

BUILD=${BUILD:-build}
RESULTS=$(mktemp)
export RESULTS
trap 'rm -f "$RESULTS"' EXIT

section() { printf '\n=== %s\n' "$*"; }

section "build"
make --no-print-directory BUILD="$BUILD" all || { echo "0 passed, 1 failed"; exit 1; }

section "unit tests"
make --no-print-directory BUILD="$BUILD" unit

section "layers: the pure core does no I/O"
if make --no-print-directory BUILD="$BUILD" check-layers; then
	echo "check-layers 1 0" >>"$RESULTS"
else
	echo "check-layers 0 1" >>"$RESULTS"
fi

section "docs: README the front door, links that hold, no outside citations"
if tests/check-docs.sh && tests/check-docs.sh --self-test; then
	echo "check-docs 1 0" >>"$RESULTS"
else
	echo "check-docs 0 1" >>"$RESULTS"
fi

section "alerts: promtool checks and tests the rules; rules and dashboard name only exported metrics"
if SPOA_BIN=$PWD/$BUILD/spoa-breaker tests/check-alerts.sh && tests/check-alerts.sh --self-test; then
	echo "check-alerts 1 0" >>"$RESULTS"
else
	echo "check-alerts 0 1" >>"$RESULTS"
fi

# Counts TAP lines -- "ok N ...", "ok N ... # skip", "not ok N ..." -- into
# "LABEL passed failed skipped" in $RESULTS. A suite that died before
# reporting anything, or exited non-zero with nothing failed, is a failure;
# one that exited 77 could not run on this machine at all: skipped.
count_tap() { # LABEL TAPFILE EXIT_STATUS
	local passed failed skipped
	passed=$(grep -E '^ok ' "$2" | grep -vc '# skip')
	skipped=$(grep -E '^ok ' "$2" | grep -c '# skip')
	failed=$(grep -c '^not ok ' "$2")
	if [ "$3" -eq 77 ] && [ "$failed" -eq 0 ]; then
		skipped=$((skipped + 1))
	elif [ "$((passed + failed + skipped))" -eq 0 ] || { [ "$3" -ne 0 ] && [ "$failed" -eq 0 ]; }; then
		failed=$((failed + 1))
	fi
	echo "$1 $passed $failed $skipped" >>"$RESULTS"
}

run_bats() { # LABEL HAPROXY_BIN [DIR|FILE...]
	local label=$1 bin=$2 tap status
	shift 2
	[ $# -gt 0 ] || set -- tests/e2e
	tap=$(mktemp)
	HAPROXY_BIN=$bin SPOA_BIN=$PWD/${BUILD}/spoa-breaker \
		bats --tap --timing --print-output-on-failure "$@" | tee "$tap"
	status=${PIPESTATUS[0]}
	count_tap "$label" "$tap" "$status"
	rm -f "$tap"
}

# A suite of tests/packaging/, which prints TAP lines itself.
run_suite() { # LABEL SCRIPT
	local tap status start=$SECONDS
	tap=$(mktemp)
	BUILD=$BUILD "$2" | tee "$tap"
	status=${PIPESTATUS[0]}
	count_tap "$1" "$tap" "$status"
	echo "($1: $((SECONDS - start)) s)"
	rm -f "$tap"
}

# The simulation (tests/sim/, docs/testing.md): each planted misbehaviour
# caught by its invariant, the cases kept replayed (tests/sim/cases/ pass,
# tests/sim/known/ still break what they say), then SIM_CHECK_SCHEDULES
# schedules from SIM_CHECK_SEED, the same ones every run. One core, no
# sockets, no waiting: run here, before the lanes that measure time.
sim_check() {
	local tap status
	tap=$(mktemp)
	(
		status=0
		"$BUILD/sim" --self-test || status=1
		"$BUILD/sim" --cases tests/sim/cases || status=1
		"$BUILD/sim" --cases tests/sim/known || status=1
		SIM_SEED="${SIM_CHECK_SEED:-1}" SIM_SCHEDULES="${SIM_CHECK_SCHEDULES:-150}" \
			SIM_SECONDS=0 SIM_LENGTH=300 "$BUILD/sim" || status=1
		exit "$status"
	) | tee "$tap"
	status=${PIPESTATUS[0]}
	count_tap sim "$tap" "$status"
	rm -f "$tap"
}
section "simulation: the real core and link against a simulated HAProxy and fleet"
if make --no-print-directory BUILD="$BUILD" "$BUILD/sim" >/dev/null; then
	sim_check
else
	echo "sim 0 1" >>"$RESULTS"
fi

# What ships: make demo on a bare Debian 12, the manual page, make
# install, the systemd unit, the Debian package, the container image and
# the compose example. None needs what the end-to-end suites use (the
# fresh machine's demo binds fixed ports, theirs are ephemeral), so they
# run meanwhile, in the background at the lowest CPU priority (the
# end-to-end tests measure time), their output shown after.
packaging_suites() {
	section "a fresh Debian 12 machine: make demo works on its first run"
	run_suite fresh tests/packaging/fresh.sh
	section "manual page: built, and agrees with --help"
	run_suite manpage tests/packaging/manpage.sh
	section "make install and uninstall, into a temporary prefix"
	run_suite install tests/packaging/install.sh
	section "systemd unit: verify, security exposure"
	run_suite systemd-unit tests/packaging/systemd.sh
	section "Debian package: build, lintian, install, check, purge"
	run_suite deb tests/packaging/deb.sh
	# The container suites share one podman directory: the agent's image
	# is built once.
	SPOA_PODMAN_DIR=$(mktemp -d /var/tmp/spoa-breaker-podman.XXXXXX)
	export SPOA_PODMAN_DIR
	section "container image: podman build, run against HAProxy"
	run_suite image tests/packaging/image.sh
	section "compose example: checked against haproxy.cfg, run"
	run_suite compose tests/packaging/compose.sh
	section "Kubernetes manifests: yamllint, the sidecar pod played with podman kube play"
	run_suite kube tests/packaging/kube.sh
	(. tests/packaging/podman.sh && podman_remove_dir "$SPOA_PODMAN_DIR")
}
PACKAGING_LOG=$(mktemp)
trap 'rm -f "$RESULTS" "$PACKAGING_LOG"' EXIT
(
	renice -n 19 -p "$BASHPID" >/dev/null
	ionice -c 2 -n 7 -p "$BASHPID" 2>/dev/null
	start=$SECONDS
	packaging_suites
	echo "(packaging suites: $((SECONDS - start)) s)"
) >"$PACKAGING_LOG" 2>&1 &
packaging_pid=$!

if [ "${HAPROXY_VERSIONS:-all}" = system ]; then
	versions="$(haproxy -v | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p') $(command -v haproxy)"
else
	versions=$(tests/haproxy-versions.sh)
fi
# The end-to-end runs -- each HAProxy version's suite in E2E_PARTS parts,
# the hostile suite, the sanitizer build's run and the fuzz smoke run --
# are independent: every test picks its own ports (free_port) and files
# (its own RUN_DIR), and the one test that binds the agent's default port
# takes a lock. They run E2E_LANES at a time, the longest first; each
# one's output is shown whole when all are done, in the order below.
# Three lanes on two cores: the tests mostly wait (on HAProxy's checks,
# the agent's looks, cooldowns), the machine is idle more than half of
# the time with two. Parts of a version's suite keep the jobs small, so
# the lanes end together.
E2E_LANES=${E2E_LANES:-3}
E2E_PARTS=${E2E_PARTS:-3}
E2E_LOGS=$(mktemp -d)
trap 'rm -rf "$RESULTS" "$PACKAGING_LOG" "$E2E_LOGS"' EXIT
e2e_jobs=()

# The same unit and end-to-end tests on an ASan+UBSan build of the agent:
# memory errors, leaks and undefined behaviour fail the tests that hit them.
# Built here, before the lanes; its end-to-end parts and its soak are jobs.
SAN_MAKE="make --no-print-directory BUILD=build-asan CC=clang LDFLAGS=-fsanitize=address,undefined"
SAN_FLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
sanitizer_built=0
if [ "${SANITIZE:-1}" = 1 ]; then
	section "sanitizer build (ASan+UBSan), unit tests"
	if $SAN_MAKE -j2 CFLAGS="$SAN_FLAGS" all >/dev/null; then
		sanitizer_built=1
		UNIT_LABEL=asan- $SAN_MAKE CFLAGS="$SAN_FLAGS" unit >/dev/null 2>&1
	else
		echo "asan-build 0 1" >>"$RESULTS"
	fi
fi
sanitizer_e2e_run() { # FILE...
	section "sanitizer build, end-to-end, HAProxy $(haproxy -v | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p'): $*"
	BUILD=build-asan run_bats "$E2E_JOB" "$(command -v haproxy)" "$@"
}
sanitizer_soak_run() {
	# Two minutes of the soak (tests/soak/, docs/soak.md) on the
	# sanitizer build, a fixed seed: a broken invariant fails it.
	section "sanitizer build, a short soak under faults"
	if SOAK_BUILD=build-asan SOAK_SECONDS="${SOAK_CHECK_SECONDS:-120}" \
		SOAK_SEED="${SOAK_CHECK_SEED:-28}" SOAK_MIX="${SOAK_CHECK_MIX:-}" tests/soak/soak.sh; then
		echo "soak-asan 1 0" >>"$RESULTS"
	else
		echo "soak-asan 0 1" >>"$RESULTS"
	fi
	# Every case the soak found, replayed from its schedule as a
	# regular test (tests/soak/schedules/, docs/soak.md).
	local schedule name
	for schedule in tests/soak/schedules/*.json; do
		name=$(basename "$schedule" .json)
		section "sanitizer build, the soak's case $name"
		if SOAK_BUILD=build-asan SOAK_SCHEDULE="$schedule" SOAK_SECONDS=30 \
			tests/soak/soak.sh; then
			echo "soak-$name 1 0" >>"$RESULTS"
		else
			echo "soak-$name 0 1" >>"$RESULTS"
		fi
	done
}

# The suite's files dealt into E2E_PARTS parts of about as many tests
# each, the largest file first onto the part with the fewest so far; one
# line of file names a part.
e2e_parts() {
	local f
	for f in tests/e2e/*.bats; do
		[[ " $E2E_ON_EVERY_VERSION " == *" $f "* ]] && continue
		echo "$(grep -c '^@test' "$f") $f"
	done | sort -k1,1nr | awk -v parts="$E2E_PARTS" '
		{ best = 0
		  for (i = 1; i < parts; i++) if (n[i] < n[best]) best = i
		  n[best] += $1; files[best] = files[best] " " $2 }
		END { for (i = 0; i < parts; i++) if (files[i] != "") print substr(files[i], 2) }'
}
# Which versions run which parts. The newest HAProxy runs every part,
# and so does the sanitizer build, on the system HAProxy (2.6): every
# test runs on the newest version and on the oldest, on both SPOE
# engines (an applet up to 3.0, a mux from 3.1) and both ends of what the
# Runtime API prints. The versions between take one part each, newest
# first, and parts left over run on none of them; the system version's
# optimised build is one of those only without the sanitizer build
# (then the parts go round, so that every test runs on a third version).
# E2E_EVERY_VERSION=1 runs every part on every version (about twice the
# time: for a release).
E2E_EVERY_VERSION=${E2E_EVERY_VERSION:-0}
short_jobs=()
# The scenes where the features meet (the ejection cap and controller
# slots, half-open and the last server, late 503 probes, the stall rule,
# reloads that would widen who may connect) and the hung worker among
# closed-loop clients: on every version, a job of their own, out of the
# parts.
E2E_ON_EVERY_VERSION="tests/e2e/edges.bats tests/e2e/reload_exposure.bats tests/e2e/hung_closed_loop.bats"
mapfile -t parts_files <<<"$(e2e_parts)"
mapfile -t version_lines <<<"$(sort -k1,1Vr <<<"$versions" | sed '/^$/d')"
part_count=${#parts_files[@]}
others=$((${#version_lines[@]} - 1))
# Does version i (0: the newest) run part (from 1)?
runs_part() { # I PART
	[ "$1" -eq 0 ] || [ "$E2E_EVERY_VERSION" = 1 ] && return 0
	if [ "$sanitizer_built" = 1 ]; then
		[ "$1" -lt "$others" ] && [ "$(($2 - 1))" -eq "$(($1 - 1))" ]
	else
		[ "$((($2 - 1) % others))" -eq "$(($1 - 1))" ]
	fi
}
for i in "${!version_lines[@]}"; do
	read -r version bin <<<"${version_lines[$i]}"
	for part in $(seq "$part_count"); do
		if runs_part "$i" "$part"; then
			e2e_jobs+=("e2e-$version-part$part e2e_run $version $bin ${parts_files[$((part - 1))]}")
		fi
	done
	short_jobs+=("e2e-$version-edges e2e_run $version $bin $E2E_ON_EVERY_VERSION")
done
if [ "$sanitizer_built" = 1 ]; then
	for part in $(seq "$part_count"); do
		e2e_jobs+=("e2e-asan-part$part sanitizer_e2e_run ${parts_files[$((part - 1))]}")
	done
	short_jobs+=("e2e-asan-edges sanitizer_e2e_run $E2E_ON_EVERY_VERSION")
	short_jobs+=("soak-asan sanitizer_soak_run")
fi
# The short jobs last: they fill the lanes' ends.
e2e_jobs+=("${short_jobs[@]}")
# The agent under attack (tests/hostile/): no HAProxy version matters
# there, so once, with the system one.
e2e_jobs+=("hostile hostile_run")
# Five targets, FUZZ_SECONDS each: about a minute in all, on one core.
e2e_jobs+=("fuzz fuzz_run")

e2e_run() { # VERSION BIN FILE...
	local version=$1 bin=$2
	shift 2
	section "end-to-end, HAProxy $version: $*"
	run_bats "$E2E_JOB" "$bin" "$@"
}
hostile_run() {
	section "hostile conditions"
	run_bats hostile "$(command -v haproxy)" tests/hostile
}
fuzz_run() {
	section "fuzz smoke run"
	if make --no-print-directory BUILD="$BUILD" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-12}"; then
		echo "fuzz 1 0" >>"$RESULTS"
	else
		echo "fuzz 0 1" >>"$RESULTS"
	fi
}

lane_pids=()
# Each run picks its ports in a range of its own (free_port): the ports
# from 14000 to 32000 shared out, below the kernel's ephemeral ports
# (32768 up), above the fixed ones the demo and the agent's defaults use.
port_base=14000
port_span=$(((32000 - port_base) / ${#e2e_jobs[@]}))
for job in "${e2e_jobs[@]}"; do
	read -r name cmd <<<"$job"
	export E2E_PORT_BASE=$port_base E2E_PORT_SPAN=$port_span E2E_JOB=$name
	port_base=$((port_base + port_span))
	while [ "${#lane_pids[@]}" -ge "$E2E_LANES" ]; do
		wait -n "${lane_pids[@]}"
		alive=()
		for pid in "${lane_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
		lane_pids=("${alive[@]}")
	done
	echo "(started: $name)"
	(
		start=$SECONDS
		# shellcheck disable=SC2086 # cmd is a function and its arguments
		$cmd
		echo "($name: $((SECONDS - start)) s)"
	) >"$E2E_LOGS/$name.log" 2>&1 &
	lane_pids+=($!)
done
wait "${lane_pids[@]}"
for job in "${e2e_jobs[@]}"; do
	name=${job%% *}
	cat "$E2E_LOGS/$name.log"
	# A run that never reported (its shell killed, say) is a failure.
	grep -q "^$name " "$RESULTS" || echo "$name 0 1" >>"$RESULTS"
done

wait "$packaging_pid"
cat "$PACKAGING_LOG"
# A suite that never reported (its shell killed, say) is a failure.
for label in fresh manpage install systemd-unit deb image compose kube; do
	grep -q "^$label " "$RESULTS" || echo "$label 0 1" >>"$RESULTS"
done

section "summary"
awk '{ printf "%-26s %4d passed, %d failed%s\n", $1, $2, $3, ($4 ? ", " $4 " skipped" : "") }' "$RESULTS"
# What the first failed tests said, shortened, then each failed test by
# name just above the total: a run kept only as its tail still says which
# failed and why (the lanes' logs are gone when the run ends).
awk 'FNR == 1 {left = 0}
	/^(ok|not ok) / {left = (/^not ok / && shown < 3) ? 12 : 0; shown += ($0 ~ /^not ok /); if (left) print "why: " $0; next}
	left > 0 && /^#/ {print "why: " $0; left--}' "$E2E_LOGS"/*.log "$PACKAGING_LOG" 2>/dev/null || true
grep -h '^not ok ' "$E2E_LOGS"/*.log "$PACKAGING_LOG" 2>/dev/null | sed 's/^/failed: /' || true
total=$(awk '{p += $2; f += $3; s += $4} END {printf "%d passed, %d failed", p, f; if (s) printf ", %d skipped", s}' "$RESULTS")
echo "$total"
case "$total" in
*" 0 failed"*) exit 0 ;;
*) exit 1 ;;
esac
