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
#  - a run the store refuses is kept with its sweep's task, and `history
#    import` of it marks that task done (only in the store holding that
#    sweep), so --resume does not run it again (SQLite and PostgreSQL);
#  - a load sweep's tasks (sweep --load --executor slurm) and its report
#    from the store (SQLite and PostgreSQL);
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

# This machine's ceilings, measured once (quickly, one thread) into a
# store of their own and copied (`history copy`) into each store the round
# trip below runs on when it wants them there: the measurement is the
# test's longest step, and two stores need only one.
expect_exit 0 "$NTPROF" machine --db "$T/m.db" --seconds 0.02 --no-gemm --threads 1 \
    --format json -o "$T/m.json"

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
    # no ceilings for task 0 and this machine's (measured above) for task
    # 2, whose child reads them.
    expect_exit 0 "$NTPROF" sweep --task "$id:0" --db "$db"
    expect_exit 0 "$NTPROF" history copy --from "$T/m.db" --to "$db"
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
    # A task killed outright leaves its directory; --resume removes it. On
    # a sweep of its own whose configuration runs 5 s (--min-time 5), so the
    # kill comes while its child runs however fast the machine: the sweep
    # above's configurations take some 30 ms, and on a quiet machine the
    # task had finished (directory removed, result stored) before the kill.
    # Its submissions go to a log of their own: the job numbers below stay.
    local task
    if [ -n "$signals" ]; then
        local idk child
        cp "$T/sbatch.log" "$T/sbatch.keep"
        expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=8 --iterations 3 --warmup 1 \
            --min-time 5 --no-accuracy --backend ref --db "$db" --executor slurm
        idk=$(sed -n 's/^sweep \([0-9]*\) submitted.*/\1/p' "$T/out")
        "$NTPROF" sweep --task "$idk:0" --db "$db" >/dev/null 2>&1 &
        task=$!
        for _ in $(seq 1 100); do
            pgrep -P "$task" >/dev/null && compgen -G "$T/tmp/ntprof-task-$idk-0-*" >/dev/null && break
            sleep 0.05
        done
        child=$(pgrep -P "$task" | head -n 1)
        kill -9 "$task" ${child:+"$child"}
        wait "$task" 2>/dev/null
        compgen -G "$T/tmp/ntprof-task-$idk-0-*" >/dev/null && ok || bad "no directory left by the killed task"
        expect_exit 0 "$NTPROF" sweep --resume "$idk" --db "$db"
        expect_in_err "1 of 1 configurations resubmitted"
        compgen -G "$T/tmp/ntprof-task-$idk-*" >/dev/null && bad "--resume left $(ls "$T/tmp")" || ok
        mv "$T/sbatch.keep" "$T/sbatch.log"
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
    for _ in $(seq 1 400); do
        pgrep -P "$task" >/dev/null && compgen -G "$T/tmp/ntprof-task-$id2-0-*" >/dev/null && break
        sleep 0.05
    done
    sleep 0.2
    kill -TERM "$task"
    wait "$task"
    local rc=$?
    [ "$rc" = 143 ] && ok || bad "a task stopped by SIGTERM exited $rc (want 143: the signal)"
    compgen -G "$T/tmp/ntprof-task-$id2-*" >/dev/null && bad "SIGTERM left $(ls "$T/tmp")" || ok
    # Slurm signals every process of a task (its time limit, scancel): the
    # configuration's process may die of it before the task is told. The
    # task then stops by the same signal and writes no failure of its own
    # ("killed by signal 15"), so that the sweep records Slurm's word
    # (TIMEOUT, CANCELLED) as test_slurm_timeout_cli expects.
    "$NTPROF" sweep --task "$id2:0" --db "$db" >/dev/null 2>&1 &
    task=$!
    local child=
    # Up to 20 s for the child to start: under the suite's parallel load
    # the task's own start can take seconds.
    for _ in $(seq 1 400); do
        child=$(pgrep -P "$task" | head -n 1)
        [ -n "$child" ] && compgen -G "$T/tmp/ntprof-task-$id2-0-*" >/dev/null && break
        sleep 0.05
    done
    sleep 0.2
    local how
    how=$(ps -o pid=,args= -p "$child" 2>&1)
    kill -TERM "$child"
    wait "$task"
    rc=$?
    [ "$rc" = 143 ] && ok ||
        bad "a task whose configuration was stopped by SIGTERM exited $rc (want 143); its child: ${how:-none found}"
    [ "$(sq "$db" "SELECT state FROM sweep_tasks WHERE sweep_id = $id2")" != failed ] && ok ||
        bad "the task wrote its own failure: $(sq "$db" "SELECT * FROM sweep_tasks WHERE sweep_id = $id2")"
    compgen -G "$T/tmp/ntprof-task-$id2-*" >/dev/null && bad "SIGTERM left $(ls "$T/tmp")" || ok
}

