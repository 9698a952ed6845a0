#!/usr/bin/env bash
# ntprof load (docs/load.md) end to end: the JSON report validates against
# schema/load.schema.json, CSV and trace are written, bad input is refused
# with one line that says why, oversubscription warns, and Ctrl-C during a
# run reports the queries so far with nothing half-written.
# Usage: test_load_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"
M="$SRC/models/serve-delay.xml"
# Runs are recorded in the default history: keep it here.
export XDG_DATA_HOME="$T/xdg"
Q=(-B ref --duration 0 --warmup 1)

# schema FILE [SCHEMA]: the report validates against schema/SCHEMA
# (default load.schema.json).
schema() {
    $PY - "$SRC/schema/${2:-load.schema.json}" "$1" <<'PYEOF' && ok || bad "schema: $1"
import json, sys, jsonschema
s = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(s)
errs = list(cls(s).iter_errors(json.load(open(sys.argv[2]))))
for e in errs[:5]:
    print("schema:", list(e.absolute_path), e.message[:200])
sys.exit(1 if errs else 0)
PYEOF
}

# Every scenario, as JSON.
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario single-stream "${Q[@]}" \
    --min-queries 80 -f json -o "$T/ss.json" --trace "$T/ss.trace.json"
schema "$T/ss.json"
$PY - "$T/ss.json" "$T/ss.trace.json" <<'PYEOF' && ok || bad "single-stream report"
import json, sys
r = json.load(open(sys.argv[1])); t = json.load(open(sys.argv[2]))
assert r["scenario"] == "single-stream" and r["queries"] >= 80, r["queries"]
assert r["percentile"] == 0.9 and r["validity"]["early_stopping"], r["validity"]
assert r["latency_ms"]["min"] >= 0.1, r["latency_ms"]
spans = [e for e in t["traceEvents"] if e.get("cat") == "query"]
assert len(spans) == r["queries"], (len(spans), r["queries"])
phases = [e["name"] for e in t["traceEvents"] if e.get("cat") == "phase"]
assert set(phases) == {"queued", "batched", "computed"}, set(phases)
PYEOF
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario multi-stream -q 4 --max-batch 4 \
    "${Q[@]}" --min-queries 20 -f json -o "$T/ms.json"
schema "$T/ms.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["samples"] == 4*r["queries"] and r["batch_histogram"] == {"4": r["queries"]}, r' "$T/ms.json" && ok || bad "multi-stream: one batch of 4 per query"
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario server --qps 1000 \
    --latency-bound 50 "${Q[@]}" --min-queries 200 -f json -o "$T/sv.json"
schema "$T/sv.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["queries"] == 200 and r["qps_offered"] == 1000 and r["generator"]["lateness_mean_us"] is not None, r' "$T/sv.json" && ok || bad "server report"
# --poll-us reaches the generator: a pinned instance (a spare CPU for the
# generator) polls that long, and the report says so; unpinned, nothing polls.
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario server --qps 1000 \
    --latency-bound 50 "${Q[@]}" --min-queries 50 --poll-us 37 -f json -o "$T/poll.json"
$PY -c 'import json,sys; g=json.load(open(sys.argv[1]))["generator"]; assert g["poll_us"] == (37 if g["cpu"] is not None else 0), g' "$T/poll.json" && ok || bad "--poll-us 37 not in the report"
# 200 queries cannot claim a p99: early stopping says how many it needs.
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); v=r["validity"]; assert not v["early_stopping"] and v["early_stopping_queries_needed"] >= 459 and not r["valid"], v' "$T/sv.json" && ok || bad "server: too short for its p99"
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario offline --max-batch 8 "${Q[@]}" \
    --min-queries 64 -f csv -o "$T/off.csv"
$PY - "$T/off.csv" <<'PYEOF' && ok || bad "offline CSV"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0][0] == "scenario" and rows[1][0] == "offline", rows[:2]
q = [r for r in rows[4:] if r]
assert rows[3][0] == "query" and len(q) == 64, (rows[3], len(q))
PYEOF
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario server --find-max-qps \
    --latency-bound 5 "${Q[@]}" --min-queries 100 -f json -o "$T/max.json" --html "$T/max.html" \
    --db "$T/h.db"
