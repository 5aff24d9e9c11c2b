# syntax=docker/dockerfile:1
# Multi-stage build: the static router binary (scripts/build.sh, the same
# script a developer runs without Docker) on a minimal non-root image.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) -t sidestream/router .
#   docker buildx build --platform linux/amd64,linux/arm64 ...
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Empty: scripts/build.sh asks git, or stamps "dev" without a .git.
ARG VERSION=""
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH VERSION=$VERSION scripts/build.sh /out/router

# Static binary: no libc, no shell. The nonroot variant runs as 65532; the
# numeric USER lets Kubernetes check runAsNonRoot.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=""
LABEL org.opencontainers.image.title="sidestream router" \
      org.opencontainers.image.description="Kafka-native router with side outputs and exactly-once output" \
      org.opencontainers.image.source="https://github.com/sidestream/sidestream" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="$VERSION"
COPY --from=build /out/router /router
USER 65532:65532
# The HTTP API: /healthz /readyz /metrics /topology /tasks.
EXPOSE 8080
ENTRYPOINT ["/router"]
CMD ["run", "--config", "/etc/sidestream/topology.yaml"]
