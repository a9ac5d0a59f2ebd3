# The other services of packaging/compose.yaml: Debian 12's HAProxy with the
# repository's haproxy.cfg and SPOE file, and the demo worker
# (tests/lib/worker.py). A demo, not a production HAProxy image: yours and
# your workers take their place. Built from the repository's top:
#   podman build -f packaging/demo.Dockerfile -t spoa-breaker-demo .

FROM debian:bookworm-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends haproxy python3 \
    && rm -rf /var/lib/apt/lists/*

COPY haproxy/haproxy.cfg haproxy/spoe-breaker.conf haproxy/spoe-breaker-steady.conf \
     haproxy/breaker-watched.map haproxy/router-errors.map \
     haproxy/router-conditions.map haproxy/breaker-owned.map haproxy/breaker-retry-at.map \
     haproxy/breaker-peers.cfg /etc/haproxy/
COPY haproxy/router-errors /etc/haproxy/router-errors
# worker.py imports mode_file from its own directory.
COPY tests/lib/worker.py tests/lib/mode_file.py /usr/local/bin/

# compose.yaml runs HAProxy as the agent image's user (10001): the stats
# socket HAProxy makes (mode 600, as haproxy.cfg says) in the volume they
# share at /run/haproxy is then the agent's to use. A new volume takes the
# owner of the directory it is first mounted on: this one.
RUN install -d -o 10001 -g 10001 /run/haproxy \
    && echo 1 >/var/lib/haproxy/server-state \
    && chown 10001:10001 /var/lib/haproxy/server-state