# load_round_trip DB: a load sweep's array (docs/load.md#sweeps-on-slurm)
# with its tasks run by hand: a configuration run twice records one load
# run, the failing one keeps its child's error, and the report is built
# from the store (its load run read back). The real cluster, against a
# local sweep: tests/test_slurm_load_cli.sh.
load_round_trip() {
    local db=$1 id
    : >"$T/sbatch.log"
    expect_exit 0 "$NTPROF" sweep "$SRC/models/serve-delay.xml" --load -s base_us=100 \
        --scenario server --latency-bound 50 -B ref --duration 0 --warmup 1 --min-queries 50 \
        --vary qps=500,-1 --db "$db" --executor slurm --partition lab
    id=$(sed -n 's/^load sweep \([0-9]*\) submitted as Slurm job 4242 .*/\1/p' "$T/out")
    [ -n "$id" ] && ok || { bad "no load sweep id in: $(cat "$T/out")"; return; }
    grep -q -- "--array=0-1 --job-name=ntprof-sweep-$id --exclusive --partition=lab " \
        "$T/sbatch.log" && ok || bad "load sweep's sbatch arguments: $(cat "$T/sbatch.log")"
    expect_exit 0 "$NTPROF" sweep --task "$id:0" --db "$db"
    expect_exit 0 "$NTPROF" sweep --task "$id:0" --db "$db"
    expect_in_err "already has its result"
    expect_exit 1 "$NTPROF" sweep --task "$id:1" --db "$db"
    expect_in_err "(qps=-1): failed: exit 2: --qps expects a positive number"
    expect_exit 0 "$NTPROF" sweep --report "$id" --db "$db" --format json -o "$T/lr.json"
    expect_in_err "1 of 2 configurations have no result (see the table; ntprof sweep --resume $id)"
    expect_exit 0 "$NTPROF" history --db "$db" --load --format json -o "$T/hl.json"
    $PY - "$T/lr.json" "$T/hl.json" <<'PYEOF' && ok || bad "the load sweep's report from the store"
import json, sys
cs = json.load(open(sys.argv[1]))["configurations"]
runs = json.load(open(sys.argv[2]))["load_runs"]
assert [c["configuration"] for c in cs] == ["qps=500", "qps=-1"], cs
assert len(runs) == 1, runs  # the task run twice recorded once
assert cs[0]["error"] is None and cs[0]["load_run_id"] == runs[0]["id"], (cs[0], runs)
assert cs[0]["qps_offered"] == 500 and cs[0]["latency_ms"]["p99"] == runs[0]["latency_ms"]["p99"], cs[0]
assert cs[1]["error"].startswith("exit 2: --qps expects a positive number"), cs[1]
PYEOF
}

# sq DB SQL: one statement through Python's sqlite3 (no sqlite3 tool needed).
sq() {
    $PY -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute(sys.argv[2]).fetchall()
c.commit()
print("\n".join("|".join("" if v is None else str(v) for v in r) for r in rows))' "$@"
}

sweep_round_trip "$T/s.db" signals
load_round_trip "$T/s.db"

