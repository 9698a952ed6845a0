#!/usr/bin/env bash
# Prediction as a user meets it (docs/predict.md): a quick calibration of
# one family stored in the history, `ntprof predict` from it (table, JSON),
# the run report with the prediction beside the measurement and without a
# calibration unchanged, and the one-line errors: no calibration for the
# backend, an unknown machine, --calibrate's options without it; --fuse
# as the run fuses; --passes recorded with each sample's spread, its bounds,
# and a schema-9 history's samples migrated as one pass; --recheck.
# Usage: test_predict_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
DB=$T/history.db
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)

# Ceilings from a file: measuring them takes seconds (minutes on a busy
# machine), and the calibration only divides by them.
printf '{"peak_gflops":{"f32":50},"bandwidth_gbps":{"L2":100,"DRAM":20},
  "capacity_bytes":{"L2":1048576}}' >"$T/ceil.json"
# --cache warm: network conditions write over twice the last-level cache
# before every pass (test_predict times them with a 1 MB cache).
expect_exit 0 "$NTPROF" machine --calibrate --quick --families fc --backend ref --threads 1 \
    --ceilings "$T/ceil.json" --db "$DB" --cache warm
grep -q '^fc  *3 ' "$T/out" && ok || bad "calibration table: $(cat "$T/out")"
grep -q '^conv  *- *not calibrated' "$T/out" && ok || bad "conv should be uncalibrated"
# The cold start's column: "-" where no warm twin fitted one (a warm or
# quick calibration times none); in CSV an empty last field.
grep -q '^family .* cold us$' "$T/out" && grep -q '^fc  *3 .* -$' "$T/out" && ok ||
    bad "calibration table: no cold start column: $(cat "$T/out")"
grep -q '^timed with warm caches, 1 pass over the design' "$T/out" && ok ||
    bad "calibration: no cache mode or passes: $(cat "$T/out")"
expect_exit 2 "$NTPROF" machine --calibrate --cache hot --db "$DB"
grep -q "cache expects network or warm, got 'hot'" "$T/err" && ok || bad "--cache: $(cat "$T/err")"

# --passes: the design timed 3 times, interleaved. The calibration records
# its passes and which it kept; each sample ran in all 3, and keeps its
# fastest (its 3 timed iterations with --quick), or with --keep-pass median
# the median of the three (9 iterations) between the lowest and highest.
# Out of range, or without --calibrate: one line. A history of schema 9
# (samples without passes) is migrated by --refit: one pass each, the
# median its own spread.
expect_exit 0 "$NTPROF" machine --calibrate --quick --families fc --backend ref --threads 1 \
    --ceilings "$T/ceil.json" --db "$T/passes.db" --cache warm --passes 3
grep -q "^timed with warm caches, 3 passes over the design, each layer's fastest kept" "$T/out" &&
    ok || bad "passes in the table: $(cat "$T/out")"
expect_exit 0 "$NTPROF" predict --list --db "$T/passes.db"
grep -q ' ref  *f32 .* quick 3 passes (fastest kept)$' "$T/out" && ok || bad "list: $(cat "$T/out")"
expect_exit 0 "$NTPROF" machine --calibrate --quick --families fc --backend ref --threads 1 \
    --ceilings "$T/ceil.json" --db "$T/median.db" --cache warm --passes 3 --keep-pass median
grep -q "^timed with warm caches, 3 passes over the design, each layer's median kept" "$T/out" &&
    ok || bad "median kept in the table: $(cat "$T/out")"
