# A private podman for the container suites (sourced), set up as it works
# on Debian 12 machines with no Docker engine and no registry:
#  - runc, as crun refuses hybrid cgroup layouts; ulimits podman may set as
#    root here; configuration, storage and network definitions in a
#    directory of this run, removed at the end, so that nothing is shared
#    with another run or with the host's own podman;
#  - the FROM image, debian:bookworm-slim, made from Debian's archive with
#    mmdebstrap (the slim variant's exclusions), its tarball cached in
#    /var/cache/spoa-breaker and made anew after a week.
# Containers run with --network=none: nothing is bridged or published.
# shellcheck shell=bash

CACHE=${HAPROXY_CACHE:-/var/cache/spoa-breaker}
BASE_TAR=$CACHE/debian-bookworm-slim.tar
BASE_IMAGE=docker.io/library/debian:bookworm-slim

# SPOA_PODMAN_DIR, when set, is a directory check.sh gives the container
# suites to share (images built once), and removes after them with
# podman_remove_dir; otherwise a suite makes its own and removes it.
podman_setup() {
	if [ -n "${SPOA_PODMAN_DIR:-}" ]; then
		PODMAN_DIR=$SPOA_PODMAN_DIR
		PODMAN_OWNED=0
	else
		PODMAN_DIR=$(mktemp -d /var/tmp/spoa-breaker-podman.XXXXXX)
		PODMAN_OWNED=1
	fi
	mkdir -p "$PODMAN_DIR/tmp" "$PODMAN_DIR/networks"
	cat >"$PODMAN_DIR/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=16384:16384"]
[engine]
runtime = "runc"
[network]
network_config_dir = "$PODMAN_DIR/networks"
CONF
	cat >"$PODMAN_DIR/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$PODMAN_DIR/storage"
runroot = "$PODMAN_DIR/run"
CONF
	export CONTAINERS_CONF=$PODMAN_DIR/containers.conf
	export CONTAINERS_STORAGE_CONF=$PODMAN_DIR/storage.conf
	export TMPDIR=$PODMAN_DIR/tmp
}

# Removes the suite's containers and volumes (named PREFIX-...), and the
# whole directory if the suite made it.
podman_teardown() { # PREFIX
	[ -n "${PODMAN_DIR:-}" ] && [ -d "$PODMAN_DIR" ] || return 0
	local ids
	# $ids: one word per container, then per volume.
	ids=$(podman ps --all --quiet --filter "name=^$1-")
	# shellcheck disable=SC2086
	[ -z "$ids" ] || podman rm --force --time 0 $ids >/dev/null 2>&1
	ids=$(podman volume ls --quiet --filter "name=^$1-")
	# shellcheck disable=SC2086
	[ -z "$ids" ] || podman volume rm --force $ids >/dev/null 2>&1
	[ "$PODMAN_OWNED" = 1 ] && podman_remove_dir "$PODMAN_DIR"
}

# Everything in a podman directory, then the directory.
podman_remove_dir() { # DIR
	CONTAINERS_CONF=$1/containers.conf CONTAINERS_STORAGE_CONF=$1/storage.conf TMPDIR=$1/tmp \
		sh -c 'podman rm --all --force --time 0; podman volume rm --all --force; podman rmi --all --force' \
		>/dev/null 2>&1
	rm -rf "$1"
}

# Whether the container's HEALTHCHECK passes, judged as the runtime judges
# it: healthy at the first run that passes, unhealthy only after as many
# runs in a row fail as the check's retries. One failed run is not that
# verdict: on a loaded host the check's exec can start late enough to meet
# its timeout while the agent answers /healthz at once. Each failed run's
# output, then the health log podman keeps, is printed.
podman_healthy() { # CONTAINER
	local retries try out
	retries=$(podman inspect --format '{{.Config.Healthcheck.Retries}}' "$1" 2>/dev/null)
	[[ "$retries" =~ ^[1-9][0-9]*$ ]] || retries=3
	for try in $(seq "$retries"); do
		out=$(podman healthcheck run "$1" 2>&1) && return 0
		echo "run $try of $retries failed (exit $?): $(grep -v "$PODMAN_NOISE" <<<"$out")"
	done
	podman inspect --format '{{json .State.Health}}' "$1"
	return 1
}

# podman, less the error it logs for each health check timer it cannot set
# up where systemd does not run.
PODMAN_NOISE='unable to get systemd connection'
podman_quiet() { podman "$@" 2> >(grep -v "$PODMAN_NOISE" >&2); }

