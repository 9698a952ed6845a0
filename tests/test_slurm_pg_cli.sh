#!/usr/bin/env bash
# `ntprof sweep --executor slurm` recording into PostgreSQL, on a real
# Slurm cluster and a PostgreSQL server started on this machine
# (scripts/local-slurm.sh, scripts/local-postgres.sh; both stopped at exit):
#  - every task's run carries this machine's ceilings from the store (the
#    roofline of `ntprof machine`), as a local run's does;
#  - PostgreSQL restarted while the array runs: no row is lost; each of
#    the six configurations has its one run, with its own hidden value,
#    and one ok `sweep_tasks` row pointing at it;
#  - a run the store refuses (a trigger standing in for a full disk): the
#    task keeps its report in its TMPDIR, records the configuration as
#    failed naming the file, --wait reports it, and `history import` of
#    that file adds exactly that run and marks the task done.
# Skips (77) where Slurm, munge or PostgreSQL is missing, the cluster does
# not start (not root, ...) or ntprof was built without libpq.
# Usage: test_slurm_pg_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

slurm_cluster_up 4
# pg_server_up replaces the exit trap: the cluster is taken down by its own.
pg_server_up '[ -n "${WATCH:-}" ] && kill "$WATCH" 2>/dev/null
    [ -n "$CLUSTER_DIR" ] && bash "$SRC/scripts/local-slurm.sh" down "$CLUSTER_DIR" 2>/dev/null'
sql() { "$PSQL" -X -q -t -A -d "$SOCK" -c "$1" 2>/dev/null; }

MLP=$SRC/models/tiny-mlp.xml
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)
# The tasks' temporary files go to $T/tmp (sbatch passes TMPDIR on).
mkdir -p "$T/tmp"
export TMPDIR=$T/tmp

# This machine's ceilings, measured quickly, in the store.
expect_exit 0 "$NTPROF" machine --db "$URL" --seconds 0.02 --no-gemm --format json -o "$T/m.json"

# 1. The server restarted once two of six runs are stored; two tasks at a
#    time, so that four are still to start or to write.
(
    for _ in $(seq 1200); do
        n=$(sql 'SELECT count(*) FROM runs')
        [ "${n:-0}" -ge 2 ] 2>/dev/null && break
        sleep 0.05
    done
    echo "$n" >"$T/before"
    "$PGUP" restart "$PGDIR" >"$T/restart.out" 2>&1 && echo restarted >"$T/restarted"
) &
WATCH=$!
expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=1,2,3,4,5,6 "${FAST[@]}" --db "$URL" \
    --executor slurm --shared --max-parallel 2 --wait --format json -o "$T/s1.json"
wait "$WATCH"
WATCH=
[ -e "$T/restarted" ] && ok || bad "the restart: $(cat "$T/restart.out")"
[ "$(cat "$T/before")" -lt 6 ] 2>/dev/null && ok ||
    bad "the restart came after the array: $(cat "$T/before") runs stored before it"
