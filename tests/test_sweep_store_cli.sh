#!/usr/bin/env bash
# A Slurm sweep's life in the store without a cluster (docs/cluster.md):
# `sbatch` is a stand-in that records its arguments and prints a job id,
# and the array's tasks are run by hand (`sweep --task ID:N`), as Slurm
# would run them. Checked, on SQLite and, where scripts/local-postgres.sh
# can start a server, on PostgreSQL:
#  - the sweep and how it was submitted are recorded; a task writes its
#    run once; --report builds the report from the store;
#  - --resume resubmits only what is missing, with the sweep's own Slurm
#    options (not the ones typed, which are refused when they differ, but
#    --time, which may change), and refuses other run options;
#  - a task stopped by SIGTERM (Slurm's time limit, scancel) removes its
#    temporary directory itself; one killed by SIGKILL leaves it, and
#    --resume removes it;
#  - on PostgreSQL also: a calibration written (`machine --calibrate`)
#    and read back (`predict`, and `run` beside it), and `compare --machine`
#    giving the same comparison as on SQLite.
# Usage: test_sweep_store_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)

# The stand-ins: sbatch appends its arguments (one line per call) to
# $T/sbatch.log and answers job 4242, 4243, ...; scontrol and sacct know
# no job, like a slurmctld that has forgotten it.
mkdir -p "$T/bin" "$T/tmp"
cat >"$T/bin/sbatch" <<EOF
#!/bin/sh
echo "\$*" >>"$T/sbatch.log"
echo \$((4242 + \$(wc -l <"$T/sbatch.log") - 1))
EOF
printf '#!/bin/sh\necho "slurm_load_jobs error: Invalid job id specified" >&2\nexit 1\n' >"$T/bin/scontrol"
cp "$T/bin/scontrol" "$T/bin/sacct"
chmod +x "$T/bin/"*
export PATH="$T/bin:$PATH" TMPDIR="$T/tmp"

