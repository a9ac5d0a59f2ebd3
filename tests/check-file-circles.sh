#!/bin/bash
# check-file-circles.sh OBJ... - no two source files call each other, not
# even through others: the calls between the agent's files form no circle,
# so each file can be read knowing only the files below it. From the
# objects' symbols (nm): a file calls another when it needs a symbol the
# other defines. A circle is named once, with its files and the calls that
# close it; exit 1. Exit 0 with a one-line summary when there is none, 2 on
# a usage error. NM names another nm.
#
# The one circle allowed is a parent with its children, listed in ALLOWED
# below with why: the SPOP agent, which owns its listeners and connections
# and is told when one closes.
set -u
NM=${NM:-nm}
prog=check-file-circles

ALLOWED=(
	# agent.c owns the listeners and connections; a connection tells its
	# agent when it closes, a listener hands it the connections it accepts.
	"spop/agent spop/conn spop/listener"
)

[ $# -gt 0 ] || { echo "usage: $0 OBJ..." >&2; exit 2; }
for obj in "$@"; do
	if [ ! -f "$obj" ] || [ ! -r "$obj" ]; then
		echo "$prog: $obj: no such object file" >&2
		exit 2
	fi
done

# "D FILE SYMBOL" and "U FILE SYMBOL" lines, from one nm of every object;
# FILE is the object's path below its obj/ folder without .o (spop/conn).
symbols() {
	"$NM" -A "$@" 2>/dev/null | awk '{
		# "PATH.o:ADDRESS T symbol", or "PATH.o: U symbol" (no address)
		f = $1; sub(/:[0-9a-fA-F]*$/, "", f); sub(/\.o$/, "", f); sub(/.*\/obj\//, "", f)
		if ($(NF - 1) == "U") print "U", f, $NF
		else if ($(NF - 1) ~ /^[TDBRCV]$/) print "D", f, $NF
	}'
}

allowed=$(printf '%s\n' "${ALLOWED[@]}")
symbols "$@" | awk -v prog="$prog" -v allowed="$allowed" '
	$1 == "D" { def[$3] = $2; files[$2] = 1 }
	$1 == "U" { need[++nu] = $2 SUBSEP $3; files[$2] = 1 }
	END {
		for (i = 1; i <= nu; i++) {
			split(need[i], p, SUBSEP)
			if (!(p[2] in def) || def[p[2]] == p[1]) continue
			edge[p[1], def[p[2]]] = 1
			if (!((p[1], def[p[2]]) in why)) why[p[1], def[p[2]]] = p[2]
		}
		n = 0
		for (f in files) name[++n] = f
		# reach[a, b]: a calls b, directly or through others (a walk
		# from each file over the sparse calls)
		for (a = 1; a <= n; a++) idx[name[a]] = a
		for (e in edge) { split(e, q, SUBSEP); adj[idx[q[1]]] = adj[idx[q[1]]] " " idx[q[2]] }
		for (a = 1; a <= n; a++) {
			top = 0; stack[++top] = a
			while (top > 0) {
				v = stack[top--]
				k = split(adj[v], out, " ")
				for (i = 1; i <= k; i++) if (!((a, out[i]) in reach)) {
					reach[a, out[i]] = 1; stack[++top] = out[i]
				}
			}
		}
		# allowed groups, as sorted member lists
		na = split(allowed, groups, "\n")
		circles = 0
		for (a = 1; a <= n; a++) {
			if (a in done || !((a, a) in reach)) continue
			members = ""; cnt = 0
			for (b = 1; b <= n; b++)
				if (b == a || (((a, b) in reach) && ((b, a) in reach))) {
					done[b] = 1; m[++cnt] = name[b]
				}
			# sort the members (few)
			for (i = 2; i <= cnt; i++) { v = m[i]; j = i - 1
				while (j > 0 && m[j] > v) { m[j + 1] = m[j]; j-- } m[j + 1] = v }
			for (i = 1; i <= cnt; i++) members = members (i > 1 ? " " : "") m[i]
			ok = 0
			for (g = 1; g <= na; g++) if (groups[g] == members) ok = 1
			if (ok) { allowed_seen++; continue }
			circles++
			printf "%s: circle: %s\n", prog, members
			for (i = 1; i <= cnt; i++) for (j = 1; j <= cnt; j++)
				if ((m[i], m[j]) in edge)
					printf "%s:   %s calls %s (%s)\n", prog, m[i], m[j], why[m[i], m[j]]
			delete m
		}
		if (circles) exit 1
		printf "%s: %d files, no circle between them (%d allowed: a parent with its children)\n", prog, n, allowed_seen + 0
	}'
