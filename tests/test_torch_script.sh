#!/usr/bin/env bash
# ntprof run --torch-script: the torch backend's whole-graph mode (one
# TorchScript module, frozen and optimised for inference) timed after the
# eager run, its outputs compared with the reference backend's on the same
# weights and inputs (docs/frameworks.md).
#
# The network is DeepSpeech's acoustic model (bench/deepspeech-acoustic.xml:
# fc, clipped relu, a bidirectional LSTM) made small. Both sides compute in
# f32 with sums in other orders: within 1e-4 relative L2, the issue's bound.
# Usage: test_torch_script.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

if ! "$NTPROF" --version | grep -q 'torch'; then
    echo "SKIP: the torch backend is not built (libtorch-dev)"
    exit 77
fi
NET=("$SRC/bench/deepspeech-acoustic.xml" -s n_hidden=32 -s time_steps=6)
RUNQ=(-n 4 -w 1 --min-time 0 -t 1)
QUICK=("${RUNQ[@]}" --no-db)

# One run, its table on stdout and its JSON kept in a history: the figure
# the table prints is the one the JSON and the CSV carry.
DB=(--db "$T/h.db")
expect_exit 0 "$NTPROF" run "${NET[@]}" --backend torch --torch-script "${RUNQ[@]}" "${DB[@]}"
cp "$T/out" "$T/table"
expect_exit 0 "$NTPROF" history "${DB[@]}" --show 1 -f json -o "$T/r.json"
expect_exit 0 "$NTPROF" history "${DB[@]}" --show 1 -f csv -o "$T/r.csv"
expect_exit 0 "$NTPROF" history "${DB[@]}" --show 1 -o "$T/shown"
got=$($PY - "$T/table" "$T/r.json" "$T/r.csv" "$T/shown" "$SRC/schema/report.schema.json" <<'PYEOF'
import csv, json, re, sys, jsonschema
t = open(sys.argv[1]).read()
r = json.load(open(sys.argv[2]))
s = json.load(open(sys.argv[5]))
jsonschema.validators.validator_for(s)(s).validate(r)
ts = r["torch_script"]
head = re.search(r"TorchScript \(one module: torch::jit::freeze, optimize_for_inference; "
                 r"(\d+) threads?\)", t)
assert head, "no TorchScript section"
assert head.group(1) == "1" and ts["threads"] == 1, "threads %s, want 1 (-t 1)" % head.group(1)
m = re.search(r"build ([\d.]+) ms \(compile, freeze, optimise\); (\d+) warmup \+ (\d+) measured "
              r"iterations\n  end to end median (\S+) ms \(95% CI (\S+)\.\.(\S+); p90 (\S+), "
              r"cv (\S+)\)", t)
assert m, "no build/end-to-end lines"
build, warm, it = float(m.group(1)), int(m.group(2)), int(m.group(3))
assert build > 0 and it == 4 and warm == 1, m.group(0)  # -n 4 -w 1 --min-time 0
e = ts["end_to_end"]
def same(printed, exact, what, digits=4):
    # printed with 4 significant digits (%.4g; the deviations %.3g)
    tol = max(abs(exact) * 0.51 * 10 ** (1 - digits), 1e-15)
    assert abs(float(printed) - exact) <= tol, "%s: table %s, JSON %r" % (what, printed, exact)
assert abs(build - ts["build_ms"]) <= 0.051, (build, ts["build_ms"])
assert (warm, it) == (ts["warmup"], ts["iterations"]) == (1, 4) and e["n"] == 4
same(m.group(4), e["median_ms"], "median")
same(m.group(5), e["ci95_ms"][0], "ci95 lo")
same(m.group(6), e["ci95_ms"][1], "ci95 hi")
same(m.group(7), e["p90_ms"], "p90")
assert ts["latency_ms"] == e["median_ms"]
assert e["ci95_ms"][0] <= e["median_ms"] <= e["ci95_ms"][1]
d = re.search(r"outputs vs ref: max abs error (\S+), rel L2 (\S+)", t)
assert d, "no deviation line"
same(d.group(1), ts["max_abs_error"], "max abs error", 3)
same(d.group(2), ts["rel_l2"], "rel L2", 3)
assert 0 <= ts["rel_l2"] < 1e-4, "rel L2 %g >= 1e-4" % ts["rel_l2"]
g = re.search(r"eager \(per layer, the run above\) (\S+) ms: script / eager ([\d.]+)", t)
assert g, "no eager line"
same(g.group(1), r["end_to_end"]["median_ms"], "eager median")
# The CSV: the module's row beside the eager one, the JSON's values.
rows = list(csv.DictReader(open(sys.argv[3])))
e2e = [x for x in rows if x["kind"] == "end_to_end"]
sc = [x for x in rows if x["kind"] == "torch_script"]
assert len(e2e) == 1 and len(sc) == 1 and rows[-1] is sc[0], [x["kind"] for x in rows]
sc = sc[0]
assert sc["backend"] == "torch" and int(sc["n"]) == 4 and int(sc["warmup"]) == 1, sc
assert int(e2e[0]["warmup"]) == 1 and e2e[0]["rel_l2"] == ""
for col, want in [("median_ms", e["median_ms"]), ("ci95_lo_ms", e["ci95_ms"][0]),
                  ("ci95_hi_ms", e["ci95_ms"][1]), ("prepare_ms", ts["build_ms"]),
                  ("max_abs_error", ts["max_abs_error"]), ("rel_l2", ts["rel_l2"])]:
    assert abs(float(sc[col]) - want) <= abs(want) * 1e-9, (col, sc[col], want)
# The history shows the run again with the same section.
sec = lambda x: x[x.index("\nTorchScript"):].split("\nwarning")[0]
assert sec(open(sys.argv[4]).read()) == sec(t), "history --show differs"
print("ok")
PYEOF
) && ok || bad "$got"