# A run the store refuses (an SQLite trigger standing in for a full disk):
# the task keeps its report in its TMPDIR, says where and how to add it,
# exits 1, and records the configuration as failed naming the file;
# `history import` of the file adds the run. (On a real cluster and
# PostgreSQL: tests/test_slurm_pg_cli.sh.)
: >"$T/sbatch.log"
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
# imported_task DB QUERY SID KEPT: the kept report names its sweep's task,
# and importing it marks that task done, so that --resume does not run it
# again, but only in the store that holds that sweep: a copy naming
# another creation time (another store's sweep of the same id) and a
# store without the sweep import the run and leave the tasks alone.
# QUERY is a function running one SQL statement on DB. Needs the
# stand-in sbatch's log to hold the sweep's one submission.
imported_task() {
    local db=$1 q=$2 sid=$3 kept=$4
    $PY - "$kept" "$sid" "$T/other-sweep.json" <<'PYEOF' && ok || bad "the kept report's sweep"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["sweep"]
assert s["id"] == int(sys.argv[2]) and s["index"] == 0, s
assert len(s["created_at"]) == 20 and s["created_at"].endswith("Z"), s
s["created_at"] = "2000-01-01T00:00:00Z"
json.dump(r, open(sys.argv[3], "w"))
PYEOF
    expect_exit 0 "$NTPROF" history import --db "$db" "$T/other-sweep.json"
    expect_in_err "belongs to sweep $sid created 2000-01-01T00:00:00Z, configuration 0; this history's sweep $sid was created"
    local run
    run=$(sed -n 's/^.*: run \([0-9]*\)$/\1/p' "$T/out")
    [ -n "$run" ] && ok || bad "no run id in: $(cat "$T/out")"
    [ "$($q "SELECT state FROM sweep_tasks WHERE sweep_id = $sid")" = failed ] && ok ||
        bad "another sweep's report marked the task: $($q 'SELECT * FROM sweep_tasks')"
    # The real one: the run already stored (by its UUID), the task marked.
    expect_exit 0 "$NTPROF" history import --db "$db" "$kept"
    grep -qxF "$kept: run $run (sweep $sid configuration 0 done)" "$T/out" && ok ||
        bad "import's output: $(cat "$T/out")"
    [ "$($q "SELECT state, run_id, message FROM sweep_tasks WHERE sweep_id = $sid")" = \
        "ok|$run|recorded by ntprof history import" ] && ok ||
        bad "sweep_tasks after the import: $($q 'SELECT * FROM sweep_tasks')"
    expect_exit 0 "$NTPROF" sweep --resume "$sid" --db "$db"
    expect_in_err "sweep $sid: nothing to resume"
    [ "$(wc -l <"$T/sbatch.log")" = 1 ] && ok || bad "--resume submitted: $(cat "$T/sbatch.log")"
    expect_exit 0 "$NTPROF" sweep --report "$sid" --db "$db" --format json -o "$T/ri.json"
    $PY -c 'import json,sys; c=json.load(open(sys.argv[1]))["configurations"]; assert [x["status"] for x in c] == ["ok"] and c[0]["report"]["config"]["params"]["hidden"] == "8", c' \
        "$T/ri.json" && ok || bad "the report after the import"
    # Again: nothing more is marked; a store without the sweep only warns.
    expect_exit 0 "$NTPROF" history import --db "$db" "$kept"
    grep -qxF "$kept: run $run" "$T/out" && ok || bad "import's output again: $(cat "$T/out")"
    expect_exit 0 "$NTPROF" history import --db "$T/no-sweep-$sid.db" "$kept"
    expect_in_err "belongs to sweep $sid (created "
    expect_in_err "which this history does not hold; no sweep's task is marked"
}
squ() { sq "$T/u.db" "$1"; }
imported_task "$T/u.db" squ "$SID" "$KEPT"
[ "$(sq "$T/u.db" "SELECT count(*) FROM runs WHERE json_extract(params, '$.hidden') = '8'")" = 1 ] &&
    ok || bad "runs after the import: $(sq "$T/u.db" 'SELECT id, params FROM runs')"
rm -f "$KEPT"

