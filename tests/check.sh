#!/bin/bash
# Every test, one command: unit tests (cmocka), a short fuzz run, and the
# end-to-end suites (bats) against each HAProxy that tests/haproxy-versions.sh
# provides (2.6 always; 3.0 and 3.2 when they can be fetched). Ends with the
# line "N passed, N failed" and exits non-zero if anything failed.
#
# HAPROXY_VERSIONS=system limits the end-to-end runs to the system HAProxy.
set -u
cd "$(dirname "$0")/.."

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

# Five targets, FUZZ_SECONDS each: about a minute and a quarter in all.
section "fuzz smoke run"
if make --no-print-directory BUILD="$BUILD" fuzz FUZZ_SECONDS="${FUZZ_SECONDS:-12}"; then
	echo "fuzz 1 0" >>"$RESULTS"
else
	echo "fuzz 0 1" >>"$RESULTS"
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

run_bats() { # LABEL HAPROXY_BIN [DIR]
	local tap status
	tap=$(mktemp)
	HAPROXY_BIN=$2 SPOA_BIN=$PWD/${BUILD}/spoa-breaker \
		bats --tap --print-output-on-failure "${3:-tests/e2e}" | tee "$tap"
	status=${PIPESTATUS[0]}
	count_tap "$1" "$tap" "$status"
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
# The end-to-end runs -- one per HAProxy version, the hostile suite, and
# the sanitizer build's -- are independent: every test picks its own
# ports (free_port) and files (its own RUN_DIR), and the one test that
# binds the agent's default port takes a lock. They run E2E_LANES at a
# time (2: the machine's cores; the tests mostly wait on HAProxy and the
# workers), the longest first; each one's output is shown whole when all
# are done, in the order below.
E2E_LANES=${E2E_LANES:-2}
E2E_LOGS=$(mktemp -d)
trap 'rm -rf "$RESULTS" "$PACKAGING_LOG" "$E2E_LOGS"' EXIT
e2e_jobs=()

# The same unit and end-to-end tests on an ASan+UBSan build of the agent:
# memory errors, leaks and undefined behaviour fail the tests that hit them.
sanitizer_run() {
	section "sanitizer build (ASan+UBSan), unit tests"
	local san="make --no-print-directory BUILD=build-asan CC=clang LDFLAGS=-fsanitize=address,undefined"
	local san_flags="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
	if $san CFLAGS="$san_flags" all >/dev/null; then
		UNIT_LABEL=asan- $san CFLAGS="$san_flags" unit >/dev/null 2>&1
		section "sanitizer build, end-to-end, HAProxy $(haproxy -v | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p')"
		BUILD=build-asan run_bats e2e-asan "$(command -v haproxy)"
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
	else
		echo "asan-build 0 1" >>"$RESULTS"
	fi
}
[ "${SANITIZE:-1}" = 1 ] && e2e_jobs+=("asan sanitizer_run")
# Newest first: the newer HAProxy versions' runs take longest.
while read -r version bin; do
	[ -n "$version" ] && e2e_jobs+=("e2e-$version e2e_run $version $bin")
done <<<"$(sort -k1,1Vr <<<"$versions")"
# The agent under attack (tests/hostile/): no HAProxy version matters
# there, so once, with the system one.
e2e_jobs+=("hostile hostile_run")

e2e_run() { # VERSION BIN
	section "end-to-end, HAProxy $1"
	run_bats "e2e-$1" "$2"
}
hostile_run() {
	section "hostile conditions"
	run_bats hostile "$(command -v haproxy)" tests/hostile
}

lane_pids=()
# Each run picks its ports in a range of its own (free_port): 2,000 ports
# a run from 14000, below the kernel's ephemeral ports (32768 up), above
# the fixed ones the demo and the agent's defaults use.
port_base=14000
for job in "${e2e_jobs[@]}"; do
	read -r name cmd <<<"$job"
	export E2E_PORT_BASE=$port_base E2E_PORT_SPAN=2000
	port_base=$((port_base + 2000))
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
	label=$name
	[ "$name" = asan ] && label=e2e-asan
	grep -q "^$label \|^${name}-build " "$RESULTS" || echo "$label 0 1" >>"$RESULTS"
done

wait "$packaging_pid"
cat "$PACKAGING_LOG"
# A suite that never reported (its shell killed, say) is a failure.
for label in fresh manpage install systemd-unit deb image compose; do
	grep -q "^$label " "$RESULTS" || echo "$label 0 1" >>"$RESULTS"
done

section "summary"
awk '{ printf "%-26s %4d passed, %d failed%s\n", $1, $2, $3, ($4 ? ", " $4 " skipped" : "") }' "$RESULTS"
total=$(awk '{p += $2; f += $3; s += $4} END {printf "%d passed, %d failed", p, f; if (s) printf ", %d skipped", s}' "$RESULTS")
echo "$total"
case "$total" in
*" 0 failed"*) exit 0 ;;
*) exit 1 ;;
esac
