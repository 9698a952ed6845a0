#!/usr/bin/env bash
# The HTML reports of a run, a comparison and a sweep, rendered in headless
# Chromium: each file is self-contained (no network reference of any kind),
# every chart draws (the page's own script measures each chart and its marks
# after layout and writes the counts on <body>, which --dump-dom shows), and
# the charts hold what the data says (bars per layer, points on the
# roofline, ceilings drawn when the machine's are cached, segments of the
# breakdowns, one latency and one throughput chart per swept factor).
# Needs Debian's chromium (scripts/deps.sh installs it).
# Usage: test_html_render.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    echo "FAIL: chromium is not installed (scripts/deps.sh build installs it)"
    exit 1
fi

# The DOM after scripts ran, from a headless browser with everything that
# could reach the network switched off.
render() {
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$(mktemp -d -p "$T")" --dump-dom "file://$1" 2>"$T/chromium.err"
}

# check FILE PYTHON-CONDITION: the render counts satisfy the condition
# (variables charts, drawn, bars, points, segments, roofs).
check() {
    local file=$1 cond=$2
    render "$file" >"$T/dom.html" || { bad "chromium failed on $file: $(tail -3 "$T/chromium.err")"; return; }
    $PY - "$T/dom.html" "$cond" <<'PYEOF' && ok || bad "render of $(basename "$file"): $cond"
import re, sys
dom = open(sys.argv[1]).read()
m = re.search(r'data-render="([^"]*)"', dom)
assert m, "the page's render check did not run (no data-render on <body>)"
v = {k: int(x) for k, x in re.findall(r"(\w+)=(\d+)", m.group(1))}
print("  ", sys.argv[2], "->", m.group(1))
assert v["charts"] > 0 and v["drawn"] == v["charts"], "a chart drew nothing: %s" % m.group(1)
assert eval(sys.argv[2], {}, v), m.group(1)
PYEOF
    # Self-contained: no URL, import or external resource anywhere.
    if grep -Eiq '(src|href)=["'"'"']?[a-z]*:?//|url\([^#]|@import|<link |<iframe|<img ' "$file"; then
        bad "$(basename "$file") refers to something outside itself: $(grep -Eio '(src|href)=.{0,40}|url\(.{0,40}|@import.{0,40}' "$file" | head -3)"
    else
        ok
    fi
}

CNN=$SRC/models/tiny-cnn.xml
MLP=$SRC/models/tiny-mlp.xml
DB=$T/history.db
FAST=(--iterations 5 --warmup 1 --min-time 0 --no-accuracy --backend ref)

# A run without ceilings: bars for every timed layer, roofline points but
# no roofs, the type breakdown and the marker breakdown.
expect_exit 0 "$NTPROF" run "$CNN" "${FAST[@]}" --db "$DB" --backend ref --html "$T/run.html" \
    --format json -o "$T/run.json"
n_timed=$($PY -c "import json,sys; r=json.load(open(sys.argv[1])); print(sum(1 for l in r['layers'] if not l['fused'] and l['median_ms'] > 0))" "$T/run.json")
n_points=$($PY -c "import json,sys; r=json.load(open(sys.argv[1])); print(sum(1 for l in r['layers'] if not l['fused'] and l['median_ms'] > 0 and l['flops'] > 0 and l['bytes'] > 0) + sum(1 for m in r['markers'] if m['flops'] > 0 and m['bytes'] > 0))" "$T/run.json")
# layer-times, breakdown-types, breakdown-markers, roofline, marker-times
check "$T/run.html" "charts == 5 and bars == $n_timed + 3 and points == $n_points and roofs == 0 and segments >= 4"
grep -q "Ceilings: n/a" "$T/run.html" && ok || bad "the run page does not say the ceilings are n/a"

# With the machine's ceilings cached the roofline draws its roofs (the DRAM
# and peak roof, and a dashed one per cache level).
expect_exit 0 "$NTPROF" machine --db "$DB" --seconds 0.02 --no-gemm
expect_exit 0 "$NTPROF" run "$CNN" "${FAST[@]}" --db "$DB" --backend ref --counters sw \
    --html "$T/run2.html" --format json -o "$T/run2.json"
n_levels=$($PY -c "import json,sys; print(len(json.load(open(sys.argv[1]))['roofline']['levels']))" "$T/run2.json")
check "$T/run2.html" "roofs == $n_levels and points >= 5"
grep -q "<h2>Counters</h2>" "$T/run2.html" && grep -q "<th>task-clock</th>" "$T/run2.html" && ok ||
    bad "no counters table with task-clock"

# A comparison: two bars per matched layer, two stacked columns.
expect_exit 0 "$NTPROF" compare "$T/run.json" "$T/run2.json" --html "$T/cmp.html"
check "$T/cmp.html" "charts == 2 and bars >= 2 * $n_timed and segments >= 4"
grep -q "% contribution per layer" "$T/cmp.html" && ok || bad "no contribution chart heading"

# A sweep: per factor a latency and a throughput chart, and every
# configuration's bar; the failed configuration (hidden=0) shows as such.
expect_exit 0 "$NTPROF" sweep "$MLP" --vary batch=1,2,4 --vary hidden=16,0 "${FAST[@]}" --no-db \
    --html "$T/sweep.html" --format json -o "$T/sweep.json"
# 2 factors x 2 charts + the configurations chart; points: batch 3 x 2
# charts, hidden 1 of 2 ran x 2 charts; bars: 3 configurations ran.
check "$T/sweep.html" "charts == 5 and points == 8 and bars == 3"
grep -q "failed: exit 1" "$T/sweep.html" && ok || bad "the sweep page hides the failed configuration"

# Look at it: a screenshot for people (kept when NTP_KEEP_SCREENSHOTS is a
# directory).
if [ -n "${NTP_KEEP_SCREENSHOTS:-}" ]; then
    for f in run2 cmp sweep; do
        timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --user-data-dir="$(mktemp -d -p "$T")" --window-size=1100,3000 \
            --screenshot="$NTP_KEEP_SCREENSHOTS/$f.png" "file://$T/$f.html" 2>/dev/null
    done
fi

finish
