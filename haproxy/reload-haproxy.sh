#!/bin/sh
# Reloads HAProxy without losing what the breakers set: dumps `show servers
# state` into the server-state-file first (haproxy.cfg loads it at start),
# then reloads through the master CLI when HAPROXY_MASTER_SOCKET is set, or
# with `systemctl reload haproxy` otherwise. maxconn is not part of the
# state file; the agent re-applies it at its next reconciliation.
set -eu
ADMIN=${BREAKER_ADMIN_SOCKET:-/run/haproxy/admin.sock}
STATE=${BREAKER_STATE_FILE:-/var/lib/haproxy/server-state}

# Written aside, then renamed: a reload never reads a half-written file.
echo "show servers state" | socat -t 5 stdio "UNIX-CONNECT:$ADMIN" >"$STATE.new"
head -n1 "$STATE.new" | grep -qx 1 || {
	echo "reload-haproxy: unexpected answer from $ADMIN, state file left as it was" >&2
	rm -f "$STATE.new"
	exit 1
}
mv "$STATE.new" "$STATE"

if [ -n "${HAPROXY_MASTER_SOCKET:-}" ]; then
	echo reload | socat -t 5 stdio "UNIX-CONNECT:$HAPROXY_MASTER_SOCKET"
else
	systemctl reload haproxy
fi
