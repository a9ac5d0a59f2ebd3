#!/bin/bash
# packaging/compose.yaml: it loads, agrees with haproxy.cfg's defaults and
# the agent's options, and runs. The run uses tests/packaging/compose_run.py
# (plain podman; see there why not podman-compose), with the namespace
# every service joins given no network: HAProxy is reached inside it,
# through nsenter, and its stats socket through the shared volume. Checked:
# the agent is brought in, NOTIFYs answered, a broken worker drained by the
# agent through the shared socket, the agent's health check. The run is
# skipped (77) only where podman cannot run a container at all.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/podman.sh"
cd "$REPO" || exit 1

COMPOSE=packaging/compose.yaml
RUNNER=tests/packaging/compose_run.py
PROJECT=compose

check "compose.yaml loads, with only keys the runner knows" python3 "$RUNNER" check "$COMPOSE" || { finish; exit; }

# The file against haproxy.cfg: the addresses HAProxy is given (or its
# defaults) are those the agent and the workers use, and the agent reaches
# the stats socket HAProxy makes through a volume both mount.
agrees_with_haproxy_cfg() {
	python3 - "$COMPOSE" haproxy/haproxy.cfg <<'PY'
import re, sys, yaml
compose = yaml.safe_load(open(sys.argv[1]))
services = compose["services"]
defaults = dict(re.findall(r'"\$\{(BREAKER_[A-Z0-9_]+)-([^}]*)\}"', open(sys.argv[2]).read()))
env = dict(defaults, **(services["haproxy"].get("environment") or {}))
problems = []
def option(command, name):
    return [command[i + 1] for i, word in enumerate(command) if word == name]
for name, service in services.items():
    if name != "haproxy" and service.get("network_mode") != "service:haproxy":
        problems.append(f"{name} is not in HAProxy's network namespace")
agent = [str(w) for w in services["agent"]["command"]]
if option(agent, "--listen") != [env["BREAKER_AGENT"]]:
    problems.append(f"agent listens on {option(agent, '--listen')}, HAProxy connects to {env['BREAKER_AGENT']}")
socket = env["BREAKER_ADMIN_SOCKET"]
if option(agent, "--runtime-api") != ["unix:" + socket]:
    problems.append(f"agent drives {option(agent, '--runtime-api')}, HAProxy's socket is {socket}")
directory = socket.rsplit("/", 1)[0]
mounts = lambda s: {v.split(":")[1]: v.split(":")[0] for v in services[s].get("volumes", [])}
if not mounts("haproxy").get(directory) or mounts("haproxy").get(directory) != mounts("agent").get(directory):
    problems.append(f"HAProxy and the agent do not share a volume at {directory}")
for n in (1, 2, 3):
    port = option([str(w) for w in services[f"w{n}"]["command"]], "--port")
    if ["127.0.0.1:" + p for p in port] != [env[f"BREAKER_W{n}"]]:
        problems.append(f"w{n} listens on port {port}, HAProxy sends to {env[f'BREAKER_W{n}']}")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}
check "its services agree with haproxy.cfg: SPOP address, workers, shared stats socket" agrees_with_haproxy_cfg

agent_options_valid() {
	local args
	mapfile -t args < <(python3 -c '
import sys, yaml
sys.path.insert(0, "tests/packaging")
from compose_run import load
print("\n".join(str(w) for w in load(sys.argv[1])["services"]["agent"]["command"]))' "$COMPOSE")
	make --no-print-directory BUILD="$BUILD" all >/dev/null && "$BUILD/spoa-breaker" --check "${args[@]}"
}
check "the agent's command line passes spoa-breaker --check" agent_options_valid
if command -v podman-compose >/dev/null; then
	check "podman-compose config reads it" podman-compose -f "$COMPOSE" config
fi

[ "$(id -u)" -eq 0 ] || skip_suite "podman here needs root"
command -v podman >/dev/null || skip_suite "podman is not installed"
trap 'python3 "$RUNNER" down "$COMPOSE" "$PROJECT" 2>/dev/null; podman_teardown "$PROJECT"' EXIT
podman_setup
check "the base image $BASE_IMAGE" base_image || { finish; exit; }
podman run --rm --pull=never --network=none "$BASE_IMAGE" true >/dev/null 2>&1 ||
	skip_suite "podman cannot run a container here"

up() { python3 "$RUNNER" up "$COMPOSE" "$PROJECT" 2>&1 | grep -v "$PODMAN_NOISE"; return "${PIPESTATUS[0]}"; }
check "up: the images built, the volumes made, five services started" up || { finish; exit; }

NETNS=/proc/$(podman inspect --format '{{.State.Pid}}' "$PROJECT-haproxy")/ns/net
SOCKET=$(podman volume inspect --format '{{.Mountpoint}}' "$PROJECT-haproxy-run")/admin.sock
cli() { echo "$*" | socat -t 2 - "UNIX-CONNECT:$SOCKET"; }
agent_up() {
	wait_server_up "$SOCKET" spoa-breaker agent || { podman logs "$PROJECT-haproxy" 2>&1 | tail -n 20; return 1; }
}
check "HAProxy brings the agent in" agent_up

# Steady-state mode, the shipped default: a capacity status is sent (a
# clean worker's success is not, so it carries no verdict).
headers_of_429() {
	nsenter --net="$NETNS" curl -s -o /dev/null -D - -H 'x-breaker-debug: 1' http://127.0.0.1:8080/status/429 | tr -d '\r'
}
answered() {
	local h
	h=$(past_agent_timeouts headers_of_429)
	echo "$h" | grep -qx 'x-breaker-outcome: backpressure' && echo "$h" | grep -qx 'x-breaker-state: closed' || { echo "$h"; return 1; }
}
check "a request through HAProxy gets the agent's verdict" answered

# w3 answers 500: after the threshold's failures the agent drains it,
# through the socket in the shared volume (srv_admin_state 8).
w3_drained() {
	for _ in $(seq 40); do
		nsenter --net="$NETNS" curl -s -o /dev/null http://127.0.0.1:8080/
		[ "$(($(cli "show servers state workers" | awk '$4 == "w3" {print $7}') & 8))" -ne 0 ] && return 0
	done
	podman logs "$PROJECT-agent" 2>&1 | tail -n 20
	return 1
}
check "the agent drains the broken worker w3 through the shared socket" w3_drained
check "the agent's health check passes" podman_healthy "$PROJECT-agent"

# A third container, not in the file, its namespace linked to the
# project's: SPOP is on loopback, shut to it; the admin listener is on
# every interface but lets in only --admin-allow, which does not name it.
# (That list names the private ranges the published port's forwarding
# arrives from: a neighbour with an address in them would be let in to
# read the pages. docs/security.md says to narrow it.)
THIRD_LOG=$(mktemp)
third_container "$PROJECT-third" "$NETNS" >"$THIRD_LOG" 2>&1
check "a third container, not in the file, its own network namespace linked to the project's" \
	bash -c "cat '$THIRD_LOG'; rm -f '$THIRD_LOG'; exit $?"
check "  ... SPOP (12345) refuses it" third_is_refused 12345
check "  ... the admin listener (9786) closes on it without an answer" third_gets_no_answer 9786 /metrics
podman rm --force --time 0 "$PROJECT-third" >/dev/null 2>&1 # not the file's: down leaves it

down() {
	python3 "$RUNNER" down "$COMPOSE" "$PROJECT" &&
		[ -z "$(podman ps --all --quiet --filter "name=^$PROJECT-")" ] &&
		[ -z "$(podman volume ls --quiet --filter "name=^$PROJECT-")" ]
}
check "down removes its containers and volumes" down

finish
