#!/bin/bash
# make install lays the files out as the Debian package does, the example
# haproxy.cfg passes haproxy -c where it was installed, an edited
# configuration survives a second install and an uninstall, and uninstall
# removes everything else. Installs into a temporary PREFIX, never /usr.
set -u
. "$(dirname "$0")/lib.sh"
cd "$REPO" || exit 1

TMP=$(mktemp -d /tmp/spoa-breaker-install.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
P=$TMP/prefix
mk() { make --no-print-directory BUILD="$BUILD" PREFIX="$P" "$@"; }

check "make install PREFIX=$P" mk install || { finish; exit; }

expected_files() {
	cat <<LIST
etc/haproxy/breaker-watched.map
etc/haproxy/spoe-breaker-steady.conf
etc/haproxy/spoe-breaker.conf
etc/spoa-breaker/spoa-breaker.ini
lib/systemd/system/spoa-breaker.service
sbin/spoa-breaker
share/doc/spoa-breaker/CHANGELOG.md
share/doc/spoa-breaker/LICENSE
share/doc/spoa-breaker/README.md
share/man/man8/spoa-breaker.8
share/spoa-breaker/grafana-dashboard.json
share/spoa-breaker/haproxy/breaker-owned.map
share/spoa-breaker/haproxy/breaker-peers.cfg
share/spoa-breaker/haproxy/breaker-retry-at.map
share/spoa-breaker/haproxy/breaker-watched.map
share/spoa-breaker/haproxy/examples/multi-backend/haproxy.cfg
share/spoa-breaker/haproxy/examples/multi-backend/spoa-breaker.cfg
share/spoa-breaker/haproxy/examples/multi-backend/spoa-breaker.ini
share/spoa-breaker/haproxy/examples/multi-backend/spoe-guarded-steady.conf
share/spoa-breaker/haproxy/examples/multi-backend/spoe-guarded.conf
share/spoa-breaker/haproxy/haproxy.cfg
share/spoa-breaker/haproxy/reload-haproxy.sh
share/spoa-breaker/haproxy/router-conditions.map
share/spoa-breaker/haproxy/router-errors.map
LIST
	(cd haproxy && ls router-errors/*) | sed 's|^|share/spoa-breaker/haproxy/|'
	ls docs/*.md | sed 's|^|share/doc/spoa-breaker/|'
}
installed_files() { (cd "$P" && find . -type f -o -type l) | sed 's|^\./||' | sort; }
same_files() { diff -u <(expected_files | sort) <(installed_files); }
check "every file where the package puts it, and nothing else" same_files

# As installed: the SPOE file from sysconfdir, maps and templates next to
# haproxy.cfg. The server-state file is HAProxy's; its absence is the one
# warning allowed.
haproxy_check() {
	local out
	out=$(haproxy -c -f "$P/share/spoa-breaker/haproxy/haproxy.cfg" 2>&1) || { echo "$out"; return 1; }
	! echo "$out" | grep -E 'WARNING|ALERT' | grep -v "server state file"
}
check "the installed haproxy.cfg passes haproxy -c as installed" haproxy_check
# The multi-backend example, as installed: the SPOE file (steady-state
# mode's) and the maps it names are where its defaults say; the
# every-response SPOE file too.
example_check() { # [SPOE FILE]
	local dir=$P/share/spoa-breaker/haproxy/examples/multi-backend out
	out=$(env ${1:+BREAKER_SPOE_CONF="$dir/$1"} haproxy -c -f "$dir/haproxy.cfg" -f "$dir/spoa-breaker.cfg" 2>&1) ||
		{ echo "$out"; return 1; }
	! echo "$out" | grep -E 'WARNING|ALERT'
}
check "the installed multi-backend example passes haproxy -c as installed" example_check
check "  ... and with its every-response SPOE file" example_check spoe-guarded.conf
check "the installed agent accepts the multi-backend example's configuration" \
	"$P/sbin/spoa-breaker" --check -f "$P/share/spoa-breaker/haproxy/examples/multi-backend/spoa-breaker.ini"
check "the installed agent accepts the installed configuration" \
	"$P/sbin/spoa-breaker" --check -f "$P/etc/spoa-breaker/spoa-breaker.ini"
check "the unit starts the installed binary on the installed configuration" \
	grep -qx "ExecStart=$P/sbin/spoa-breaker -f $P/etc/spoa-breaker/spoa-breaker.ini" \
	"$P/lib/systemd/system/spoa-breaker.service"

echo "threshold = 5" >>"$P/etc/spoa-breaker/spoa-breaker.ini"
edited=$(cat "$P/etc/spoa-breaker/spoa-breaker.ini")
kept() {
	[ "$(cat "$P/etc/spoa-breaker/spoa-breaker.ini")" = "$edited" ] &&
		cmp packaging/spoa-breaker.ini "$P/etc/spoa-breaker/spoa-breaker.ini.new"
}
check "a second install keeps an edited configuration, the new one beside it" mk install
check "  ... which is there, with the shipped one as .new" kept

check "make uninstall" mk uninstall
only_edited_left() {
	[ "$(installed_files)" = "etc/spoa-breaker/spoa-breaker.ini" ] || { installed_files; return 1; }
}
check "uninstall removes everything but the edited configuration" only_edited_left

finish
