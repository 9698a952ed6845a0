#!/usr/bin/env bash
# A task that outlives its --time on a real Slurm cluster started on this
# machine (scripts/local-slurm.sh, torn down at exit): the array is
# submitted with --time 1 (Slurm's limits are whole minutes, checked about
# every 30 s), its task runs on, Slurm stops it with SIGTERM, and the
# sweep's report says "timed out" with Slurm's own words (TIMEOUT,
# TimeLimit, signal 15); the stopped task has removed its temporary
# directory. Takes 65 to 100 s, one thread busy: Slurm cannot be made
# quicker.
# Skips (77) where Slurm or munge is not installed, or the cluster does not
# start (not root, ...).
# Usage: test_slurm_timeout_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

slurm_cluster_up 4

MLP=$SRC/models/tiny-mlp.xml
DB=$T/sweeps.db

# One configuration that would run for hours (100000 iterations of a
# 1024-unit MLP at batch 64, on one thread: about 0.1 s each). The task
# runs at the niceness slurmd started with: run this test under nice, as
# every test. Slurm's one-minute limit ends it with SIGTERM.
mkdir -p "$T/tmp"
start=$(date +%s)
# No configuration has a result: exit 1, the table and no JSON file.
expect_exit 1 env TMPDIR="$T/tmp" "$NTPROF" sweep "$MLP" --vary hidden=1024 --batch 64 \
    --threads 1 --iterations 100000 --warmup 0 --min-time 0 --no-accuracy --backend ref \
    --db "$DB" --executor slurm --shared --time 1 --wait --format json -o "$T/s.json"
took=$(($(date +%s) - start))
echo "the sweep ended after $took s"
expect_in_err "configuration 0 failed: hidden=1024: timed out: Slurm job "
grep -q "TIMEOUT (TimeLimit), killed by signal" "$T/err" && ok || bad "Slurm's words: $(cat "$T/err")"
[ ! -e "$T/s.json" ] && ok || bad "a JSON report was written for a sweep without results"
[ "$took" -ge 60 ] && ok || bad "the sweep ended after $took s, before Slurm's one-minute limit"
sqlite3 "$DB" "SELECT idx, state, message FROM sweep_tasks ORDER BY idx" >"$T/rows" 2>&1
grep -q "^0|timed out|timed out: Slurm job [0-9]*_0: TIMEOUT (TimeLimit), killed by signal 15" "$T/rows" && ok ||
    bad "sweep_tasks: $(cat "$T/rows")"
compgen -G "$T/tmp/ntprof-task-*" >/dev/null && bad "the timed-out task left $(ls "$T/tmp")" || ok

finish test_slurm_timeout_cli