schema "$T/max.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["max_qps"] is not None and len(r["search"]) == 8, r.get("search")' "$T/max.json" && ok || bad "find-max-qps"

# HTML (docs/load.md#reports): self-contained, its figures those of the
# JSON report, the histogram holding every query, the search's points.
html_check() {
    $PY - "$1" "$2" <<'PYEOF' && ok || bad "html: $1"
import json, re, sys
h = open(sys.argv[1]).read(); r = json.load(open(sys.argv[2]))
# The JSON holds 15 significant digits, the page's data-v 17.
same = lambda a, b: abs(a - b) <= 1e-12 * max(1, abs(b))
assert h.startswith("<!DOCTYPE html>") and not re.search(r'(src|href)="(https?:)?//', h)
fig = dict(re.findall(r'<tr data-k="([a-z0-9_]+)"><th>[^<]*</th><td data-v="([^"]+)"', h))
want = {"qps_offered": r["qps_offered"], "qps_achieved": r["qps_achieved"],
        "samples_per_s": r["samples_per_s"], "queries": r["queries"],
        "overhead_us": r["generator"]["overhead_us"]}
want.update(r["latency_ms"]); del want["min"]
if r["scenario"] == "server":
    want["latency_bound_ms"] = r["latency_bound_ms"]
    want["lateness_mean_us"] = r["generator"]["lateness_mean_us"]
    want["lateness_p99_us"] = r["generator"]["lateness_p99_us"]
assert set(fig) == set(want), (sorted(fig), sorted(want))
for k, v in want.items():
    assert same(float(fig[k]), v), (k, fig[k], v)
hist = re.search(r'<table id="histogram">(.*?)</table>', h, re.S).group(1)
counts = [int(c) for c in re.findall(r'<td data-v="(\d+)">', hist)]
assert sum(counts) == r["queries"] and len(counts) in (20, 21), (sum(counts), len(counts))
assert h.count('class="chart"') >= 2 and 'id="latency-histogram"' in h and 'id="latency-percentiles"' in h
if "search" in r:
    assert 'id="latency-qps"' in h
    t = re.search(r'<table id="search">(.*?)</table>', h, re.S).group(1)
    rows = re.findall(r'<tr class="point">(.*?)</tr>', t)
    pts = sorted(r["search"], key=lambda p: p["qps"])
    assert len(rows) == len(pts), (len(rows), len(pts))
    for row, p in zip(rows, pts):
        v = [float(x) for x in re.findall(r'data-v="([^"]+)"', row)]
        w = [p["qps"], p["p50_ms"], p["p99_ms"], p["mean_ms"]]
        assert all(same(a, b) for a, b in zip(v, w)) and len(v) == 4, (v, p)
        assert row.endswith("<td>%s</td>" % ("yes" if p["valid"] else "no")), row
    assert same(float(re.search(r'id="bound" data-v="([^"]+)"', h).group(1)), r["latency_bound_ms"])
    assert same(float(re.search(r'id="max-qps" data-v="([^"]+)"', h).group(1)), r["max_qps"])
else:
    assert 'id="latency-qps"' not in h
PYEOF
}
html_check "$T/max.html" "$T/max.json"
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario single-stream "${Q[@]}" \
    --min-queries 50 -f json -o "$T/ss2.json" --html "$T/ss2.html" --db "$T/h.db"
html_check "$T/ss2.html" "$T/ss2.json"

# The history: both runs recorded with their figures, listed newest first.
expect_exit 0 "$NTPROF" history --db "$T/h.db" --load -f json -o "$T/hl.json"
$PY - "$T/hl.json" "$T/ss2.json" "$T/max.json" <<'PYEOF' && ok || bad "history of load runs"
import json, sys
h = json.load(open(sys.argv[1]))
assert h["kind"] == "load_history" and len(h["load_runs"]) == 2, h
for e, f in zip(h["load_runs"], sys.argv[2:]):
    r = json.load(open(f))
    for k in ("scenario", "queries", "qps_offered", "qps_achieved", "valid", "max_batch"):
        assert e[k] == r[k], (k, e[k], r[k])
    for k in ("p50", "p90", "p95", "p99", "p999", "max", "mean"):
        assert e["latency_ms"][k] == r["latency_ms"][k], (k, e, r["latency_ms"])
    assert e["max_qps"] == r.get("max_qps"), (e["max_qps"], r.get("max_qps"))
