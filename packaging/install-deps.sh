#!/bin/sh
# Installs the Debian packages spoa-breaker needs to build, run its demo and
# pass its tests -- only those missing, so it is a no-op on a ready machine.
set -eu

# Build, tests and demo; then what the packaging suites use (tests/packaging/:
# the manual page, the systemd unit, the Debian package, the container image).
PACKAGES="gcc make pkg-config libev-dev libinih-dev libmsgpack-dev libmicrohttpd-dev libcmocka-dev
clang libclang-rt-14-dev haproxy bats bats-assert bats-support python3 curl socat iproute2 mmdebstrap
scdoc man-db systemd build-essential debhelper lintian podman runc catatonit python3-yaml"

missing=""
for pkg in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $pkg"
	fi
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
