#!/bin/bash
# packaging/kubernetes/: every manifest passes yamllint, the ingress
# controller's pieces agree with the shipped SPOE file and the agent's
# options, and the plain HAProxy sidecar manifest (haproxy-sidecar.yaml)
# runs with `podman kube play`, driven as a kubelet and a client would:
#  - the pod is played with no network but its loopback; a "node" (a
#    container of the base image, its own network namespace) is joined to
#    it by a veth pair, 10.244.1.1 on the node's side and 10.244.1.5, the
#    pod's address, on the pod's: the kubelet's probes and the clients
#    come from there, as they come from outside a pod in a cluster;
#  - what the test adds to the manifest, and only that: the demo workers
#    (tests/lib/worker.py: w1 200, w2 503, w3 500) as containers of the
#    pod on haproxy.cfg's default addresses, instead of BREAKER_W1..3; and
#    no `ports` (podman 4.3 publishes them, which needs a bridge; nothing
#    here reads them but this script, from the manifest as shipped).
# Checked: a failing worker is drained through the socket in the shared
# emptyDir, a busy one (503) never; each of the agent's probes passes from
# the node while it runs and fails once it is stopped, while HAProxy goes
# on serving; restarted, the agent has its breakers back from its
# emptyDir; the agent runs as a non-root user, with no capability, on a
# read-only root filesystem. Then the ingress controller's pod the
# shipped patch makes (ingress-haproxytech/), around a stand-in for the
# controller (see there), played and driven the same way. The images are
# built only when the podman directory check.sh shares (SPOA_PODMAN_DIR)
# does not already hold them: the compose suite builds the same two.
# Skips (77) only where podman cannot run a container at all.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/podman.sh"
cd "$REPO" || exit 1

KUBE=packaging/kubernetes
SIDECAR=$KUBE/haproxy-sidecar.yaml

check "yamllint: every manifest and values file of $KUBE" yamllint --strict -c "$KUBE/.yamllint" "$KUBE"

# The agent's arguments in a manifest, one per line: container NAME of
# the first pod template in FILE.
agent_args() { # FILE NAME
	python3 - "$1" "$2" <<'PY'
import sys, yaml
for doc in yaml.safe_load_all(open(sys.argv[1])):
    spec = (doc or {}).get("spec", {}).get("template", {}).get("spec")
    for c in (spec or {}).get("containers", []):
        if c["name"] == sys.argv[2]:
            print("\n".join(str(a) for a in c.get("args", [])))
            sys.exit(0)
sys.exit(f"no container {sys.argv[2]} in {sys.argv[1]}")
PY
}
args_pass_check() { # FILE NAME
	local args
	mapfile -t args < <(agent_args "$1" "$2") && [ "${#args[@]}" -gt 0 ] || return 1
	make --no-print-directory BUILD="$BUILD" all >/dev/null && "$BUILD/spoa-breaker" --check "${args[@]}"
}
check "the sidecar's agent options pass spoa-breaker --check" args_pass_check "$SIDECAR" agent

# The PodMonitor and the NetworkPolicy for the sidecar: they select its
# pods, the PodMonitor scrapes a port the agent names, the policy admits
# HAProxy's frontend and the agent's admin port, and nothing else.
monitor_and_policy_agree() {
	python3 - "$SIDECAR" "$KUBE/podmonitor.yaml" "$KUBE/networkpolicy.yaml" <<'PY'
import sys, yaml
deployment = next(yaml.safe_load_all(open(sys.argv[1])))
labels = deployment["spec"]["template"]["metadata"]["labels"]
containers = {c["name"]: c for c in deployment["spec"]["template"]["spec"]["containers"]}
ports = {p["name"]: p["containerPort"] for c in containers.values() for p in c.get("ports", [])}
monitor = next(d for d in yaml.safe_load_all(open(sys.argv[2])) if d and d["metadata"]["name"] == deployment["metadata"]["name"])
policy = next(d for d in yaml.safe_load_all(open(sys.argv[3])) if d and d["metadata"]["name"] == deployment["metadata"]["name"])
problems = []
selects = lambda selector: all(labels.get(k) == v for k, v in selector["matchLabels"].items())
if not selects(monitor["spec"]["selector"]) or not selects(policy["spec"]["podSelector"]):
    problems.append("the PodMonitor or the NetworkPolicy does not select the Deployment's pods")
agent_ports = {p["name"] for p in containers["agent"].get("ports", [])}
for endpoint in monitor["spec"]["podMetricsEndpoints"]:
    if endpoint["port"] not in agent_ports or endpoint["path"] != "/metrics":
        problems.append(f"the PodMonitor scrapes {endpoint['port']}{endpoint['path']}, not the agent's admin port's /metrics")
admitted = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
if admitted != set(ports.values()):
    problems.append(f"the NetworkPolicy admits ports {sorted(admitted)}, the pod serves {sorted(ports.values())}")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}