PYEOF
expect_exit 0 "$NTPROF" history --db "$T/h.db"
grep -q "^load runs" "$T/out" && [ "$(grep -c " single-stream " "$T/out")" = 1 ] && ok ||
    bad "history's table lacks the load runs"
expect_exit 0 "$NTPROF" load "$M" -s base_us=100 --scenario single-stream "${Q[@]}" \
    --min-queries 10 --no-db -o "$T/nodb.txt" --db "$T/h.db"
expect_exit 0 "$NTPROF" history --db "$T/h.db" --load -f csv -o "$T/hl.csv"
[ "$(grep -c single-stream "$T/hl.csv")" = 1 ] && ok || bad "--no-db recorded the run"

# history copy takes the load runs along, byte for byte, once.
expect_exit 0 "$NTPROF" history copy --from "$T/h.db" --to "$T/copy.db"
grep -q '^2 load runs copied, 0 already present' "$T/out" && ok || bad "copy: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history copy --from "$T/h.db" --to "$T/copy.db"
grep -q '^0 load runs copied, 2 already present' "$T/out" && ok || bad "copy again: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history --db "$T/copy.db" --load -f json -o "$T/hc.json"
cmp -s "$T/hc.json" "$T/hl.json" && ok || bad "the copied load runs differ: $(diff "$T/hl.json" "$T/hc.json" | head -5)"
$PY -c 'import sqlite3, sys; q = lambda p: sqlite3.connect(p).execute("SELECT time, report FROM load_runs ORDER BY id").fetchall(); a, b = q(sys.argv[1]), q(sys.argv[2]); assert len(a) == 2 and a == b, len(b)' "$T/h.db" "$T/copy.db" && ok || bad "the copied load reports differ"

# sweep --load (docs/load.md#sweeps): a row per configuration, one factor at
# a time around the baseline, each the figures of its own load run.
SW=(-s base_us=100 --scenario server --latency-bound 50 "${Q[@]}" --min-queries 100 --no-db)
expect_exit 0 "$NTPROF" sweep "$M" --load "${SW[@]}" --vary qps=500,1000 --vary instances=1,2 \
    -f json -o "$T/sw.json" --html "$T/sw.html"
schema "$T/sw.json" load_sweep.schema.json
# The schema holds every field: the report less any one of them, at the top
# or in a configuration (its latencies and generator included), fails it.
$PY - "$SRC/schema/load_sweep.schema.json" "$T/sw.json" <<'PYEOF' && ok || bad "load_sweep schema lets a missing field pass"
import copy, json, sys, jsonschema
s = json.load(open(sys.argv[1])); r = json.load(open(sys.argv[2]))
v = jsonschema.validators.validator_for(s)(s)
assert v.is_valid(r)
paths = [(k,) for k in r]
c = r["configurations"][0]
for k in c:
    paths.append(("configurations", 0, k))
    if isinstance(c[k], dict):
        paths += [("configurations", 0, k, j) for j in c[k]]
assert len(paths) >= 25, len(paths)
for p in paths:
    if p == ("configurations", 0, "load_run_id"):
        continue  # present only when the sweep was recorded
    x = copy.deepcopy(r); o = x
    for k in p[:-1]:
        o = o[k]
    del o[p[-1]]
    assert not v.is_valid(x), ("passes without", p)
# A failed configuration is its label and error only.
x = copy.deepcopy(r); x["configurations"][0] = {"configuration": "qps=1", "error": "exit 2: bad"}
assert v.is_valid(x)
x["configurations"][0]["valid"] = True
assert not v.is_valid(x)
PYEOF
$PY - "$T/sw.json" <<'PYEOF' && ok || bad "sweep --load JSON"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["kind"] == "load_sweep", s["kind"]
c = s["configurations"]
assert [r["configuration"] for r in c] == ["qps=500 instances=1", "qps=1000 instances=1",
                                           "qps=500 instances=2"], c