# sweep_round_trip DB [signals]: the checks above that need only a store;
# with "signals", the tasks' temporary directories too (once is enough).
sweep_round_trip() {
    local db=$1 signals=${2:-}
    : >"$T/sbatch.log"
    expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=8,16,32 "${FAST[@]}" --db "$db" \
        --executor slurm --partition lab --time 0:05 --max-parallel 2 --sbatch-arg=--account=x
    local id
    id=$(sed -n 's/^sweep \([0-9]*\) submitted as Slurm job 4242 .*/\1/p' "$T/out")
    [ -n "$id" ] && ok || { bad "no sweep id in: $(cat "$T/out")"; return; }
    grep -q -- "--array=0-2%2 --job-name=ntprof-sweep-$id --exclusive --partition=lab --time=0:05 --output=/dev/null --account=x " \
        "$T/sbatch.log" && ok || bad "sbatch arguments: $(cat "$T/sbatch.log")"
    # Task 0 runs; task 2 twice (a requeue), storing one run. The store has
    # no ceilings for task 0 and this machine's (measured quickly) for
    # task 2, whose child reads them.
    expect_exit 0 "$NTPROF" sweep --task "$id:0" --db "$db"
    expect_exit 0 "$NTPROF" machine --db "$db" --seconds 0.02 --no-gemm --format json -o "$T/m.json"
    expect_exit 0 "$NTPROF" sweep --task "$id:2" --db "$db"
    expect_exit 0 "$NTPROF" sweep --task "$id:2" --db "$db"
    expect_in_err "already has its result"
    expect_exit 0 "$NTPROF" history --db "$db" --format json -o "$T/h.json"
    $PY -c 'import json,sys; n=len(json.load(open(sys.argv[1]))["runs"]); assert n==2, n' "$T/h.json" &&
        ok || bad "runs after tasks 0, 2, 2: $(cat "$T/h.json")"
    expect_exit 0 "$NTPROF" sweep --report "$id" --db "$db" --format json -o "$T/rep.json"
    expect_in_err "1 of 3 configurations have no result"
    $PY - "$T/rep.json" <<'PYEOF' && ok || bad "report from the store"
import json, sys
cs = json.load(open(sys.argv[1]))["configurations"]
assert [c["status"] for c in cs] == ["ok", "not run", "ok"], [c["status"] for c in cs]
assert cs[2]["report"]["config"]["params"]["hidden"] == "32"
PYEOF
    $PY - "$T/rep.json" "$T/m.json" <<'PYEOF' && ok || bad "the tasks' runs and the store's ceilings"
import json, sys
cs = json.load(open(sys.argv[1]))["configurations"]
c = json.load(open(sys.argv[2]))["ceilings"]
# Before the ceilings were measured: no roofline (the table says why).
assert "roofline" not in cs[0]["report"], cs[0]["report"]["roofline"]
rl = cs[2]["report"]["roofline"]
peak = [p["gflops"] for p in c["peaks"] if p["precision"] == "f32"][0]
dram = [l["gbps"] for l in c["bandwidth"] if l["level"] == "DRAM"][0]
assert abs(rl["peak_gflops"] - peak) <= 1e-9 * peak, (rl["peak_gflops"], peak)
assert abs(rl["bandwidth_gbps"] - dram) <= 1e-9 * dram, (rl["bandwidth_gbps"], dram)
assert rl["measured_at"] == c["measured_at"], (rl["measured_at"], c["measured_at"])
PYEOF
    # Resume: options that differ from the sweep's are refused, nothing submitted.
    expect_exit 2 "$NTPROF" sweep --resume "$id" --db "$db" --partition other
    expect_err "--resume submits as the sweep was submitted; --partition other (the sweep's: lab) differs"
    expect_exit 2 "$NTPROF" sweep --resume "$id" --db "$db" --shared
    expect_err "--shared (the sweep's tasks are --exclusive) differs"
    expect_exit 2 "$NTPROF" sweep --resume "$id" --db "$db" --max-parallel 5
    expect_err "--max-parallel 5 (the sweep's: 2) differs"
    expect_exit 2 "$NTPROF" sweep --resume "$id" --db "$db" --iterations 9
    expect_err "--resume runs the sweep's own run options (--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)"
    [ "$(wc -l <"$T/sbatch.log")" = 1 ] && ok || bad "a refused resume submitted: $(cat "$T/sbatch.log")"
    # A task killed outright leaves its directory; --resume removes it.
    local task
    if [ -n "$signals" ]; then
        "$NTPROF" sweep --task "$id:1" --db "$db" >/dev/null 2>&1 &
        task=$!
        for _ in $(seq 1 100); do
            compgen -G "$T/tmp/ntprof-task-$id-1-*" >/dev/null && break
            sleep 0.05
        done
        local child
        child=$(pgrep -P "$task" | head -n 1)
        kill -9 "$task" ${child:+"$child"}
        wait "$task" 2>/dev/null
        compgen -G "$T/tmp/ntprof-task-$id-1-*" >/dev/null && ok || bad "no directory left by the killed task"
    fi
    # The sweep's own options, --time changed; the same --partition typed again is fine.
    expect_exit 0 "$NTPROF" sweep --resume "$id" --db "$db" --partition lab --time 0:10 "${FAST[@]}"
    expect_in_err "1 of 3 configurations resubmitted as Slurm job 4243"
    grep -q -- "--array=1%2 --job-name=ntprof-sweep-$id --exclusive --partition=lab --time=0:10 --output=/dev/null --account=x " \
        <(sed -n 2p "$T/sbatch.log") && ok || bad "resume's sbatch arguments: $(sed -n 2p "$T/sbatch.log")"
    compgen -G "$T/tmp/ntprof-task-$id-*" >/dev/null && bad "--resume left $(ls "$T/tmp")" || ok
    expect_exit 0 "$NTPROF" sweep --task "$id:1" --db "$db"
    expect_exit 0 "$NTPROF" sweep --report "$id" --db "$db" --format json -o "$T/rep.json"
    $PY - "$T/rep.json" <<'PYEOF' && ok || bad "report after the resume"
import json, sys
cs = json.load(open(sys.argv[1]))["configurations"]
assert [c["status"] for c in cs] == ["ok"] * 3, [c["status"] for c in cs]
assert [c["report"]["config"]["params"]["hidden"] for c in cs] == ["8", "16", "32"]
PYEOF
    # A task stopped by SIGTERM removes its own directory, and dies by the signal.
    [ -n "$signals" ] || return 0
    expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=8 --iterations 3 --warmup 1 --min-time 5 \
        --no-accuracy --backend ref --db "$db" --executor slurm
    local id2
    id2=$(sed -n 's/^sweep \([0-9]*\) submitted.*/\1/p' "$T/out")
    "$NTPROF" sweep --task "$id2:0" --db "$db" >/dev/null 2>&1 &
    task=$!
    for _ in $(seq 1 100); do
        pgrep -P "$task" >/dev/null && compgen -G "$T/tmp/ntprof-task-$id2-0-*" >/dev/null && break
        sleep 0.05
    done
    sleep 0.2
    kill -TERM "$task"
    wait "$task"
    local rc=$?
    [ "$rc" = 143 ] && ok || bad "a task stopped by SIGTERM exited $rc (want 143: the signal)"
    compgen -G "$T/tmp/ntprof-task-$id2-*" >/dev/null && bad "SIGTERM left $(ls "$T/tmp")" || ok
}

