# syntax=docker/dockerfile:1
#
# cronlock's container image: a static binary on Alpine, run as a non-root
# user. Build it from the repository root:
#
#   docker build --build-arg VERSION=v1.0.0 -t registry.example.com/cronlock:v1.0.0 .
#
# examples/deploy/kubernetes.yaml runs this image. Jobs run inside the same
# container, so add what they need in an image of your own:
#
#   FROM registry.example.com/cronlock:v1.0.0
#   USER root
#   RUN apk add --no-cache postgresql-client curl
#   USER 65532:65532

FROM golang:1.26 AS build
WORKDIR /src
# Modules first: this layer is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# `cronlock version` prints it.
ARG VERSION=devel
# CGO_ENABLED=0: a static binary, independent of the final image's libc
# (musl on Alpine, glibc in the builder). -trimpath: no builder paths in
# the binary. The time zone database is compiled in (internal/config
# imports time/tzdata), so jobs' `timezone` works without an OS package.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/cronlock/cronlock/internal/app.version=${VERSION}" -o /out/cronlock ./cmd/cronlock

# Why Alpine: `shell:` jobs run as /bin/sh -c, so the image needs a shell at
# /bin/sh (distroless' debug images have theirs at /busybox/sh only). Jobs
# usually need more than a shell (psql, curl, ...): apk adds them in a
# derived image, which busybox:stable-musl, the smallest image with a
# /bin/sh, cannot. Alpine also brings CA certificates for tls:// NATS URLs
# and an /etc/passwd to name the user in.
FROM alpine:3.22
# A named user for UID 65532: some job tools (libpq, ssh) refuse to run
# under a UID without a passwd entry. Its home is /tmp, the one writable
# directory kubernetes.yaml gives a pod with a read-only root file system.
RUN addgroup -S -g 65532 cronlock \
 && adduser -S -D -H -u 65532 -G cronlock -h /tmp -s /sbin/nologin cronlock
COPY --from=build /out/cronlock /cronlock
USER 65532:65532
# Exec form: cronlock is PID 1 and gets SIGTERM itself, with no shell in
# between. Each job runs under a small supervisor that reaps its orphans.
ENTRYPOINT ["/cronlock"]
CMD ["run", "-c", "/etc/cronlock/cronlock.yaml"]
