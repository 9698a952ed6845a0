#!/usr/bin/env bash
# The history and the ceilings cache as a user meets them: every `ntprof
# run` recorded (--db), listed and filtered by `ntprof history`, shown again
# with --show, compared by run id; --no-db records nothing; a HOME that
# cannot be written only warns; `ntprof machine` measures once, caches, and
# `ntprof run` then places every row on the roofline.
# Usage: test_store_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
CNN=$SRC/models/tiny-cnn.xml
DB=$T/h/history.db
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --backend ref)

# Three runs recorded; the folder is created.
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$DB" --format json -o "$T/r1.json"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$DB" --set hidden=64 --format json -o "$T/r2.json"
expect_exit 0 "$NTPROF" run "$CNN" "${FAST[@]}" --db "$DB" --backend ref
[ -f "$DB" ] && ok || bad "no database at $DB"

expect_exit 0 "$NTPROF" history --db "$DB"
head -1 "$T/out" | grep -q '^    id time  *topology  *backend  *prec batch thr  median ms machine' && ok ||
    bad "history heading: $(head -1 "$T/out")"
[ "$(grep -c 'tiny-' "$T/out")" = 3 ] && ok || bad "history lists $(grep -c 'tiny-' "$T/out") runs, want 3"
expect_exit 0 "$NTPROF" history --db "$DB" --topology tiny-mlp --format json -o "$T/h.json"
$PY - "$T/h.json" "$T/r2.json" <<'PYEOF' && ok || bad "history JSON"
import json, sys
h = json.load(open(sys.argv[1]))
runs = h["runs"]
assert [r["id"] for r in runs] == [2, 1], runs
assert all(r["topology"] == "tiny-mlp" for r in runs)
r2 = json.load(open(sys.argv[2]))
assert abs(runs[0]["median_ms"] - r2["end_to_end"]["median_ms"]) < 1e-12, (runs[0], r2["end_to_end"])
assert runs[0]["layers"] == len(r2["layers"])
PYEOF
expect_exit 0 "$NTPROF" history --db "$DB" --limit 1 --format csv
[ "$(wc -l <"$T/out")" = 2 ] && ok || bad "--limit 1 gave $(wc -l <"$T/out") lines"
expect_exit 0 "$NTPROF" history --db "$DB" --since 2999-01-01 --format json
grep -q '"runs": \[\]' "$T/out" && ok || bad "--since in the future lists runs: $(cat "$T/out")"
expect_exit 2 "$NTPROF" history --db "$DB" --since yesterday
grep -q "since expects a date" "$T/err" && ok || bad "--since error: $(cat "$T/err")"

# The stored report is the run's report, whole.
expect_exit 0 "$NTPROF" history --db "$DB" --show 2 --format json -o "$T/show2.json"
$PY - "$T/show2.json" "$T/r2.json" <<'PYEOF' && ok || bad "--show differs from the run's report"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["layers"] == b["layers"], "layers differ"
assert a["end_to_end"] == b["end_to_end"]
assert a["config"] == b["config"]
PYEOF
# As a table it is rendered again from the stored report.
expect_exit 0 "$NTPROF" history --db "$DB" --show 2
grep -q "^topology tiny-mlp " "$T/out" && grep -q "^params .*hidden=64" "$T/out" && ok ||
    bad "--show as a table: $(head -3 "$T/out")"
expect_exit 1 "$NTPROF" history --db "$DB" --show 99
grep -q "no run 99" "$T/err" && ok || bad "--show 99: $(cat "$T/err")"

# Compare by run id and by file.
expect_exit 0 "$NTPROF" compare --db "$DB" 1 "$T/r2.json" --format json -o "$T/cmp.json"
$PY - "$T/cmp.json" <<'PYEOF' && ok || bad "compare by id"
import json, sys
c = json.load(open(sys.argv[1]))
assert [r["label"] for r in c["runs"]] == ["run 1", c["runs"][1]["label"]]
assert "param hidden: 32 -> 64" in c["pairs"][0]["differences"], c["pairs"][0]["differences"]
assert all(l["status"] == "matched" for l in c["pairs"][0]["layers"])
PYEOF
expect_exit 1 "$NTPROF" compare --db "$DB" 1 42
grep -q "no run 42" "$T/err" && ok || bad "compare missing id: $(cat "$T/err")"
expect_exit 2 "$NTPROF" compare "$T/r1.json"

# --no-db records nothing.
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$T/none.db" --no-db
[ ! -e "$T/none.db" ] && ok || bad "--no-db created a database"

# The default lives under XDG_DATA_HOME, then HOME.
expect_exit 0 env XDG_DATA_HOME="$T/xdg" "$NTPROF" run "$MLP" "${FAST[@]}"
[ -f "$T/xdg/ntprof/history.db" ] && ok || bad "no history under XDG_DATA_HOME"
expect_exit 0 env -u XDG_DATA_HOME HOME="$T/home" "$NTPROF" run "$MLP" "${FAST[@]}"
[ -f "$T/home/.local/share/ntprof/history.db" ] && ok || bad "no history under HOME"

# A HOME that cannot be written: the run still succeeds and reports, with
# one warning. (As root, permissions do not stop writes, so a HOME below a
# regular file stands in for an unwritable one.)
touch "$T/file"
expect_exit 0 env -u XDG_DATA_HOME HOME="$T/file/home" "$NTPROF" run "$MLP" "${FAST[@]}" --format json
grep -q '"kind": "run"' "$T/out" && ok || bad "no report with an unwritable HOME"
grep -q "^ntprof: warning: history .*the run was not recorded" "$T/err" && ok ||
    bad "no warning with an unwritable HOME: $(cat "$T/err")"
