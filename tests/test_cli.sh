#!/usr/bin/env bash
# The ntprof CLI as a user meets it: exit codes, one-line errors on stderr,
# nothing written on failure, and well-formed reports.
# Usage: test_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

expect_exit 0 "$NTPROF" --version
grep -q '^ntprof [0-9]' "$T/out" && ok || bad "--version output: $(cat "$T/out")"
expect_exit 0 "$NTPROF" help
grep -q 'analyze' "$T/out" && grep -q 'run' "$T/out" && ok || bad "help lists no commands"
expect_exit 0 "$NTPROF" help run
grep -q -- '--iterations' "$T/out" && ok || bad "help run lacks --iterations"
expect_exit 0 "$NTPROF" analyze --help
expect_exit 2 "$NTPROF"
expect_exit 2 "$NTPROF" anlyze x.xml
expect_err "unknown command 'anlyze'; did you mean 'analyze'?"
expect_exit 2 "$NTPROF" analyze
expect_err "analyze needs a topology FILE"
expect_exit 2 "$NTPROF" analyze --format yaml "$SRC/models/tiny-mlp.xml"
expect_err "--format expects table, json or csv, got 'yaml'"
expect_exit 2 "$NTPROF" run --iterations 0 "$SRC/models/tiny-mlp.xml"
expect_err "--iterations expects a positive integer"

# Analysis as JSON: exact totals of a hand-counted model.
expect_exit 0 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --format json -o "$T/a.json"
$PY - "$T/a.json" <<'PYEOF' && ok || bad "analysis JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["totals"]["params"] == 3296, d["totals"]["params"]
assert d["layers"][0]["name"] == "stage", d["layers"][0]["name"]
assert all(l["flops"] >= 0 for l in d["layers"])
PYEOF
expect_exit 0 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --format csv
head -1 "$T/out" | grep -q '^name,type' && ok || bad "CSV header: $(head -1 "$T/out")"
expect_exit 0 "$NTPROF" analyze "$SRC/models/resnet50.xml"
$PY -c 'import sys; sys.exit(any(len(l.rstrip("\n")) > 100 for l in open(sys.argv[1], encoding="utf-8")))' "$T/out" \
    && ok || bad "analyze table wider than 100 columns"

# Failures: one line naming file and line, exit 1, no output file.
printf '<topology name="t">\n<input name="x" shape="1,4"/>\n<fc name="f" unitz="3"/>\n</topology>\n' >"$T/bad.xml"
expect_exit 1 "$NTPROF" analyze "$T/bad.xml" -o "$T/never.json"
expect_err "bad.xml:3:"
[ ! -e "$T/never.json" ] && ok || bad "a failed analyze left $T/never.json"
ls "$T" | grep -q 'never.json' && bad "temporary file left behind" || ok
expect_exit 1 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" --set hiden=4
expect_err "did you mean 'hidden'?"
expect_exit 1 "$NTPROF" analyze "$T/missing.xml"
expect_err "missing.xml"
expect_exit 1 "$NTPROF" analyze "$SRC/models/resnet50.xml" --max-memory 1M
expect_err "memory budget"

# A run: JSON report, Chrome trace, saved outputs, a partial run.
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -B ref -n 4 --min-time 0 -w 1 \
    --format json -o "$T/r.json" --trace "$T/t.json" --save-outputs "$T/outs"
$PY - "$T/r.json" "$T/t.json" <<'PYEOF' && ok || bad "run JSON or trace"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["config"]["backend"] == "ref"
assert len(r["layers"]) == 11, len(r["layers"])
assert r["end_to_end"]["median_ms"] > 0
assert "overhead_fraction" in r
t = json.load(open(sys.argv[2]))
names = {e["name"] for e in t["traceEvents"] if e.get("ph") == "X"}
assert "fc1" in names and "probs" in names, names
PYEOF
[ -s "$T/outs/output_0.npy" ] && ok || bad "no output_0.npy"
expect_exit 0 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -n 3 --min-time 0 --only body
grep -q 'fc1' "$T/out" && ! grep -q 'probs' "$T/out" && ok || bad "--only body table"
expect_exit 1 "$NTPROF" run "$SRC/models/tiny-mlp.xml" -n 1 --min-time 0 --only nope -o "$T/never2.json"
expect_err "no marker 'nope'"
[ ! -e "$T/never2.json" ] && ok || bad "a failed run left a report"

finish
