#!/bin/bash
# check-layers.sh OBJ... - the pure core does no I/O, reads no clock, logs
# nothing. Given the object files of the pure sources, it collects every
# symbol they need (nm -u), drops those another object of the same set
# defines, and requires each one left to be a pure C-library function of the
# allowlist below. A symbol defined only outside the set (log_msg in log.o,
# say) is a violation too: the pure core must not reach the edges.
#
# One line per violation and exit 1; a one-line summary and exit 0 when
# clean; exit 2 on a usage error (no object, a missing or unreadable one).
# NM names another nm (llvm-nm, a cross nm).
set -u

NM=${NM:-nm}
prog=check-layers

usage() {
	echo "usage: $0 OBJ..." >&2
	echo "  checks that the object files of the pure core call no I/O, clock or logging" >&2
	exit 2
}

[ $# -gt 0 ] || usage
for obj in "$@"; do
	if [ ! -f "$obj" ] || [ ! -r "$obj" ]; then
		echo "$prog: $obj: no such object file" >&2
		exit 2
	fi
done

# What a pure function may call, each with why it is pure. Exact names;
# the patterns further down cover families of compiler-generated symbols.
allowed_exact=(
	# memory and strings: compute on the caller's buffers, nothing else
	# (clang turns memcmp() == 0 into bcmp)
	memcpy memmove memset memcmp memchr memrchr bcmp
	strlen strnlen strcmp strncmp strchr strrchr strcspn strspn strstr strpbrk
	strtok strtok_r strcasecmp strncasecmp strcpy strncpy stpcpy strcat strncat
	# formatting into the caller's buffer (never a stream)
	snprintf vsnprintf
	# heap: the core owns its tables; allocation is not I/O
	malloc calloc realloc free aligned_alloc
	# number parsing from strings; errno is how strto* report a range error
	strtoul strtoull strtol strtoll strtod __errno_location
	# glibc >= 2.38 redirects strto* to these under C23
	__isoc23_strtol __isoc23_strtoul __isoc23_strtoll __isoc23_strtoull
	# character classes: glibc's tables behind isdigit() and friends
	__ctype_b_loc __ctype_tolower_loc __ctype_toupper_loc tolower toupper
	# address text to bytes, no lookup (unlike getaddrinfo)
	inet_pton
	# sorting and searching in memory
	qsort bsearch
	# contract violations stop the process; nothing is reported elsewhere
	__assert_fail abort
	# the stack protector's report of a smashed stack (-fstack-protector)
	__stack_chk_fail __stack_chk_guard
)
# Families: the _FORTIFY_SOURCE checked variants of the functions above, and
# helpers the compiler emits on its own (libgcc/compiler-rt arithmetic, the
# sanitizers' instrumentation in a `make sanitize` build).
allowed_patterns=(
	'__(mem(cpy|move|set|chr)|str(n?cpy|n?cat|len)|stpn?cpy|v?snprintf)_chk' # FORTIFY: same function, bounds-checked
	'__(popcount|clz|ctz|ffs|parity|bswap)[sdt]i2'                           # bit operations without the instruction
	'__(u?(div|mod)|mul|ashl|ashr|lshr|neg|cmp|ucmp)[dt]i[23]'                # wide integer arithmetic
	'__(fix|fixuns|float|floatun)[sdtx]f[sdt]i|__float(un)?[sdt]i[sdtx]f'    # float <-> integer conversions
	'__(asan|ubsan|sanitizer_cov)_[A-Za-z0-9_]+'                              # sanitizer instrumentation
	'_GLOBAL_OFFSET_TABLE_'                                                  # PIC on some targets
	'msgpack_(unpack_next|unpacked_[a-z_]+|zone_[a-z_]+|sbuffer_[a-z_]+|object_[a-z_]+|pack_[a-z_]+)' # msgpack-c: encoding and decoding in memory
)

is_allowed() {
	local sym=$1 a
	for a in "${allowed_exact[@]}"; do
		[ "$sym" = "$a" ] && return 0
	done
	for a in "${allowed_patterns[@]}"; do
		[[ "$sym" =~ ^($a)$ ]] && return 0
	done
	return 1
}

# Global symbols the set defines (a static function of the same name in one
# object resolves nothing for another).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for obj in "$@"; do
	if ! "$NM" --defined-only --extern-only "$obj" >>"$tmp/defined.nm" 2>"$tmp/nm.err"; then
		echo "$prog: $obj: $NM cannot read it: $(head -n1 "$tmp/nm.err")" >&2
		exit 2
	fi
done
awk 'NF >= 2 {print $NF}' "$tmp/defined.nm" | sort -u >"$tmp/defined"

violations=0
for obj in "$@"; do
	undefined=$("$NM" -u "$obj" 2>/dev/null | awk 'NF >= 2 {print $NF}' | sort -u)
	for sym in $undefined; do
		# Versioned references (memcpy@GLIBC_2.14) name the same function.
		base=${sym%%@*}
		grep -qxF "$sym" "$tmp/defined" && continue
		is_allowed "$base" && continue
		echo "$prog: $obj calls $base: the pure core does no I/O, reads no clock, logs nothing"
		violations=$((violations + 1))
	done
done

if [ "$violations" -gt 0 ]; then
	exit 1
fi
echo "$prog: $# pure objects, no I/O, no clock, no logging"
exit 0