cp "$T/passes.db" "$T/v9.db"
$PY - "$T/passes.db" "$T/v9.db" "$T/median.db" <<'PYEOF' && ok || bad "passes in the history"
import json, sqlite3, sys
for path, keep in ((sys.argv[1], "fastest"), (sys.argv[3], "median")):
    db = sqlite3.connect(path)
    (model,) = db.execute("SELECT model FROM calibrations WHERE backend = 'ref'").fetchone()
    assert json.loads(model)["passes"] == 3 and json.loads(model)["keep"] == keep, model
    # A timing on a CPU the host slowed (docs/predict.md#passes) may be
    # retried or left out: then a sample keeps its other timings, 3
    # iterations each (the fastest's 3, or all of the median's); with
    # none slowed, all 3 passes.
    slowed = json.loads(model)["slow_timings"] > 0
    rows = db.execute("SELECT kind, passes, pass_min_s, median_s, pass_max_s, n FROM"
                      " calibration_samples WHERE kind = 'layer'").fetchall()
    assert len(rows) == 3, rows
    for kind, passes, lo, med, hi, n in rows:
        assert passes == 3 or slowed and 1 <= passes <= 5, (passes, n)
        assert n == (3 if keep == "fastest" else 3 * passes), (passes, n)
        if keep == "fastest":
            assert 0 < lo == med <= hi, (passes, lo, med, hi, n)
        else:
            assert 0 < lo <= med <= hi, (passes, lo, med, hi, n)
v9 = sqlite3.connect(sys.argv[2])
for col in ("passes", "pass_min_s", "pass_max_s"):
    v9.execute(f"ALTER TABLE calibration_samples DROP COLUMN {col}")
v9.execute("PRAGMA user_version = 9")
v9.commit()
PYEOF
expect_exit 0 "$NTPROF" machine --refit --backend ref --db "$T/v9.db"
$PY - "$T/v9.db" <<'PYEOF' && ok || bad "schema 9 samples migrated: $(cat "$T/err")"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA user_version").fetchone()[0] >= 10
rows = db.execute("SELECT passes, pass_min_s, median_s, pass_max_s FROM calibration_samples").fetchall()
assert rows and all(p == 1 and lo == m == hi for p, lo, m, hi in rows), rows
PYEOF
for bad_n in 0 10 x; do
    expect_exit 2 "$NTPROF" machine --calibrate --passes "$bad_n" --db "$T/passes.db"
    grep -q "^ntprof: --passes expects a number of passes from 1 to 9, got '$bad_n'\$" "$T/err" &&
        [ "$(wc -l <"$T/err")" = 1 ] && ok || bad "--passes $bad_n: $(cat "$T/err")"
done
expect_exit 2 "$NTPROF" machine --passes 2 --db "$T/passes.db"
grep -q "passes, --keep-pass, --ceilings and --cache go with --calibrate" "$T/err" && ok ||
    bad "--passes without --calibrate: $(cat "$T/err")"
expect_exit 2 "$NTPROF" machine --calibrate --keep-pass min --db "$T/passes.db"
grep -q "^ntprof: --keep-pass expects fastest or median, got 'min'\$" "$T/err" &&
    [ "$(wc -l <"$T/err")" = 1 ] && ok || bad "--keep-pass min: $(cat "$T/err")"
expect_exit 2 "$NTPROF" machine --refit --keep-pass median --db "$T/passes.db"
grep -q "^ntprof: --refit fits the stored samples again" "$T/err" && ok ||
    bad "--keep-pass with --refit: $(cat "$T/err")"

# --refit: the stored samples fitted again without timing give the stored
# fit; without samples or a calibration, one line saying what to do.
expect_exit 0 "$NTPROF" machine --refit --backend ref --db "$DB" -f csv -o "$T/refit.csv"
head -1 "$T/refit.csv" | grep -q ',median_error,max_error,cold_start_us,far_scale$' &&
    grep -q ',fc,3,.*,$' "$T/refit.csv" && ok || bad "refit CSV: $(cat "$T/refit.csv")"
expect_exit 0 "$NTPROF" machine --refit --backend ref --db "$DB" -f json -o "$T/refit.json"
$PY - "$T/refit.json" "$DB" <<'PYEOF' && ok || bad "refit: $(cat "$T/err")"
import json, sqlite3, sys
r = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
(model,) = db.execute("SELECT model FROM calibrations WHERE backend = 'ref'").fetchone()
stored = json.loads(model)
assert r["refitted_at"] and stored["refitted_at"] == r["refitted_at"], (r, stored)
assert r["families"]["fc"]["samples"] == 3, r["families"]
n = db.execute("SELECT count(*) FROM calibration_samples WHERE backend = 'ref' AND kind = 'layer'"
               " AND family = 'fc' AND median_s > 0").fetchone()[0]
