# executor_exporter image: a static binary on distroless/static, nothing else
# (no shell, no package manager, no libc). Build with
#   docker build -t executor_exporter:$(cat VERSION) --build-arg REVISION=$(git rev-parse HEAD) .
#
# The image runs as nonroot (65532) by default, which is enough for
# `docker run` on a laptop to serve node memory and the JVMs of the same
# user. The Kubernetes DaemonSet (deploy/kubernetes/base/daemonset.yaml) runs
# it as uid 0 with every capability dropped except SYS_PTRACE,
# DAC_READ_SEARCH and SYSLOG; docs/security.md says why.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG REVISION=unknown
ARG BRANCH=unknown
RUN make build REVISION=${REVISION} BRANCH=${BRANCH} BUILD_USER=docker

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="executor_exporter" \
      org.opencontainers.image.description="Prometheus exporter for JVM / Spark executor memory, cloud identity and OOM kills" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /src/executor_exporter /bin/executor_exporter
COPY --from=build /src/LICENSE /LICENSE
USER 65532:65532
EXPOSE 9482
ENTRYPOINT ["/bin/executor_exporter"]
