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
QUICK=(-n 4 -w 1 --min-time 0 -t 1 --no-db)

expect_exit 0 "$NTPROF" run "${NET[@]}" --backend torch --torch-script "${QUICK[@]}"
got=$($PY - "$T/out" <<'PYEOF'
import re, sys
t = open(sys.argv[1]).read()
head = re.search(r"TorchScript \(one module: torch::jit::freeze, optimize_for_inference; "
                 r"(\d+) threads?\)", t)
assert head, "no TorchScript section"
assert head.group(1) == "1", "threads %s, want 1 (-t 1)" % head.group(1)
m = re.search(r"build ([\d.]+) ms; end to end median ([\d.]+) ms over (\d+) iterations", t)
assert m, "no build/end-to-end line"
assert float(m.group(1)) > 0 and float(m.group(2)) > 0, m.group(0)
assert int(m.group(3)) == 4, "%s iterations, want 4 (-n 4, --min-time 0)" % m.group(3)
assert re.search(r"eager \(per layer, the run above\) [\d.]+ ms: script / eager [\d.]+", t)
d = re.search(r"outputs vs ref: max abs error (\S+), rel L2 (\S+)", t)
assert d, "no deviation line"
rel = float(d.group(2))
assert 0 <= rel < 1e-4, "rel L2 %g >= 1e-4" % rel
print("ok")
PYEOF
) && ok || bad "$got"

# Refusals, each one line, before anything runs.
expect_exit 2 "$NTPROF" run "${NET[@]}" --torch-script "${QUICK[@]}"
expect_err "ntprof: --torch-script needs --backend torch: the module is timed beside the eager per-layer run"
expect_exit 2 "$NTPROF" run "${NET[@]}" --backend torch --torch-script -f json "${QUICK[@]}"
expect_err "ntprof: --torch-script: its figures follow the table report; -f json and csv do not carry them"
# A layer with no ATen mapping: named, with its line (after the eager run).
expect_exit 1 "$NTPROF" run "$SRC/models/tiny-mlp.xml" --backend torch --torch-script "${QUICK[@]}"
expect_in_err "tiny-mlp.xml:21: <split name='gate'>: split has no ATen mapping at f32; the TorchScript mode needs every layer on torch"
# Given inputs are not taken (refused before anything runs).
$PY -c "import numpy as np; np.save('$T/x.npy', np.zeros((6, 1, 494), np.float32))"
expect_exit 2 "$NTPROF" run "${NET[@]}" --backend torch --torch-script -i "$T/x.npy" "${QUICK[@]}"
expect_err "ntprof: --torch-script runs the module on generated inputs: -i is not taken with it"
finish test_torch_script