check "podmonitor.yaml and networkpolicy.yaml select the sidecar's pods and name its ports" monitor_and_policy_agree

# Beside the ingress controller (haproxytech): its pieces agree with each
# other and with what ships in haproxy/; the snippets themselves run under
# tests/e2e/ingress_shaped.bats.
INGRESS=$KUBE/ingress-haproxytech
check "ingress: the agent's options pass spoa-breaker --check" args_pass_check "$INGRESS/deployment-patch.yaml" spoa-breaker
ingress_agrees() {
	python3 - "$INGRESS" haproxy/spoe-breaker-steady.conf <<'PY'
import os, re, sys, yaml
d, shipped = sys.argv[1], open(sys.argv[2]).read()
def load(name):
    return next(doc for doc in yaml.safe_load_all(open(os.path.join(d, name))) if doc)
files = load("spoa-breaker-files.yaml")["data"]
snippets = load("controller-configmap.yaml")["data"]
spec = load("deployment-patch.yaml")["spec"]["template"]["spec"]
values = load("values.yaml")["controller"]
controller, agent = spec["containers"]
problems = []
if files["spoe-breaker-steady.conf"] != shipped.replace("map(breaker-watched.map)", "map(/etc/haproxy/spoa-breaker/breaker-watched.map)"):
    problems.append("spoa-breaker-files.yaml's SPOE file is not haproxy/spoe-breaker-steady.conf with the map's absolute path")
if values["config"] != snippets:
    problems.append("values.yaml's controller.config is not controller-configmap.yaml's data")
if values["extraContainers"] != [agent] or values["extraVolumeMounts"] != controller["volumeMounts"] or values["extraVolumes"] != spec["volumes"]:
    problems.append("values.yaml's extra containers, volumes or mounts are not deployment-patch.yaml's")
args = agent["args"]
opt = lambda name: args[args.index(name) + 1]
socket = re.search(r"stats socket (\S+) .*level admin", snippets["global-config-snippet"]).group(1)
if opt("--runtime-api") != "unix:" + socket:
    problems.append(f"the agent drives {opt('--runtime-api')}, the global snippet's socket is {socket}")
server = re.search(r"server agent (\S+)", files["haproxy-aux.cfg"]).group(1)
if opt("--listen") != server:
    problems.append(f"the agent listens on {opt('--listen')}, haproxy-aux.cfg sends to {server}")
mounts = lambda c: {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
run_dir = os.path.dirname(socket)
if not mounts(controller).get(run_dir) or mounts(controller).get(run_dir) != mounts(agent).get(run_dir):
    problems.append(f"the two containers do not share a volume at {run_dir}")
for path in re.findall(r"/etc/haproxy/spoa-breaker/([\w.-]+)", snippets["frontend-config-snippet"] + files["spoe-breaker-steady.conf"]):
    if path not in files:
        problems.append(f"the snippets name /etc/haproxy/spoa-breaker/{path}, which spoa-breaker-files.yaml has not")
if mounts(controller).get("/etc/haproxy/spoa-breaker") != "spoa-breaker-files":
    problems.append("the controller's container does not mount spoa-breaker-files at /etc/haproxy/spoa-breaker")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}
check "ingress: the SPOE file is the shipped one, values.yaml is the patch and the ConfigMap, socket and addresses agree" ingress_agrees
# HAProxy Ingress (jcmoraisjr) takes the same lines under its own keys:
# those that run in ingress_shaped.bats.
haproxy_ingress_same_lines() {
	python3 - "$INGRESS" "$KUBE/ingress-haproxy-ingress/controller-configmap.yaml" <<'PY'
import os, sys, yaml
def load(path):
    return next(doc for doc in yaml.safe_load_all(open(path)) if doc)["data"]
theirs = load(os.path.join(sys.argv[1], "controller-configmap.yaml"))
files = load(os.path.join(sys.argv[1], "spoa-breaker-files.yaml"))
ours = load(sys.argv[2])
lines = lambda text: [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
problems = [f"config-{key} is not {key}-config-snippet" for key in ("global", "frontend", "backend")
            if ours[f"config-{key}"] != theirs[f"{key}-config-snippet"]]
if lines(ours["config-sections"]) != lines(files["haproxy-aux.cfg"]):
    problems.append("config-sections is not haproxy-aux.cfg's backend")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}
check "HAProxy Ingress: its ConfigMap carries the lines ingress_shaped.bats runs" haproxy_ingress_same_lines
if command -v kubectl >/dev/null; then
	# The patch on a Deployment of the controller's shape, offline.
	patched() {
		kubectl patch --local -o json --type strategic --patch-file "$INGRESS/deployment-patch.yaml" -f - <<'YAML' |
apiVersion: apps/v1
kind: Deployment
metadata: {name: haproxy-kubernetes-ingress, namespace: haproxy-controller}
spec:
  selector: {matchLabels: {run: haproxy-ingress}}
  template:
    metadata: {labels: {run: haproxy-ingress}}
    spec:
      containers:
        - {name: haproxy-ingress, image: haproxytech/kubernetes-ingress, args: [--configmap=haproxy-controller/haproxy-kubernetes-ingress]}
YAML
			python3 -c '
import json, sys
spec = json.load(sys.stdin)["spec"]["template"]["spec"]
names = [c["name"] for c in spec["containers"]]
print(names)
assert names == ["haproxy-ingress", "spoa-breaker"] and spec["containers"][0]["args"] and len(spec["containers"][0]["volumeMounts"]) == 3'
	}
	check "ingress: kubectl patch --local adds the agent and keeps the controller's container" patched
fi

[ "$(id -u)" -eq 0 ] || skip_suite "podman here needs root"
command -v podman >/dev/null || skip_suite "podman is not installed"

RUN_DIR=$(mktemp -d /tmp/spoa-breaker-kube.XXXXXX)
PLAY=$RUN_DIR/play.yaml
POD=haproxy-breaker-pod-0
INGRESS_PLAY=$RUN_DIR/ingress-play.yaml
INGRESS_POD=haproxy-kubernetes-ingress-pod-0
# The volumes podman makes of the manifests' emptyDirs and ConfigMaps.
VOLUMES=(haproxy-run breaker-state spoa-breaker-run spoa-breaker-state spoa-breaker-files controller-cfg)
cleanup() {
	podman kube down "$PLAY" >/dev/null 2>&1
	podman kube down "$INGRESS_PLAY" >/dev/null 2>&1
	podman volume rm --force "${VOLUMES[@]}" >/dev/null 2>&1
	podman_teardown kube
	rm -rf "$RUN_DIR"
}
trap cleanup EXIT
podman_setup

check "the base image $BASE_IMAGE" base_image || { finish; exit; }
podman run --rm --pull=never --network=none "$BASE_IMAGE" true >"$RUN_DIR/podman.log" 2>&1 ||
	{ cat "$RUN_DIR/podman.log"; skip_suite "podman cannot run a container here"; }

# The images the manifest names: the agent's (Dockerfile) and HAProxy's
# (demo.Dockerfile: Debian's package, the repository's haproxy.cfg).
image() { # NAME DOCKERFILE
	podman image exists "$1" && return 0
	podman build --pull=never --network=host --format docker -f "$2" -t "$1" . >"$RUN_DIR/build.log" 2>&1 ||
		{ tail -n 40 "$RUN_DIR/build.log"; return 1; }
}
check "the agent's image (built if missing)" image localhost/spoa-breaker:latest Dockerfile || { finish; exit; }
check "HAProxy's image (built if missing)" image localhost/spoa-breaker-demo:latest packaging/demo.Dockerfile || { finish; exit; }

python3 - "$SIDECAR" >"$PLAY" <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
spec = docs[0]["spec"]["template"]["spec"]
image = next(c["image"] for c in spec["containers"] if c["name"] == "haproxy")
for c in spec["containers"]:
    c.pop("ports", None)
    c["env"] = [e for e in c.get("env", []) if not e["name"].startswith("BREAKER_W")]
for n, behaviour in ((1, 200), (2, 503), (3, 500)):
    spec["containers"].append({
        "name": f"w{n}", "image": image, "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "/usr/local/bin/worker.py", "--name", f"w{n}",
                    "--port", str(8100 + n), "--behaviour", str(behaviour)]})
yaml.safe_dump_all(docs, sys.stdout)
PY
podman volume rm --force "${VOLUMES[@]}" >/dev/null 2>&1
play() { podman kube play --network none "$1" 2>&1 | grep -v "$PODMAN_NOISE"; return "${PIPESTATUS[0]}"; }
check "podman kube play: the Deployment's pod, HAProxy, the agent and three workers" play "$PLAY" || { finish; exit; }

# A pod's network namespace: its infra container's.
pod_netns() { # POD
	echo "/proc/$(podman inspect --format '{{.State.Pid}}' "$(podman pod inspect --format '{{.InfraContainerID}}' "$1")")/ns/net"
}
POD_NETNS=$(pod_netns "$POD")
SOCKET=$(podman volume inspect --format '{{.Mountpoint}}' haproxy-run)/admin.sock
cli() { echo "$*" | socat -t 2 - "UNIX-CONNECT:$SOCKET"; }

# The node: a container of its own network namespace, a veth pair to the
# pod's. Sets NODE_NETNS, so it is called as it is, not through check.
node() { # NAME POD_NETNS
	local pid
	podman run -d --pull=never --name "$1" --network=none --entrypoint sleep "$BASE_IMAGE" infinity >/dev/null || return 1
	pid=$(podman inspect --format '{{.State.Pid}}' "$1") || return 1
	NODE_NETNS=/proc/$pid/ns/net
	nsenter --net="$2" ip link add eth0 type veth peer name kb-node netns "$pid" &&
		nsenter --net="$2" ip addr add 10.244.1.5/24 dev eth0 &&
		nsenter --net="$2" ip link set eth0 up &&
		nsenter --net="$NODE_NETNS" ip addr add 10.244.1.1/24 dev kb-node &&
		nsenter --net="$NODE_NETNS" ip link set kb-node up
}
node kube-node "$POD_NETNS" >"$RUN_DIR/node.log" 2>&1
check "a node's network namespace, joined to the pod's at 10.244.1.5" bash -c "cat '$RUN_DIR/node.log'; [ -e '$NODE_NETNS' ]" ||
	{ finish; exit; }
from_node() { nsenter --net="$NODE_NETNS" "$@"; }

agent_up() {
	wait_server_up "$SOCKET" spoa-breaker agent || { podman logs "$POD-agent" 2>&1 | tail -n 20; return 1; }
}
check "HAProxy brings the agent in, through SPOP on the pod's loopback" agent_up

# The agent's probes as a manifest declares them, one per line:
# "KIND PORT PATH TIMEOUT", a named port resolved from the container's.
probes() { # FILE CONTAINER
	python3 - "$1" "$2" <<'PY'
import sys, yaml
spec = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d)["spec"]["template"]["spec"]
agent = next(c for c in spec["containers"] if c["name"] == sys.argv[2])
ports = {p["name"]: p["containerPort"] for p in agent.get("ports", [])}
for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
    probe = agent.get(kind)
    if probe:
        get = probe["httpGet"]
        print(kind, ports.get(get["port"], get["port"]), get["path"], probe.get("timeoutSeconds", 1))
PY
}
mapfile -t PROBES < <(probes "$SIDECAR" agent)
# A kubelet's httpGet: from the node to the pod's address; 200-399 passes.
# Its timeoutSeconds is not asserted: the suite runs beside the end-to-end
# ones at the lowest priority, and what is checked is the path and the
# answer, not the time (10 s at most).
probe_passes() { # PORT PATH TIMEOUT
	local code
	code=$(from_node curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://10.244.1.5:$1$2")
	echo "GET http://10.244.1.5:$1$2 from the node (the kubelet's timeout: $3 s): $code"
	[ "$code" -ge 200 ] && [ "$code" -lt 400 ]
}
check "the agent declares its probes on the admin listener's port" bash -c "printf '%s\n' '${PROBES[*]}'; [ ${#PROBES[@]} -ge 1 ]"
for probe in "${PROBES[@]}"; do
	read -r kind port path timeout <<<"$probe"
	check "  ... $kind passes from the node while the agent runs" probe_passes "$port" "$path" "$timeout"
done

# Requests from the node to HAProxy's frontend on the pod's address,
# until w3 (500) is drained in HAProxy (srv_admin_state 8).
# srv_admin_state's 8 (drain) of SERVER in BACKEND, through $SOCKET.
BACKEND=workers
drained() { [ "$(($(cli "show servers state $BACKEND" | awk -v s="$1" '$4 == s {print $7}') & 8))" -ne 0 ]; }
w3_drained() {
	for _ in $(seq 40); do
		from_node curl -s -o /dev/null --max-time 5 http://10.244.1.5:8080/
		drained w3 && return 0
	done
	cli "show servers state workers"
	podman logs "$POD-agent" 2>&1 | tail -n 20
	return 1
}
check "the failing worker (500) is drained through the socket in the shared emptyDir" w3_drained

breaker_state() { # SERVER [FIELD]
	from_node curl -s --max-time 5 http://10.244.1.5:9786/state | python3 -c '
import json, sys
state = json.load(sys.stdin)
print(next(b[sys.argv[2]] for b in state["breakers"] if b["server"] == sys.argv[1]))' "$1" "${2:-state}"
}
# w2 answers 503 to each request it gets: 20 more requests, then w2 is
# still in rotation, its breaker closed.
busy_never_drained() {
	local state
	for _ in $(seq 20); do
		from_node curl -s -o /dev/null --max-time 5 http://10.244.1.5:8080/
	done
	state=$(breaker_state w2)
	echo "w2: breaker $state"
	cli "show servers state workers"
	! drained w2 && [ "$state" = closed ]
}
check "the busy worker (503) is never drained: in rotation, its breaker closed" busy_never_drained

ro_non_root() { # CONTAINER UID
	local user ro caps
	user=$(podman exec "$1" id -u) ro=$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$1")
	caps=$(podman exec "$1" awk '/^CapEff/ {print $2}' /proc/1/status)
	echo "uid $user, read-only root $ro, effective capabilities $caps"
	[ "$user" = "$2" ] && [ "$ro" = true ] && [ "$caps" = 0000000000000000 ] &&
		! podman exec "$1" touch /usr/sbin/written 2>/dev/null
}
check "the agent runs as 10001, with no capability, on a read-only root filesystem" ro_non_root "$POD-agent" 10001

probe_fails() { ! probe_passes "$@"; }
podman stop --time 5 "$POD-agent" >/dev/null 2>&1
for probe in "${PROBES[@]}"; do
	read -r kind port path timeout <<<"$probe"
	check "  ... $kind fails from the node once the agent is stopped" probe_fails "$port" "$path" "$timeout"
done
serves() { [ "$(from_node curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://10.244.1.5:8080/)" = 200 ]; }
check "HAProxy serves without the agent (it fails open)" serves

# w3's breaker is back with its trip: open, or half-open if its 30 s
# cool-down ran out while the agent was down (a loaded host can take that
# long between the trip and the restart). A fresh agent, with no requests
# meanwhile, would have it closed and never tripped.
restored() {
	podman start "$POD-agent" >/dev/null || return 1
	local state
	for _ in $(seq 200); do
		state=$(breaker_state w3 2>/dev/null)
		case $state in open | half_open) [ "$(breaker_state w3 trips 2>/dev/null)" -ge 1 ] && return 0 ;; esac
		sleep 0.1
	done
	echo "w3: ${state:-no state}"
	podman logs "$POD-agent" 2>&1 | tail -n 10
	return 1
}
check "restarted, the agent has its breakers back from its emptyDir (w3 tripped: open, or half-open past its cool-down)" restored

