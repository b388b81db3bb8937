# gpusort-server and the gpusort CLI in one image.
#   GPU (default):  docker build -t gpusort .
#   CPU only:       docker build --build-arg GPUSORT_CUDA=off -t gpusort:cpu .
# The build stage runs what CI runs: scripts/install-deps.sh, then scripts/build.sh (one CMake recipe,
# kept so by tests/deploy/dockerfile_test.sh). The runtime stage keeps only the two executables and the
# shared libraries they load (deploy/docker/collect-runtime.sh), on the runtime image that matches the
# build image: NVIDIA's CUDA runtime for the devel image, Debian slim for Debian.

# The CUDA toolkit of the build image; the runtime image is the same version.
ARG CUDA_VERSION=13.0.2
# on: build the CUDA kernels (nvcc from NVIDIA's devel image) and serve from the GPU, falling back to the
# CPU backend when none is usable. off: the CPU backend only, on Debian 12, for hosts without a GPU.
# Lower case because it names build stages below (stage names are lower case); CMake reads on/off as
# ON/OFF.
ARG GPUSORT_CUDA=on

FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS build-on
FROM debian:12 AS build-off
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS runtime-on
FROM debian:12-slim AS runtime-off

FROM build-${GPUSORT_CUDA} AS build
ARG GPUSORT_CUDA
# GPU architectures to compile for: 90 is Hopper (H100, H200), the project's default; e.g. "80;90" adds
# the A100.
ARG CUDA_ARCHITECTURES=90
WORKDIR /src
# The install script alone first, so that the package layer is reused while only sources change.
COPY scripts/install-deps.sh scripts/
RUN GPUSORT_NO_TEST_DEPS=1 scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DGPUSORT_BUILD_TESTS=OFF -DGPUSORT_BUILD_BENCHMARKS=OFF \
      -DGPUSORT_ENABLE_CUDA=${GPUSORT_CUDA} -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} \
 && deploy/docker/collect-runtime.sh build /out

FROM runtime-${GPUSORT_CUDA}
LABEL org.opencontainers.image.title="gpusort" \
      org.opencontainers.image.description="Sorting and top-k over gRPC on NVIDIA GPUs (gpusort-server, gpusort CLI)"
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build /out/lib/ /usr/local/lib/gpusort/
# Ahead of the base image's own path (NVIDIA's images set one for the driver's libraries).
ENV LD_LIBRARY_PATH=/usr/local/lib/gpusort${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}
# A fixed numeric uid, so that Kubernetes' runAsNonRoot can check it (deploy/kubernetes runs as 10001).
RUN groupadd --system --gid 10001 gpusort \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin gpusort
USER 10001:10001
# 50051: gRPC (SortService, EchoService, grpc.health.v1.Health, reflection). 9464: Prometheus /metrics.
EXPOSE 50051 9464
# The standard gRPC health service, through the CLI. The start period covers CUDA's start-up.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["gpusort", "health", "--server", "127.0.0.1:50051", "--timeout", "3"]
# Exec form: the server is PID 1 and gets SIGTERM itself, so `docker stop` drains it (--drain-timeout,
# 30 s by default: give docker stop a longer --time).
ENTRYPOINT ["gpusort-server"]
CMD ["--listen=0.0.0.0:50051", "--metrics-listen=0.0.0.0:9464"]
