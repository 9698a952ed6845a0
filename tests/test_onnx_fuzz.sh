#!/usr/bin/env bash
# A short libFuzzer run of the ONNX reader (fuzz/fuzz_onnx.c) from the seed
# corpus in fuzz/corpus/onnx/, as a CI step: 20 seconds of fuzzing by the
# fuzzer that the clang sanitizer build (-DNTP_FUZZ=ON, `make test-sanitize`)
# builds. Any crash, sanitizer report or leak fails the test.
# Usage: test_onnx_fuzz.sh <path-to-ntprof> <source-dir>, NTP_FUZZER=<fuzzer>
set -u
SRC=$2
SECONDS_TO_FUZZ=${NTP_FUZZ_SECONDS:-20}
# The fuzzer is built by the build that runs this test (NTP_FUZZ, in the
# clang sanitizer build of `make test-sanitize`); tests/CMakeLists.txt
# registers this test only there and passes its path.
FUZZER=${NTP_FUZZER:-}
if [ -z "$FUZZER" ] || [ ! -x "$FUZZER" ]; then
    echo "test_onnx_fuzz: NTP_FUZZER does not name the fuzzer ('$FUZZER')"
    exit 1
fi
BUILD=$(cd "$(dirname "$FUZZER")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# New inputs go to a scratch copy: the seed corpus in the repository stays
# as committed.
cp "$SRC"/fuzz/corpus/onnx/* "$WORK/"
cd "$WORK" || exit 1
# Crashing inputs are kept next to the build, to reproduce with
# "$BUILD/fuzz_onnx FILE".
mkdir -p "$BUILD/artifacts"
"$FUZZER" -max_total_time="$SECONDS_TO_FUZZ" -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" "$WORK" >fuzz.log 2>&1
rc=$?
tail -15 fuzz.log
if [ "$rc" != 0 ]; then
    echo "test_onnx_fuzz: the fuzzer failed (exit $rc)"
    ls "$BUILD"/artifacts/ 2>/dev/null
    exit 1
fi
echo "test_onnx_fuzz: $SECONDS_TO_FUZZ s without a crash"
