#!/usr/bin/env bash
# End-to-end time of a sweep of N tiny configurations (default 200:
# tiny-mlp.xml, hidden=1..N, 3 iterations each) run as one Slurm array on
# the local cluster (scripts/local-slurm.sh, this machine's real CPUs)
# against the same sweep with --executor local, side by side in one run,
# with the load average beside each figure. The array is measured twice:
# --exclusive (the default: one task per node, so one at a time here, as
# local runs them) and --shared (as many at once as the node has CPUs).
# STORE picks the history the runs are recorded in: sqlite (default: a file
# per executor), pg (a PostgreSQL server of its own from
# scripts/local-postgres.sh, as a lab's shared store: the local sweep then
# writes on one kept connection, each array task on its own), or both (the
# three measures on each, six in all).
# MEASURES (default local,exclusive,shared) picks which of the three are
# taken: `local,exclusive` gives the two figures issue 20 names (the array
# against the local sweep) in about two thirds of the time.
# Needs root (slurmd) and slurm-wlm + munge; prints why not otherwise.
# Usage: bench/bench_slurm_sweep.sh <path-to-ntprof> [N] [sqlite|pg|both] [MEASURES]
set -euo pipefail
# shellcheck source=bench/support/ntprof-arg.sh
. "$(dirname "$0")/support/ntprof-arg.sh"
NTPROF=$(ntprof_arg bench_slurm_sweep.sh "bench/bench_slurm_sweep.sh <path-to-ntprof> [N] [sqlite|pg|both] [MEASURES]" "${1-}")
N=${2:-200}
STORE=${3:-sqlite}
case "$STORE" in sqlite | pg | both) ;; *)
    echo "bench_slurm_sweep: STORE is sqlite, pg or both, not '$STORE'" >&2
    exit 2
    ;;
esac
MEASURES=,${4:-local,exclusive,shared},
for m in ${MEASURES//,/ }; do
    case "$m" in local | exclusive | shared) ;; *)
        echo "bench_slurm_sweep: MEASURES is a comma-separated list of local, exclusive and shared, not '$m'" >&2
        exit 2
        ;;
    esac
done
want() { [ "${MEASURES#*,$1,}" != "$MEASURES" ]; }
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
CLUSTER=
PGDIR=
cleanup() {
    [ -n "$CLUSTER" ] && bash "$SRC/scripts/local-slurm.sh" down "$CLUSTER" 2>/dev/null
    [ -n "$PGDIR" ] && bash "$SRC/scripts/local-postgres.sh" down "$PGDIR" >/dev/null 2>&1
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
if [ "$STORE" != pg ]; then
    if want local; then measure local --db "$T/local.db"; fi
    if want exclusive; then measure slurm-exclusive --db "$T/slurm.db" --executor slurm --wait; fi
    if want shared; then measure slurm-shared --db "$T/slurm.db" --executor slurm --wait --shared; fi
fi
if [ "$STORE" != sqlite ]; then
    bash "$SRC/scripts/local-postgres.sh" up >"$T/pg.up" 2>&1 || {
        echo "bench_slurm_sweep: local-postgres.sh up failed:" >&2
        cat "$T/pg.up" >&2
        exit 1
    }
    PGDIR=$(sed -n 's/^dir: //p' "$T/pg.up")
    URL=$(tail -n 1 "$T/pg.up")
    if want local; then measure pg-local --db "$URL"; fi
    if want exclusive; then measure pg-slurm-excl --db "$URL" --executor slurm --wait; fi
    if want shared; then measure pg-slurm-shared --db "$URL" --executor slurm --wait --shared; fi
fi
awk 'function r(a, b) { return (a in t) && (b in t) ? sprintf("%.2fx", t[a] / t[b]) : "n/a" }
{ t[$1] = $2 } END {
    if ("local" in t)
        printf "slurm-exclusive / local: %s   slurm-shared / local: %s\n",
            r("slurm-exclusive", "local"), r("slurm-shared", "local")
    if ("pg-local" in t)
        printf "PostgreSQL: slurm-exclusive / local: %s   slurm-shared / local: %s\n",
            r("pg-slurm-excl", "pg-local"), r("pg-slurm-shared", "pg-local")
    if ("local" in t && "pg-local" in t)
        printf "PostgreSQL / SQLite: local %s   slurm-exclusive %s   slurm-shared %s\n",
            r("pg-local", "local"), r("pg-slurm-excl", "slurm-exclusive"),
            r("pg-slurm-shared", "slurm-shared") }' "$T/summary"