# -f json and -f csv straight from the run.
expect_exit 0 "$NTPROF" run "${NET[@]}" --backend torch --torch-script -f json "${QUICK[@]}"
$PY -c 'import json,sys; t=json.load(open(sys.argv[1]))["torch_script"]; assert t["iterations"] == 4 and 0 <= t["rel_l2"] < 1e-4, t' "$T/out" && ok || bad "-f json: no torch_script"
expect_exit 0 "$NTPROF" run "${NET[@]}" --backend torch --torch-script -f csv "${QUICK[@]}"
grep -q '^torch_script,deepspeech-acoustic,,torch,' "$T/out" && ok || bad "-f csv: no torch_script row"

# BERT (i32 token ids, three embeddings) as one module: torch.embedding on
# int64 ids, as nn.Embedding; its outputs against ref's on the same ids.
expect_exit 0 "$NTPROF" run "$SRC/models/bert-base.xml" -s layers=1 -s seq_len=16 --backend torch \
    --torch-script -f json "${QUICK[@]}"
$PY -c 'import json,sys; t=json.load(open(sys.argv[1]))["torch_script"]; assert 0 <= t["rel_l2"] < 1e-4 and t["max_abs_error"] < 1e-3, t' "$T/out" && ok || bad "BERT script: $(head -c 300 "$T/out")"

# Refusals, each one line, before anything runs.
expect_exit 2 "$NTPROF" run "${NET[@]}" --torch-script "${QUICK[@]}"
expect_err "ntprof: --torch-script needs --backend torch: the module is timed beside the eager per-layer run"
expect_exit 2 "$NTPROF" run "${NET[@]}" --backend torch --torch-script --only x "${QUICK[@]}"
expect_err "ntprof: --torch-script times the whole topology: --only is not taken with it"
# A layer with no ATen mapping: named, with its line (after the eager run).
expect_exit 1 "$NTPROF" run "$SRC/models/tiny-mlp.xml" --backend torch --torch-script "${QUICK[@]}"
expect_in_err "tiny-mlp.xml:21: <split name='gate'>: split has no ATen mapping at f32; the TorchScript mode needs every layer on torch"
# Given inputs are not taken (refused before anything runs).
$PY -c "import numpy as np; np.save('$T/x.npy', np.zeros((6, 1, 494), np.float32))"
expect_exit 2 "$NTPROF" run "${NET[@]}" --backend torch --torch-script -i "$T/x.npy" "${QUICK[@]}"
expect_err "ntprof: --torch-script runs the module on generated inputs: -i is not taken with it"
finish test_torch_script
