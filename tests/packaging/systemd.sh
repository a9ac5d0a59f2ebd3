#!/bin/bash
# packaging/spoa-breaker.service passes systemd-analyze verify, and its
# hardening keeps systemd-analyze security's exposure at 2.0 or lower (the
# table is printed, as "# " lines). verify wants ExecStart's binary to
# exist: it checks a copy pointed at the one just built (the Debian suite
# verifies the installed unit as it is).
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO" || exit 1

UNIT=packaging/spoa-breaker.service
command -v systemd-analyze >/dev/null || skip_suite "no systemd-analyze here"
make --no-print-directory BUILD="$BUILD" all >/dev/null || exit 1

TMP=$(mktemp -d /tmp/spoa-breaker-unit.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
sed "s|/usr/sbin/spoa-breaker|$REPO/$BUILD/spoa-breaker|g" "$UNIT" >"$TMP/spoa-breaker.service"

# verify prints its findings and still exits 0 for some; none is allowed.
verify_clean() {
	local out
	out=$(systemd-analyze verify --man=no "$TMP/spoa-breaker.service" 2>&1) || { echo "$out"; return 1; }
	[ -z "$out" ] || { echo "$out"; return 1; }
}
check "systemd-analyze verify finds nothing" verify_clean

systemd-analyze security --offline=yes "$UNIT" 2>&1 | sed 's/^/# /'
# The exposure is computed on 0..100 and printed divided by ten.
check "systemd-analyze security: exposure 2.0 or lower" \
	systemd-analyze security --offline=yes --threshold=20 "$UNIT"

finish
