#!/bin/sh
# Reloads HAProxy without losing what the breakers set: dumps `show servers
# state` into the server-state-file first (haproxy.cfg loads it at start),
# then reloads through the master CLI when HAPROXY_MASTER_SOCKET is set, or
# with `systemctl reload haproxy` otherwise. maxconn is not part of the
# state file; the agent re-applies it at its next reconciliation.
#
# When BREAKER_OWNED_MAP names the file haproxy.cfg loads the agent's
# ownership record from, the record is written there too: a drain the
# state file brings back is then still known as the agent's, even to an
# agent started without its own snapshot at the same time.
#
#   reload-haproxy.sh          save, then reload
#   reload-haproxy.sh save     save only: before stopping HAProxy for a restart
set -eu
ADMIN=${BREAKER_ADMIN_SOCKET:-/run/haproxy/admin.sock}
STATE=${BREAKER_STATE_FILE:-/var/lib/haproxy/server-state}
OWNED=${BREAKER_OWNED_MAP:-}

case "${1:-reload}" in
reload | save) ;;
*)
	echo "usage: reload-haproxy.sh [save]" >&2
	exit 2
	;;
esac

ask() {
	echo "$1" | socat -t 5 stdio "UNIX-CONNECT:$ADMIN"
}

# Each file is written aside, then renamed: HAProxy never reads a
# half-written one, and a bad answer leaves the old one as it was.
ask "show servers state" >"$STATE.new"
head -n1 "$STATE.new" | grep -qx 1 || {
	echo "reload-haproxy: unexpected answer from $ADMIN to show servers state, $STATE left as it was" >&2
	rm -f "$STATE.new"
	exit 1
}

if [ -n "$OWNED" ]; then
	# `show map` lines are "0xADDR KEY VALUE"; a map file holds "KEY VALUE".
	# Anything else (an unknown map, an error) is no record to keep, and
	# neither is no answer at all: an empty map's is one empty line.
	ask "show map $OWNED" >"$OWNED.reply"
	if [ ! -s "$OWNED.reply" ] || grep -qv -e '^0x[0-9a-f]* ' -e '^$' "$OWNED.reply"; then
		echo "reload-haproxy: $ADMIN does not list the map $OWNED" \
			"(does haproxy.cfg load it from BREAKER_OWNED_MAP?): $(head -n1 "$OWNED.reply"), left as it was" >&2
		rm -f "$OWNED.reply" "$STATE.new"
		exit 1
	fi
	sed -n 's/^0x[0-9a-f]* //p' "$OWNED.reply" >"$OWNED.new"
	rm -f "$OWNED.reply"
	mv "$OWNED.new" "$OWNED"
fi
mv "$STATE.new" "$STATE"

[ "${1:-reload}" = save ] && exit 0
if [ -n "${HAPROXY_MASTER_SOCKET:-}" ]; then
	echo reload | socat -t 5 stdio "UNIX-CONNECT:$HAPROXY_MASTER_SOCKET"
else
	systemctl reload haproxy
fi