assert n == 3, n
PYEOF
expect_exit 1 "$NTPROF" machine --refit --backend onednn --db "$DB"
grep -q "no onednn f32 calibration of this machine" "$T/err" && ok || bad "refit: $(cat "$T/err")"
expect_exit 2 "$NTPROF" machine --refit --quick --db "$DB"
grep -q "refit fits the stored samples again" "$T/err" && ok || bad "refit: $(cat "$T/err")"

# --recheck (docs/predict.md#recheck): a calibration's configurations
# timed again now, each row's ratio its own now / stored, the stored times
# the calibration's samples, the median over the rows; a calibration
# without samples: one line saying so.
expect_exit 0 "$NTPROF" machine --calibrate --families pool --backend ref --threads 1 \
    --ceilings "$T/ceil.json" --db "$T/pool.db" --cache warm --passes 1
expect_exit 0 "$NTPROF" machine --recheck --backend ref --db "$T/pool.db" --configs 4 -f json \
    -o "$T/recheck.json"
$PY - "$T/recheck.json" "$T/pool.db" <<'PYEOF' && ok || bad "recheck: $(cat "$T/recheck.json")"
import json, sqlite3, statistics, sys
r = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
stored = {m for (m,) in db.execute("SELECT median_s FROM calibration_samples WHERE kind = 'layer'")}
assert r["kind"] == "calibration_recheck" and r["backend"] == "ref" and r["cache"] == "warm", r
assert len(r["rows"]) == 4, r["rows"]
for w in r["rows"]:
    assert w["family"] == "pool" and w["stored_s"] >= 50e-6, w
    assert any(abs(w["stored_s"] - m) <= 1e-9 * m for m in stored), w
    assert w["now_s"] > 0 and abs(w["ratio"] - w["now_s"] / w["stored_s"]) < 1e-9, w
ratios = [w["ratio"] for w in r["rows"]]
assert abs(r["ratio"]["median"] - statistics.median(ratios)) < 1e-9, r["ratio"]
assert r["ratio"]["ci95"] == [min(ratios), max(ratios)], r["ratio"]  # under 6 rows: min..max
m = r["ratio"]["median"]
assert r["verdict"] == ("holds" if 0.9 <= m <= 1.1 else "moved" if min(ratios) > 1.1 or
                        max(ratios) < 0.9 else "unclear"), r
PYEOF
expect_exit 0 "$NTPROF" machine --recheck --backend ref --db "$T/pool.db" --configs 2
grep -q '^now / then: median [0-9.]* (95% CI [0-9.]*\.\.[0-9.]*) over 2 configurations$' "$T/out" &&
    grep -q '^verdict: ' "$T/out" && ok || bad "recheck table: $(cat "$T/out")"
# A calibration without samples (made before they were kept: here they are
# deleted from a copy) is refused in one line.
cp "$DB" "$T/nosamples.db"
$PY - "$T/nosamples.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("DELETE FROM calibration_samples")
db.commit()
PYEOF
expect_exit 1 "$NTPROF" machine --recheck --backend ref --db "$T/nosamples.db"
grep -q "recheck: the ref f32 calibration has no sample of at least 50 us that its backend ran" \
    "$T/err" && ok || bad "recheck without samples: $(cat "$T/err")"
expect_exit 1 "$NTPROF" machine --recheck --backend xnnpack --precision bf16 --db "$DB"
grep -q "no xnnpack bf16 calibration of this machine in .*--backend xnnpack --precision bf16\`" \
    "$T/err" && ok || bad "recheck without a calibration: $(cat "$T/err")"
expect_exit 0 "$NTPROF" machine --recheck --backend ref --families pool,fc --db "$T/pool.db" \
    --configs 3