for r, qps, inst in zip(c, (500, 1000, 500), (1, 1, 2)):
    assert r["error"] is None and r["scenario"] == "server", r
    assert r["qps_offered"] == qps and r["instances"] == inst and r["queries"] == 100, r
    lat = r["latency_ms"]
    assert 0.1 <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"], lat
    g = r["generator"]
    assert g["overhead_us"] > 0 and g["lateness_mean_us"] is not None and g["qps_drawn"] > 0, g
    assert 0 < r["qps_achieved"] < 2 * qps, r
PYEOF
# Every combination, a <param> among the factors; a bad value fails its row only.
expect_exit 0 "$NTPROF" sweep "$M" --load --scenario single-stream "${Q[@]}" --min-queries 64 \
    --no-db --vary base_us=100,300 --vary max-batch=1,2 --design full -f csv -o "$T/sw.csv" \
    --html "$T/sw-csv.html"
$PY - "$T/sw.csv" <<'PYEOF' && ok || bad "sweep --load CSV"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["configuration"] for r in rows] == ["base_us=100 max-batch=1", "base_us=100 max-batch=2",
                                              "base_us=300 max-batch=1", "base_us=300 max-batch=2"]
for r in rows:
    assert r["error"] == "" and r["max_batch"] == r["configuration"][-1], r
    assert float(r["p50_ms"]) >= int(r["configuration"].split()[0][8:]) / 1000, r
PYEOF
expect_exit 0 "$NTPROF" sweep "$M" --load "${SW[@]}" --vary qps=500,-1 -o "$T/swbad.txt"
grep -q 'qps=-1 .*failed: .*--qps' "$T/swbad.txt" && grep -q '^qps=500 ' "$T/swbad.txt" && ok ||
    bad "a failed configuration's row: $(cat "$T/swbad.txt")"
expect_in_err "1 of 2 configurations failed"
expect_exit 0 "$NTPROF" sweep "$M" --load "${SW[@]}" --vary qps=500,-1 -f json -o "$T/swbad.json" \
    --html "$T/swbad.html"
