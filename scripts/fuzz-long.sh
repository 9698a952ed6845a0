#!/usr/bin/env bash
# A long libFuzzer campaign over every harness (fuzz/fuzz_*.c), outside CI:
# builds the fuzzers (clang, ASan + UBSan, libFuzzer; the configuration of
# `make test-sanitize`, less the CUDA and torch backends, which no reader
# uses and which take the longest to build), then runs each harness for a number of executions
# or a time, on N cores, at idle priority, and prints per harness the
# executions reached, exec/s, CPU time per execution and what was found.
#
#   scripts/fuzz-long.sh                    10 million executions per harness, on every core
#   scripts/fuzz-long.sh -r 1000000 -j 2    a million each, two processes at a time
#   scripts/fuzz-long.sh -t 3600 npy store  an hour of each job, two harnesses only
#
# Options:
#   -r RUNS     executions per harness (default 10000000), split over its jobs
#   -t SECONDS  run each job this long instead (libFuzzer -max_total_time)
#   -j N        processes at once (default: every core)
#   -s SHARDS   jobs per harness (default: N / harnesses, at least 1); each has its
#               own seed and all share the harness's corpus
#   -b DIR      build directory (default build-fuzz); -B skips the build
#   -o DIR      work directory (default out/fuzz-long): DIR/<harness>/corpus grows
#               from run to run (seeded from fuzz/corpus/<harness>/), crashes
#               land in DIR/<harness>/artifacts/, logs in DIR/<harness>/job-K.log
#   -n          normal priority (default: SCHED_IDLE, nice 19, idle I/O class)
#
# Every input gets -timeout=1200 s of wall time, so a job frozen by SIGSTOP
# (or starved at idle priority) for up to 20 minutes is not taken for a hang;
# a real hang still ends the job. Exit status: 0 when every job reached its
# end with nothing found, 1 otherwise. Crashes, leaks, timeouts and
# out-of-memory inputs are listed with the command that reproduces them;
# commit each to fuzz/corpus/<harness>/ with its fix (the CI runs replay the
# corpus first).
set -u
cd "$(dirname "$0")/.." || exit 1
SRC=$(pwd)

RUNS=10000000
TIME=
JOBS=$(nproc 2>/dev/null || echo 2)
SHARDS=
BUILD=build-fuzz
BUILD_IT=1
WORK=out/fuzz-long
IDLE=1
while getopts "r:t:j:s:b:Bo:nh" o; do
    case $o in
    r) RUNS=$OPTARG ;;
    t) TIME=$OPTARG ;;
    j) JOBS=$OPTARG ;;
    s) SHARDS=$OPTARG ;;
    b) BUILD=$OPTARG ;;
    B) BUILD_IT= ;;
    o) WORK=$OPTARG ;;
    n) IDLE= ;;
    *)
        sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 2
        ;;
    esac
done
shift $((OPTIND - 1))
ALL=(onnx markup npy store)
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=("${ALL[@]}")
for h in "${HARNESSES[@]}"; do
    if [ ! -f "fuzz/fuzz_$h.c" ]; then
        echo "fuzz-long: no harness fuzz/fuzz_$h.c (there are: ${ALL[*]})" >&2
        exit 2
    fi
done
for v in "$RUNS" "$JOBS" ${TIME:+"$TIME"} ${SHARDS:+"$SHARDS"}; do
    case $v in
    '' | *[!0-9]* | 0)
        echo "fuzz-long: '$v' is not a positive number" >&2
        exit 2
        ;;
    esac
