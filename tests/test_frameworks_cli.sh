#!/usr/bin/env bash
# The framework comparison from the command line: `ntprof run FILE --backend
# a,b,c` prints the side-by-side view, -o with {backend} writes one run
# report per backend that `ntprof compare` reads back, the combined JSON and
# CSV are well formed, and bad lists or placeholders fail with one line.
# Usage: test_frameworks_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

# Every built backend that can run here (an accelerator backend without its
# device refuses to), the reference last (it is always built).
BUILT=$("$NTPROF" --version | sed -n 's/.*backends: \([a-z0-9,]*\)).*/\1/p')
[ -n "$BUILT" ] && ok || bad "no backend list in --version: $("$NTPROF" --version)"
LIST=
for b in $(echo "$BUILT" | tr ',' ' '); do
    if "$NTPROF" run "$SRC/models/tiny-mlp.xml" --backend "$b" -n 1 -w 0 --min-time 0 --no-db \
        >/dev/null 2>&1; then
        LIST=${LIST:+$LIST,}$b
    else
        echo "backend $b cannot run here: left out"
    fi
done
[ -n "$LIST" ] || LIST=ref
N=$(echo "$LIST" | tr ',' '\n' | wc -l)
echo "backends: $LIST"
QUICK=(-n 3 -w 0 --min-time 0 -t 1 --no-db)
MODEL="$SRC/models/tiny-cnn.xml"

# The table: a column per backend, the deviation lines, every layer.
expect_exit 0 "$NTPROF" run "$MODEL" --backend "$LIST" "${QUICK[@]}"
grep -q '^backend comparison: tiny-cnn' "$T/out" && ok || bad "no comparison header"; 
for b in $(echo "$LIST" | tr ',' ' '); do
    grep -q "^ *$b\b\|  $b\b" "$T/out" && ok || bad "table has no column for $b"
done
grep -q '^rel L2 vs ref' "$T/out" && ok || bad "no rel L2 line"
grep -q '^max abs error vs ref' "$T/out" && ok || bad "no max abs error line"
grep -q '^prepare ms' "$T/out" && ok || bad "no prepare line"
for l in conv1 bn1 residual up fc; do
    grep -q "^$l " "$T/out" && ok || bad "no row for layer $l"
done
# columns, not bytes: a name cut with '…' (3 bytes in UTF-8) counts one
sed 's/…/./g' "$T/out" | awk 'length($0) > 100 { n++ } END { exit n > 0 }' && ok ||
    bad "table wider than 100 columns"

# One report per backend, read back by `ntprof compare`.
expect_exit 0 "$NTPROF" run "$MODEL" --backend "$LIST" "${QUICK[@]}" -f json -o "$T/run-{backend}.json" \
    --trace "$T/trace-{backend}.json"
for b in $(echo "$LIST" | tr ',' ' '); do
    [ -s "$T/run-$b.json" ] && ok || bad "no report for $b"
    [ -s "$T/trace-$b.json" ] && ok || bad "no trace for $b"
    $PY -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['config']['backend']==sys.argv[2], d['config']" \
        "$T/run-$b.json" "$b" && ok || bad "report of $b names another backend"
done
grep -q '^backend comparison' "$T/out" && ok || bad "the comparison table did not go to stdout"
if "$NTPROF" help 2>&1 | grep -q '^ *compare'; then
    FILES=()
    for b in $(echo "$LIST" | tr ',' ' '); do FILES+=("$T/run-$b.json"); done
    expect_exit 0 "$NTPROF" compare "${FILES[@]}"
    grep -q 'backend: ' "$T/out" && ok || bad "compare shows no backend difference"
else
    echo "no compare command in this build: skipped"
fi

# Combined JSON and CSV.
expect_exit 0 "$NTPROF" run "$MODEL" --backend "$LIST" "${QUICK[@]}" -f json -o "$T/all.json"
$PY - "$T/all.json" "$N" <<'EOF' && ok || bad "combined JSON"
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert d["kind"] == "backend_comparison" and d["reference"] == "ref"
assert len(d["backends"]) == n
ref = [b for b in d["backends"] if b["backend"] == "ref"][0]
assert ref["max_abs_error"] == 0 and ref["rel_l2"] == 0
for b in d["backends"]:
    assert b["rel_l2"] is not None and b["rel_l2"] <= 1e-4, b["backend"]
    assert b["report"]["kind"] == "run"
    assert b["speed_ratio"] >= 1.0
assert min(b["speed_ratio"] for b in d["backends"]) == 1.0
assert len(d["layers"]) == 19 and all(len(l["backends"]) == n for l in d["layers"])
EOF
expect_exit 0 "$NTPROF" run "$MODEL" --backend "$LIST" "${QUICK[@]}" -f csv -o "$T/all.csv"
head -1 "$T/all.csv" | grep -q '^backend,layer,type,ran_on,impl,median_ms' && ok || bad "CSV header"
[ "$(wc -l < "$T/all.csv")" = $((1 + N * 21)) ] && ok || bad "CSV has $(wc -l < "$T/all.csv") lines"

# Outputs saved per backend.
expect_exit 0 "$NTPROF" run "$MODEL" --backend "$LIST" "${QUICK[@]}" --save-outputs "$T/outs"
for b in $(echo "$LIST" | tr ',' ' '); do
    [ -s "$T/outs/$b/output_0.npy" ] && ok || bad "no saved output for $b"
done

# Errors: one line, exit 2 for usage, nothing written.
expect_exit 2 "$NTPROF" run "$MODEL" --backend ref,reff "${QUICK[@]}" -o "$T/never.txt"
expect_err "did you mean 'ref'?"
[ ! -e "$T/never.txt" ] && ok || bad "a failed comparison wrote its output"
expect_exit 2 "$NTPROF" run "$MODEL" --backend ref,ref "${QUICK[@]}"
expect_err "twice"
expect_exit 2 "$NTPROF" run "$MODEL" --backend ref, "${QUICK[@]}"
expect_err "empty name"
expect_exit 2 "$NTPROF" run "$MODEL" --backend "$LIST" "${QUICK[@]}" --trace "$T/t.json"
expect_err "{backend}"

finish