schema "$T/swbad.json" load_sweep.schema.json
$PY -c 'import json,sys; c=json.load(open(sys.argv[1]))["configurations"]; assert c[0]["error"] is None and c[1]["error"].startswith("exit 2: ") and len(c[1]) == 2, c' "$T/swbad.json" && ok || bad "a failed configuration's JSON"
# The sweep's HTML (docs/load.md#sweeps): self-contained; a row per
# configuration and a p99 and a p50 point per completed one, each the
# report's value; invalid runs marked, failed ones in the table only. The
# server sweep's 100 queries cannot claim a p99 (all invalid); the
# single-stream sweep's 64 can claim its p90 (all valid); the third page
# has a failed configuration.
sweep_html_check() {
    $PY - "$1" "$2" "$3" <<'PYEOF' && ok || bad "sweep html: $1"
import csv, html, json, re, sys
h = open(sys.argv[1]).read(); want_valid = sys.argv[3]
if sys.argv[2].endswith(".csv"):
    conf = []
    for r in csv.DictReader(open(sys.argv[2])):
        if r["error"]:
            conf.append({"configuration": r["configuration"], "error": r["error"]}); continue
        num = lambda k: float(r[k]) if r[k] != "" else None
        conf.append({"configuration": r["configuration"], "error": None, "scenario": r["scenario"],
                     "instances": int(r["instances"]), "threads_per_instance": int(r["threads_per_instance"]),
                     "max_batch": int(r["max_batch"]), "qps_offered": num("qps_offered"),
                     "qps_achieved": num("qps_achieved"), "samples_per_s": num("samples_per_s"),
                     "queries": int(r["queries"]), "valid": r["valid"] == "true", "max_qps": num("max_qps"),
                     "latency_ms": {k: num(k + "_ms") for k in ("p50", "p90", "p99", "mean", "max")},
                     "generator": {k: num(k) for k in ("overhead_us", "lateness_mean_us", "lateness_p99_us", "qps_drawn")}})
    tol = 1e-9  # CSV: 10 significant digits
else:
    conf = json.load(open(sys.argv[2]))["configurations"]
    tol = 1e-12
same = lambda a, b: abs(a - b) <= tol * max(1, abs(b))
assert h.startswith("<!DOCTYPE html>") and not re.search(r'(src|href)="(https?:)?//', h)
t = re.search(r'<table id="configurations">(.*?)</table>', h, re.S).group(1)
rows = re.findall(r'<tr class="config" data-c="(\d+)"><td class="l">([^<]*)</td>(.*?)</tr>', t)
assert [int(r[0]) for r in rows] == list(range(len(conf))), (len(rows), len(conf))
pts = re.findall(r'<circle class="pt (p99|p50)( invalid)?" data-c="(\d+)" data-x="([^"]+)" data-y="([^"]+)"', h)
marks = set(int(c) for c in re.findall(r'class="invalid-mark" data-c="(\d+)"', h))
done = [i for i, c in enumerate(conf) if c["error"] is None]
assert sorted(int(p[2]) for p in pts) == sorted(done * 2), (pts, done)
for (i, label, cells), c in zip(rows, conf):
    i = int(i)
    assert html.unescape(label) == c["configuration"], (label, c["configuration"])
    if c["error"] is not None:
        assert "failed: " in cells and i not in marks, cells
        continue
    v = [float(x) for x in re.findall(r'data-v="([^"]+)"', cells)]
    L, G = c["latency_ms"], c["generator"]
    w = [c["instances"], c["threads_per_instance"], c["max_batch"], c["qps_offered"], c["qps_achieved"],
         c["samples_per_s"], c["queries"], L["p50"], L["p90"], L["p99"], L["mean"], L["max"],
         c["max_qps"], G["overhead_us"], G["lateness_mean_us"], G["lateness_p99_us"], G["qps_drawn"]]
    w = [x for x in w if x is not None]  # "-" cells carry no data-v
    assert len(v) == len(w) and all(same(a, b) for a, b in zip(v, w)), (c["configuration"], v, w)
    assert cells.endswith(">%s</td>" % ("yes" if c["valid"] else "no")), cells[-40:]
    assert c["valid"] == (want_valid == "valid"), (c["configuration"], c["valid"], want_valid)
    assert (i in marks) == (not c["valid"]), (i, marks)
    for p in pts:
        if int(p[2]) == i:
            assert bool(p[1]) == (not c["valid"]), p
            assert same(float(p[3]), c["qps_achieved"]), (p, c["qps_achieved"])
            assert same(float(p[4]), L[p[0]]), (p, L)
assert h.count('<svg class="chart" id="latency-qps"') == 1
PYEOF
}
sweep_html_check "$T/sw.html" "$T/sw.json" invalid
sweep_html_check "$T/sw-csv.html" "$T/sw.csv" valid
sweep_html_check "$T/swbad.html" "$T/swbad.json" invalid
expect_exit 1 "$NTPROF" sweep "$M" --load "${SW[@]}" --vary qps=1,2 -o "$T/same.html" \
    --html "$T/same.html"
expect_in_err "same.html"
expect_exit 2 "$NTPROF" sweep "$M" --load "${SW[@]}" --qps 100 --vary qps=500,1000
expect_err "--vary qps and --qps both set qps; give one"
expect_exit 2 "$NTPROF" sweep "$M" --load "${SW[@]}" --vary qps=500,500
expect_err "--vary qps: the value '500' is given twice"

# A load sweep is recorded as one sweep (docs/load.md#sweeps): each
# configuration's load run, its report byte for byte, linked to the sweep
# with its label; a failed one with its error; history lists it.
expect_exit 0 "$NTPROF" sweep "$M" --load -s base_us=100 --scenario server --latency-bound 50 \
    "${Q[@]}" --min-queries 50 --db "$T/sw.db" --vary qps=500,1000,-1 -f json -o "$T/swdb.json"
