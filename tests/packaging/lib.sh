# Shared by the packaging suites (tests/packaging/*.sh). Each check prints
# one TAP line, "ok N - what" or "not ok N - what", which tests/check.sh
# counts as it counts bats'; a failed check shows the end of its output as
# "# " lines. A suite that cannot run on this machine at all calls
# skip_suite: exit 77, counted as skipped.
# shellcheck shell=bash

# shellcheck disable=SC2034 # used by the suites that source this
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
# past_agent_timeouts: a request sent again while the agent answered it late.
. "$REPO/tests/lib/agent_timeouts.sh"
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

# Waits (10 s at most) until HAProxy, through its stats socket, says
# BACKEND/SERVER is UP.
wait_server_up() { # SOCKET BACKEND SERVER
	for _ in $(seq 100); do
		echo "show stat" | socat -t 2 - "UNIX-CONNECT:$1" 2>/dev/null |
			awk -F, -v b="$2" -v s="$3" '$1 == b && $2 == s {print $18}' | grep -q '^UP' && return 0
		sleep 0.1
	done
	return 1
}

# The suite's exit status: 1 if any check failed.
finish() {
	[ "$failures" -eq 0 ]
}