[ "$(grep -c '^pool ' "$T/out")" = 3 ] && ok || bad "recheck --families: $(cat "$T/out")"
expect_exit 1 "$NTPROF" machine --recheck --backend ref --families conv --db "$T/pool.db"
grep -q "has no sample of conv of at least 50 us" "$T/err" && ok ||
    bad "recheck --families conv: $(cat "$T/err")"
expect_exit 2 "$NTPROF" machine --recheck --quick --db "$DB"
grep -q "recheck times the stored calibration's configurations again" "$T/err" && ok ||
    bad "--recheck --quick: $(cat "$T/err")"
expect_exit 2 "$NTPROF" machine --recheck --configs 65 --db "$DB"
grep -q "configs expects a number of configurations from 1 to 64, got '65'" "$T/err" && ok ||
    bad "--configs 65: $(cat "$T/err")"
expect_exit 2 "$NTPROF" machine --configs 4 --db "$DB"
grep -q "configs goes with --recheck" "$T/err" && ok || bad "--configs alone: $(cat "$T/err")"

expect_exit 0 "$NTPROF" predict --list --db "$DB"
grep -q ' ref  *f32 ' "$T/out" && ok || bad "list: $(cat "$T/out")"

expect_exit 0 "$NTPROF" predict "$MLP" --backend ref --db "$DB" -f json -o "$T/p.json"
grep -q 'not predicted' "$T/err" && ok || bad "no warning for the uncalibrated families"
$PY - "$T/p.json" <<'PYEOF' && ok || bad "prediction JSON"
import json, math, sys
p = json.load(open(sys.argv[1]))
assert p["kind"] == "prediction" and not p["roofline_only"]
fc = [l for l in p["layers"] if l["family"] == "fc"]
assert fc and all(l["predicted_ms"] > 0 for l in fc), fc
assert p["predicted_ms"] > 0 and math.isfinite(p["predicted_ms"])
# memcpy, split and concat: copies at the measured bandwidth, uncalibrated.
cp = [l for l in p["layers"] if l["family"] == "copy"]
assert len(cp) == 3 and all(l["predicted_ms"] > 0 and l["overhead_ms"] == 0 for l in cp), cp
total = sum(l["predicted_ms"] for l in fc + cp)
assert abs(total - p["predicted_ms"]) < 1e-9 * p["predicted_ms"]
PYEOF

# The calibration probed the memory bus before its pass and after
# (docs/predict.md#the-calibrations-memory-bus), against the ceilings'
# 20 GB/s (over ntprof machine's DRAM working set: the file names none);
# the prediction carries the lower share. Stored as read low, the
# prediction's table says so.
$PY - "$DB" "$T/p.json" <<'PYEOF' && ok || bad "the calibration's memory bus"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(model,) = db.execute("SELECT model FROM calibrations WHERE backend = 'ref'").fetchone()
bus = json.loads(model)["memory_bus"]
assert bus["measured"] and bus["before_gbps"] > 0 and bus["after_gbps"] > 0, bus
# Hand ceilings name no DRAM working set: ntprof machine's, not none.
assert bus["ceiling_gbps"] == 20 and bus["working_set_bytes"] >= 64 << 20, bus
share = min(bus["before_share"], bus["after_share"])
cal = json.load(open(sys.argv[2]))["calibration"]
assert abs(cal["memory_bus_share"] - share) < 1e-12, (cal, share)
assert cal["memory_bus_low"] == bus["low"], (cal, bus)
PYEOF
cp "$DB" "$T/low.db"
$PY - "$T/low.db" <<'PYEOF' && ok || bad "a calibration read low, stored"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(model,) = db.execute("SELECT model FROM calibrations WHERE backend = 'ref'").fetchone()
m = json.loads(model)
m["memory_bus"].update(before_gbps=9.0, before_share=0.45, after_gbps=10.0, after_share=0.5,
                       low=True, high=False)
