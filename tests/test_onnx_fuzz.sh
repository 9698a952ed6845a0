#!/usr/bin/env bash
# A short libFuzzer run of the ONNX reader (fuzz/fuzz_onnx.c) from the seed
# corpus in fuzz/corpus/onnx/, as a CI step: a clang build with
# -DNTP_FUZZ=ON next to the CLI's build (kept, so later runs are
# incremental), then 20 seconds of fuzzing. Any crash, sanitizer report or
# leak fails the test. Without clang there is nothing to run: the test says
# so and passes.
# Usage: test_onnx_fuzz.sh <path-to-ntprof> <source-dir>
set -u
NTPROF=$1
SRC=$2
SECONDS_TO_FUZZ=${NTP_FUZZ_SECONDS:-20}
if ! command -v clang >/dev/null 2>&1; then
    echo "test_onnx_fuzz: clang not found: the fuzzer is not built (skipped)"
    exit 0
fi
# Debug (-O0) compiles fastest; the first run builds the library once with
# clang's instrumentation (a few minutes), later runs only what changed.
BUILD=$(cd "$(dirname "$NTPROF")" && pwd)/fuzz-build
cmake -S "$SRC" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
    -DNTP_FUZZ=ON -DNTP_BUILD_TESTS=OFF -DNTP_BUILD_BENCH=OFF -DNTP_WITH_CUDA=OFF \
    >"$BUILD.log" 2>&1 || { echo "configure failed:"; tail -20 "$BUILD.log"; exit 1; }
cmake --build "$BUILD" --target fuzz_onnx -j2 >>"$BUILD.log" 2>&1 ||
    { echo "build failed:"; tail -30 "$BUILD.log"; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# New inputs go to a scratch copy: the seed corpus in the repository stays
# as committed.
cp "$SRC"/fuzz/corpus/onnx/* "$WORK/"
cd "$WORK" || exit 1
# Crashing inputs are kept next to the build, to reproduce with
# "$BUILD/fuzz_onnx FILE".
mkdir -p "$BUILD/artifacts"
"$BUILD/fuzz_onnx" -max_total_time="$SECONDS_TO_FUZZ" -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" "$WORK" >fuzz.log 2>&1
rc=$?
tail -15 fuzz.log
if [ "$rc" != 0 ]; then
    echo "test_onnx_fuzz: the fuzzer failed (exit $rc)"
    ls "$BUILD"/artifacts/ 2>/dev/null
    exit 1
fi
echo "test_onnx_fuzz: $SECONDS_TO_FUZZ s without a crash"
