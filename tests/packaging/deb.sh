#!/bin/bash
# The Debian package: dpkg-buildpackage -b builds it with Debian's hardening
# flags (from a copy of the tree, so that the worktree and its parent stay
# clean), lintian finds no error, and it holds what make install lays out.
# Then dpkg -i installs it, the installed agent and HAProxy accept what it
# shipped, dpkg --remove has the running agent lift its drain in HAProxy
# first, and dpkg --purge leaves nothing behind: no file, user, group or
# state, and HAProxy's own configuration as it was. Needs root; not run
# where spoa-breaker is installed for real.
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO" || exit 1

PKG=spoa-breaker
[ "$(id -u)" -eq 0 ] || skip_suite "installing a package needs root"
if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q ' installed$\|config-files'; then
	skip_suite "$PKG is installed on this machine: leaving it alone"
fi
if getent passwd "$PKG" >/dev/null || getent group "$PKG" >/dev/null; then
	skip_suite "a user or group $PKG exists on this machine: leaving it alone"
fi

TMP=$(mktemp -d /tmp/spoa-breaker-deb.XXXXXX)
installed=0
cleanup() {
	stop_scene
	# A suite stopped half-way must not leave the package installed; the
	# dpkg it stopped in may still hold dpkg's lock for a moment.
	if [ "$installed" = 1 ]; then
		for _ in $(seq 30); do
			dpkg --purge "$PKG" >/dev/null 2>&1 && break
			sleep 1
		done
	fi
	rm -rf "$TMP"
}
# The removal scene's processes (see below), each stopped by its PID and
# waited for (5 s at most): the agent must be gone before purge, whose
# deluser refuses a user that runs one and whose state directory it
# writes at TERM.
SCENE=$TMP/scene
stop_scene() {
	local f pid
	for f in "$SCENE"/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		rm -f "$f"
	done
}
trap cleanup EXIT

# The tree as git sees it (tracked files and new ones, uncommitted changes
# included), without build outputs.
mkdir "$TMP/$PKG"
git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$TMP/$PKG"
# The copy has no .git: the revision is handed in, to the package build
# only (in the environment, it would make the make install below rebuild
# the worktree's binary, which the end-to-end suites may be running).
# RESULTS is check.sh's: the unit tests of the build are not counted twice.
REVISION=${REVISION:-$(git describe --always --dirty 2>/dev/null)}
build_deb() {
	(cd "$TMP/$PKG" && env -u RESULTS REVISION="$REVISION" dpkg-buildpackage -us -uc -b) >"$TMP/build.log" 2>&1 || {
		tail -n 40 "$TMP/build.log"
		return 1
	}
}
check "dpkg-buildpackage -us -uc -b builds ${PKG}_*.deb" build_deb || { finish; exit; }
DEB=$(ls "$TMP/${PKG}_"*_*.deb)
CHANGES=$(ls "$TMP/${PKG}_"*.changes)
note "$(dpkg-deb -f "$DEB" Package Version Depends | tr '\n' ' ')"

# Every tag lintian finds is shown; errors fail. (It warns on stderr that
# it runs as root, and leaves files in TMPDIR.)
TMPDIR=$TMP lintian --fail-on error "$CHANGES" >"$TMP/lintian.log" 2>/dev/null
lintian_status=$?
while read -r line; do note "lintian: $line"; done <"$TMP/lintian.log"
check "lintian: no error" test "$lintian_status" -eq 0

version_matches() {
	local makefile_version deb_version
	makefile_version=$(sed -n 's/^VERSION *:= *//p' Makefile)
	deb_version=$(dpkg-deb -f "$DEB" Version)
	[ "${deb_version%-*}" = "$makefile_version" ] || { echo "package $deb_version, Makefile $makefile_version"; return 1; }
}
check "the package's upstream version is the Makefile's VERSION" version_matches