down() { # PLAY POD
	podman kube down "$1" >/dev/null && [ -z "$(podman pod ps --quiet --filter "name=^$2\$")" ]
}
check "podman kube down removes the pod" down "$PLAY" "$POD"
podman rm --force --time 0 kube-node >/dev/null 2>&1


# The ingress controller's pod (ingress-haproxytech/): the shipped patch
# applied to a Deployment of the controller's shape whose container is a
# stand-in for the controller: Debian's HAProxy, as the controller's user,
# started as the controller starts it on a configuration of its shape
# (tests/lib/ingress_cfg.py: the one ingress_shaped.bats runs, with the
# shipped paths) mounted from a ConfigMap; the shipped files ConfigMap as
# it is. The patch is merged as a strategic merge patch does (containers
# by name; kubectl's own merge is checked above), with two changes for
# podman 4.3, which ignores subPath (a ConfigMap mounted whole) and
# publishes ports: the stand-in reads haproxy-aux.cfg from the files'
# directory instead of the subPath mount, and no `ports`. Three pods of
# the demo workers in SRV_1..SRV_3 (healthy, busy, broken), 39 slots
# parked.
servers=""
for n in 1 2 3; do servers+="  server SRV_$n 127.0.0.1:$((8100 + n)) enabled"$'\n'; done
for n in $(seq 4 42); do servers+="  server SRV_$n 127.0.0.1:1 disabled"$'\n'; done
render_ingress() {
	local out=$RUN_DIR/ingress
	# The template's RUN_DIR: where the controller keeps its pid file and
	# socket, in the stand-in's /tmp.
	mkdir -p "$out" &&
		SERVERS=$servers FE_PORT=8080 BACKEND=default_svc_vllm_http RUN_DIR=/tmp \
			python3 tests/lib/ingress_cfg.py tests/e2e/haproxy-ingress-shaped.cfg.in "$INGRESS" "$out" &&
		python3 - "$INGRESS" "$out/haproxy.cfg" >"$INGRESS_PLAY" <<'PY'
import os, sys, yaml
kube, cfg = sys.argv[1], open(sys.argv[2]).read()
load = lambda name: [d for d in yaml.safe_load_all(open(os.path.join(kube, name))) if d]
files = load("spoa-breaker-files.yaml")
patch = load("deployment-patch.yaml")[0]["spec"]["template"]["spec"]
demo = "localhost/spoa-breaker-demo:latest"
controller = {
    "name": "haproxy-ingress", "image": demo, "imagePullPolicy": "IfNotPresent",
    "command": ["haproxy", "-W", "-db", "-S", "/tmp/haproxy-master.sock,level,admin",
                "-f", "/usr/local/etc/haproxy/haproxy.cfg", "-f", "/etc/haproxy/spoa-breaker/haproxy-aux.cfg"],
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    "volumeMounts": [{"name": "controller-cfg", "mountPath": "/usr/local/etc/haproxy"}]}
spec = {"containers": [controller], "volumes": [{"name": "controller-cfg", "configMap": {"name": "controller-cfg"}}]}
for c in patch["containers"]:
    mine = next((m for m in spec["containers"] if m["name"] == c["name"]), None)
    if mine is None:
        mine = dict(c, volumeMounts=[])
        mine.pop("ports", None)
        spec["containers"].append(mine)
    mine["volumeMounts"] += [m for m in c.get("volumeMounts", []) if "subPath" not in m]
spec["volumes"] += patch["volumes"]
for n, behaviour in ((1, 200), (2, 503), (3, 500)):
    spec["containers"].append({
        "name": f"pod{n}", "image": demo, "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "/usr/local/bin/worker.py", "--name", f"pod{n}",
                    "--port", str(8100 + n), "--behaviour", str(behaviour)]})
