#!/bin/bash
# The README's first command where a new user meets it: a bare Debian 12
# (mmdebstrap's minbase -- the Essential and required packages and apt --
# plus git and make, nothing else), a git clone of this checkout's HEAD in
# it, and `make demo` run there once, as root, in a chroot. It must install
# what it needs, build the agent and show what the demo shows: w3 (500s)
# drained after the first round, w2 (503s: busy, never broken) never.
#
# Needs root, mmdebstrap and the Debian archive; a missing mmdebstrap or an
# archive out of reach is a failure, never a pass. The chroot shares this
# host's network: the demo binds 127.0.0.1:8080, 8101-8103 and 12345, which
# must be free (the agent's admin listener, 9786 by default, may be taken:
# the agent then runs without it, and the demo does not use it). Its
# mounts live in a private mount namespace, so none reaches the host's.
#
# The bare tree is cached as a tarball in $FRESH_CACHE (default
# /var/cache/spoa-breaker) and built again only when missing; each run
# unpacks it anew, so the demo always meets a tree nothing ran in before.
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO" || exit 1

[ "$(id -u)" -eq 0 ] || skip_suite "a chroot needs root"

CACHE=${FRESH_CACHE:-/var/cache/spoa-breaker}
BASE=$CACHE/fresh-bookworm-base.tar
PORTS="8080 8101 8102 8103 12345"
# What the build and the demo use: none of it may be in the tree before.
DEMO_PACKAGES=(gcc libc6-dev pkg-config libev-dev libinih-dev libmsgpack-dev libmicrohttpd-dev
	libssl-dev haproxy python3 curl socat)

# The ports are the host's and the tarball is shared: one run at a time.
exec 9>/run/lock/spoa-breaker-fresh-test.lock
flock -w 1800 9 || { echo "not ok 1 - another run of this suite holds its lock"; exit 1; }

TREE=$(mktemp -d /var/tmp/spoa-breaker-fresh.XXXXXX)
LOG=$TREE.demo.log

mounted_under() { # DIR: mount points at or below DIR, deepest first
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r
}
rooted_in() { # DIR: processes whose root directory is DIR
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
	done
}
# Nothing may outlive the suite: a process left in the tree is stopped, a
# mount found under it is undone, and the tree goes only once nothing is
# mounted there (rm stays on the tree's own filesystem in any case).
DEMO_PID=""
cleanup() {
	local pid mnt
	[ -n "$DEMO_PID" ] && kill "$DEMO_PID" 2>/dev/null
	for _ in $(seq 50); do
		pid=$(rooted_in "$TREE")
		[ -n "$pid" ] || break
		# shellcheck disable=SC2086 # a list of PIDs
		kill -KILL $pid 2>/dev/null
		sleep 0.1
	done
	for mnt in $(mounted_under "$TREE"); do umount -R "$mnt" 2>/dev/null || umount -l "$mnt"; done
	if [ -z "$(mounted_under "$TREE")" ]; then
		rm -rf --one-file-system "$TREE"
	else
		echo "# $TREE is still mounted; left in place"
	fi
	rm -f "$LOG"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The host's archive, as tests/haproxy-versions.sh finds it, with its
# security archive when it names one; apt in the tree reaches it as the
# host's apt does (a dated snapshot of the archive has expired Release
# files: the host's apt then ignores their dates, and so does the tree's).
archive_lines() {
	local mirror security
	mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -vm1 security)
	security=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -m1 security)
	mirror=${mirror:-http://deb.debian.org/debian}
	echo "deb $mirror bookworm main"
	echo "deb $mirror bookworm-updates main"
	[ -n "$security" ] && echo "deb $security bookworm-security main"
}
make_base() {
	local opts=() valid_until mirrors=() line
	[ -s "$BASE" ] && return 0
	command -v mmdebstrap >/dev/null || { echo "mmdebstrap is missing (packaging/install-deps.sh installs it)"; return 1; }
	mkdir -p "$CACHE" || return 1
	valid_until=$(apt-config dump Acquire::Check-Valid-Until | sed -n 's/^Acquire::Check-Valid-Until "\(.*\)";$/\1/p')
	[ -n "$valid_until" ] && opts+=(--aptopt="Acquire::Check-Valid-Until \"$valid_until\"")
	while read -r line; do mirrors+=("$line"); done < <(archive_lines)
	if ! mmdebstrap --variant=minbase --mode=root --format=tar --include=git,make "${opts[@]}" \
		--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		bookworm "$BASE.tmp" "${mirrors[@]}" >"$CACHE/fresh-bookworm.log" 2>&1; then
		tail -n 20 "$CACHE/fresh-bookworm.log"
		echo "mmdebstrap could not make a Debian 12 tree from ${mirrors[*]} (see $CACHE/fresh-bookworm.log)"
		rm -f "$BASE.tmp"
		return 1
	fi
	mv "$BASE.tmp" "$BASE"
}
installed_in_tree() { # PACKAGE...
	chroot "$TREE" dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null | awk '$1 == "ii" {print $2}'
}
SHA=$(git rev-parse HEAD)
fresh_tree() {
	local left
	make_base || return 1
	tar -xf "$BASE" -C "$TREE" || return 1
	# The archive is reached by name: the host's resolver, as now.
	cp -L /etc/resolv.conf "$TREE/etc/resolv.conf" || return 1
	left=$(installed_in_tree "${DEMO_PACKAGES[@]}" | tr '\n' ' ')
	[ -z "$left" ] || { echo "the base tree already has: $left"; return 1; }
	if [ ! -x "$TREE/usr/bin/git" ] || [ ! -x "$TREE/usr/bin/make" ]; then
		echo "git or make missing in the tree"
		return 1
	fi
	# A clone as a user makes one: of what is committed, nothing else.
	git clone --quiet --no-local "$REPO" "$TREE/root/spoa-breaker" &&
		git -C "$TREE/root/spoa-breaker" checkout --quiet --detach "$SHA"
}
start=$SECONDS
[ -s "$BASE" ] && cached="cached" || cached="built"
check "a fresh Debian 12 tree (minbase, git, make) with a clone of HEAD" fresh_tree || { finish; exit; }
note "base tree $cached in $((SECONDS - start)) s: $BASE"
git diff --quiet HEAD 2>/dev/null || note "the checkout has uncommitted changes: the tree has HEAD ($SHA) only"

