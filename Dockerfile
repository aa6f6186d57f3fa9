# compaction-sim container image: a Rust builder stage, then a small runtime stage holding the
# release binary (and the shell the Kubernetes Job in deploy/ runs it through).
#
#   docker build -t your-registry/compaction-sim:latest .
#
# The binary needs nothing at run time beyond glibc: prices, latency tables and chart fonts
# are compiled in, and it makes no network calls.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked --bin compaction-sim \
 && strip target/release/compaction-sim

FROM debian:bookworm-slim
COPY --from=builder /src/target/release/compaction-sim /usr/local/bin/compaction-sim
# Run unprivileged; /data is where deploy/ mounts the transcripts and writes the shards.
USER 65532:65532
# That user has no home: the token-count cache goes to /tmp, not into the user's /data
# (without it every run warns that the cache could not be saved).
ENV COMPACTION_SIM_CACHE=/tmp/compaction-sim-cache
WORKDIR /data
ENTRYPOINT ["compaction-sim"]
CMD ["--help"]