db.execute("UPDATE calibrations SET model = ? WHERE backend = 'ref'", (json.dumps(m),))
db.commit()
PYEOF
expect_exit 0 "$NTPROF" predict "$MLP" --backend ref --db "$T/low.db"
grep -q "^memory bus: read low during the calibration (45% of this machine's DRAM triad)" "$T/out" &&
    ok || bad "no memory-bus line in the prediction: $(cat "$T/out")"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$T/low.db" --bandwidth-probe off
grep -q "the calibration's memory-bus probes read 45% of this machine's DRAM triad" \
    <(tr '\n' ' ' <"$T/out" | tr -s ' ') && ok || bad "no calibration-bus note in the run: $(cat "$T/out")"

# Beside a run: the pred column and the summary; without the history the
# table has no such column.
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$DB"
grep -q ' pred$' "$T/out" && ok || bad "no pred column"
grep -q '^prediction: predicted .* ms end to end, measured' "$T/out" && ok || bad "no summary"
grep -q '^layers within +-10%' "$T/out" && ok || bad "no within line"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --no-db
grep -q ' pred$' "$T/out" && bad "pred column without a calibration" || ok
grep -q '^prediction:' "$T/out" && bad "prediction without a calibration" || ok

# The calibration ran at 1 thread: a run at 1 thread is not flagged, a run
# at 2 is (the coefficients do not hold at another thread count).
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --threads 1 --db "$DB" -f json -o "$T/a.json" \
    --html "$T/a.html"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --threads 2 --db "$DB" -f json -o "$T/b.json"
$PY - "$T/a.json" "$T/b.json" "$SRC/schema/report.schema.json" <<'PYEOF' && ok || bad "threads flag"
import json, sys, jsonschema
a, b = (json.load(open(f))["prediction"] for f in sys.argv[1:3])
assert not a["threads_differ"] and a["calibration_threads"] == 1 and a["run_threads"] == 1, a
assert b["threads_differ"] and b["run_threads"] == 2, b
# relu (eltwise) is not calibrated: its measured time is apart.
assert a["unpredicted_ms"] > 0 and "eltwise" in a["uncalibrated"], a
s = json.load(open(sys.argv[3]))
for f in sys.argv[1:3]:
    jsonschema.validators.validator_for(s)(s).validate(json.load(open(f)))
PYEOF
grep -q 'Prediction beside measurement' "$T/a.html" && ok || bad "run HTML: no prediction section"
grep -q '<th>predicted ms</th>' "$T/a.html" && ok || bad "run HTML: no predicted column"

# compare: both runs' predictions, read back from their reports, per layer.
expect_exit 0 "$NTPROF" compare "$T/a.json" "$T/b.json" --html "$T/c.html"
grep -q '^prediction beside measurement:' "$T/out" && ok || bad "compare: $(cat "$T/out")"
grep -q '^  A: predicted .* layers within +-10%' "$T/out" && ok || bad "compare: no A summary"
grep -q '^  B: predicted ' "$T/out" && ok || bad "compare: no B summary"
grep -q 'calibrated at another thread' "$T/out" && ok || bad "compare: B's threads not flagged"
grep -Eq '^  fc1 +[0-9.e-]+ +[0-9.e-]+ +[-+][0-9]+%' "$T/out" && ok || bad "compare: no fc1 row"
grep -q '^    not predicted (family not calibrated): .*eltwise' "$T/out" && ok ||
    bad "compare: A's families not calibrated not named"
grep -q 'Prediction beside measurement' "$T/c.html" && ok || bad "compare HTML: no prediction"
expect_exit 0 "$NTPROF" compare "$T/a.json" "$T/b.json" -f json -o "$T/c.json"
$PY - "$T/a.json" "$T/c.json" "$SRC/schema/compare.schema.json" <<'PYEOF' && ok || bad "compare JSON"
import json, sys, jsonschema
a, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
s = json.load(open(sys.argv[3]))
jsonschema.validators.validator_for(s)(s).validate(c)
assert c["runs"][0]["prediction"]["predicted_ms"] == a["prediction"]["predicted_ms"]
want = {l["name"]: l["predicted_ms"] for l in a["layers"] if "predicted_ms" in l}
got = {l["name"]: l["base_predicted_ms"] for l in c["pairs"][0]["layers"]}
assert want and all(got[k] == v for k, v in want.items()), (want, got)
assert all(v is None for k, v in got.items() if k not in want), got
# relu is not calibrated: named on A's side, as in the run's report.
assert "eltwise" in c["runs"][0]["prediction"]["uncalibrated"], c["runs"][0]["prediction"]
assert "weights_note" not in c["runs"][0]["prediction"], c["runs"][0]["prediction"]
PYEOF

