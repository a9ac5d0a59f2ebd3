#!/bin/bash
# check-header-cycles.sh [DIR] - the project's headers include each other
# without a cycle. Reads every `#include "..."` of DIR/*/*.h (include/ by
# default; names are relative to DIR, as -Iinclude has them) and walks the
# graph depth first; a cycle is printed as the chain that closes it, and
# the exit status is 1. Exit 0 with a one-line summary when there is none;
# 2 on a usage error.
set -u
prog=check-header-cycles
dir=${1:-include}
[ -d "$dir" ] || { echo "usage: $0 [DIR]" >&2; exit 2; }

declare -A edges state
headers=()
while IFS= read -r h; do
	name=${h#"$dir"/}
	headers+=("$name")
	edges[$name]=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$h" | tr '\n' ' ')
done < <(find "$dir" -name '*.h' | sort)

cycles=0
stack=()
# state: unset = not seen, 1 = on the current path, 2 = done
visit() {
	local h=$1 next
	state[$h]=1
	stack+=("$h")
	for next in ${edges[$h]:-}; do
		[ -n "${edges[$next]+x}" ] || continue # a header outside DIR
		if [ "${state[$next]:-0}" = 1 ]; then
			local chain="" i started=0
			for i in "${stack[@]}"; do
				[ "$i" = "$next" ] && started=1
				[ $started = 1 ] && chain+="$i -> "
			done
			echo "$prog: cycle: $chain$next"
			cycles=$((cycles + 1))
		elif [ "${state[$next]:-0}" = 0 ]; then
			visit "$next"
		fi
	done
	unset 'stack[${#stack[@]}-1]'
	state[$h]=2
}
for h in "${headers[@]}"; do
	[ "${state[$h]:-0}" = 0 ] && visit "$h"
done
if [ $cycles -gt 0 ]; then
	exit 1
fi
echo "$prog: ${#headers[@]} headers, no include cycle"