labels = {"run": "haproxy-ingress"}
deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "haproxy-kubernetes-ingress", "labels": labels},
              "spec": {"selector": {"matchLabels": labels},
                       "template": {"metadata": {"labels": labels}, "spec": spec}}}
cfgmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "controller-cfg"}, "data": {"haproxy.cfg": cfg}}
yaml.safe_dump_all(files + [cfgmap, deployment], sys.stdout)
PY
}
check "ingress: the controller's pod of the shipped patch and files, with a stand-in controller" render_ingress || { finish; exit; }
podman volume rm --force "${VOLUMES[@]}" >/dev/null 2>&1
check "ingress: podman kube play: the stand-in, the agent and three pods" play "$INGRESS_PLAY" ||
	{ finish; exit; }
node kube-node2 "$(pod_netns "$INGRESS_POD")" >"$RUN_DIR/node2.log" 2>&1
check "ingress: a node's network namespace, joined to the pod's at 10.244.1.5" bash -c "cat '$RUN_DIR/node2.log'; [ -e '$NODE_NETNS' ]" ||
	{ finish; exit; }
SOCKET=$(podman volume inspect --format '{{.Mountpoint}}' spoa-breaker-run)/haproxy.sock
BACKEND=default_svc_vllm_http
ingress_agent_up() {
	wait_server_up "$SOCKET" spoa-breaker agent || {
		podman logs "$INGRESS_POD-haproxy-ingress" 2>&1 | tail -n 10
		podman logs "$INGRESS_POD-spoa-breaker" 2>&1 | tail -n 10
		return 1
	}
}
check "ingress: HAProxy brings the agent in (haproxy-aux.cfg's backend, loopback)" ingress_agent_up
socket_is_the_controllers() {
	stat -c '%u:%g %a' "$SOCKET"
	[ "$(stat -c '%u:%g %a' "$SOCKET")" = "1000:1000 600" ]
}
check "ingress: the global snippet's socket, in the shared emptyDir, is the controller's user's, mode 600" socket_is_the_controllers
mapfile -t PROBES < <(probes "$INGRESS/deployment-patch.yaml" spoa-breaker)
for probe in "${PROBES[@]}"; do
	read -r kind port path timeout <<<"$probe"
	check "ingress:   ... $kind passes from the node" probe_passes "$port" "$path" "$timeout"
