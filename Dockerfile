# Build: the same command CI builds with.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
RUN cargo build --release --locked

# Run: slim Debian with CA certificates, as a non-root user.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /app hookwire \
 && mkdir -p /workspace && chown hookwire /workspace
WORKDIR /app
COPY --from=build /src/target/release/hookwire /usr/local/bin/hookwire
COPY static ./static
COPY skills ./skills
USER hookwire
# The default address is loopback; in a container the port is published, so listen on all of
# its interfaces (set HOOKWIRE_AUTH_TOKEN when the port is reachable by others). Bound to 0.0.0.0
# the server would answer any Host name, so a page could reach a port published on loopback
# through DNS rebinding: answer only loopback names unless HOOKWIRE_ALLOWED_HOSTS says more.
ENV HOOKWIRE_ADDR=0.0.0.0:8080 \
    HOOKWIRE_ALLOWED_HOSTS=localhost,127.0.0.1,[::1] \
    HOOKWIRE_SKILLS_DIR=/app/skills \
    HOOKWIRE_STATIC_DIR=/app/static \
    HOOKWIRE_WORKSPACE=/workspace
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
# tini is PID 1: it reaps the orphans of hook processes (a command hook's background children),
# which hookwire itself would inherit as zombies if it were PID 1.
ENTRYPOINT ["/usr/bin/tini", "--", "hookwire"]
CMD ["serve"]
