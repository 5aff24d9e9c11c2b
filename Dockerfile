# Multi-stage build: a static router binary on a minimal non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/router ./cmd/router

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/router /router
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/router"]
CMD ["run", "--config", "/etc/sidestream/topology.yaml"]