# What make install lays out under PREFIX=/usr, with Debian's documentation
# conventions (copyright for LICENSE, the two changelogs, and compressed:
# dh_compress compresses a document larger than 4 KiB, README.md and
# docs/*.md alike, and leaves a smaller one as it is).
make_install_files() {
	make --no-print-directory BUILD="$BUILD" PREFIX=/usr DESTDIR="$TMP/root" install >/dev/null &&
		(cd "$TMP/root" && find . -type f -printf '%s %p\n') |
		while read -r size path; do
			case $path in
			./usr/share/doc/spoa-breaker/*.md) [ "$size" -gt 4096 ] && path=$path.gz ;;
			esac
			echo "$path"
		done | sed -e 's|^\.||' \
			-e 's|/doc/spoa-breaker/LICENSE$|/doc/spoa-breaker/copyright|' \
			-e 's|/doc/spoa-breaker/CHANGELOG.md\(.gz\)*$|/doc/spoa-breaker/changelog.gz|' \
			-e 's|\.8$|.8.gz|'
	echo /usr/share/doc/spoa-breaker/changelog.Debian.gz
}
deb_files() { dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\.||'; }
same_layout() { diff -u <(make_install_files | sort) <(deb_files | sort); }
check "the package holds what make install lays out" same_layout

# Built with dpkg-buildflags' hardening: RELRO, BIND_NOW, PIE, FORTIFY,
# stack protector.
hardened() {
	local bin=$TMP/extract/usr/sbin/spoa-breaker
	dpkg-deb -x "$DEB" "$TMP/extract" &&
		readelf -lW "$bin" | grep -q GNU_RELRO &&
		readelf -d "$bin" | grep -q 'BIND_NOW' &&
		readelf -h "$bin" | grep -q 'DYN (Position-Independent' &&
		nm -D "$bin" | grep -q '__snprintf_chk' &&
		nm -D "$bin" | grep -q '__stack_chk_fail'
}
check "the packaged binary is hardened (RELRO, BIND_NOW, PIE, FORTIFY, stack protector)" hardened

# What purge must leave as it found it.
snapshot() {
	find /etc/haproxy -xdev -printf '%p %m %u %g\n' 2>/dev/null | sort
	find /etc/haproxy -xdev -type f -exec sha256sum {} + 2>/dev/null | sort
	getent group haproxy
	ls -d /etc/spoa-breaker /var/lib/spoa-breaker /usr/share/spoa-breaker /usr/share/doc/spoa-breaker 2>/dev/null
	find /var/lib/systemd/deb-systemd-helper-enabled /var/lib/systemd/deb-systemd-helper-masked \
		-name "*$PKG*" 2>/dev/null | sort
}
snapshot >"$TMP/before"

# Serialised with any other run of this suite on the machine.
exec 9>/run/lock/spoa-breaker-deb-test.lock
flock -w 300 9 || { echo "not ok - another run holds the package test's lock"; exit 1; }
# (check runs its command in a subshell: the flag is set out here.)
installed=1
check "dpkg -i installs it" dpkg -i "$DEB" || { finish; exit; }

system_user() {
	local uid
	uid=$(id -u "$PKG") && [ "$uid" -lt 1000 ] && getent group "$PKG" >/dev/null
}
check "postinst made the system user $PKG" system_user
conffiles() {
	dpkg-query -W -f='${Conffiles}\n' "$PKG" | awk 'NF {print $1}' | LC_ALL=C sort | tr '\n' ' ' |
		grep -qx '/etc/haproxy/breaker-watched.map /etc/haproxy/spoe-breaker-steady.conf /etc/haproxy/spoe-breaker.conf /etc/spoa-breaker/spoa-breaker.ini '
}
check "the INI and the SPOE files are conffiles" conffiles
names_version() {
	local expected
	expected="spoa-breaker $(sed -n 's/^VERSION *:= *//p' Makefile)${REVISION:+ (git $REVISION)}"
	[ "$(/usr/sbin/spoa-breaker --version)" = "$expected" ] || { /usr/sbin/spoa-breaker --version; return 1; }
}
check "the installed agent names its version and git revision" names_version
check "spoa-breaker --check accepts the shipped /etc/spoa-breaker/spoa-breaker.ini" \
	/usr/sbin/spoa-breaker --check -f /etc/spoa-breaker/spoa-breaker.ini
# The server-state file is HAProxy's, which the package leaves alone: its
# absence is the one warning allowed.
haproxy_check() {
	local out
	out=$(haproxy -c -f /usr/share/spoa-breaker/haproxy/haproxy.cfg 2>&1) || { echo "$out"; return 1; }
	! echo "$out" | grep -E 'WARNING|ALERT' | grep -v "server state file"
}
check "haproxy -c passes on the shipped example as installed" haproxy_check
example_check() {
	local dir=/usr/share/spoa-breaker/haproxy/examples/multi-backend out
	out=$(haproxy -c -f "$dir/haproxy.cfg" -f "$dir/spoa-breaker.cfg" 2>&1) || { echo "$out"; return 1; }
	! echo "$out" | grep -E 'WARNING|ALERT'
}
check "haproxy -c passes on the multi-backend example as installed" example_check
check "systemd-analyze verify passes on the installed unit" systemd-analyze verify /lib/systemd/system/spoa-breaker.service

# The installed binary runs as its user, answers /healthz and stops on TERM.
runs_as_user() {
	local spop admin pid status
	spop=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	admin=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	setpriv --reuid="$PKG" --regid="$PKG" --init-groups \
		/usr/sbin/spoa-breaker -f /etc/spoa-breaker/spoa-breaker.ini \
		--listen "127.0.0.1:$spop" --admin "127.0.0.1:$admin" &
	pid=$!
	for _ in $(seq 50); do curl -sf "http://127.0.0.1:$admin/healthz" >/dev/null && break; sleep 0.1; done
	curl -sf "http://127.0.0.1:$admin/healthz" || { kill "$pid"; return 1; }
	kill -TERM "$pid"
	wait "$pid"
	status=$?
	[ "$status" -eq 0 ] || { echo "exit status $status after TERM"; return 1; }
}
check "the installed agent runs as $PKG, answers /healthz and exits 0 on TERM" runs_as_user

