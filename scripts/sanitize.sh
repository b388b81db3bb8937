#!/usr/bin/env bash
# The test suite under sanitizers, built with gcc, CUDA and benchmarks off (GPU tests skip without a GPU
# anyway; nvcc cannot instrument host code for the sanitizers).
#   scripts/sanitize.sh asan   build-asan/: AddressSanitizer + UndefinedBehaviorSanitizer, the whole ctest suite
#   scripts/sanitize.sh tsan   build-tsan/: ThreadSanitizer, service_tests and client_tests
# Any finding fails the run. Library noise is suppressed, a reason per line, in tests/sanitizers/.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: scripts/sanitize.sh asan|tsan}
supp=$PWD/tests/sanitizers
jobs=$(nproc)

case "$mode" in
  asan)
    build=build-asan
    # Exported, not only given to CMake: tests/client/consumer_test.sh configures a CMake project of its
    # own against this build's installed (instrumented) client library, and CMake takes CXXFLAGS from
    # the environment for it.
    export CXXFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    # Leaks are checked at exit of every test process; a report (or any ASan error) makes it exit 1.
    export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:suppressions=$supp/ubsan.supp"
    targets=(all)
    # The deploy checks that run no code built here (yamllint, promtool, the Kubernetes schema, the
    # Dockerfile's text) would only repeat the plain run; the ones that start a server stay.
    # The CPU engine's sweeps over every shape and pattern (half of this run's test time) for the key
    # types that another type's engine serves (server/backend/cpu/engine_key.h: intN runs uintN's code,
    # bfloat16 float16's): the same instructions on other bits, which ASan has nothing new to see in.
    # The plain run checks every dtype's answers.
    exclude='^(deploy\.(yaml_lint|alert_rules|k8s_schema|dockerfile)|Cpu/(SortCases|TopKCases)\..*/(i8|i16|i32|i64|bf16)_.*)$'
    ;;
  tsan)
    build=build-tsan
    export CXXFLAGS="-fsanitize=thread -fno-omit-frame-pointer"
    # history_size=7: the earlier access's stack is kept long enough to be shown (and matched by the
    # suppressions); second_deadlock_stack: both stacks of a lock-order report. halt_on_error stays off
    # so that one run lists every race; exit code 66 still fails the test that saw one.
    export TSAN_OPTIONS="suppressions=$supp/tsan.supp:second_deadlock_stack=1:history_size=7:print_suppressions=0"
    targets=(service_tests client_tests)
    # Too slow under TSan for their deadlines or the CI's time, each still run in the plain and ASan
    # suites: the CPU sorts of 64 MiB and more (5-15x slower: past 170-300 s each on 2 cores; the caller
    # that stops reading a 64 MiB answer took 218 s), and the
    # fault test that streams 16 MiB in 1 MiB messages against a 3 s deadline (every 64 KiB protobuf
    # copies into a message is a suppressed gRPC hand-off, and TSan's bookkeeping of them grows with each).
    # The echo of 16 MiB in 4 parts (bench_test) took 48 s under TSan on 2 cores for 2 calls. Four callers
    # sorting 2 MiB of u64 keys each at once over the data port on the CPU engine (ClientSockets) ran past
    # 300 s (each key load an intercepted memcpy, 8 radix passes, two cores shared by eight threads); the
    # data port's other tests, one call at a time, run here.
    exclude='^(ClientSockets\.SeveralThreadsShareOneClientAndItsConnections|RpcStreaming\.ArrayLargerThanOneMessageRoundTripsInOddChunks|BenchEndToEnd\.EchoInPartsReturnsTheBytesInOrder|ClientTyped\.LargeArraysStreamByThemselves.*|SharedMemoryRace\..*|CancelAndDeadline/Faults\.WhileTheAnswerIsBeingSent/.*|IdleStreams\.CallerThatStopsReadingTheAnswerIsEndedAndItsTicketComesBack)$'
    ;;
  *) echo "usage: scripts/sanitize.sh asan|tsan" >&2; exit 2 ;;
esac

# -O1: sanitizer reports keep their frames; and no NDEBUG, so that assertions run too. -g1: line tables
# and inlined frames (what reports and the suppressions' frame names need) without the variables' debug
# information, which took a third of the compile time of the CPU engine's files.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DGPUSORT_ENABLE_CUDA=OFF -DGPUSORT_BUILD_BENCHMARKS=OFF -DGPUSORT_BUILD_TESTS=ON
cmake --build "$build" --target "${targets[@]}"

cd "$build"
args=(--output-on-failure --timeout 900 -j "$jobs")
[ -n "$exclude" ] && args+=(-E "$exclude")
if [ "$mode" = tsan ]; then
  args+=(-L '^(service|client)$')  # service_tests and client_tests
fi
status=0
ctest "${args[@]}" || status=$?
[ "$status" -eq 0 ] || ../scripts/print-failed-tests.sh .
exit "$status"
