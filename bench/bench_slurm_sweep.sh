#!/usr/bin/env bash
# End-to-end time of a sweep of N tiny configurations (default 200:
# tiny-mlp.xml, hidden=1..N, 3 iterations each) run as one Slurm array on
# the local cluster (scripts/local-slurm.sh, this machine's real CPUs)
# against the same sweep with --executor local, side by side in one run,
# with the load average beside each figure. The array is measured twice:
# --exclusive (the default: one task per node, so one at a time here, as
# local runs them) and --shared (as many at once as the node has CPUs).
# Needs root (slurmd) and slurm-wlm + munge; prints why not otherwise.
# Usage: bench/bench_slurm_sweep.sh <path-to-ntprof> [N]
set -euo pipefail
NTPROF=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
N=${2:-200}
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
CLUSTER=
cleanup() {
    [ -n "$CLUSTER" ] && bash "$SRC/scripts/local-slurm.sh" down "$CLUSTER" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
line=$(bash "$SRC/scripts/local-slurm.sh" up 2>"$T/up.err" | tail -n 1)
if [ "${line#export SLURM_CONF=}" = "$line" ]; then
    echo "bench_slurm_sweep: the local cluster did not start:" >&2
    cat "$T/up.err" >&2
    exit 1
fi
eval "$line"
export SLURM_CONF
CLUSTER=$(dirname "$SLURM_CONF")

H=$(seq -s, 1 "$N")
ARGS=("$SRC/models/tiny-mlp.xml" --vary "hidden=$H" --iterations 3 --warmup 1 --min-time 0
    --no-accuracy --backend ref --format csv)
now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
measure() {
    local name=$1
    shift
    local l0 t0 t1
    l0=$(load)
    t0=$(now)
    "$NTPROF" sweep "${ARGS[@]}" "$@" -o "$T/$name.csv" 2>"$T/$name.err"
    t1=$(now)
    local ok
    ok=$(grep -c ',ok,' "$T/$name.csv" || true)
    awk -v n="$name" -v t0="$t0" -v t1="$t1" -v ok="$ok" -v N="$N" -v l0="$l0" -v l1="$(load)" \
        'BEGIN { printf "%-16s %8.1f s %7.3f s/config  %d/%d ok  load %s -> %s\n", n, t1 - t0, (t1 - t0) / N, ok, N, l0, l1 }' |
        tee -a "$T/summary"
}
echo "sweep of $N tiny-mlp configurations ($(nproc) CPUs)"
measure local --db "$T/local.db"
measure slurm-exclusive --db "$T/slurm.db" --executor slurm --wait
measure slurm-shared --db "$T/slurm.db" --executor slurm --wait --shared
awk '{ t[$1] = $2 } END {
    printf "slurm-exclusive / local: %.2fx   slurm-shared / local: %.2fx\n",
        t["slurm-exclusive"] / t["local"], t["slurm-shared"] / t["local"] }' "$T/summary"