expect_in_err "recorded as load sweep 1 in $T/sw.db"
schema "$T/swdb.json" load_sweep.schema.json
expect_exit 0 "$NTPROF" history --db "$T/sw.db" --load-sweeps -f json -o "$T/hs.json"
expect_exit 0 "$NTPROF" history --db "$T/sw.db" --load -f json -o "$T/hl2.json"
$PY - "$T/swdb.json" "$T/hs.json" "$T/hl2.json" "$T/sw.db" <<'PYEOF' && ok || bad "the load sweep in the history"
import json, sqlite3, sys
sw, hs, hl = (json.load(open(f)) for f in sys.argv[1:4])
assert hs["kind"] == "load_sweep_history" and len(hs["load_sweeps"]) == 1, hs
s = hs["load_sweeps"][0]
assert s["id"] == 1 and s["design"] == "ofat" and s["n_configs"] == 3 and s["source"].endswith("/serve-delay.xml"), s
cs = s["configurations"]
assert [c["index"] for c in cs] == [0, 1, 2], cs
assert [c["configuration"] for c in cs] == [c["configuration"] for c in sw["configurations"]], cs
runs = {r["id"]: r for r in hl["load_runs"]}
assert len(runs) == 2, sorted(runs)
for c, r in zip(cs, sw["configurations"]):
    if r["error"] is not None:
        assert c["state"] == "failed" and c["load_run_id"] is None and c["error"] == r["error"], c
        assert "load_run_id" not in r
        continue
    assert c["state"] == "ok" and c["error"] is None and c["load_run_id"] == r["load_run_id"], (c, r)
    e = runs[c["load_run_id"]]
    for k in ("scenario", "queries", "qps_offered", "qps_achieved", "valid", "max_batch", "instances"):
        assert e[k] == r[k], (k, e[k], r[k])
    for k in ("p50", "p90", "p99", "max", "mean"):
        assert e["latency_ms"][k] == r["latency_ms"][k], (k, e["latency_ms"], r["latency_ms"])
db = sqlite3.connect(sys.argv[4])
assert db.execute("SELECT kind, executor FROM sweeps").fetchall() == [("load", "local")]
opts = json.loads(db.execute("SELECT run_options FROM sweeps").fetchone()[0])
assert "--db" not in opts and "--no-db" not in opts and "--scenario" in opts, opts
for (rep,) in db.execute("SELECT report FROM load_runs"):
    j = json.loads(rep)
    assert j["kind"] == "load" and not j["interrupted"], j["kind"]
PYEOF
expect_exit 0 "$NTPROF" history --db "$T/sw.db"
grep -q "^load sweeps" "$T/out" && grep -q "^load sweep 1 " "$T/out" &&
    [ "$(grep -cE '^ +[0-9]+ +[0-9]+ ok +qps=' "$T/out")" = 2 ] && grep -q ' failed qps=-1: exit 2' "$T/out" &&
    ok || bad "history's table lacks the load sweep: $(cat "$T/out")"
# --no-db: the sweeps above recorded nothing in the default history.
expect_exit 0 "$NTPROF" history --load-sweeps -f csv -o "$T/hsd.csv"
[ "$(wc -l <"$T/hsd.csv")" = 1 ] && ok || bad "--no-db sweeps were recorded: $(cat "$T/hsd.csv")"

# history copy takes a load sweep along with its load runs, once: into a
# history that already holds other load runs, so the ids move, and each
# configuration must still point to its own run (the same report).
expect_exit 0 "$NTPROF" history copy --from "$T/h.db" --to "$T/swc.db"
expect_exit 0 "$NTPROF" history copy --from "$T/sw.db" --to "$T/swc.db"
grep -q '^2 load runs copied, 0 already present' "$T/out" && grep -q '^1 sweep copied, 0 already present' "$T/out" &&
    ok || bad "sweep copy: $(cat "$T/out")"
expect_exit 0 "$NTPROF" history copy --from "$T/sw.db" --to "$T/swc.db"
grep -q '^0 sweeps copied, 1 already present' "$T/out" && ok || bad "sweep copy again: $(cat "$T/out")"
$PY - "$T/sw.db" "$T/swc.db" <<'PYEOF' && ok || bad "the copied load sweep"
import sqlite3, sys
a, b = (sqlite3.connect(p) for p in sys.argv[1:3])
cols = "created_at, source, design, factors, run_options, n_configs, executor, submit, jobs, kind"
sa, sb = (d.execute(f"SELECT id, {cols} FROM sweeps").fetchall() for d in (a, b))
assert len(sa) == 1 and len(sb) == 1 and sa[0][1:] == sb[0][1:] and sa[0][1:][-1] == "load", (sa, sb)
q = ("SELECT t.idx, t.state, t.job, t.message, t.updated_at, t.label, t.run_id, l.time, l.report "
     "FROM sweep_tasks t LEFT JOIN load_runs l ON l.id = t.load_run_id WHERE t.sweep_id = ? ORDER BY t.idx")
