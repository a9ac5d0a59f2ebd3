# Shared by the packaging suites (tests/packaging/*.sh). Each check prints
# one TAP line, "ok N - what" or "not ok N - what", which tests/check.sh
# counts as it counts bats'; a failed check shows the end of its output as
# "# " lines. A suite that cannot run on this machine at all calls
# skip_suite: exit 77, counted as skipped.
# shellcheck shell=bash

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
checks=0
failures=0

# check WHAT COMMAND...: runs COMMAND, quiet unless it fails; a check that
# took a second or more says how long.
check() {
	local what=$1 out status start=$SECONDS took=""
	shift
	checks=$((checks + 1))
	out=$("$@" 2>&1)
	status=$?
	[ $((SECONDS - start)) -ge 1 ] && took=" ($((SECONDS - start)) s)"
	if [ "$status" -eq 0 ]; then
		echo "ok $checks - $what$took"
	else
		echo "not ok $checks - $what$took"
		printf '%s\n' "$out" | tail -n 40 | sed 's/^/# /'
		failures=$((failures + 1))
	fi
	return "$status"
}

skip_suite() {
	echo "# skip: $*"
	exit 77
}

# note TEXT...: a comment line in the suite's output.
note() { printf '# %s\n' "$*"; }

# The suite's exit status: 1 if any check failed.
finish() {
	[ "$failures" -eq 0 ]
}
