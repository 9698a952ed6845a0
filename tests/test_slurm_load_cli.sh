#!/usr/bin/env bash
# `ntprof sweep --load --executor slurm` (docs/load.md#sweeps-on-slurm) on
# a real Slurm cluster started on this machine (scripts/local-slurm.sh),
# held to a local load sweep of the same design in the same store:
#  - the same configurations, in the same order, with the same labels and
#    states, the failing one (qps=-1) with the same one-line error from
#    its child, each ok one with its own load run (distinct ids, the
#    configuration it asked for); the report validates against
#    schema/load_sweep.schema.json, and `--report ID` (JSON, CSV) gives it
#    again; the sweep, its sweep_tasks rows (state, label, load_run_id,
#    job) and load runs are in the store; `history --load-sweeps` lists
#    both sweeps alike;
#  - `--report ID` of the local sweep, built from the store, has exactly
#    the local report's configurations (the stored reports are the files
#    it read, byte for byte);
#  - --resume resubmits only the configurations without a result, leaving
#    the others and their load runs as they were;
#  - refusals: --resume and --task of a local load sweep, --no-db and
#    --timeout with --executor slurm, the Slurm options without it.
# Compares counts, states, labels, ids and configured values, not timings.
# Skips (77) where Slurm or munge is missing or the cluster does not start.
# Usage: test_slurm_load_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

slurm_cluster_up 4

M=$SRC/models/serve-delay.xml
L=(-s base_us=100 --scenario server --latency-bound 50 -B ref --duration 0 --warmup 1
    --min-queries 50)
V=(--vary qps=500,1000,-1)
DB=$T/s.db

# Refusals that need no array.
expect_exit 2 "$NTPROF" sweep "$M" --load "${L[@]}" "${V[@]}" --executor slurm --no-db
expect_err "--executor slurm records the sweep in a store; drop --no-db"
expect_exit 2 "$NTPROF" sweep "$M" --load "${L[@]}" "${V[@]}" --executor slurm --timeout 5 --db "$DB"
expect_err "--timeout is the local executor's; with --executor slurm give --time"
expect_exit 2 "$NTPROF" sweep "$M" --load "${L[@]}" "${V[@]}" --wait --db "$DB"
expect_err "need --executor slurm"

# The local sweep (load sweep 1), then the same design on Slurm (2).
expect_exit 0 "$NTPROF" sweep "$M" --load "${L[@]}" "${V[@]}" --db "$DB" -f json -o "$T/local.json"
expect_in_err "recorded as load sweep 1 in $DB"
expect_exit 0 "$NTPROF" sweep "$M" --load "${L[@]}" "${V[@]}" --db "$DB" --executor slurm \
    --shared --wait -f json -o "$T/slurm.json" --html "$T/slurm.html"
expect_in_err "load sweep 2: 3 configurations submitted as Slurm job"
expect_in_err "1 of 3 configurations have no result (see the table; ntprof sweep --resume 2)"
[ -s "$T/slurm.html" ] && grep -q "qps=1000" "$T/slurm.html" && ok || bad "no HTML report"
expect_exit 0 "$NTPROF" sweep --report 2 --db "$DB" -f json -o "$T/report2.json"
expect_exit 0 "$NTPROF" sweep --report 2 --db "$DB" -f csv -o "$T/report2.csv"
expect_exit 0 "$NTPROF" sweep --report 1 --db "$DB" -f json -o "$T/report1.json"
expect_exit 0 "$NTPROF" history --db "$DB" --load-sweeps -f json -o "$T/hs.json"

$PY - "$SRC/schema/load_sweep.schema.json" "$T/local.json" "$T/slurm.json" "$T/report2.json" \
    "$T/report2.csv" "$T/report1.json" "$T/hs.json" "$DB" <<'PYEOF' && ok || bad "the Slurm load sweep against the local one"
import csv, json, sqlite3, sys, jsonschema
schema = json.load(open(sys.argv[1]))
local, slurm, rep2, _, rep1, hs = (json.load(open(f)) if f.endswith(".json") else None
                                   for f in sys.argv[2:8])
for r in (local, slurm, rep2, rep1):
    jsonschema.validators.validator_for(schema)(schema).validate(r)
lc, sc = local["configurations"], slurm["configurations"]
assert slurm["kind"] == "load_sweep" and len(sc) == 3, slurm
assert [c["configuration"] for c in sc] == [c["configuration"] for c in lc] == \
    ["qps=500", "qps=1000", "qps=-1"], [c["configuration"] for c in sc]
# The same outcome and, for the failing one, the same child error.
assert [c["error"] for c in sc] == [c["error"] for c in lc], ([c["error"] for c in sc], [c["error"] for c in lc])
assert sc[2]["error"].startswith("exit 2: "), sc[2]["error"]
for s, l in zip(sc[:2], lc[:2]):
    # What the configuration asked for (not what it measured).
    for k in ("scenario", "instances", "threads_per_instance", "max_batch", "qps_offered"):
        assert s[k] == l[k], (k, s[k], l[k])
