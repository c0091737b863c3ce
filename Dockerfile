# Build: the production profile (Cargo.toml: the whole program optimised as one unit).
FROM rust:1-slim-bookworm AS build
# The allocator's build script (tikv-jemalloc-sys) runs `make`, which the slim image lacks
# (it has gcc and libc6-dev; tests/it/docker.rs builds with exactly its programs and these).
RUN apt-get update \
 && apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The dependencies first, in a layer of their own that only a change of Cargo.toml or Cargo.lock
# rebuilds (not every change under src/): the crate's own files are placeholders here, one for
# each target the manifest names.
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src benches \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && for bench in bench load replicas; do echo 'fn main() {}' > "benches/$bench.rs"; done \
 && cargo build --profile production --locked \
 && rm -rf src benches
COPY src ./src
COPY benches ./benches
# COPY keeps the files' own times, which may be older than the placeholders' build: touch the
# crate roots so that cargo builds the real crate rather than keep the placeholder binary.
RUN touch src/main.rs src/lib.rs \
 && cargo build --profile production --locked

# Run: slim Debian with CA certificates, as a non-root user.
FROM debian:bookworm-slim
# A numeric user, so that an orchestrator can check it is not root (Kubernetes' runAsNonRoot).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 hookwire \
 && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /app hookwire \
 && mkdir -p /workspace /state && chown hookwire /workspace \
 && chown hookwire:hookwire /state && chmod 0700 /state
WORKDIR /app
COPY --from=build /src/target/production/hookwire /usr/local/bin/hookwire
COPY static ./static
COPY skills ./skills
USER 10001:10001
# The default address is loopback; in a container the port is published, so listen on all of
# its interfaces (set HOOKWIRE_AUTH_TOKEN when the port is reachable by others). Bound to 0.0.0.0
# the server would answer any Host name, so a page could reach a port published on loopback
# through DNS rebinding: answer only loopback names unless HOOKWIRE_ALLOWED_HOSTS says more.
# HOOKWIRE_CONTAINER: the published port, not the address, decides who can connect (no
# auth_token is then an info line, not a warning), and the log's trust hint says to run
# `hookwire trust` in the container. trust.json goes to /state, outside the workspace: mount a
# named volume there (`-v hookwire-state:/state`, which takes this folder's owner) to keep it.
ENV HOOKWIRE_ADDR=0.0.0.0:8080 \
    HOOKWIRE_ALLOWED_HOSTS=localhost,127.0.0.1,[::1] \
    HOOKWIRE_CONTAINER=true \
    HOOKWIRE_STATE_DIR=/state \
    HOOKWIRE_SKILLS_DIR=/app/skills \
    HOOKWIRE_STATIC_DIR=/app/static \
    HOOKWIRE_WORKSPACE=/workspace
EXPOSE 8080
# `hookwire health` reads the settings the server reads (HOOKWIRE_ADDR, HOOKWIRE_CONFIG,
# HOOKWIRE_ALLOWED_HOSTS), so the check follows a changed port; unhealthy (503) while draining.
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/hookwire", "health"]
# tini is PID 1: it reaps the orphans of hook processes (a command hook's background children),
# which hookwire itself would inherit as zombies if it were PID 1. It passes SIGTERM on, which
# starts the drain (limits.shutdown_grace_seconds, default 30 s: give `docker stop` a longer
# `--time`, compose a longer `stop_grace_period`).
ENTRYPOINT ["/usr/bin/tini", "--", "hookwire"]
CMD ["serve"]
