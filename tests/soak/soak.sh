#!/bin/bash
# make soak: HAProxy (master-worker, the shipped haproxy.cfg and
# reload-haproxy.sh), the agent of SOAK_BUILD (build or build-asan), three
# loopback workers, open-loop traffic and a seeded random schedule of
# faults, the invariants checked all along (tests/soak/soak.py says which,
# and docs/soak.md what the figures mean). Everything binds 127.0.0.1 or a
# unix socket in a directory of its own, removed afterwards unless a check
# failed.
#   SOAK_SECONDS (600)  SOAK_SEED (random, printed)  SOAK_RATE (60 requests/s)
#   SOAK_MIX ("kind=weight,...")  SOAK_BREAK (operator-drain: must fail)
#   SOAK_PEERS (1: peers mode, two nodes sharing verdicts; docs/soak.md)
#   SOAK_AGENT (none: the same schedule without the agent, for comparison)
#   HAPROXY_BIN (haproxy; tests/haproxy-versions.sh lists others)
set -u
cd "$(dirname "$0")/../.."
SOAK_BUILD=${SOAK_BUILD:-build}
SPOA_BIN=${SPOA_BIN:-$PWD/$SOAK_BUILD/spoa-breaker}
[ -x "$SPOA_BIN" ] || { echo "soak: no agent at $SPOA_BIN (make BUILD=$SOAK_BUILD all)" >&2; exit 1; }
SOAK_ASAN=0
[ "$SOAK_BUILD" = build-asan ] && SOAK_ASAN=1
SOAK_DIR=$(mktemp -d /tmp/soak.XXXXXX)
export SOAK_DIR SOAK_REPO=$PWD SPOA_BIN SOAK_ASAN HAPROXY_BIN=${HAPROXY_BIN:-haproxy}
python3 -u tests/soak/soak.py
status=$?
if [ "$status" -eq 0 ]; then
	rm -rf "$SOAK_DIR"
else
	echo "soak: logs kept in $SOAK_DIR" >&2
fi
exit "$status"