# PostgreSQL, where a server can be started.
PGUP=$SRC/scripts/local-postgres.sh
# (Whether libpq is built: a refused connection, not retried for 15 s.)
NTP_DB_RETRY_MS=0 "$NTPROF" history --db postgresql://127.0.0.1:1/x >"$T/out" 2>"$T/err"
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
    load_round_trip "$URL"

    # A run the server refuses (a trigger), kept, and its import marking
    # the task done.
    PSQL=${PG_BINDIR:+$PG_BINDIR/}psql
    SOCK=$(sed -n 's/^socket URL: //p' "$T/up")
    pq() { "$PSQL" -X -q -t -A -d "$SOCK" -c "$1" 2>/dev/null; }
    : >"$T/sbatch.log"
    expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=8 "${FAST[@]}" --db "$URL" --executor slurm
    PSID=$(sed -n 's/^sweep \([0-9]*\) submitted.*/\1/p' "$T/out")
    pq "CREATE FUNCTION refuse() RETURNS trigger AS \$\$ BEGIN
        RAISE EXCEPTION 'no space left (test)'; END \$\$ LANGUAGE plpgsql;
        CREATE TRIGGER refuse BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION refuse()"
    expect_exit 1 "$NTPROF" sweep --task "$PSID:0" --db "$URL"
    expect_in_err "no space left (test)"
    PKEPT=$(compgen -G "$T/tmp/ntprof-unrecorded-$PSID-0-*.json")
    [ -n "$PKEPT" ] && ok || bad "no kept report in $(ls "$T/tmp")"
    [ "$(pq "SELECT state FROM sweep_tasks WHERE sweep_id = $PSID")" = failed ] && ok ||
        bad "sweep_tasks: $(pq 'SELECT * FROM sweep_tasks')"
    pq 'DROP TRIGGER refuse ON runs'
    imported_task "$URL" pq "$PSID" "$PKEPT"

    # The reads of `sweep --report`/`--wait` (the tasks, each run's report)
    # and a run's calibration read: the connection lost under each (the
    # server ending the session, as a restart does, once) is made again and
    # the read done. The table is put behind a view whose first row read
    # ends the reading session.
    pq "CREATE SEQUENCE kills; CREATE FUNCTION kill_once() RETURNS boolean AS \$\$ BEGIN
        IF nextval('kills') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
        RETURN true; END \$\$ LANGUAGE plpgsql VOLATILE"
    # behind TABLE / unbehind TABLE: the table under a view killing once / back.
    behind() { pq "ALTER SEQUENCE kills RESTART; ALTER TABLE $1 RENAME TO $1_t;
                   CREATE VIEW $1 AS SELECT * FROM $1_t WHERE kill_once()"; }
    unbehind() { pq "DROP VIEW $1; ALTER TABLE $1_t RENAME TO $1"; }
    expect_exit 0 "$NTPROF" sweep --report "$PSID" --db "$URL" --format json -o "$T/rk0.json"
    for table in sweep_tasks runs; do
        behind $table
        expect_exit 0 "$NTPROF" sweep --report "$PSID" --db "$URL" --format json -o "$T/rk.json"
        unbehind $table
        [ "$(pq 'SELECT last_value FROM kills')" -ge 2 ] && ok || bad "$table: the view was not read"
        expect_in_err "the connection was lost ("
        case $table in
        sweep_tasks) expect_in_err "; the sweep's tasks were read after 1 attempt over" ;;
        runs) expect_in_err "; the run was read after 1 attempt over" ;;
        esac
        cmp -s "$T/rk.json" "$T/rk0.json" && ok || bad "$table: the report differs from the one before"
    done

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
    # The calibration read when the connection is lost under it (above).
    behind calibrations
    # (JSON to a file: with a table on stdout, the run's table shows its
    # own warnings and the store's are not printed.)
    expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$URL" --no-record --format json \
        -o "$T/rc.json"
    unbehind calibrations
    expect_in_err "; the calibrations were read after 1 attempt over"
    $PY -c 'import json,sys; p=json.load(open(sys.argv[1]))["prediction"]; assert p["predicted_ms"] > 0 and not p["roofline_only"], p' \
        "$T/rc.json" && ok || bad "run after a lost calibration read has no calibrated prediction"

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
