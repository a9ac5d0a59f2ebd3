#!/bin/sh
# Installs the Debian packages `make bench` needs -- only those missing, so
# it is a no-op on a ready machine: the agent's build dependencies, HAProxy
# (Debian 12's 2.6, with Lua), wrk, taskset (util-linux), socat for
# HAProxy's stats socket, curl for the admin listener, python3 for a free
# port. mmdebstrap is optional: tests/haproxy-versions.sh uses it for 3.0
# and 3.2, and the benchmark runs without them when it cannot.
set -eu

PACKAGES="gcc make pkg-config libev-dev libinih-dev libmsgpack-dev libmicrohttpd-dev libssl-dev
haproxy wrk util-linux socat curl python3 procps mmdebstrap"

missing=""
for pkg in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $pkg"
	fi
done
[ -z "$missing" ] && exit 0

echo "bench: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
