# spoa-breaker in a container: a build stage with the compiler and the -dev
# packages, and a slim Debian 12 runtime stage with only the libraries the
# binary links, run as a non-root user.
#
#   podman build --format docker -t spoa-breaker .   (docker build -t spoa-breaker .)
#   podman run -d --name breaker -p 127.0.0.1:12345:12345 -p 127.0.0.1:9786:9786 spoa-breaker
#
# --format docker keeps the HEALTHCHECK (podman's default OCI format has
# none). docs/install.md, "Run it in production", has the rest: configuration,
# HAProxy's admin socket, compose. Plain Dockerfile syntax, no heredocs:
# Debian 12's buildah does not read them.

FROM debian:bookworm-slim AS build

# libmsgpack-dev: the state snapshot (state.msgpack) is msgpack-c's;
# libssl-dev: TLS on the SPOP listeners (OpenSSL).
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        gcc libc6-dev make pkg-config \
        libev-dev libinih-dev libmicrohttpd-dev libmsgpack-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY Makefile ./
COPY include include
COPY spoa spoa
# The git revision --version names: the build context has no .git.
ARG REVISION=
RUN make -j"$(nproc)" REVISION="$REVISION" build/spoa-breaker \
    && build/spoa-breaker --version


FROM debian:bookworm-slim

ARG REVISION=
LABEL org.opencontainers.image.title="spoa-breaker" \
      org.opencontainers.image.description="A backpressure-aware circuit breaker for HAProxy (SPOE agent)" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.revision="$REVISION"

RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libev4 libinih1 libmicrohttpd12 libmsgpackc2 libssl3 \
    && rm -rf /var/lib/apt/lists/*

# A fixed UID/GID, so that a host directory or socket can be given to it:
# chown 10001 DIR, or a group HAProxy's stats socket shares (docs/install.md).
RUN groupadd --system --gid 10001 spoa-breaker \
    && useradd --system --uid 10001 --gid spoa-breaker --no-create-home \
        --home-dir /var/lib/spoa-breaker --shell /usr/sbin/nologin spoa-breaker \
    && install -d -o spoa-breaker -g spoa-breaker -m 0750 /var/lib/spoa-breaker

COPY --from=build /src/build/spoa-breaker /usr/sbin/spoa-breaker

USER spoa-breaker
WORKDIR /var/lib/spoa-breaker
# The state snapshot (state.msgpack) lives here; a volume keeps it
# across containers.
VOLUME ["/var/lib/spoa-breaker"]

# SPOP (HAProxy's SPOE connects here) and the admin HTTP listener: on
# loopback unless the command line says otherwise (CMD below).
EXPOSE 12345 9786

# /healthz on the admin listener, with bash alone (no curl in the image).
# It asks 127.0.0.1:9786: with --admin elsewhere, or none, give podman run
# --health-cmd, or --no-healthcheck.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9786 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && read -r _ status _ <&3 && [ \"$status\" = 200 ]"]

# The agent is PID 1: TERM (docker/podman stop) is its graceful stop,
# AGENT-DISCONNECT to HAProxy and exit 0 within 3 s, and it starts no child
# to reap; --init works as well.
ENTRYPOINT ["/usr/sbin/spoa-breaker"]
# Loopback, as shipped: SPOP has no authentication (whoever connects can
# open breakers), and the image's HAProxy is a sidecar -- a container of the
# same pod, or of the same compose network namespace -- which shares the
# container's loopback. To serve HAProxies elsewhere, or Prometheus from
# another pod, listen wider and say who may connect (the agent refuses to
# start otherwise): --listen 0.0.0.0:12345 --allow 10.1.0.0/16, --admin
# 0.0.0.0:9786 --admin-allow 10.2.0.0/16 (docs/security.md). Arguments
# given to `run` replace these, as an INI file given with -f can.
CMD ["--listen", "127.0.0.1:12345", "--admin", "127.0.0.1:9786"]
