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

# schema FILE: the report validates against schema/load.schema.json.
schema() {
    $PY - "$SRC/schema/load.schema.json" "$1" <<'PYEOF' && ok || bad "schema: $1"
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

# Bad input: one line each, saying why.
expect_exit 2 "$NTPROF" load "$M" --scenario server --qps 0 --latency-bound 5
expect_err "--qps expects a positive number of queries per second, got '0'"
expect_exit 2 "$NTPROF" load "$M" --scenario server --qps -3 --latency-bound 5
expect_err "got '-3'"
expect_exit 2 "$NTPROF" load "$M" --scenario server --latency-bound 5
expect_err "the server scenario needs --qps"
expect_exit 2 "$NTPROF" load "$M"
expect_err "load needs --scenario"
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
sleep 1.5
kill -INT $pid
wait $pid
rc=$?
[ $rc = 130 ] && ok || bad "interrupted run exit $rc (want 130)"
schema "$T/int.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["interrupted"] and 0 < r["queries"] < 1000000 and not r["valid"], r["queries"]' "$T/int.json" && ok || bad "interrupted report"
ls "$T" | grep -q '\.tmp' && bad "a temporary file was left behind" || ok
finish