sweep_round_trip "$T/s.db" signals

# sq DB SQL: one statement through Python's sqlite3 (no sqlite3 tool needed).
sq() {
    $PY -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute(sys.argv[2]).fetchall()
c.commit()
print("\n".join("|".join("" if v is None else str(v) for v in r) for r in rows))' "$@"
}

# A run the store refuses (an SQLite trigger standing in for a full disk):
# the task keeps its report in its TMPDIR, says where and how to add it,
# exits 1, and records the configuration as failed naming the file;
# `history import` of the file adds the run. (On a real cluster and
# PostgreSQL: tests/test_slurm_pg_cli.sh.)
expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=8 "${FAST[@]}" --db "$T/u.db" --executor slurm
SID=$(sed -n 's/^sweep \([0-9]*\) submitted.*/\1/p' "$T/out")
sq "$T/u.db" "CREATE TRIGGER refuse BEFORE INSERT ON runs BEGIN
    SELECT RAISE(ABORT, 'no space left (test)'); END"
expect_exit 1 "$NTPROF" sweep --task "$SID:0" --db "$T/u.db"
KEPT=$(compgen -G "$T/tmp/ntprof-unrecorded-$SID-0-*.json")
[ -n "$KEPT" ] && ok || bad "no kept report in $(ls "$T/tmp")"
expect_in_err "no space left (test)"
expect_in_err "not recorded; its report is kept as $(hostname):$KEPT (ntprof history import --db URL $KEPT)"
[ "$(sq "$T/u.db" "SELECT state, message FROM sweep_tasks WHERE sweep_id = $SID")" = \
    "failed|not recorded; report kept as $(hostname):$KEPT" ] && ok ||
    bad "sweep_tasks: $(sq "$T/u.db" 'SELECT * FROM sweep_tasks')"
expect_exit 1 "$NTPROF" sweep --report "$SID" --db "$T/u.db"
expect_in_err "configuration 0 failed: hidden=8: not recorded; report kept as"
sq "$T/u.db" "DROP TRIGGER refuse"
expect_exit 0 "$NTPROF" history import --db "$T/u.db" "$KEPT"
[ "$(sq "$T/u.db" "SELECT count(*) FROM runs WHERE json_extract(params, '$.hidden') = '8'")" = 1 ] &&
    ok || bad "runs after the import: $(sq "$T/u.db" 'SELECT id, params FROM runs')"

# PostgreSQL, where a server can be started.
PGUP=$SRC/scripts/local-postgres.sh
"$NTPROF" history --db postgresql://127.0.0.1:1/x >"$T/out" 2>"$T/err"
PG_BINDIR=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if grep -q "built without PostgreSQL" "$T/err"; then
    echo "PostgreSQL part skipped: this ntprof was built without libpq"