expect_exit 0 env -u XDG_DATA_HOME -u HOME "$NTPROF" run "$MLP" "${FAST[@]}"
grep -q "warning: .*neither XDG_DATA_HOME nor HOME is set" "$T/err" && ok ||
    bad "no warning without HOME: $(cat "$T/err")"

# Ceilings: none cached yet, so the roofline is not available.
$PY - "$T/r1.json" <<'PYEOF' && ok || bad "roofline without ceilings"
import json, sys
r = json.load(open(sys.argv[1]))
assert "roofline" not in r or r["roofline"] is None, r.get("roofline")
assert all(l.get("attainable_gflops") is None for l in r["layers"])
PYEOF
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$DB"
grep -q "^roofline: not available" "$T/out" && ok || bad "the table does not say the roofline is not available"

# Measure once (quickly), then the cache answers.
expect_exit 0 "$NTPROF" machine --db "$DB" --seconds 0.02 --no-gemm --format json -o "$T/m1.json"
sleep 1
expect_exit 0 "$NTPROF" machine --db "$DB" --format json -o "$T/m2.json"
expect_exit 0 "$NTPROF" machine --db "$DB" --no-measure --format json -o "$T/m3.json"
expect_exit 0 "$NTPROF" machine --db "$DB" --remeasure --seconds 0.02 --no-gemm --format json -o "$T/m4.json"
$PY - "$T"/m1.json "$T"/m2.json "$T"/m3.json "$T"/m4.json <<'PYEOF' && ok || bad "ceilings cache"
import json, sys
m = [json.load(open(p)) for p in sys.argv[1:]]
c = [x["ceilings"] for x in m]
assert c[0]["measured_at"] == c[1]["measured_at"] == c[2]["measured_at"], [x["measured_at"] for x in c]
assert c[3]["measured_at"] > c[0]["measured_at"], "--remeasure did not measure again"
peaks = {p["precision"]: p["gflops"] for p in c[0]["peaks"]}
assert peaks["f32"] > 0 and peaks["f64"] > 0, peaks
levels = [l["level"] for l in c[0]["bandwidth"]]
assert levels[-1] == "DRAM", levels
assert m[0]["machine"]["logical_cpus"] >= 1
PYEOF
expect_exit 0 "$NTPROF" machine --no-db --no-measure
grep -q "ceilings: not measured" "$T/out" && ok || bad "--no-db --no-measure showed ceilings"
expect_exit 2 "$NTPROF" machine --remeasure --no-measure

# With ceilings cached, every row is placed on the roofline.
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$DB" --format json -o "$T/r5.json"
$PY - "$T/r5.json" "$T/m4.json" <<'PYEOF' && ok || bad "roofline with ceilings"
import json, sys
r = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))["ceilings"]
rl = r["roofline"]
peak = [p["gflops"] for p in c["peaks"] if p["precision"] == "f32"][0]
dram = [l["gbps"] for l in c["bandwidth"] if l["level"] == "DRAM"][0]
assert abs(rl["peak_gflops"] - peak) < 1e-9 * peak, (rl["peak_gflops"], peak)
assert abs(rl["bandwidth_gbps"] - dram) < 1e-9 * dram
placed = 0
for l in r["layers"]:
    if l["flops"] > 0 and l["bytes"] > 0 and not l["fused"] and l["median_ms"] > 0:
        want = min(peak, l["flops"] / l["bytes"] * dram)
        assert abs(l["attainable_gflops"] - want) <= 1e-9 * want, (l["name"], l["attainable_gflops"], want)
        assert abs(l["roof_share"] - l["gflops"] / want) <= 1e-9 * l["roof_share"]
        placed += 1
assert placed >= 3, placed
PYEOF

# A history of the previous schema (8: no calibration samples) holding these
# ceilings: the run that records migrates it before it reads, so the first
# run already has its roofline (it used to warn "an older history" and run
# without one, then migrate when recording). A run that fails to load its
# topology still migrates (as recording would), and `history` reads it.
cp "$DB" "$T/v8.db"
$PY - "$T/v8.db" <<'PYEOF' && ok || bad "making a schema-8 history"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA journal_mode = DELETE")
c.execute("DROP TABLE calibration_samples")
c.execute("PRAGMA user_version = 8")
c.commit()
c.close()
PYEOF
expect_exit 1 "$NTPROF" history --db "$T/v8.db"
expect_in_err "an older history"
expect_exit 0 "$NTPROF" run "$MLP" "${FAST[@]}" --db "$T/v8.db" --format json -o "$T/r8.json"
grep -q "older history" "$T/err" && bad "the recording run read the old schema: $(cat "$T/err")" || ok
$PY - "$T/r8.json" "$T/v8.db" <<'PYEOF' && ok || bad "roofline on the first run after a schema change"
import json, sqlite3, sys
r = json.load(open(sys.argv[1]))
assert r.get("roofline") and r["roofline"]["peak_gflops"] > 0, r.get("roofline")
c = sqlite3.connect(sys.argv[2])
assert c.execute("PRAGMA user_version").fetchone()[0] > 8
assert c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'calibration_samples'").fetchone()[0] == 1
PYEOF
expect_exit 0 "$NTPROF" history --db "$T/v8.db"

finish