# The weights line of a calibration that measured what a pass keeps
# (docs/predict.md#what-a-pass-keeps-measured), read back from a report,
# in the table, the JSON and the HTML.
$PY - "$T/a.json" "$T/w.json" <<'PYEOF' && ok || bad "weights note report"
import json, sys
a = json.load(open(sys.argv[1]))
a["prediction"]["weights_note"] = "weights: a pass touches 1.2 MB; kept in L2 between passes"
json.dump(a, open(sys.argv[2], "w"))
PYEOF
expect_exit 0 "$NTPROF" compare "$T/w.json" "$T/b.json" --html "$T/w.html"
grep -q '^    weights: a pass touches 1.2 MB; kept in L2 between passes$' "$T/out" && ok ||
    bad "compare: no weights line: $(cat "$T/out")"
grep -q '; weights: a pass touches 1.2 MB; kept in L2 between passes</p>' "$T/w.html" && ok ||
    bad "compare HTML: no weights line"
expect_exit 0 "$NTPROF" compare "$T/w.json" "$T/b.json" -f json -o "$T/w-c.json"
$PY - "$T/w-c.json" "$SRC/schema/compare.schema.json" <<'PYEOF' && ok || bad "compare JSON weights"
import json, sys, jsonschema
c, s = (json.load(open(f)) for f in sys.argv[1:3])
jsonschema.validators.validator_for(s)(s).validate(c)
assert c["runs"][0]["prediction"]["weights_note"].endswith("kept in L2 between passes"), c["runs"][0]
assert "weights_note" not in c["runs"][1]["prediction"], c["runs"][1]
PYEOF

# compare's CSV carries the prediction columns the table and the HTML show.
expect_exit 0 "$NTPROF" compare "$T/a.json" "$T/b.json" -f csv -o "$T/c.csv"
$PY - "$T/a.json" "$T/b.json" "$T/c.csv" <<'PYEOF' && ok || bad "compare CSV"
import csv, json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
rows = list(csv.DictReader(open(sys.argv[3])))
e2e = [r for r in rows if r["kind"] == "end_to_end"][0]
assert abs(float(e2e["base_predicted_ms"]) / a["prediction"]["predicted_ms"] - 1) < 1e-9, e2e
assert abs(float(e2e["other_prediction_error"]) - b["prediction"]["error"]) < 1e-9, e2e
pa = {l["name"]: l for l in a["layers"] if "predicted_ms" in l}
for r in rows:
    if r["kind"] != "layer":
        continue
    if r["name"] in pa:
        l = pa[r["name"]]
        assert abs(float(r["base_predicted_ms"]) - l["predicted_ms"]) <= 1e-9 * l["predicted_ms"], r
        assert abs(float(r["base_prediction_error"]) - l["prediction_error"]) < 1e-9, r
    else:
        assert r["base_predicted_ms"] == "" and r["base_prediction_error"] == "", r
assert pa
PYEOF

# --place as `run --place` takes it: the layer on the backend named, with
# that backend's calibration or n/a (none for onednn here); the run agrees.
if "$NTPROF" run --help 2>&1 | grep -q onednn; then
    expect_exit 0 "$NTPROF" predict "$MLP" --backend ref --db "$DB" --place fc2=onednn -f json \
        -o "$T/pl.json"
    expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --no-db --place fc2=onednn -f json \
        -o "$T/pl-run.json"
    $PY - "$T/pl.json" "$T/pl-run.json" <<'PYEOF' && ok || bad "predict --place"
