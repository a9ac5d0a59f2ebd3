#!/bin/sh
# Runs each cmocka test binary given as an argument and appends its counts to
# $RESULTS (when set) as "$UNIT_LABEL<name> <passed> <failed>". Exit status: 1
# if any failed.
set -u
status=0
for bin in "$@"; do
	out=$("$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	passed=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
	failed=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -n1)
	passed=${passed:-0}
	failed=${failed:-0}
	# A binary that crashed or printed no summary counts as one failure.
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
	[ "$failed" -eq 0 ] || status=1
	[ -n "${RESULTS:-}" ] && echo "${UNIT_LABEL:-}$(basename "$bin") $passed $failed" >>"$RESULTS"
done
exit $status