# Removal hands HAProxy back. The agent runs from the package as its user,
# in its state directory (which systemd would make) so that its control
# socket is the packaged default, and drives a real HAProxy on loopback
# through the shipped SPOE file: w1 answers 500, w2 200.
LIB=/var/lib/$PKG
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
haproxy_cli() { echo "$1" | socat -t 2 - "UNIX-CONNECT:$SCENE/admin.sock"; }
w1_drained() { # srv_admin_state 8: drained
	local admin
	admin=$(haproxy_cli "show servers state workers" | awk '$4 == "w1" {print $7}')
	[ -n "$admin" ] && [ $((admin & 8)) -ne 0 ]
}
w1_owned() { haproxy_cli "show map $SCENE/breaker-owned.map" | grep -q ' workers/w1 drain$'; }
spawn() { # NAME COMMAND...: in the background, its PID in $SCENE/NAME.pid
	local name=$1
	shift
	"$@" >"$SCENE/$name.log" 2>&1 &
	echo $! >"$SCENE/$name.pid"
}
scene_drains_w1() {
	local fe spop w1 w2 i
	fe=$(free_port) spop=$(free_port) w1=$(free_port) w2=$(free_port)
	mkdir -p "$SCENE" && chmod 755 "$TMP" "$SCENE" || return 1
	install -d -o "$PKG" -g "$PKG" -m 0750 "$LIB" || return 1
	: >"$SCENE/breaker-owned.map"
	cat >"$SCENE/haproxy.cfg" <<-EOF
	global
	    stats socket $SCENE/admin.sock mode 660 level admin group $PKG
	defaults
	    mode http
	    timeout connect 1s
	    timeout client 5s
	    timeout server 5s
	frontend fe
	    bind 127.0.0.1:$fe
	    filter spoe engine breaker config /etc/haproxy/spoe-breaker.conf
	    default_backend workers
	backend workers
	    balance roundrobin
	    acl breaker_owned str(),map($SCENE/breaker-owned.map) -m found
	    server w1 127.0.0.1:$w1 weight 100
	    server w2 127.0.0.1:$w2 weight 100
	backend spoa-breaker
	    mode tcp
	    timeout connect 1s
	    timeout server 1m
	    option spop-check
	    server agent 127.0.0.1:$spop check inter 500ms
	EOF
	spawn w1 python3 "$REPO/tests/lib/worker.py" --name w1 --port "$w1" --behaviour 500
	spawn w2 python3 "$REPO/tests/lib/worker.py" --name w2 --port "$w2" --behaviour 200
	spawn agent setpriv --reuid="$PKG" --regid="$PKG" --init-groups \
		/usr/sbin/spoa-breaker -f /etc/spoa-breaker/spoa-breaker.ini --listen "127.0.0.1:$spop" \
		--admin none --runtime-api "unix:$SCENE/admin.sock"
	spawn haproxy haproxy -db -f "$SCENE/haproxy.cfg"
	wait_server_up "$SCENE/admin.sock" spoa-breaker agent || { tail -n 20 "$SCENE"/*.log; return 1; }
	for i in $(seq 200); do
		curl -s -o /dev/null -m 2 "http://127.0.0.1:$fe/"
		w1_drained && w1_owned && break
	done
	if ! { w1_drained && w1_owned; }; then
		echo "w1 not drained and recorded after $i requests"
		tail -n 20 "$SCENE/agent.log"
		return 1
	fi
	[ -S "$LIB/control.sock" ] || { echo "no control socket at $LIB/control.sock"; return 1; }
}
check "the packaged agent drains a failing server of a real HAProxy, recorded in breaker-owned.map" scene_drains_w1
remove_releases() {
	dpkg --remove "$PKG" >"$SCENE/remove.log" 2>&1 || { cat "$SCENE/remove.log"; return 1; }
	cat "$SCENE/remove.log"
	# Gone by the time dpkg --remove returns, record and all, and said.
	! w1_drained || { echo "w1 still drained"; return 1; }
	! w1_owned || { echo "breaker-owned.map still lists w1"; return 1; }
	grep -q "^spoa-breaker: the agent released HAProxy" "$SCENE/remove.log"
}
check "dpkg --remove: its prerm has the agent lift the drain it set in HAProxy" remove_releases
note "$(grep -h '^spoa-breaker:' "$SCENE/remove.log" 2>/dev/null)"
stop_scene

check "dpkg --purge removes it" dpkg --purge "$PKG" && installed=0

nothing_left() {
	local left=0 path
	for path in $(deb_files); do
		[ -e "$path" ] && { echo "left: $path"; left=1; }
	done
	getent passwd "$PKG" && { echo "user $PKG left"; left=1; }
	getent group "$PKG" && { echo "group $PKG left"; left=1; }
	dpkg-query -W -f='${Status}\n' "$PKG" 2>/dev/null | grep -qv '^unknown ok not-installed$\|^$' &&
		{ echo "dpkg still knows $PKG: $(dpkg-query -W -f='${Status}' "$PKG")"; left=1; }
	snapshot >"$TMP/after"
	diff -u "$TMP/before" "$TMP/after" || left=1
	return "$left"
}
check "nothing left behind; HAProxy's configuration as it was" nothing_left

finish