done
in_pod() { nsenter --net="$(pod_netns "$INGRESS_POD")" "$@"; }
failing_pod_drained() {
	for _ in $(seq 40); do
		in_pod curl -s -o /dev/null --max-time 5 http://127.0.0.1:8080/
		drained SRV_3 && return 0
	done
	cli "show servers state $BACKEND" | head -n 5
	podman logs "$INGRESS_POD-spoa-breaker" 2>&1 | tail -n 20
	return 1
}
check "ingress: the failing pod (500) behind 42 slots is drained, by the agent as the controller's user" failing_pod_drained
busy_pod_kept() {
	for _ in $(seq 20); do in_pod curl -s -o /dev/null --max-time 5 http://127.0.0.1:8080/; done
	cli "show servers state $BACKEND" | head -n 4
	! drained SRV_2 && [ "$(breaker_state SRV_2)" = closed ]
}
check "ingress: the busy pod (503) is never drained" busy_pod_kept
check "ingress: the agent runs as 1000, with no capability, on a read-only root filesystem" ro_non_root "$INGRESS_POD-spoa-breaker" 1000
check "ingress: podman kube down removes the pod" down "$INGRESS_PLAY" "$INGRESS_POD"
podman rm --force --time 0 kube-node2 >/dev/null 2>&1

finish
