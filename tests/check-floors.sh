#!/bin/bash
# check-floors.sh [ROOT] - the source folders stand on each other as floors:
# a file includes only headers of its own folder or of a floor below it.
# Reads every `#include "FOLDER/..."` of ROOT/spoa/*/*.c, ROOT/spoa/main.c
# and ROOT/include/*/*.h (ROOT: the repository by default). A file's folder
# is the one it sits in (include/link/x.h is link's, as spoa/link/x.c is);
# main.c is the top floor. The floors, lowest first, are FLOORS below, the
# order docs/design.md gives: an arrow from a floor to one above it, or to
# a folder FLOORS does not name, is a violation. One line per violation
# and exit 1; a one-line summary and exit 0 when clean; 2 on a usage error.
#
# With a strict order there is no folder cycle: every arrow runs down.
# Includes are the arrows: under -Werror=implicit-function-declaration a
# file calls nothing it has no declaration of, and declarations are in
# headers (a function declared by hand in a .c would escape this check,
# and the project has none).
set -u
prog=check-floors
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if [ ! -d "$root/spoa" ] || [ ! -d "$root/include" ]; then
	echo "usage: $0 [ROOT]  (ROOT holds spoa/ and include/)" >&2
	exit 2
fi

# Lowest first. util: no domain; core: the breaker, pure; breakers: the bus
# everything that listens subscribes to; spop: the wire; hapi: HAProxy's
# Runtime API; records: what the agent keeps in HAProxy; link: what it does
# to HAProxy; state: the snapshot; admin: the pages; config: what sets them
# all; daemon: what runs them; main: the program.
FLOORS=(util core breakers spop hapi records link state admin config daemon main)

declare -A rank
for i in "${!FLOORS[@]}"; do rank[${FLOORS[$i]}]=$i; done

violations=0
files=0
while IFS= read -r f; do
	rel=${f#"$root"/}
	case $rel in
	spoa/main.c) from=main ;;
	*) from=$(cut -d/ -f2 <<<"$rel") ;;
	esac
	files=$((files + 1))
	if [ -z "${rank[$from]+x}" ]; then
		echo "$prog: $rel: its folder $from is on no floor (add it to FLOORS and to docs/design.md)"
		violations=$((violations + 1))
		continue
	fi
	while IFS=: read -r line to header; do
		[ "$to" = "$from" ] && continue
		if [ -z "${rank[$to]+x}" ]; then
			echo "$prog: $rel:$line includes $header: $to is on no floor"
			violations=$((violations + 1))
		elif [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
			echo "$prog: $rel:$line includes $header: $to is a floor above $from"
			violations=$((violations + 1))
		fi
	done < <(awk 'match($0, /^[ \t]*#[ \t]*include[ \t]*"[^"\/]+\/[^"]*"/) {
			h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
			d = h; sub(/\/.*/, "", d)
			print FNR ":" d ":" h
		}' "$f")
done < <(find "$root/spoa" "$root/include" -name '*.[ch]' | sort)

if [ $violations -gt 0 ]; then
	exit 1
fi
echo "$prog: $files files on ${#FLOORS[@]} floors (${FLOORS[*]}), every include runs down"
