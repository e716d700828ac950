# Confetti in one container: SQLite and photos in the /data volume by default;
# set DATABASE_URL=postgres://… and CONFETTI_STORAGE=s3://bucket/prefix to scale out.
#
#   docker build -t confetti .
#   docker run -p 8080:8080 -v confetti-data:/data \
#     -e CONFETTI_PUBLIC_URL=https://photos.example.org confetti
#
# CONFETTI_PUBLIC_URL is the address phones use: the join link and QR code carry it (without it
# they would carry the container's own address).

FROM rust:1.95-bookworm AS build
WORKDIR /src
# HEIC derivatives link Debian's libheif; libjpeg-turbo's code is built in, its SIMD parts with nasm.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libheif-dev nasm \
    && rm -rf /var/lib/apt/lists/*
# Dependencies first, so a change to Confetti's own code reuses this layer.
COPY Cargo.toml Cargo.lock ./
RUN mkdir src && echo 'fn main() {}' > src/main.rs && touch src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src
COPY build.rs ./
COPY src ./src
COPY migrations ./migrations
COPY static ./static
RUN touch build.rs src/main.rs src/lib.rs && cargo build --release --locked \
    && strip target/release/confetti

FROM debian:bookworm-slim
# ffmpeg makes videos' posters (without it videos are stored and played, without posters).
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libheif1 ffmpeg \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin confetti \
    && mkdir -p /data && chown confetti:confetti /data
COPY --from=build /src/target/release/confetti /usr/local/bin/confetti
USER confetti
ENV CONFETTI_DATA_DIR=/data \
    CONFETTI_BIND=0.0.0.0:8080
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=6s --start-period=20s --retries=3 \
    CMD ["confetti", "healthcheck", "--addr", "127.0.0.1:8080"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["confetti"]
CMD ["serve"]