ta, tb = a.execute(q, (sa[0][0],)).fetchall(), b.execute(q, (sb[0][0],)).fetchall()
assert len(ta) == 3 and ta == tb, (ta, tb)
assert [t[1] for t in ta] == ["ok", "ok", "failed"] and ta[2][7] is None and ta[0][8] is not None, ta
ids = lambda d: [r[0] for r in d.execute("SELECT load_run_id FROM sweep_tasks ORDER BY idx")]
assert ids(a)[:2] == [1, 2] and ids(b)[:2] == [3, 4] and ids(b)[2] is None, (ids(a), ids(b))
assert b.execute("SELECT count(*) FROM load_runs").fetchone()[0] == 4
PYEOF
expect_exit 0 "$NTPROF" history --db "$T/sw.db" --load-sweeps -f csv -o "$T/hs1.csv"
expect_exit 0 "$NTPROF" history --db "$T/swc.db" --load-sweeps -f csv -o "$T/hs2.csv"
[ "$(cut -d, -f2-8 "$T/hs1.csv" | sed 1d)" = "$(cut -d, -f2-8 "$T/hs2.csv" | sed 1d)" ] && ok ||
    bad "the copied load sweep's listing differs: $(diff "$T/hs1.csv" "$T/hs2.csv" | head -5)"

# Bad input: one line each, saying why.
expect_exit 2 "$NTPROF" load "$M" --scenario server --qps 0 --latency-bound 5
expect_err "--qps expects a positive number of queries per second, got '0'"
expect_exit 2 "$NTPROF" load "$M" --scenario server --qps -3 --latency-bound 5
expect_err "got '-3'"
expect_exit 2 "$NTPROF" load "$M" --scenario server --latency-bound 5
expect_err "the server scenario needs --qps"
expect_exit 2 "$NTPROF" load "$M"
expect_err "load needs --scenario"
expect_exit 2 "$NTPROF" load "$M" --scenario server --qps 10 --latency-bound 5 --poll-us -1
expect_err "--poll-us expects microseconds (0 to 1e6) or auto, got '-1'"
expect_exit 2 "$NTPROF" load "$M" --scenario servr
expect_err "--scenario expects single-stream, multi-stream, server or offline, got 'servr'"
expect_exit 1 "$NTPROF" load "$M" -s base_us=2000 --scenario server --qps 10 --latency-bound 1 \
    "${Q[@]}"
expect_in_err "--latency-bound 1 ms is below one query's latency: "
# Oversubscribed: a warning, and the run goes on.
expect_exit 0 "$NTPROF" load "$M" -s base_us=20 --scenario single-stream --instances 64 \
    "${Q[@]}" --min-queries 10 -o "$T/over.txt"
expect_in_err "64 instances x 1 threads = 64 threads"

# Ctrl-C: the queries so far, reported; exit 130; the report whole.
"$NTPROF" load "$M" -s base_us=200 --scenario server --qps 500 --latency-bound 50 \
    "${Q[@]}" --min-queries 1000000 -f json -o "$T/int.json" 2>"$T/err" &
pid=$!
# Interrupted once it serves: its instance's thread (named ntp-serve after
# the warm-up) has slept at least 4 times, after its first queries. Polled,
# not a fixed sleep (which flaked under ASan at load 23), within 120 s.
served() {
    local t n
    for t in /proc/$pid/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = ntp-serve ] || continue
        n=$(sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "$t/status" 2>/dev/null)
        [ "${n:-0}" -ge 4 ] && return 0
    done
    return 1
}
for _ in $(seq 1200); do
    served && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
done
served || bad "the load run was not serving after 120 s (or ended): cannot test Ctrl-C"
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] && ok || bad "interrupted run exit $rc (want 130)"
schema "$T/int.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["interrupted"] and 0 < r["queries"] < 1000000 and not r["valid"], r["queries"]' "$T/int.json" && ok || bad "interrupted report"
ls "$T" | grep -q '\.tmp' && bad "a temporary file was left behind" || ok
finish
