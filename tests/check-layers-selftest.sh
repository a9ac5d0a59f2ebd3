#!/bin/bash
# check-layers-selftest.sh [CC] - proves tests/check-layers.sh (and the
# header and floor checks beside it) can fail:
# the impure fixture (tests/layers/impure.c: clock_gettime, fprintf, the
# agent's logger) must be refused with each symbol named, the pure one
# (tests/layers/pure.c: string functions) accepted, a symbol defined by
# another object of the set accepted, and usage errors must exit 2.
# Prints "check-layers self-test: ok" and exits 0, or names what failed and
# exits 1.
set -u
cd "$(dirname "$0")/.." || exit 1

CC=${1:-${CC:-cc}}
CHECK=tests/check-layers.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
	echo "check-layers self-test: FAILED: $*"
	failures=$((failures + 1))
}

compile() { # SRC OBJ
	if ! $CC -c -Iinclude -D_GNU_SOURCE -std=c11 -o "$2" "$1" 2>"$tmp/cc.err"; then
		echo "check-layers self-test: FAILED: $CC cannot compile $1:" >&2
		cat "$tmp/cc.err" >&2
		exit 1
	fi
}

# check_run ARGS...: runs check-layers.sh, leaving rc and out.
check_run() {
	out=$("$CHECK" "$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" >"$tmp/out"
}

# names SYMBOL OBJ: the output has the violation line for SYMBOL in OBJ.
names() {
	grep -qxF "check-layers: $2 calls $1: the pure core does no I/O, reads no clock, logs nothing" "$tmp/out"
}

compile tests/layers/impure.c "$tmp/impure.o"
compile tests/layers/pure.c "$tmp/pure.o"

# The impure object alone: refused, every impurity named.
check_run "$tmp/impure.o"
[ "$rc" -eq 1 ] || fail "impure.o: exit $rc, expected 1; output: $out"
for sym in clock_gettime fprintf log_msg layers_fixture_pure; do
	names "$sym" "$tmp/impure.o" || fail "impure.o: $sym not named; output: $out"
done

# The pure object alone: accepted.
check_run "$tmp/pure.o"
[ "$rc" -eq 0 ] || fail "pure.o: exit $rc, expected 0; output: $out"
[ "$out" = "check-layers: 1 pure objects, no I/O, no clock, no logging" ] ||
	fail "pure.o: unexpected output: $out"

# Both: what pure.o defines resolves impure.o's call to it; the rest stays.
check_run "$tmp/pure.o" "$tmp/impure.o"
[ "$rc" -eq 1 ] || fail "pure.o + impure.o: exit $rc, expected 1; output: $out"
names clock_gettime "$tmp/impure.o" || fail "pure.o + impure.o: clock_gettime not named; output: $out"
names fprintf "$tmp/impure.o" || fail "pure.o + impure.o: fprintf not named; output: $out"
if grep -qF -e layers_fixture_pure -e "check-layers: $tmp/pure.o calls" "$tmp/out"; then
	fail "pure.o + impure.o: a symbol defined in the set was reported; output: $out"
fi

# Usage errors.
check_run
[ "$rc" -eq 2 ] || fail "no argument: exit $rc, expected 2"
check_run "$tmp/missing.o"
[ "$rc" -eq 2 ] || fail "missing object: exit $rc, expected 2"
check_run tests/layers/pure.c
[ "$rc" -eq 2 ] || fail "not an object: exit $rc, expected 2"

# The header graph (check-header-cycles.sh): a cycle two headers apart is
# named; the same headers without it pass.
mkdir -p "$tmp/inc/a" "$tmp/inc/b"
printf '#include "b/two.h"\n' >"$tmp/inc/a/one.h"
printf '#include <stdio.h>\n#include "a/one.h"\n' >"$tmp/inc/b/two.h"
out=$(tests/check-header-cycles.sh "$tmp/inc" 2>&1); rc=$?
[ "$rc" -eq 1 ] || fail "header cycle: exit $rc, expected 1; output: $out"
[[ "$out" == *"a/one.h -> b/two.h -> a/one.h"* ]] || fail "header cycle not named; output: $out"
printf '#include <stdio.h>\n' >"$tmp/inc/b/two.h"
out=$(tests/check-header-cycles.sh "$tmp/inc" 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "no header cycle: exit $rc, expected 0; output: $out"

# The floors (check-floors.sh): core including a link header is named
# with its line, a folder on no floor is named; the tree without them
# passes; a root without spoa/ and include/ is a usage error.
mkdir -p "$tmp/tree/spoa/core" "$tmp/tree/spoa/link" "$tmp/tree/include/link" "$tmp/tree/include/core"
printf '#include "core/low.h"\n' >"$tmp/tree/include/link/high.h"
printf '#include <stdio.h>\n#include "util/log.h"\n' >"$tmp/tree/include/core/low.h"
printf '#include <stdlib.h>\n\n#include "link/high.h"\n' >"$tmp/tree/spoa/core/low.c"
out=$(tests/check-floors.sh "$tmp/tree" 2>&1); rc=$?
[ "$rc" -eq 1 ] || fail "floors: core including link: exit $rc, expected 1; output: $out"
[ "$out" = "check-floors: spoa/core/low.c:3 includes link/high.h: link is a floor above core" ] ||
	fail "floors: the arrow up not named as expected; output: $out"
printf '#include "core/low.h"\n' >"$tmp/tree/spoa/core/low.c"
mkdir -p "$tmp/tree/spoa/attic"
printf '\n' >"$tmp/tree/spoa/attic/old.c"
out=$(tests/check-floors.sh "$tmp/tree" 2>&1); rc=$?
[ "$rc" -eq 1 ] || fail "floors: a folder on no floor: exit $rc, expected 1; output: $out"
[[ "$out" == *"spoa/attic/old.c: its folder attic is on no floor"* ]] || fail "floors: attic not named; output: $out"
rm -r "$tmp/tree/spoa/attic"
out=$(tests/check-floors.sh "$tmp/tree" 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "floors: every include down: exit $rc, expected 0; output: $out"
out=$(tests/check-floors.sh "$tmp/inc" 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "floors: no spoa/: exit $rc, expected 2; output: $out"

# The calls between files (check-file-circles.sh): two files calling each
# other through a third are named as one circle with the calls that close
# it; without the call back they pass; the allowed parent and children
# (spop/agent, conn, listener) pass.
mkdir -p "$tmp/obj/x" "$tmp/obj/spop" "$tmp/x" "$tmp/spop"
cfile() { # NAME DEFINES CALLS...
	local name=$1 defines=$2 body="" c
	shift 2
	for c in "$@"; do body+="$c(); "; done
	printf '%s\n' "$(for c in "$@"; do printf 'void %s(void); ' "$c"; done)" \
		"void $defines(void); void $defines(void) { $body}" >"$tmp/$name.c"
	compile "$tmp/$name.c" "$tmp/obj/$name.o"
}
cfile x/a fa fb
cfile x/b fb fc
cfile x/c fc fa
cfile x/d fd fa
out=$(tests/check-file-circles.sh "$tmp"/obj/x/*.o 2>&1); rc=$?
[ "$rc" -eq 1 ] || fail "file circles: a -> b -> c -> a: exit $rc, expected 1; output: $out"
[[ "$out" == *"check-file-circles: circle: x/a x/b x/c"* ]] || fail "file circles: the circle not named; output: $out"
[[ "$out" == *"x/c calls x/a (fa)"* ]] || fail "file circles: the call back not named; output: $out"
[[ "$out" == *"x/d"* ]] && fail "file circles: x/d, outside the circle, named; output: $out"
cfile x/c fc
out=$(tests/check-file-circles.sh "$tmp"/obj/x/*.o 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "file circles: no call back: exit $rc, expected 0; output: $out"
cfile spop/agent agent_fn conn_fn
cfile spop/conn conn_fn agent_fn listener_fn
cfile spop/listener listener_fn conn_fn
out=$(tests/check-file-circles.sh "$tmp"/obj/spop/*.o 2>&1); rc=$?
[ "$rc" -eq 0 ] || fail "file circles: the allowed parent and children: exit $rc, expected 0; output: $out"
out=$(tests/check-file-circles.sh "$tmp/obj/x/none.o" 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "file circles: a missing object: exit $rc, expected 2; output: $out"

if [ "$failures" -gt 0 ]; then
	exit 1
fi
echo "check-layers self-test: ok"
exit 0
