#!/bin/bash
# The container image: built with podman from the Dockerfile, then run as
# it ships against a real HAProxy of the host. The container gets no
# network but its own loopback (--network=none); HAProxy, a worker and
# curl are host programs run inside that network namespace (nsenter), so
# the agent listens on the container's every interface, as by default, and
# nothing is bridged or published. Checked: HAProxy's HELLO health check
# brings the agent in, NOTIFYs are answered (the x-breaker-* headers of
# tests/e2e/haproxy.cfg.in), the image's HEALTHCHECK passes and can fail,
# and TERM alone stops it with exit 0, as PID 1 and under --init.
# Skips (77) only where podman cannot run a container at all.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/podman.sh"
cd "$REPO" || exit 1

IMAGE=localhost/spoa-breaker:check
[ "$(id -u)" -eq 0 ] || skip_suite "podman here needs root"
command -v podman >/dev/null || skip_suite "podman is not installed"

RUN_DIR=$(mktemp -d /tmp/spoa-breaker-image.XXXXXX)
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	wait 2>/dev/null
	podman_teardown image
	rm -rf "$RUN_DIR"
}
trap cleanup EXIT
podman_setup

check "the base image $BASE_IMAGE, from Debian's archive" base_image || { finish; exit; }
podman run --rm --pull=never --network=none "$BASE_IMAGE" true >"$RUN_DIR/podman.log" 2>&1 ||
	{ cat "$RUN_DIR/podman.log"; skip_suite "podman cannot run a container here"; }

REVISION=${REVISION:-$(git describe --always --dirty 2>/dev/null)}
build() {
	podman build --pull=never --network=host --format docker --build-arg REVISION="$REVISION" \
		-t "$IMAGE" . >"$RUN_DIR/build.log" 2>&1 || { tail -n 40 "$RUN_DIR/build.log"; return 1; }
}
check "podman build" build || { finish; exit; }
note "image: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1 / 1e6}')"

p() { podman_quiet "$@"; }

# PYTHON_EXPRESSION over the image's config, c (podman keeps the health
# check beside it, docker in it).
config_is() {
	podman image inspect "$IMAGE" | python3 -c '
import json, sys
image = json.load(sys.stdin)[0]
c = dict(image["Config"])
c.setdefault("Healthcheck", image.get("Healthcheck") or {})
ok = eval(sys.argv[1])
print(json.dumps(c, indent=1) if not ok else "", end="")
sys.exit(0 if ok else 1)' "$1"
}
check "runs as a non-root user" config_is 'c.get("User") not in (None, "", "root", "0")'
check "exposes SPOP (12345) and the admin listener (9786)" config_is 'set(c["ExposedPorts"]) == {"12345/tcp", "9786/tcp"}'
check "has a volume for /var/lib/spoa-breaker" config_is '"/var/lib/spoa-breaker" in c.get("Volumes", {})'
check "has a HEALTHCHECK (kept by --format docker)" config_is '"/healthz" in " ".join(c.get("Healthcheck", {}).get("Test", []))'
check "runs the agent on the container's loopback by default (a sidecar HAProxy shares it)" \
	config_is 'c["Entrypoint"] == ["/usr/sbin/spoa-breaker"] and c["Cmd"] == ["--listen", "127.0.0.1:12345", "--admin", "127.0.0.1:9786"]'

names_revision() {
	local out
	out=$(p run --rm --pull=never --network=none "$IMAGE" --version) || return 1
	echo "$out"
	[ -z "$REVISION" ] || [ "$out" = "spoa-breaker $(sed -n 's/^VERSION *:= *//p' Makefile) (git $REVISION)" ]
}
check "--version names the git revision" names_revision
runtime_only() {
	p run --rm --pull=never --network=none --entrypoint dpkg-query "$IMAGE" -W libmsgpackc2 libev4 libinih1 libmicrohttpd12 libssl3 &&
		! p run --rm --pull=never --network=none --entrypoint bash "$IMAGE" -c 'command -v gcc || command -v make'
}
check "the runtime stage has the libraries (msgpack-c too) and no compiler" runtime_only

refuses_exposed_spop() {
	local out
	out=$(p run --rm --pull=never --network=none "$IMAGE" --listen 0.0.0.0:12345 --check 2>&1) && return 1
	echo "$out"
	grep -q "is not a loopback address and nothing says who may connect: set allow" <<<"$out"
}
check "--listen 0.0.0.0 without --allow is refused, naming the key" refuses_exposed_spop

# The agent as the image runs it, and the host's HAProxy in its network.
AGENT=$(p run -d --pull=never --name image-agent --network=none "$IMAGE") || { check "the container starts" false; finish; exit; }
NETNS=/proc/$(podman inspect --format '{{.State.Pid}}' "$AGENT")/ns/net
in_net() { nsenter --net="$NETNS" "$@"; }