ports_free() {
	local port busy=""
	for port in $PORTS; do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && busy="$busy $port"
	done
	[ -z "$busy" ] || { echo "in use on this host's loopback:$busy; the demo binds them, so it cannot run here now"; return 1; }
}
# The agent's default port is also a test's of the end-to-end suites,
# which may run meanwhile: whoever binds a default port holds this lock.
exec 8>/run/lock/spoa-breaker-default-ports.lock
flock -w 600 8 || note "the default ports' lock is held for over 10 min: trying anyway"
check "the demo's ports (127.0.0.1: $PORTS) are free on this host" ports_free || { finish; exit; }

# Run as a root login would: a clean environment (nothing of the caller's
# make or of the tests leaks in), /proc and /dev mounted in a namespace of
# its own. The time limit only keeps a hung run from hanging the suite.
# (In the background: the wait for it yields to a TERM, so that a stopped
# suite stops the demo too.)
run_demo() {
	timeout --kill-after=30 1800 unshare --mount --propagation private --fork --kill-child=SIGTERM sh -c '
		mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" || exit 1
		exec chroot "$1" /usr/bin/env -i HOME=/root TERM=dumb \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			sh -c "cd /root/spoa-breaker && make demo"' sh "$TREE" >"$LOG" 2>&1 8>&- 9>&- &
	DEMO_PID=$!
	wait "$DEMO_PID"
}
demo_start=$SECONDS
run_demo
demo_status=$?
exec 8>&- # the default ports are free again
note "make demo took $((SECONDS - demo_start)) s"

# It exited 0, and it did everything on this first run: installed the
# packages, built the agent, then started the demo.
first_run() {
	[ "$demo_status" -eq 0 ] || { echo "make demo exited $demo_status"; return 1; }
	awk '
		/^install-deps: installing / && !deps { deps = NR }
		/ -o build\/spoa-breaker / && deps && !built { built = NR }
		/^HAProxy on 127\.0\.0\.1:8080 / && built { banner = NR }
		END { exit !banner }' "$LOG" ||
		{ echo "not in this order: the install-deps line, the agent's link, the demo's banner"; return 1; }
}
check "make demo succeeds on its first run (installs, builds, runs)" first_run
note "$(grep -m1 '^install-deps: ' "$LOG")"

# The demo's own view of HAProxy (its "HAProxy: SERVER STATE" lines).
w3_drained_after_round_1() {
	sed -n '/^Round 1:/,/^Round 2:/p' "$LOG" | grep -q '^  HAProxy: w3 DRAIN' || {
		echo "no 'HAProxy: w3 DRAIN' between rounds 1 and 2; the round:"
		sed -n '/^Round 1:/,/^Round 2:/p' "$LOG" | head -n 10
		return 1
	}
}
check "the demo drains w3 after round 1" w3_drained_after_round_1
w2_never_drained() {
	local lines
	lines=$(grep -c '^  HAProxy: w2 ' "$LOG")
	[ "$lines" -ge 3 ] || { echo "$lines 'HAProxy: w2' lines, expected one per look (3)"; return 1; }
	! grep '^  HAProxy: w2 .*DRAIN' "$LOG"
}
check "the demo never drains w2" w2_never_drained
# shellcheck disable=SC2154 # lib.sh's count
# On a failure, what the demo printed: from its banner on when it got
# there (the installs and the build above it say nothing of the breaker),
# else the end of the log.
if [ "$failures" -ne 0 ]; then
	if grep -q '^HAProxy on 127\.0\.0\.1:8080 ' "$LOG"; then
		sed -n '/^HAProxy on 127\.0\.0\.1:8080 /,$p' "$LOG"
	else
		tail -n 60 "$LOG"
	fi | sed 's/^/# demo: /'
fi

left_behind() {
	local mounts procs
	mounts=$(mounted_under "$TREE")
	procs=$(rooted_in "$TREE")
	[ -z "$mounts$procs" ] || { echo "mounted on the host: ${mounts:-none}; running in the tree: ${procs:-none}"; return 1; }
}
check "nothing of the run is left mounted on the host or running in the tree" left_behind

note "fresh.sh took $((SECONDS - start)) s"
finish
