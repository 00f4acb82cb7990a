# wsplan as a container image: a static binary on distroless, non-root.
# Remote client shards run it as `wsplan shard --listen :7070 --certs DIR`
# (client.kubernetes creates such pods; `wsplan kube manifest PLAN` prints
# them). Build: docker build -t ghcr.io/wsplan/wsplan:TAG .
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static: no cgo, so the binary runs on a base image without libc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/wsplan ./cmd/wsplan

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/wsplan /usr/local/bin/wsplan
# 65532 is distroless' nonroot user; the Job's pods run as it too.
USER 65532:65532
EXPOSE 7070
ENTRYPOINT ["/usr/local/bin/wsplan"]
CMD ["shard", "--listen", ":7070", "--certs", "/etc/wsplan/certs"]