FE_PORT=8080 W1_PORT=8101 AGENT_ADDR=127.0.0.1:12345 SPOE_CONF=$REPO/haproxy/spoe-breaker.conf
sed -e "s|@RUN_DIR@|$RUN_DIR|g" -e "s|@FE_PORT@|$FE_PORT|g" -e "s|@W1_PORT@|$W1_PORT|g" \
	-e "s|@AGENT_ADDR@|$AGENT_ADDR|g" -e "s|@SPOE_CONF@|$SPOE_CONF|g" \
	tests/e2e/haproxy.cfg.in >"$RUN_DIR/haproxy.cfg"
# nsenter itself, not the in_net function: a function sent to the
# background runs in a subshell of its own, and $! would be that subshell,
# whose end leaves HAProxy running.
nsenter --net="$NETNS" python3 tests/lib/worker.py --name w1 --port "$W1_PORT" --behaviour 200 \
	>"$RUN_DIR/worker.log" 2>&1 &
PIDS+=($!)
nsenter --net="$NETNS" haproxy -db -f "$RUN_DIR/haproxy.cfg" >"$RUN_DIR/haproxy.log" 2>&1 &
PIDS+=($!)

agent_up() {
	wait_server_up "$RUN_DIR/admin.sock" spoa-breaker agent || { tail -n 20 "$RUN_DIR/haproxy.log"; return 1; }
}
check "HAProxy's HELLO health check (option spop-check) brings the agent in" agent_up

headers_of() { in_net curl -s -o /dev/null -D - "http://127.0.0.1:$FE_PORT$1" | tr -d '\r'; }
answered() { # PATH OUTCOME STATUS
	local h
	h=$(past_agent_timeouts headers_of "$1")
	echo "$h" | grep -qx "x-breaker-outcome: $2" && echo "$h" | grep -qx "x-breaker-upstream-status: $3" &&
		echo "$h" | grep -qx "x-breaker-state: closed" || { echo "$h"; return 1; }
}
check "a NOTIFY is answered: success for a 200" answered / success 200
check "a NOTIFY is answered: backpressure for a 503" answered /status/503 backpressure 503

# A third container, its namespace linked to the agent's: the image as it
# ships listens on loopback only, so neither port is open to it (the
# connection is refused, so the path itself works).
third_container image-third "$NETNS" >"$RUN_DIR/third.log" 2>&1
check "a third container, its own network namespace linked to the agent's" \
	bash -c "cat '$RUN_DIR/third.log'; exit $?"
check "  ... SPOP (12345) refuses it" third_is_refused 12345
check "  ... the admin listener (9786) refuses it" third_is_refused 9786

check "podman healthcheck run: healthy" podman_healthy "$AGENT"
check "the state directory is the agent's to write" p exec "$AGENT" touch /var/lib/spoa-breaker/.written
check "the operator's control socket answers as shipped (podman exec ... spoa-breaker ctl)" \
	bash -c "podman exec '$AGENT' /usr/sbin/spoa-breaker ctl show breakers | grep -q '^# backend/server'"
check "the agent is the container's PID 1" bash -c "podman exec '$AGENT' cat /proc/1/cmdline | tr '\\0' ' ' | grep -q '^/usr/sbin/spoa-breaker '"

# TERM, as podman stop sends it, and nothing after it: a PID 1 that left
# TERM to the kernel's default would ignore it (podman stop would then
# SIGKILL it at its timeout: exit 137). Exit 0 and the agent's own
# "stopped" line say it handled TERM itself. No time is asserted (a
# loaded machine makes podman itself slow); the wait is bounded only so
# that an agent ignoring TERM fails the check instead of hanging it.
stops_on_term() { # CONTAINER
	local status
	podman kill --signal TERM "$1" >/dev/null || return 1
	status=$(timeout 120 podman wait "$1" 2> >(grep -v "$PODMAN_NOISE" >&2)) || return 1
	echo "exit $status"
	podman logs "$1" 2>&1 | grep -E 'signal|stopping|stopped' | tr '\n' ' '
	[ "$status" = 0 ] && podman logs "$1" 2>&1 | grep -q 'spoa-breaker stopped'
}
# The agent has started (its signal handlers are set before it says so).
agent_started() { # CONTAINER
	local _
	for _ in $(seq 600); do
		podman logs "$1" 2>&1 | grep -q 'spoa-breaker .* started' && return 0
		sleep 0.1
	done
	return 1
}
check "TERM as PID 1, HAProxy connected: exit 0, stopped by the agent itself" stops_on_term "$AGENT"

INIT=$(p run -d --pull=never --name image-init --network=none --init "$IMAGE")
check "the agent under --init has started" agent_started "$INIT"
check "TERM under --init: exit 0, stopped by the agent itself" stops_on_term "$INIT"

# The health check can fail: no admin listener, no /healthz.
UNHEALTHY=$(p run -d --pull=never --name image-unhealthy --network=none "$IMAGE" --listen 127.0.0.1:12345 --admin none)
sleep 0.5
check "podman healthcheck run: unhealthy without the admin listener" bash -c "! podman healthcheck run '$UNHEALTHY' 2>/dev/null"

finish
