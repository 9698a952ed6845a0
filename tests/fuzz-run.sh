#!/usr/bin/env bash
# A short libFuzzer run of one harness (fuzz/fuzz_<name>.c) from its seed
# corpus fuzz/corpus/<name>/ with its dictionary fuzz/<name>.dict, as a CI
# step, by the fuzzers that the clang sanitizer build (-DNTP_FUZZ=ON, `make
# test-sanitize`) builds. Every seed, including each crash ever found (kept
# in the corpus as a regression), runs first; then NTP_FUZZ_SECONDS (default
# 20) of fuzzing. Any crash, sanitizer report, leak or timeout fails.
# Usage: fuzz-run.sh <name> <source-dir>, NTP_FUZZER=<path of fuzz_onnx>
# (the test registration passes that one; its siblings sit beside it).
set -u
NAME=$1
SRC=$2
SECONDS_TO_FUZZ=${NTP_FUZZ_SECONDS:-20}
if [ -z "${NTP_FUZZER:-}" ]; then
    echo "fuzz-run: NTP_FUZZER does not name the fuzzer build"
    exit 1
fi
BUILD=$(cd "$(dirname "$NTP_FUZZER")" && pwd)
FUZZER=$BUILD/fuzz_$NAME
if [ ! -x "$FUZZER" ]; then
    echo "fuzz-run: no fuzzer $FUZZER"
    exit 1
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# New inputs go to a scratch copy: the seed corpus in the repository stays
# as committed.
cp "$SRC"/fuzz/corpus/"$NAME"/* "$WORK/"
cd "$WORK" || exit 1
# Crashing inputs are kept next to the build, to reproduce with
# "$FUZZER FILE" and then to commit to fuzz/corpus/$NAME/.
mkdir -p "$BUILD/artifacts"
# Inputs up to 64 KiB; a history's seeds are larger (SQLite pages).
MAX_LEN=65536
[ "$NAME" != store ] || MAX_LEN=131072
"$FUZZER" -max_total_time="$SECONDS_TO_FUZZ" -rss_limit_mb=2048 -max_len="$MAX_LEN" -timeout=25 \
    -dict="$SRC/fuzz/$NAME.dict" -print_final_stats=1 \
    -artifact_prefix="$BUILD/artifacts/$NAME-" "$WORK" >fuzz.log 2>&1
rc=$?
tail -15 fuzz.log
if [ "$rc" != 0 ]; then
    echo "fuzz-run: fuzz_$NAME failed (exit $rc)"
    ls "$BUILD"/artifacts/ 2>/dev/null
    exit 1
fi
echo "fuzz-run: fuzz_$NAME ran $SECONDS_TO_FUZZ s without a crash"