elif [ -z "$PG_BINDIR" ] && ! command -v initdb >/dev/null; then
    echo "PostgreSQL part skipped: no PostgreSQL server binaries (apt install postgresql)"
elif ! env -u TMPDIR "$PGUP" up >"$T/up" 2>&1; then
    echo "PostgreSQL part skipped: local-postgres.sh up failed: $(tail -3 "$T/up")"
else
    PGDIR=$(sed -n 's/^dir: //p' "$T/up")
    trap '"$PGUP" down "$PGDIR" >/dev/null 2>&1; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
    URL=$(tail -1 "$T/up")
    sweep_round_trip "$URL"

    # A calibration written and read back.
    printf '{"peak_gflops":{"f32":50},"bandwidth_gbps":{"L2":100,"DRAM":20},
      "capacity_bytes":{"L2":1048576}}' >"$T/ceil.json"
    expect_exit 0 "$NTPROF" machine --calibrate --quick --families fc --backend ref --threads 1 \
        --ceilings "$T/ceil.json" --db "$URL"
    grep -q '^fc  *3 ' "$T/out" && ok || bad "calibration table: $(cat "$T/out")"
    expect_exit 0 "$NTPROF" predict --list --db "$URL"
    grep -q ' ref  *f32 ' "$T/out" && ok || bad "list: $(cat "$T/out")"
    expect_exit 0 "$NTPROF" predict "$MLP" --backend ref --db "$URL" -f json -o "$T/p.json"
    $PY -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["predicted_ms"] > 0 and not p["roofline_only"], p' \
        "$T/p.json" && ok || bad "prediction from the PostgreSQL calibration"
    # Again: replaced, not added.
    expect_exit 0 "$NTPROF" machine --calibrate --quick --families fc --backend ref --threads 1 \
        --ceilings "$T/ceil.json" --db "$URL"
    expect_exit 0 "$NTPROF" predict --list --db "$URL"
    [ "$(grep -c ' ref  *f32 ' "$T/out")" = 1 ] && ok || bad "calibrated twice, listed: $(cat "$T/out")"
    expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL"
    grep -q ' pred$' "$T/out" && ok || bad "run with a PostgreSQL calibration has no pred column"

    # compare --machine: the same comparison as from SQLite.
    for n in a b; do
        expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --no-db --format json -o "$T/$n.json"
    done
    $PY - "$T/b.json" <<'PYEOF' && ok || bad "rewriting b.json"
import json, sys, uuid
r = json.load(open(sys.argv[1]))
r["environment"].update(cpu_model="Fleet PG CPU", cores=8, hostname="node-pg", run_uuid=str(uuid.uuid4()))
json.dump(r, open(sys.argv[1], "w"))
PYEOF
    expect_exit 0 "$NTPROF" history import "$T/a.json" "$T/b.json" --db "$URL"
    expect_exit 0 "$NTPROF" history import "$T/a.json" "$T/b.json" --db "$T/c.db"
    expect_exit 0 "$NTPROF" compare --db "$URL" --machine "$(hostname)" --machine node-pg \
        --backend ref --format json -o "$T/cpg.json"
    expect_exit 0 "$NTPROF" compare --db "$T/c.db" --machine "$(hostname)" --machine node-pg \
        --backend ref --format json -o "$T/csq.json"
    $PY - "$T/cpg.json" "$T/csq.json" <<'PYEOF' && ok || bad "compare --machine on PostgreSQL and SQLite differ"
import json, re, sys
pg, sq = (json.load(open(p)) for p in sys.argv[1:])
# The run ids differ between the stores; everything else is the same.
for c in (pg, sq):
    for r in c["runs"]:
        r["label"] = re.sub(r"\(run \d+\)", "(run)", r["label"])
assert pg == sq
assert pg["runs"][1]["hostname"] == "node-pg"
PYEOF
    expect_exit 1 "$NTPROF" compare --db "$URL" --machine node-pg --machine nosuch
    expect_err "machines with runs:"
fi

finish test_sweep_store_cli