# --wait's own connection, made before the restart, is made again.
expect_in_err "the connection was lost"
expect_in_err "the sweep was read after"
hidden() { sql "SELECT string_agg(params::json->>'hidden', ' ' ORDER BY (params::json->>'hidden')::int) FROM runs"; }
[ "$(hidden)" = '1 2 3 4 5 6' ] && ok || bad "stored runs' hidden: $(hidden), want 1 2 3 4 5 6"
[ "$(sql 'SELECT count(DISTINCT uuid) FROM runs')" = 6 ] && ok || bad "UUIDs: $(sql 'SELECT uuid FROM runs')"
[ "$(sql 'SELECT count(DISTINCT run_id) FROM rows')" = 6 ] && ok || bad "rows: $(sql 'SELECT run_id, count(*) FROM rows GROUP BY run_id')"
# One ok task row per configuration, each on its own run, whose hidden is
# the configuration's (configuration i is hidden=i+1).
TASKS=$(sql "SELECT string_agg(t.idx || ':' || t.state || ':' || (r.params::json->>'hidden'), ' ' ORDER BY t.idx)
             FROM sweep_tasks t JOIN runs r ON r.id = t.run_id")
[ "$TASKS" = '0:ok:1 1:ok:2 2:ok:3 3:ok:4 4:ok:5 5:ok:6' ] && ok || bad "sweep_tasks: $TASKS"
$PY - "$T/s1.json" "$T/m.json" <<'PYEOF' && ok || bad "the report after the restart"
import json, sys
cs = json.load(open(sys.argv[1]))["configurations"]
c = json.load(open(sys.argv[2]))["ceilings"]
assert [x["status"] for x in cs] == ["ok"] * 6, [x["status"] for x in cs]
assert [x["report"]["config"]["params"]["hidden"] for x in cs] == [str(i) for i in range(1, 7)]
# Each task's run was placed under the ceilings the store has for this
# machine (the child read them), not left without a roofline.
peak = [p["gflops"] for p in c["peaks"] if p["precision"] == "f32"][0]
dram = [l["gbps"] for l in c["bandwidth"] if l["level"] == "DRAM"][0]
for x in cs:
    rl = x["report"]["roofline"]
    assert abs(rl["peak_gflops"] - peak) <= 1e-9 * peak, (rl["peak_gflops"], peak)
    assert abs(rl["bandwidth_gbps"] - dram) <= 1e-9 * dram, (rl["bandwidth_gbps"], dram)
    assert rl["measured_at"] == c["measured_at"], (rl["measured_at"], c["measured_at"])
PYEOF

# 2. The server refuses hidden=2's run for good (not a lost connection, so
#    not retried).
sql 'DELETE FROM sweep_tasks; DELETE FROM runs'
sql "CREATE FUNCTION refuse() RETURNS trigger AS \$\$ BEGIN
     IF NEW.params::json->>'hidden' = '2' THEN RAISE EXCEPTION 'no space left (test)'; END IF;
     RETURN NEW; END \$\$ LANGUAGE plpgsql;
     CREATE TRIGGER refuse BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION refuse()"
mkdir -p "$T/keep"
expect_exit 0 "$NTPROF" sweep "$MLP" --vary hidden=1,2,3 "${FAST[@]}" --db "$URL" \
    --executor slurm --shared --keep "$T/keep" --wait --format json -o "$T/s2.json"
expect_in_err "1 of 3 configurations have no result"
# The task's log names the file and the command; the store's row, the file.
KEPT=$(compgen -G "$T/tmp/ntprof-unrecorded-*-1-*.json")
[ -n "$KEPT" ] && [ "$(compgen -G "$T/tmp/ntprof-unrecorded-*" | wc -l)" = 1 ] && ok ||
    bad "kept reports: $(ls "$T/tmp")"
LOG=$(compgen -G "$T/keep/sweep-*-1.out")
grep -qF "not recorded; its report is kept as $(hostname):$KEPT (ntprof history import --db URL $KEPT)" \
    "$LOG" && ok || bad "task 1's log: $(cat "$LOG")"
grep -qF "no space left (test)" "$LOG" && ok || bad "task 1's log lacks the store's reason: $(cat "$LOG")"
$PY - "$T/s2.json" "$KEPT" <<'PYEOF' && ok || bad "the report of the refused run"
import json, socket, sys
cs = json.load(open(sys.argv[1]))["configurations"]
assert [x["status"] for x in cs] == ["ok", "failed", "ok"], [x["status"] for x in cs]
want = "not recorded; report kept as %s:%s" % (socket.gethostname(), sys.argv[2])
assert cs[1]["error"] == want, (cs[1]["error"], want)
# The kept report is configuration 1's run, measured with its ceilings.
r = json.load(open(sys.argv[2]))
assert r["config"]["params"]["hidden"] == "2", r["config"]["params"]
assert r["roofline"]["peak_gflops"] > 0
PYEOF
[ "$(hidden)" = '1 3' ] && ok || bad "stored runs' hidden: $(hidden), want 1 3"
sql 'DROP TRIGGER refuse ON runs'
expect_exit 0 "$NTPROF" history import --db "$URL" "$KEPT"
[ "$(hidden)" = '1 2 3' ] && ok || bad "after the import: $(hidden), want 1 2 3"
# The import marked configuration 1's task done with that run.
TASK1=$(sql "SELECT t.state || ':' || (r.params::json->>'hidden') FROM sweep_tasks t
             JOIN runs r ON r.id = t.run_id WHERE t.idx = 1")
[ "$TASK1" = 'ok:2' ] && ok || bad "task 1 after the import: '$TASK1', want ok:2"
# No task directory is left behind.
compgen -G "$T/tmp/ntprof-task-*" >/dev/null && bad "left behind: $(ls "$T/tmp")" || ok

finish test_slurm_pg_cli
