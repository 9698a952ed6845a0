#!/usr/bin/env bash
# `ntprof sweep --executor slurm` on a real Slurm cluster started on this
# machine (scripts/local-slurm.sh, torn down at exit): a 50-task array
# lands 50 results with no duplicate, each configuration's run being the
# one it asked for; a task killed with SIGKILL is reported failed with
# Slurm's word for it and --resume completes only it; bad input (sbatch
# missing or refusing the job, an unknown sweep ID).
# Skips (77) where Slurm or munge is not installed, or the cluster does not
# start (not root, ...).
# Usage: test_slurm_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

# The cluster: 25 CPUs declared so that 25 tasks run at once (--shared).
slurm_cluster_up 25

MLP=$SRC/models/tiny-mlp.xml
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)
DB=$T/sweeps.db

# Bad input that needs no cluster: an unknown sweep ID is one line; sbatch
# missing is its own message and a non-zero exit.
expect_exit 1 "$NTPROF" sweep --report 999 --db "$DB"
expect_err "no sweep 999"
expect_exit 1 env PATH=/nonexistent "$NTPROF" sweep "$MLP" --vary hidden=8,16 "${FAST[@]}" \
    --db "$DB" --executor slurm
expect_err "'sbatch' not found on PATH"
expect_exit 2 "$NTPROF" sweep "$MLP" --vary hidden=8,16 --wait
expect_err "need --executor slurm"

# sbatch refusing the job: its own message, non-zero exit.
expect_exit 1 "$NTPROF" sweep "$MLP" --vary hidden=8,16 "${FAST[@]}" --db "$DB" \
    --executor slurm --partition nosuch
expect_in_err "Invalid partition name specified"

# 50 configurations (hidden=1..50), one array of 50 tasks.
H=$(seq -s, 1 50)
expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden="$H" "${FAST[@]}" --db "$DB" \
    --executor slurm --shared --wait --format json -o "$T/s50.json"
$PY - "$T/s50.json" "$DB" <<'PYEOF' && ok || bad "50-task array"
import json, sqlite3, sys
s = json.load(open(sys.argv[1]))
cs = s["configurations"]
assert len(cs) == 50, len(cs)
assert [c["status"] for c in cs] == ["ok"] * 50, [c["status"] for c in cs]
for i, c in enumerate(cs):
    # Configuration i is hidden=i+1 (OFAT over one factor), and the stored
    # run is the one it asked for: its own param and its own FLOPs.
    assert c["values"]["hidden"] == str(i + 1), c["values"]
    assert c["report"]["config"]["params"]["hidden"] == str(i + 1), c["report"]["config"]["params"]
    assert c["end_to_end"]["median_ms"] > 0
fl = [c["report"]["flops"] for c in cs]
assert all(a < b for a, b in zip(fl, fl[1:])), fl  # more hidden units, more FLOPs
db = sqlite3.connect(sys.argv[2])
sweep = db.execute("SELECT max(id) FROM sweeps").fetchone()[0]
rows = db.execute("SELECT idx, state, run_id, job FROM sweep_tasks WHERE sweep_id = ?",
                  (sweep,)).fetchall()
assert len(rows) == 50, len(rows)
assert sorted(r[0] for r in rows) == list(range(50))
assert all(r[1] == "ok" for r in rows), rows
run_ids = [r[2] for r in rows]
assert len(set(run_ids)) == 50, "a run shared by two tasks"
assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 50, "a duplicate run"
jobs = {r[3].split("_")[0] for r in rows}
assert len(jobs) == 1, jobs  # one array
PYEOF

# A task killed with SIGKILL: configuration 1 runs for two seconds or more
# (--min-time 2), its task process is killed, Slurm says FAILED with
# signal 9, and the report says so; --resume runs only it.
SLOW=(--iterations 3 --warmup 1 --min-time 2 --no-accuracy --backend ref)
# The tasks' temporary directories go to $T/tmp (sbatch passes TMPDIR on).
mkdir -p "$T/tmp"
TMPDIR=$T/tmp "$NTPROF" sweep "$MLP" --vary hidden=8,16 "${SLOW[@]}" --db "$DB" --executor slurm --shared \
    --wait --format json -o "$T/k.json" >"$T/k.out" 2>"$T/k.err" &
waiter=$!
ID=
for _ in $(seq 1 300); do
    ID=$(sqlite3 "$DB" "SELECT max(id) FROM sweeps" 2>/dev/null)
    pid=$(pgrep -f "sweep --task $ID:1 " | head -n 1)
    [ "$ID" -ge 3 ] 2>/dev/null && [ -n "$pid" ] && break
    sleep 0.1
done
if [ -n "$pid" ]; then
    sleep 0.5
    kill -9 "$pid" && ok || bad "cannot kill task 1 ($pid)"
else
    bad "task 1 of sweep $ID never ran"
fi
wait "$waiter"
[ $? = 0 ] && ok || { bad "the killed sweep's --wait exited non-zero"; cat "$T/k.err"; }
$PY - "$T/k.json" <<'PYEOF' && ok || bad "killed task reported"
import json, sys
cs = json.load(open(sys.argv[1]))["configurations"]
assert cs[0]["status"] == "ok", cs[0]["status"]
assert cs[1]["status"] == "failed", cs[1]["status"]
e = cs[1]["error"]
assert "FAILED" in e and "signal 9" in e, e
PYEOF
expect_exit 0 env TMPDIR="$T/tmp" "$NTPROF" sweep --resume "$ID" --db "$DB" --shared --wait --format json \
    -o "$T/r.json"
expect_in_err "1 of 2 configurations resubmitted"
# The killed task's directory is gone (the resumed task or --resume removed it).
compgen -G "$T/tmp/ntprof-task-*" >/dev/null && bad "left behind: $(ls "$T/tmp")" || ok
$PY - "$T/r.json" "$DB" "$ID" <<'PYEOF' && ok || bad "resume"
import json, sqlite3, sys
cs = json.load(open(sys.argv[1]))["configurations"]
assert [c["status"] for c in cs] == ["ok", "ok"], [c["status"] for c in cs]
assert cs[1]["report"]["config"]["params"]["hidden"] == "16"
db = sqlite3.connect(sys.argv[2])
rows = db.execute("SELECT idx, state, job FROM sweep_tasks WHERE sweep_id = ? ORDER BY idx",
                  (int(sys.argv[3]),)).fetchall()
assert [r[:2] for r in rows] == [(0, "ok"), (1, "ok")], rows
# Resubmitted: configuration 1 ran in a second job, 0 was not run again.
assert rows[0][2].split("_")[0] != rows[1][2].split("_")[0], rows
jobs = db.execute("SELECT jobs FROM sweeps WHERE id = ?", (int(sys.argv[3]),)).fetchone()[0]
assert len(jobs.split()) == 2, jobs
PYEOF
# Nothing left to resume.
expect_exit 0 "$NTPROF" sweep --resume "$ID" --db "$DB"
expect_in_err "nothing to resume"

# A task that outlives its --time: tests/test_slurm_timeout_cli.sh (a
# minute and a half of its own).
finish test_slurm_cli
