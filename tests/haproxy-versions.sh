#!/bin/bash
# Prepares newer HAProxy releases next to Debian 12's 2.6, from Debian's own
# archive (trixie: 3.0, forky: 3.2, experimental: 3.4, the current LTS, in a
# sid tree with haproxy pinned to experimental), and prints one "VERSION PATH" line per
# HAProxy the end-to-end suites should run against. PATH is an executable
# that runs that haproxy on this host's network and files.
#
# The wrapper runs HAProxy chrooted in its tree, with /tmp, /dev, /proc and
# this repository mounted at their own paths in a private mount namespace:
# a master-worker HAProxy re-executes its own binary on reload, which must
# then find its own loader and libraries (run through the tree's ld.so, as
# a plain wrapper would, the re-executed binary cannot start). Needs root.
#
# Trees are cached in $HAPROXY_CACHE (default /var/cache/spoa-breaker) and
# rebuilt only when missing. A suite that cannot be fetched is reported on
# stderr and left out, never faked.
set -u

CACHE=${HAPROXY_CACHE:-/var/cache/spoa-breaker}
REPO=$(cd "$(dirname "$0")/.." && pwd)
SUITES=${HAPROXY_SUITES:-"trixie forky experimental"}

version_of() {
	"$1" -v 2>/dev/null | sed -n 's/^HAProxy version \([0-9.]*\).*/\1/p'
}

echo "$(version_of haproxy) $(command -v haproxy)"

mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}

for suite in $SUITES; do
	dir=$CACHE/haproxy-$suite
	# One wrapper per checkout: it mounts this repository, and another
	# checkout running its tests at the same time must not rewrite it.
	wrapper=$CACHE/haproxy-$suite-$(printf '%s' "$REPO" | md5sum | cut -c1-8).run
	if [ ! -x "$dir/usr/sbin/haproxy" ]; then
		command -v mmdebstrap >/dev/null || { echo "haproxy-versions: mmdebstrap missing, skipping $suite" >&2; continue; }
		mkdir -p "$CACHE"
		rm -rf "$dir"
		# experimental is not a suite of its own: a sid tree that takes
		# haproxy alone from experimental.
		base=$suite sources=("deb $mirror $suite main") hooks=()
		if [ "$suite" = experimental ]; then
			base=sid
			sources=("deb $mirror sid main" "deb $mirror experimental main")
			hooks=(--setup-hook='mkdir -p "$1/etc/apt/preferences.d" && printf "Package: haproxy\nPin: release a=experimental\nPin-Priority: 990\n" >"$1/etc/apt/preferences.d/haproxy"')
		fi
		if ! mmdebstrap --quiet --variant=minbase --mode=root --format=directory --include=haproxy \
			--aptopt='Acquire::Check-Valid-Until "false"' \
			--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "${hooks[@]}" \
			"$base" "$dir" "${sources[@]}" >"$CACHE/$suite.log" 2>&1; then
			echo "haproxy-versions: could not fetch HAProxy from $suite (see $CACHE/$suite.log)" >&2
			rm -rf "$dir"
			continue
		fi
	fi
	cat >"$wrapper" <<WRAP
#!/bin/sh
# Runs HAProxy from $suite chrooted in $dir (see tests/haproxy-versions.sh).
# No fork: unshare, sh and chroot each exec the next, so this PID is
# HAProxy's own and a TERM stops it at once. (unshare --fork would wait
# with TERM blocked, and the caller's TERM would be lost.)
exec unshare --mount --propagation private sh -c '
for path in /tmp /dev /proc "$REPO"; do
	mkdir -p "$dir\$path" && mount --rbind "\$path" "$dir\$path" || exit 1
done
cd "\$PWD" 2>/dev/null || cd /
exec chroot "$dir" /usr/sbin/haproxy "\$@"' haproxy "\$@"
WRAP
	chmod +x "$wrapper"
	v=$(version_of "$wrapper")
	if [ -z "$v" ]; then
		echo "haproxy-versions: HAProxy from $suite does not run here" >&2
		continue
	fi
	echo "$v $wrapper"
done
