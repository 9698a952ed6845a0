#!/usr/bin/env bash
# `ntprof sweep` end to end: every configuration runs in a child process of
# its own; a configuration that fails (a param value the topology refuses,
# a run past --timeout) is reported with its error while the others go on;
# the table, JSON and CSV hold every configuration; plain progress lines
# when stderr is not a terminal; usage errors.
# Usage: test_sweep_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

MLP=$SRC/models/tiny-mlp.xml
FAST=(--iterations 3 --warmup 1 --min-time 0 --no-accuracy --no-db --backend ref)

# One factor at a time: batch 1,2 and hidden 16,0,32. hidden=0 makes a
# zero-sized layer, which the child refuses; the sweep goes on.
expect_exit 0 "$NTPROF" sweep "$MLP" --vary batch=1,2 --vary hidden=16,0,32 "${FAST[@]}" \
    --format json -o "$T/s.json" --keep "$T/keep"
$PY - "$T/s.json" <<'PYEOF' && ok || bad "OFAT sweep JSON"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["design"] == "ofat"
labels = [c["label"] for c in s["configurations"]]
assert labels == ["batch=1 hidden=16", "batch=2 hidden=16", "batch=1 hidden=0",
                  "batch=1 hidden=32"], labels
st = [c["status"] for c in s["configurations"]]
assert st == ["ok", "ok", "failed", "ok"], st
bad = s["configurations"][2]
assert bad["error"].startswith("exit 1: "), bad["error"]
assert "hidden" in bad["error"] or "zero" in bad["error"] or "0" in bad["error"], bad["error"]
for i in (0, 1, 3):
    c = s["configurations"][i]
    rep = c["report"]
    # Each configuration really ran with its own values, in its own process.
    assert rep["config"]["backend"] == "ref"
    assert rep["config"]["params"]["hidden"] == c["values"]["hidden"], (rep["config"]["params"], c)
    assert rep["config"]["batch"] == int(c["values"]["batch"])
    assert c["end_to_end"]["median_ms"] > 0
    assert c["end_to_end"]["ci95_ms"][0] <= c["end_to_end"]["median_ms"] <= c["end_to_end"]["ci95_ms"][1]
    assert abs(c["throughput_per_s"] - rep["end_to_end"]["throughput_per_s"]) < 1e-9 * c["throughput_per_s"]
# Each child's FLOPs follow its hidden size: fc2 alone grows 4x from 16 to 32.
fl = {c["values"]["hidden"]: c["report"]["flops"] for c in s["configurations"] if c["report"]}
assert fl["32"] > fl["16"], fl
PYEOF
# Progress: plain lines on a non-terminal, one per configuration.
[ "$(grep -c '^ntprof: sweep [0-9]/4 ' "$T/err")" = 4 ] && ok || bad "progress lines: $(cat "$T/err")"
grep -q '^ntprof: sweep 3/4 batch=1 hidden=0: failed: exit 1' "$T/err" && ok ||
    bad "the failed configuration's progress line: $(cat "$T/err")"
grep -q "warning: 1 of 4 configurations failed" "$T/err" && ok || bad "no failure summary"
# --keep leaves every child's report and log.
[ -f "$T/keep/config-0.json" ] && [ -f "$T/keep/config-2.log" ] && ok || bad "--keep left nothing"
grep -q "units.*expected a positive integer" "$T/keep/config-2.log" && ok || bad "config-2.log: $(cat "$T/keep/config-2.log")"

# Full design: 2 x 2 = 4, the table on stdout.
expect_exit 0 "$NTPROF" sweep "$MLP" --design full --vary threads=1,2 --vary hidden=8,16 "${FAST[@]}"
grep -q "full factorial, 4 configurations" "$T/out" && ok || bad "full sweep heading: $(head -3 "$T/out")"
for l in "  0 1       8      ok " "  1 1       16     ok " "  2 2       8      ok " "  3 2       16     ok "; do
    grep -qF -- "$l" "$T/out" && ok || bad "full sweep table lacks '$l': $(cat "$T/out")"
done
grep -q "4 of 4 configurations ran" "$T/out" && ok || bad "full sweep summary"
expect_exit 0 "$NTPROF" sweep "$MLP" --vary batch=1,3 "${FAST[@]}" --format csv
[ "$(head -1 "$T/out" | cut -d, -f1-5)" = "config,label,batch,status,error" ] && ok ||
    bad "CSV header: $(head -1 "$T/out")"
[ "$(wc -l <"$T/out")" = 3 ] && ok || bad "CSV lines: $(wc -l <"$T/out")"

# A configuration past --timeout is stopped and reported; when nothing
# ran, the sweep fails.
expect_exit 1 "$NTPROF" sweep "$MLP" --vary hidden=8,16 --iterations 1000000 --min-time 60 \
    --timeout 0.5 --no-db --no-accuracy --format json -o "$T/t.json"
grep -q "every configuration failed" "$T/err" && ok || bad "timeout summary: $(cat "$T/err")"
# A failed command writes no report (SECURITY.md); each configuration's
# reason is on stderr instead.
[ ! -e "$T/t.json" ] && ok || bad "a sweep where every configuration failed wrote -o"
[ "$(grep -c 'failed: timed out after 0.5 s' "$T/err")" -ge 2 ] && ok ||
    bad "timed-out configurations: $(cat "$T/err")"

# Usage errors, one line each, before anything runs.
expect_exit 2 "$NTPROF" sweep "$MLP"
grep -q "at least one --vary" "$T/err" && ok || bad "no --vary: $(cat "$T/err")"
expect_exit 2 "$NTPROF" sweep "$MLP" --vary hiden=1,2
grep -q "did you mean 'hidden'" "$T/err" && ok || bad "misspelt factor: $(cat "$T/err")"
expect_exit 2 "$NTPROF" sweep "$MLP" --vary batch=1,2 --batch 4
grep -q -- "--vary batch and --batch both set batch" "$T/err" && ok || bad "conflict: $(cat "$T/err")"
expect_exit 2 "$NTPROF" sweep "$MLP" --vary hidden=1,2 --set hidden=4
grep -q -- "--vary hidden and --set hidden=4" "$T/err" && ok || bad "set conflict: $(cat "$T/err")"
expect_exit 2 "$NTPROF" sweep "$MLP" --vary batch=1 --design random
expect_exit 1 "$NTPROF" sweep "$T/missing.xml" --vary batch=1

finish