done
[ -n "$SHARDS" ] || SHARDS=$((JOBS / ${#HARNESSES[@]}))
[ "$SHARDS" -ge 1 ] || SHARDS=1

# Idle priority: SCHED_IDLE (runs only on otherwise idle CPU time), nice 19
# where that is refused, and the idle I/O class.
LOW=()
if [ -n "$IDLE" ]; then
    if chrt --idle 0 true 2>/dev/null; then LOW=(chrt --idle 0); fi
    LOW+=(nice -n 19)
    if ionice -c3 true 2>/dev/null; then LOW+=(ionice -c3); fi
fi

if [ -n "$BUILD_IT" ]; then
    if ! command -v clang >/dev/null; then
        echo "fuzz-long: the fuzzers need clang (libFuzzer)" >&2
        exit 1
    fi
    echo "fuzz-long: building the fuzzers in $BUILD (clang, ASan + UBSan, libFuzzer)"
    LAUNCH=()
    if command -v ccache >/dev/null; then
        LAUNCH=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    CC=clang CXX=clang++ "${LOW[@]}" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug \
        -DNTP_SANITIZE=ON -DNTP_FUZZ=ON -DNTP_BUILD_BENCH=OFF -DNTP_BUILD_TESTS=OFF \
        -DNTP_WITH_CUDA=OFF -DNTP_WITH_TORCH=OFF -DCMAKE_C_FLAGS_DEBUG="-O1 -g" "${LAUNCH[@]}" >"$BUILD.configure.log" 2>&1 || {
        tail -20 "$BUILD.configure.log"
        echo "fuzz-long: configuring failed (log: $BUILD.configure.log)" >&2
        exit 1
    }
    TARGETS=()
    for h in "${HARNESSES[@]}"; do TARGETS+=("fuzz_$h"); done
    "${LOW[@]}" cmake --build "$BUILD" -j"$JOBS" --target "${TARGETS[@]}" >"$BUILD.build.log" 2>&1 || {
        grep -E 'error|Error' "$BUILD.build.log" | head -20
        echo "fuzz-long: the build failed (log: $BUILD.build.log)" >&2
        exit 1
    }
fi
BUILD=$(cd "$BUILD" && pwd)
for h in "${HARNESSES[@]}"; do
    if [ ! -x "$BUILD/fuzz_$h" ]; then
        echo "fuzz-long: no fuzzer $BUILD/fuzz_$h (configure with -DNTP_FUZZ=ON)" >&2
        exit 1
    fi
done

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
# The job list: harness, shard, its share of the executions.
JOBLIST=()
for h in "${HARNESSES[@]}"; do
    mkdir -p "$WORK/$h/corpus" "$WORK/$h/artifacts"
    # Seeds (and the regressions kept among them) join the corpus; what the
    # earlier runs found stays.
    cp -n "$SRC"/fuzz/corpus/"$h"/* "$WORK/$h/corpus/" 2>/dev/null
    rm -f "$WORK/$h"/job-*.log "$WORK/$h"/job-*.time
    for ((k = 1; k <= SHARDS; k++)); do
        n=$((RUNS / SHARDS + (k <= RUNS % SHARDS ? 1 : 0)))
        JOBLIST+=("$h $k $n")
    done
done
if [ -n "$TIME" ]; then
    echo "fuzz-long: ${HARNESSES[*]}: $SHARDS job(s) each, $TIME s per job, $JOBS at a time," \
        "in $WORK"
else
    echo "fuzz-long: ${HARNESSES[*]}: $RUNS executions each in $SHARDS job(s), $JOBS at a time," \
        "in $WORK"
fi

# One job: libFuzzer in the harness's folder, CPU time recorded beside it.
run_job() {
    local h=$1 k=$2 n=$3 d=$WORK/$1
    local limit=(-runs="$n") max_len=65536
    # A history's seeds are larger (SQLite pages).
    [ "$h" != store ] || max_len=131072
    [ -z "$TIME" ] || limit=(-max_total_time="$TIME")
    (
        cd "$d" || exit 1
        TIMEFORMAT="%U %S %R"
        {
            time "${LOW[@]}" "$BUILD/fuzz_$h" "${limit[@]}" -seed="$((k * 7919 + 1))" \
                -timeout=1200 -rss_limit_mb=2048 -max_len="$max_len" -dict="$SRC/fuzz/$h.dict" \
                -print_final_stats=1 -artifact_prefix="$d/artifacts/" corpus >"job-$k.log" 2>&1
            echo "rc $?" >"job-$k.rc"
        } 2>"job-$k.time"
    )
}

# Each job in a process group of its own (job control), so that an
# interrupt ends exactly the fuzzers this script started.
set -m
PIDS=()
stop_jobs() {
    local pid
    for pid in "${PIDS[@]}"; do kill -- "-$pid" 2>/dev/null; done
    exit 130
}
trap stop_jobs INT TERM
for h in "${HARNESSES[@]}"; do touch "$WORK/$h/.started"; done
for job in "${JOBLIST[@]}"; do
    # Wait for a free slot.
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
        wait -n 2>/dev/null || sleep 1
    done
    # shellcheck disable=SC2086
    run_job $job &
    PIDS+=($!)
done
wait
set +m

# The summary: executions from libFuzzer's final statistics, CPU time from
# the shell's, findings from the artifacts folder.
status=0
printf '\n%-7s %12s %8s %13s %9s %12s %6s %5s\n' harness executions jobs "exec/s a job" "cpu s" \
    "cpu us/exec" found slow
for h in "${HARNESSES[@]}"; do
    d=$WORK/$h
    execs=0 cpu=0 rate=0 bad=0
    for ((k = 1; k <= SHARDS; k++)); do
        e=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/job-$k.log" 2>/dev/null | tail -1)
        # A job that stopped on a finding prints no final statistics: its
        # last status line counts.
        [ -n "$e" ] || e=$(grep -oE '^#[0-9]+' "$d/job-$k.log" 2>/dev/null | tail -1 | tr -d '#')
        e=${e:-0}
        execs=$((execs + e))
        read -r u s r <"$d/job-$k.time" 2>/dev/null || { u=0 s=0 r=0; }
        cpu=$(awk -v a="$cpu" -v u="$u" -v s="$s" 'BEGIN { print a + u + s }')
        rate=$(awk -v a="$rate" -v e="$e" -v r="$r" -v n="$SHARDS" \
            'BEGIN { print a + (r > 0 ? e / r / n : 0) }')
        rc=$(sed -n 's/^rc //p' "$d/job-$k.rc" 2>/dev/null)
        [ "${rc:-1}" = 0 ] || bad=1
    done
    found=$(find "$d/artifacts" -type f ! -name 'slow-unit-*' -newer "$d/.started" 2>/dev/null |
        wc -l)
    slow=$(find "$d/artifacts" -type f -name 'slow-unit-*' -newer "$d/.started" 2>/dev/null | wc -l)
    per=$(awk -v e="$execs" -v c="$cpu" 'BEGIN { printf "%.1f", (e > 0 ? c * 1e6 / e : 0) }')
    printf '%-7s %12s %8s %13.0f %9.1f %12s %6s %5s\n' "$h" "$execs" "$SHARDS" "$rate" "$cpu" "$per" \
        "$found" "$slow"
    if [ "$bad" != 0 ] || [ "$found" != 0 ]; then
        status=1
        echo "  fuzz_$h: a job failed or found something; logs: $d/job-*.log"
        grep -hE '^==[0-9]+==(ERROR|WARNING)|^SUMMARY|runtime error|^rc ' "$d"/job-*.log \
            "$d"/job-*.rc 2>/dev/null | sort | uniq -c | head -10 | sed 's/^/    /'
        find "$d/artifacts" -type f ! -name 'slow-unit-*' -newer "$d/.started" 2>/dev/null |
            head -10 | while read -r a; do echo "    reproduce: $BUILD/fuzz_$h $a"; done
    fi
done
echo "exec/s a job: each job's executions over its wall time, averaged over the jobs;"
echo "cpu us/exec: user + system CPU time per execution (start-up included), which waiting for a CPU does not"
echo "inflate; found: crash, leak, timeout and oom inputs of this run (<work>/<harness>/artifacts);"
echo "slow units are not failures."
exit $status