assert [c["qps_offered"] for c in sc[:2]] == [500, 1000], sc
ids = [c["load_run_id"] for c in sc[:2]]
assert len(set(ids)) == 2 and not set(ids) & {c["load_run_id"] for c in lc[:2]}, (ids, lc)
assert "load_run_id" not in sc[2]
# --report gives the report again; the CSV has the same rows.
assert rep2 == slurm, "--report 2 differs from the --wait report"
rows = list(csv.DictReader(open(sys.argv[5])))
assert [r["configuration"] for r in rows] == [c["configuration"] for c in sc], rows
assert [r["error"] for r in rows] == ["", "", sc[2]["error"]], rows
# The local sweep's report from the store: its configurations exactly.
assert rep1["configurations"] == lc, (rep1["configurations"], lc)
db = sqlite3.connect(sys.argv[8])
assert db.execute("SELECT id, kind, executor FROM sweeps ORDER BY id").fetchall() == \
    [(1, "load", "local"), (2, "load", "slurm")]
t = db.execute("SELECT idx, state, label, load_run_id, job FROM sweep_tasks"
               " WHERE sweep_id = 2 ORDER BY idx").fetchall()
assert [r[:4] for r in t] == [(0, "ok", "qps=500", ids[0]), (1, "ok", "qps=1000", ids[1]),
                              (2, "failed", "qps=-1", None)], t
jobs = {r[4].split("_")[0] for r in t}
assert len(jobs) == 1 and all(r[4].endswith("_%d" % r[0]) for r in t), t  # one array
assert db.execute("SELECT count(*) FROM load_runs").fetchone()[0] == 4
for i, c in zip(ids, sc):
    rep = json.loads(db.execute("SELECT report FROM load_runs WHERE id = ?", (i,)).fetchone()[0])
    assert rep["kind"] == "load" and rep["qps_offered"] == c["qps_offered"], rep["qps_offered"]
    assert rep["latency_ms"]["p99"] == c["latency_ms"]["p99"]
# The history lists both sweeps alike.
h = {s["id"]: s for s in hs["load_sweeps"]}
assert sorted(h) == [1, 2], sorted(h)
for k in ("configuration", "state", "error"):
    assert [c[k] for c in h[1]["configurations"]] == [c[k] for c in h[2]["configurations"]], k
assert [c["load_run_id"] for c in h[2]["configurations"]] == ids + [None]
PYEOF

# --resume: configuration 1 loses its result (as a task whose node died
# would have none); 1 and the failing 2 are resubmitted, 0 is left alone.
$PY -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE sweep_tasks SET state = ?, load_run_id = NULL, message = ? WHERE sweep_id = 2 AND idx = 1",
           ("failed", "lost (test)"))
db.commit()' "$DB"
expect_exit 0 "$NTPROF" sweep --resume 2 --db "$DB" --wait -f json -o "$T/resumed.json"
expect_in_err "sweep 2: 2 of 3 configurations resubmitted as Slurm job"
$PY - "$T/slurm.json" "$T/resumed.json" "$DB" <<'PYEOF' && ok || bad "--resume"
import json, sqlite3, sys
before, after = (json.load(open(f))["configurations"] for f in sys.argv[1:3])
assert [c["configuration"] for c in after] == [c["configuration"] for c in before]
assert after[0] == before[0], (after[0], before[0])  # not run again
assert after[1]["error"] is None and after[1]["load_run_id"] not in (None, before[1]["load_run_id"]), after[1]
assert after[2]["error"] == before[2]["error"], after[2]
db = sqlite3.connect(sys.argv[3])
t = db.execute("SELECT idx, state, job FROM sweep_tasks WHERE sweep_id = 2 ORDER BY idx").fetchall()
assert [r[1] for r in t] == ["ok", "ok", "failed"], t
assert t[0][2].split("_")[0] != t[1][2].split("_")[0] == t[2][2].split("_")[0], t  # a second array
assert len(db.execute("SELECT jobs FROM sweeps WHERE id = 2").fetchone()[0].split()) == 2
assert db.execute("SELECT count(*) FROM load_runs").fetchone()[0] == 5
PYEOF

# A local load sweep is reported from the store, but not resumed or run as a task.
expect_exit 2 "$NTPROF" sweep --resume 1 --db "$DB"
expect_err "sweep 1 ran here (executor local); --resume resubmits a Slurm sweep"
expect_exit 2 "$NTPROF" sweep --task 1:0 --db "$DB"
expect_err "sweep 1 ran here (executor local); --task runs a Slurm sweep's configuration"

finish test_slurm_load_cli