import json, sys
p, r = (json.load(open(f)) for f in sys.argv[1:3])
be = {l["name"]: l["backend"] for l in p["layers"] if l["kind"] == "layer"}
run = {l["name"]: l["backend"] for l in r["layers"] if l["kind"] == "layer"}
assert be == run, (be, run)
fc2 = [l for l in p["layers"] if l["name"] == "fc2"][0]
assert fc2["backend"] == "onednn" and fc2["note"] == "n/a: not calibrated for onednn", fc2
PYEOF
fi
# A stale calibration: ref's version names its kernels' revision (ref's
# kernels are ntprof's code), so a calibration of ref recorded before
# ("ntprof 0.1.0") is stale, whether ref runs the model or is handed a
# layer by another backend; a backend the prediction does not use is not
# checked.
expect_exit 0 "$NTPROF" predict "$MLP" --backend ref --db "$DB"
grep -q 'stale' "$T/err" && bad "a fresh calibration called stale: $(cat "$T/err")" || ok
cp "$DB" "$T/stale.db"
$PY - "$T/stale.db" <<'PYEOF' && ok || bad "stale: rewriting the version"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(model,) = db.execute("SELECT model FROM calibrations WHERE backend = 'ref'").fetchone()
m = json.loads(model)
assert m["backend_version"].startswith("ntprof ") and ", ref kernels " in m["backend_version"], m
m["backend_version"] = m["backend_version"].split(",")[0]
db.execute("UPDATE calibrations SET model = ?, backend_version = ? WHERE backend = 'ref'",
           (json.dumps(m), m["backend_version"]))
db.commit()
PYEOF
expect_exit 0 "$NTPROF" predict "$MLP" --backend ref --db "$T/stale.db"
grep -q "stale calibration: ref was calibrated with ntprof [0-9.]* and is now ntprof [0-9.]*, ref kernels " \
    "$T/err" && ok || bad "stale ref: $(cat "$T/err")"
# Another CPU under this machine's key (a VM's generic model name): the
# calibration's signature or its ISA flags not this CPU's is stale; what a
# calibration did not record (both empty) is not held against it.
for cpu in 'sig|AuthenticAMD family 25 model 17 stepping 1' 'flags|avx avx2 amx_int8' 'none|'; do
    cp "$DB" "$T/cpu.db"
    $PY - "$T/cpu.db" "${cpu%%|*}" "${cpu#*|}" <<'PYEOF' || bad "rewriting the CPU ($cpu)"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
what, value = sys.argv[2], sys.argv[3]
(model,) = db.execute("SELECT model FROM calibrations WHERE backend = 'ref'").fetchone()
m = json.loads(model)
assert m["cpu_signature"] and m["cpu_flags"] is not None, m
if what == "sig":
    m["cpu_signature"] = value
elif what == "flags":
    m["cpu_flags"] = value
else:
    m["cpu_signature"] = m["cpu_flags"] = ""
db.execute("UPDATE calibrations SET model = ? WHERE backend = 'ref'", (json.dumps(m),))
db.commit()
PYEOF
    expect_exit 0 "$NTPROF" predict "$MLP" --backend ref --db "$T/cpu.db"
    case $cpu in
    sig\|*) grep -q "stale calibration: ref was calibrated on another CPU (${cpu#*|}; " "$T/err" ;;
    flags\|*) grep -q "stale calibration: ref was calibrated on another CPU (.*; ${cpu#*|}) than this one" "$T/err" ;;
    *) ! grep -q stale "$T/err" ;;
    esac && ok || bad "another CPU (${cpu%%|*}): $(cat "$T/err")"
