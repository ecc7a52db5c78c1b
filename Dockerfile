# sluice serve as a container image: a static binary on a distroless base,
# as a non-root user. Cloud Run (and anything else that sets PORT) gets it
# listening on that port; otherwise it listens on 9324, all interfaces.
#   docker build -t sluice --build-arg VERSION=v1.2.3 .
#   docker run -p 9324:9324 -e SLUICE_STORE=postgres://... sluice
# infra/container/container_test.go runs this file's build steps and checks
# that they make the same binary as `make static`.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN make static VERSION="$VERSION"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/sluice-static /sluice
# The embedded store, the default, keeps its data in ./sluice-data: the
# non-root user's home. Mount a volume there, or name another store.
WORKDIR /home/nonroot
USER 65532:65532
ENV SLUICE_ADDR=:9324
EXPOSE 9324
ENTRYPOINT ["/sluice", "serve"]
