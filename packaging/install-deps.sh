#!/bin/sh
# Installs the Debian 12 packages spoa-breaker needs -- only those missing,
# so it is a no-op on a ready machine. As root, or through sudo.
#
#   install-deps.sh demo   what make demo needs: build the agent, run HAProxy,
#                          the agent and the demo's workers (haproxy/demo.sh)
#   install-deps.sh [all]  that, and what make check needs for every test
#
# A bare Debian 12 (its Essential and required packages: bash, mawk, sed,
# coreutils, apt) is enough to start from; nothing else is assumed.
set -eu

# Build: the C compiler and the C library's headers (gcc only recommends
# them), make, pkg-config, the five libraries (libssl-dev: TLS on SPOP). The demo: HAProxy, python3
# for the workers, curl for the requests, socat for HAProxy's stats socket.
DEMO="gcc libc6-dev make pkg-config libev-dev libinih-dev libmsgpack-dev libmicrohttpd-dev
libssl-dev haproxy python3 curl socat"

# The tests: cmocka (unit), clang and its runtime (fuzz, sanitizers), bats,
# iproute2 (ss), mmdebstrap (the other HAProxy versions, the fresh-machine
# suite), python3-yaml (the compose file), dnsmasq-base (the DNS server the
# server-template suite re-points slots with), openssl (the TLS suite makes its
# certificates with it), prometheus (its promtool checks and tests the alert
# rules: tests/check-alerts.sh); then what the packaging suites
# use (tests/packaging/: the manual page, the systemd unit, the Debian
# package, the container image; yamllint: the Kubernetes manifests).
ALL="$DEMO libcmocka-dev clang libclang-rt-14-dev bats bats-assert bats-support iproute2 mmdebstrap
python3-yaml dnsmasq-base openssl prometheus scdoc man-db systemd build-essential debhelper lintian podman runc catatonit libfaketime
yamllint"

case "${1:-all}" in
demo) PACKAGES=$DEMO ;;
all) PACKAGES=$ALL ;;
*)
	echo "usage: $0 [demo|all]" >&2
	exit 2
	;;
esac

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
# DEBIAN_FRONTEND through env: sudo would drop it from the environment.
run_apt() { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
run_apt update -qq
# shellcheck disable=SC2086
run_apt install -y -qq --no-install-recommends $missing >/dev/null