done
if "$NTPROF" run --help 2>&1 | grep -q onednn; then
    expect_exit 0 "$NTPROF" machine --calibrate --quick --families fc --backend onednn --threads 1 \
        --ceilings "$T/ceil.json" --db "$T/stale.db" --cache warm
    expect_exit 0 "$NTPROF" predict "$MLP" --backend onednn --db "$T/stale.db"
    grep -q 'stale' "$T/err" && bad "ref unused, yet stale: $(cat "$T/err")" || ok
    expect_exit 0 "$NTPROF" predict "$MLP" --backend onednn --db "$T/stale.db" --place fc2=ref
    grep -q "stale calibration: ref was calibrated with" "$T/err" && ok ||
        bad "stale ref handed fc2: $(cat "$T/err")"
    expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]/ref/onednn}" --db "$T/stale.db" --place fc2=ref \
        -f json -o "$T/stale-run.json"
    $PY - "$T/stale-run.json" <<'PYEOF' && ok || bad "run beside a stale ref"
import json, sys
r = json.load(open(sys.argv[1]))
fc2 = [l for l in r["layers"] if l["name"] == "fc2"][0]
assert fc2["backend"] == "ref" and "predicted_ms" in fc2, fc2
assert r["prediction"]["stale"] is True, r["prediction"]
PYEOF
fi

# --fuse as `run --fuse` fuses: on ref, the batch norms folded into their
# convs (the engine's rule, for every backend); the rows name for name.
CNN=$SRC/models/tiny-cnn.xml
expect_exit 0 "$NTPROF" predict "$CNN" --backend ref --db "$DB" --fuse -f json -o "$T/fz.json"
expect_exit 0 "$NTPROF" run "$CNN" "${FAST[@]}" --fuse --db "$DB" -f json -o "$T/fz-run.json"
$PY - "$T/fz.json" "$T/fz-run.json" <<'PYEOF' && ok || bad "predict --fuse"
import json, sys
p, r = (json.load(open(f)) for f in sys.argv[1:3])
want = {l["name"]: (l["kind"], l.get("fused_into")) for l in r["layers"]
        if l["kind"] in ("layer", "fused")}
got = {l["name"]: (l["kind"], l.get("fused_into")) for l in p["layers"]
       if l["kind"] in ("layer", "fused")}
assert got == want, (got, want)
assert p["fused"] and p["fused_layers"] == 2 and want["bn1"] == ("fused", "conv1"), p
# Beside the fused run, no fused row is predicted apart from its head.
assert all("predicted_ms" not in l for l in r["layers"] if l["kind"] == "fused"), r["layers"]
PYEOF
expect_exit 2 "$NTPROF" predict "$MLP" --ceilings "$T/ceil.json" --fuse
grep -q "takes no --machine, --backend, --place or --fuse" "$T/err" && ok || bad "--fuse: $(cat "$T/err")"

# The run refuses it the same way, with the same exit status.
expect_exit 1 "$NTPROF" predict "$MLP" --backend ref --db "$DB" --place fc9=ref
grep -q "has no layer 'fc9'; did you mean 'fc1'?" "$T/err" && ok || bad "--place: $(cat "$T/err")"
expect_exit 2 "$NTPROF" predict "$MLP" --backend ref --db "$DB" --place fc1
grep -q "place expects LAYER=BACKEND, got 'fc1'" "$T/err" && ok || bad "--place: $(cat "$T/err")"

# Errors.
expect_exit 1 "$NTPROF" predict "$MLP" --backend onednn --db "$DB"
grep -q "no calibration of backend 'onednn' at f32 for machine" "$T/err" && ok ||
    bad "no-calibration message: $(cat "$T/err")"
expect_exit 1 "$NTPROF" predict "$MLP" --machine no-such-host --db "$DB"
grep -q "no calibration of such a machine" "$T/err" && ok || bad "machine: $(cat "$T/err")"
expect_exit 2 "$NTPROF" machine --quick --db "$DB"
expect_exit 2 "$NTPROF" predict "$MLP" --ceilings x.json --backend ref

# A what-if from ceilings alone is labelled so.
printf '{"peak_gflops":{"f32":100},"bandwidth_gbps":{"DRAM":10}}' >"$T/c.json"
expect_exit 0 "$NTPROF" predict "$MLP" --ceilings "$T/c.json"
grep -q 'ROOFLINE-ONLY ESTIMATE' "$T/out" && ok || bad "what-if label"

finish
