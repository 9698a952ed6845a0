#!/usr/bin/env bash
# ntprof train and analyze --train as a user meets them, and training
# checked end to end against PyTorch: a small CNN (conv, batch norm in
# training mode, relu, max pool, grouped conv, global average pool, linear;
# cross-entropy) and an MLP (linear, tanh, sigmoid; mse), exported to ONNX
# by tests/train_torch.py, trained with the same inputs and labels: the
# weights after one SGD step and after three Adam steps equal PyTorch's
# within 1e-4 relative. The PyTorch part skips (77) without torch.
# Usage: test_train_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

# --- the CLI on a bundled model: the memory object, refusals ---------------------
expect_exit 0 "$NTPROF" analyze --train --format json --batch 4 --optimizer adam \
    "$SRC/models/resnet50.xml"
"$PY" - "$T/out" <<'EOF' && ok || bad "analyze --train json"
import json, sys
p = json.load(open(sys.argv[1]))
m = p["memory"]
# ResNet-50: 25,557,032 params and 53,120 batch-norm statistics, f32.
assert m["weights"] == (25557032 + 53120) * 4, m
assert m["gradients"] == 25557032 * 4, m
assert m["optimizer_state"] == 2 * 25557032 * 4, m
assert m["peak"] == sum(m[k] for k in m if k != "peak"), m
r = p["step_flops"] / p["flops"]["forward"]
assert 2.8 < r < 3.1, r  # dense layers: backward twice the forward
EOF
cat >"$T/net.xml" <<'XML'
<topology name="net" precision="f32" batch="2">
  <input name="x" shape="${batch},3,8,8" dtype="f32"/>
  <conv name="c1" filters="4" kernel="3" pad="1" bias="false"/>
  <batchnorm name="bn"/><relu name="r"/>
  <conv name="c2" filters="4" kernel="3" groups="4"/><dropout name="d"/>
  <global_avgpool name="gap"/><flatten name="f"/><fc name="fc" units="3"/>
</topology>
XML
expect_exit 0 "$NTPROF" train --steps 2 --format json "$T/net.xml" --optimizer momentum
"$PY" - "$T/out" <<'EOF' && ok || bad "train json"
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r["memory"]) >= {"weights", "gradients", "optimizer_state", "activations",
                            "workspace", "peak"}, r["memory"]
assert r["steps"] == 2 and len(r["losses"]) == 2 and r["samples_per_s"] > 0
conv = [l for l in r["layers"] if l["type"] == "conv"]
assert "backward_weights" in conv[0] and "backward_data" not in conv[0]  # input: no gradient
assert all(k in conv[1] for k in ("forward", "backward_data", "backward_weights", "update"))
EOF
expect_exit 1 "$NTPROF" train "$SRC/models/alexnet.xml" --max-memory 10MB
expect_in_err "training needs"
expect_in_err "above the limit of 10.0 MB (weights"
expect_exit 1 "$NTPROF" train "$SRC/models/tiny-rnn.xml"
expect_in_err "layers without a backward: 'gru' (gru), 'rnn' (rnn), 'summary' (rnn), 'decode' (ctc_decode)"
expect_exit 2 "$NTPROF" train --optimizer adagrad "$SRC/models/alexnet.xml"
expect_err "--optimizer expects sgd, momentum or adam, got 'adagrad'"

# --- end to end against PyTorch ---------------------------------------------------
"$PY" "$SRC/tests/train_torch.py" "$T" >"$T/torch.out" 2>"$T/torch.err"
rc=$?
if [ $rc = 77 ]; then
    cat "$T/torch.out"
    finish
    [ "$fail" = 0 ] && exit 77 || exit 1
fi
[ $rc = 0 ] && ok || { bad "train_torch.py failed"; cat "$T/torch.err"; }

# Labels of the wrong class range and shape, a loss that does not fit.
expect_exit 1 "$NTPROF" train "$T/cnn.onnx" --labels "$T/bad-range.npy"
expect_in_err "bad-range.npy: label 9 at index 2 is outside the 5 classes [0, 5)"
expect_exit 1 "$NTPROF" train "$T/cnn.onnx" --labels "$T/bad-shape.npy"
expect_in_err "bad-shape.npy: labels are [2]; cross_entropy on output 'out' [4,5] needs [4]"
expect_exit 1 "$NTPROF" train "$T/cnn.onnx" --loss mse --labels "$T/cnn-y.npy"
expect_in_err "mse on output 'out' needs f32 [4,5]"

for case in cnn mlp; do
    loss=cross_entropy
    [ $case = mlp ] && loss=mse
    for opt in sgd adam; do
        steps=1 lr=0.1
        [ $opt = adam ] && steps=3 lr=0.01
        mkdir "$T/got-$case-$opt"
        expect_exit 0 "$NTPROF" train "$T/$case.onnx" --input "x=$T/$case-x.npy" \
            --labels "$T/$case-y.npy" --loss $loss --optimizer $opt --lr $lr --steps $steps \
            --save-weights "$T/got-$case-$opt"
    done
done
"$PY" - "$T" <<'EOF' && ok || bad "weights differ from PyTorch's"
import os, sys
import numpy as np
for case in ("cnn", "mlp"):
    for opt in ("sgd", "adam"):
        want = os.path.join(sys.argv[1], case + "-" + opt)
        got = os.path.join(sys.argv[1], "got-" + case + "-" + opt)
        names = sorted(os.listdir(want))
        assert len(names) >= 6, names
        for f in names:
            a, b = np.load(os.path.join(want, f)), np.load(os.path.join(got, f))
            assert a.shape == b.shape, (case, opt, f, a.shape, b.shape)
            err = np.abs(a - b) - 1e-4 * np.abs(a) - 1e-7
            assert err.max() <= 0, (case, opt, f, np.abs(a - b).max(), np.abs(a).max())
EOF
finish
