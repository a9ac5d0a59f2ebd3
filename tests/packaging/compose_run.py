#!/usr/bin/env python3
"""Runs packaging/compose.yaml with plain podman commands, for make check.

Debian 12's podman-compose (1.0.3) puts every container on a bridged
network of its own making, even one told to join another's namespace;
these machines run everything on loopback. This does what compose does
for the keys the file uses -- build, image, command, environment, user,
named volumes, network_mode "service:X", depends_on -- with the one
difference that the namespace the others join gets --network=none, so
`ports` is not applied (the test reaches HAProxy inside that namespace).
A key it does not know is an error, never silently skipped.

  compose_run.py check FILE          loads and checks the file, prints nothing
  compose_run.py up FILE PROJECT     builds, creates the volumes, starts
  compose_run.py down FILE PROJECT   removes the containers and volumes

Variables ${NAME:-default} take the environment's value, or the default.
Containers are named PROJECT-SERVICE, volumes PROJECT-VOLUME.
"""
import os
import re
import subprocess
import sys

import yaml

KNOWN_KEYS = {"build", "image", "command", "environment", "user", "volumes", "network_mode",
              "depends_on", "ports"}


def interpolate(value):
    def variable(match):
        name, default = match.group(1), match.group(3) or ""
        return os.environ.get(name) or default
    if isinstance(value, str):
        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", variable, value)
    if isinstance(value, list):
        return [interpolate(v) for v in value]
    if isinstance(value, dict):
        return {k: interpolate(v) for k, v in value.items()}
    return value


def load(path):
    with open(path) as f:
        compose = interpolate(yaml.safe_load(f))
    services = compose["services"]
    for name, service in services.items():
        unknown = set(service) - KNOWN_KEYS
        if unknown:
            sys.exit(f"compose_run: service {name}: keys this runner does not know: {sorted(unknown)}")
        if "image" not in service:
            sys.exit(f"compose_run: service {name} has no image name")
    return compose


def in_start_order(services):
    order, seen = [], set()

    def visit(name, path=()):
        if name in seen:
            return
        if name in path:
            sys.exit(f"compose_run: depends_on cycle through {name}")
        for dependency in services[name].get("depends_on", []):
            visit(dependency, path + (name,))
        seen.add(name)
        order.append(name)
    for name in services:
        visit(name)
    return order


def podman(*args, **kwargs):
    print("+ podman " + " ".join(args), file=sys.stderr, flush=True)
    return subprocess.run(["podman", *args], check=True, **kwargs)


def up(path, project):
    compose = load(path)
    services = compose["services"]
    base = os.path.dirname(os.path.abspath(path))
    built = set()
    for name in in_start_order(services):
        service = services[name]
        build = service.get("build")
        if build and service["image"] not in built:
            context = os.path.join(base, build.get("context", "."))
            dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
            args = [f"--build-arg={k}={v}" for k, v in (build.get("args") or {}).items()]
            podman("build", "--pull=never", "--network=host", "--format", "docker", *args,
                   "-f", dockerfile, "-t", service["image"], context, stdout=subprocess.DEVNULL)
            built.add(service["image"])
    for volume in compose.get("volumes") or {}:
        podman("volume", "create", f"{project}-{volume}", stdout=subprocess.DEVNULL)
    for name in in_start_order(services):
        service = services[name]
        args = ["run", "-d", "--pull=never", "--name", f"{project}-{name}"]
        network = service.get("network_mode", "none")
        if network.startswith("service:"):
            network = f"container:{project}-{network[len('service:'):]}"
        args += ["--network", network]
        if "user" in service:
            args += ["--user", str(service["user"])]
        environment = service.get("environment") or {}
        if isinstance(environment, list):
            environment = dict(item.split("=", 1) for item in environment)
        for key, value in environment.items():
            args += ["-e", f"{key}={value}"]
        for volume in service.get("volumes", []):
            source, target = volume.split(":", 1)
            args += ["-v", f"{project}-{source}:{target}"]
        args.append(service["image"])
        args += [str(word) for word in service.get("command", [])]
        podman(*args, stdout=subprocess.DEVNULL)


def down(path, project):
    compose = load(path)
    for name in reversed(in_start_order(compose["services"])):
        subprocess.run(["podman", "rm", "--force", "--time", "0", f"{project}-{name}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for volume in compose.get("volumes") or {}:
        subprocess.run(["podman", "volume", "rm", "--force", f"{project}-{volume}"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        load(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] in ("up", "down"):
        (up if sys.argv[1] == "up" else down)(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
