# gpusort-server and the gpusort CLI. The build stage runs the same install script and CMake build as
# CI; the runtime stage keeps only the executables and the shared libraries they load.
# CPU-only by default (Debian 12); the CUDA image variant comes with the deployment issue.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/
RUN GPUSORT_NO_TEST_DEPS=1 scripts/install-deps.sh
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSORT_BUILD_TESTS=OFF \
      -DGPUSORT_BUILD_BENCHMARKS=OFF -DGPUSORT_ENABLE_CUDA=OFF \
 && cmake --build build \
 && mkdir -p /out/bin /out/lib \
 && cp build/bin/gpusort-server build/bin/gpusort /out/bin/ \
 && ldd build/bin/gpusort-server build/bin/gpusort | awk '/=> \//{print $3}' | sort -u \
      | grep -vE '/lib(c|m|dl|pthread|rt)\.so' | xargs -I{} cp -L {} /out/lib/

FROM debian:12-slim
COPY --from=build /out/bin/ /usr/local/bin/
COPY --from=build /out/lib/ /usr/local/lib/gpusort/
ENV LD_LIBRARY_PATH=/usr/local/lib/gpusort
RUN useradd --system --uid 10001 gpusort
USER gpusort
# 50051: gRPC (Sort, TopK, health, reflection); 9464: Prometheus /metrics
EXPOSE 50051 9464
HEALTHCHECK --interval=10s --timeout=3s CMD ["gpusort", "health", "--server", "127.0.0.1:50051"]
ENTRYPOINT ["gpusort-server"]
CMD ["--listen", "0.0.0.0:50051", "--metrics-listen", "0.0.0.0:9464"]