# "URI SUITE" for each Debian 12 suite this machine's apt uses.
apt_suites() {
	{
		awk 'function emit() { if (u != "") for (i in s) print u, s[i]; u = ""; delete s }
			/^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) s[i] = $i }
			/^[ \t]*$/ { emit() } END { emit() }' /etc/apt/sources.list.d/*.sources 2>/dev/null
		awk '$1 == "deb" { print $2, $3 }' /etc/apt/sources.list 2>/dev/null
	} | awk '$2 ~ /^bookworm(-updates|-security|\/updates)?$/' | sort -u
}

# Makes the cached tarball if missing or a week old, then imports it under
# the names the Dockerfile (and the compose file) use.
base_image() {
	if [ ! -s "$BASE_TAR" ] || [ -n "$(find "$BASE_TAR" -mtime +7)" ]; then
		local sources=() uri suite
		while read -r uri suite; do
			sources+=("deb $uri $suite main")
		done < <(apt_suites)
		[ "${#sources[@]}" -gt 0 ] || sources=("deb http://deb.debian.org/debian bookworm main"
			"deb http://deb.debian.org/debian bookworm-updates main"
			"deb http://deb.debian.org/debian-security bookworm-security main")
		mkdir -p "$CACHE"
		mmdebstrap --variant=minbase --mode=root --format=tar --skip=output/dev \
			--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
			--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
			--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
			--dpkgopt='path-exclude=/usr/share/groff/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
			--dpkgopt='path-exclude=/usr/share/locale/*' \
			--aptopt='DPkg::Post-Invoke {"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true";}' \
			--aptopt='Dir::Cache::pkgcache ""' --aptopt='Dir::Cache::srcpkgcache ""' \
			bookworm "$BASE_TAR.tmp$$" "${sources[@]}" >"$CACHE/debian-bookworm-slim.log" 2>&1 || {
			tail -n 20 "$CACHE/debian-bookworm-slim.log"
			rm -f "$BASE_TAR.tmp$$"
			return 1
		}
		mv "$BASE_TAR.tmp$$" "$BASE_TAR"
	fi
	podman image exists "$BASE_IMAGE" ||
		podman import --quiet --change 'CMD ["bash"]' "$BASE_TAR" "$BASE_IMAGE" >/dev/null &&
		podman tag "$BASE_IMAGE" docker.io/library/debian:12-slim
}

# A third container the configuration does not name: a container of its
# own (the base image, sleeping), with a network namespace of its own,
# joined to NETNS - the namespace a suite's agent runs in - by a veth pair:
# 192.0.2.1 on NETNS's side, 192.0.2.2 on its own (TEST-NET-1, and only in
# these two namespaces: nothing on the host's). Sets THIRD_NETNS, so it is
# called as it is, not through check (whose subshell would keep it).
third_container() { # NAME NETNS
	local pid
	# Not in a command substitution: the container's conmon keeps podman's
	# output open, and one would wait for it forever.
	podman run -d --pull=never --name "$1" --network=none --entrypoint sleep \
		"$BASE_IMAGE" infinity >/dev/null || return 1
	pid=$(podman inspect --format '{{.State.Pid}}' "$1") || return 1
	THIRD_NETNS=/proc/$pid/ns/net
	nsenter --net="$2" ip link add sb-agent type veth peer name sb-third netns "$pid" &&
		nsenter --net="$2" ip addr add 192.0.2.1/24 dev sb-agent &&
		nsenter --net="$2" ip link set sb-agent up &&
		nsenter --net="$THIRD_NETNS" ip addr add 192.0.2.2/24 dev sb-third &&
		nsenter --net="$THIRD_NETNS" ip link set sb-third up
}

# From the third container: what a TCP connection to 192.0.2.1:PORT gets,
# and, when it opens, the answer to an HTTP GET of PATH (bash's /dev/tcp,
# 5 s at most). "Connection refused" means the packet reached the
# agent's namespace, and nothing there listens for it.
third_connects() { # PORT [PATH]
	nsenter --net="$THIRD_NETNS" timeout 5 bash -c '
		exec 3<>"/dev/tcp/192.0.2.1/$1" || exit 1
		echo connected
		[ -n "$2" ] || exit 0
		printf "GET %s HTTP/1.0\r\n\r\n" "$2" >&3
		cat <&3' _ "$@" 2>&1
}

# The checks: refused means the address path works and the port is shut.
third_is_refused() { # PORT
	local out
	out=$(third_connects "$1")
	echo "$out"
	grep -q "Connection refused" <<<"$out"
}

# Let in at accept and closed before any answer: the allowlist did it.
third_gets_no_answer() { # PORT PATH
	local out
	out=$(third_connects "$1" "$2")
	echo "$out"
	# An end of file, or a reset when the request was already in (a close
	# with unread data resets): never an answer.
	[ "$(head -n1 <<<"$out")" = connected ] && ! grep -q "HTTP/" <<<"$out"
}
