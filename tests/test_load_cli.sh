#!/usr/bin/env bash
# ntprof load (docs/load.md) end to end: the JSON report validates against
# schema/load.schema.json, CSV and trace are written, bad input is refused
# with one line that says why, oversubscription warns, and Ctrl-C during a
# run reports the queries so far with nothing half-written.
# Usage: test_load_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"
M="$SRC/models/serve-delay.xml"
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
    --latency-bound 5 "${Q[@]}" --min-queries 100 -f json -o "$T/max.json"
schema "$T/max.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["max_qps"] is not None and len(r["search"]) == 8, r.get("search")' "$T/max.json" && ok || bad "find-max-qps"

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
