#!/usr/bin/env bash
# ONNX through the CLI: ntprof export writes models Debian's python3-onnx
# accepts (onnx.checker.check_model, full check) and that run to the same
# outputs as the markup they came from, bit for bit; ntprof convert writes
# markup whose analysis totals equal the model's (markup -> ONNX -> markup
# and ONNX -> markup); run --input takes TensorProto .pb files; inlays and
# unsupported nodes are refused in one line.
# Usage: test_onnx_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"
DATA=/usr/share/libonnx-testdata/data

run_quiet() { "$@" >"$T/out" 2>"$T/err"; }

RUN=(run --backend ref --iterations 1 --warmup 0 --min-time 0 --no-db)
"$NTPROF" run --help 2>/dev/null | grep -q -- '--no-db' || RUN=(run --backend ref --iterations 1 --warmup 0 --min-time 0)

check_model() {
    if "$PY" -c "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)" "$1" \
        2>"$T/check"; then ok; else bad "check_model refuses $1:"; tail -3 "$T/check"; fi
}

# The analysis totals of a topology as one line.
totals() {
    "$NTPROF" analyze -f json "$@" 2>/dev/null | "$PY" -c '
import json, sys
t = json.load(sys.stdin)["totals"]
print(t["params"], t["macs"], t["flops"], t["weight_bytes"], t["input_bytes"], t["activation_bytes"])'
}

same_outputs() { # DIR1 DIR2 NAME
    local n=0
    for f in "$1"/output_*.npy; do
        n=$((n + 1))
        if cmp -s "$f" "$2/$(basename "$f")"; then ok; else bad "$3: $(basename "$f") differs"; fi
    done
    [ "$n" -gt 0 ] && ok || bad "$3: no outputs saved"
}

# --- export: valid, and the same outputs as the markup ---------------------------------
for m in tiny-mlp tiny-cnn tiny-attention; do
    expect_exit 0 "$NTPROF" export "$SRC/models/$m.xml" -o "$T/$m.onnx" --seed 7
    check_model "$T/$m.onnx"
    expect_exit 0 "$NTPROF" "${RUN[@]}" --seed 7 --save-outputs "$T/$m-xml" "$SRC/models/$m.xml"
    expect_exit 0 "$NTPROF" "${RUN[@]}" --seed 7 --save-outputs "$T/$m-onnx" "$T/$m.onnx"
    same_outputs "$T/$m-xml" "$T/$m-onnx" "$m"
    # markup -> ONNX -> markup keeps the analysis. Attention comes back as
    # the operators it was written with (projections, matmuls, softmax),
    # whose FLOPs are counted op by op: only its params must match.
    expect_exit 0 "$NTPROF" convert "$T/$m.onnx" -o "$T/$m-back.xml"
    a=$(totals "$SRC/models/$m.xml")
    b=$(totals "$T/$m-back.xml")
    if [ "$m" = tiny-attention ]; then
        a=${a%% *}
        b=${b%% *}
    fi
    if [ -n "$a" ] && [ "$a" = "$b" ]; then ok; else bad "$m: totals $a, after the round trip $b"; fi
done

# Inlays: refused by name, or left out with --network-only.
expect_exit 1 "$NTPROF" export "$SRC/models/tiny-rnn.xml" -o "$T/rnn.onnx"
expect_err "'decode' (ctc_decode) has no ONNX operator; --network-only exports the network"
[ ! -e "$T/rnn.onnx" ] && ok || bad "a refused export left a file"
expect_exit 0 "$NTPROF" export --network-only "$SRC/models/tiny-rnn.xml" -o "$T/rnn.onnx"
check_model "$T/rnn.onnx"
expect_exit 2 "$NTPROF" export "$SRC/models/tiny-mlp.xml"
expect_err "export needs -o MODEL.onnx"

# --- ONNX -> markup keeps the analysis, and the batch follows --batch ------------------
for t in pytorch-converted/test_Conv2d pytorch-converted/test_BatchNorm2d_eval \
         pytorch-converted/test_GLU pytorch-operator/test_operator_conv; do
    name=$(basename "$t")
    expect_exit 0 "$NTPROF" convert "$DATA/$t/model.onnx" -o "$T/$name.xml"
    a=$(totals "$DATA/$t/model.onnx")
    b=$(totals "$T/$name.xml")
    if [ -n "$a" ] && [ "$a" = "$b" ]; then ok; else bad "$name: totals $a, as markup $b"; fi
done
# A model with a symbolic batch: ${batch} in the markup.
expect_exit 0 "$NTPROF" export "$SRC/models/tiny-cnn.xml" -o "$T/cnn.onnx"
"$PY" - "$T/cnn.onnx" "$T/cnn-dyn.onnx" <<'EOF'
import onnx, sys
m = onnx.load(sys.argv[1])
for v in list(m.graph.input) + list(m.graph.output):
    v.type.tensor_type.shape.dim[0].dim_param = "batch"
onnx.save(m, sys.argv[2])
EOF
expect_exit 0 "$NTPROF" convert --batch 2 "$T/cnn-dyn.onnx" -o "$T/cnn-dyn.xml"
grep -q 'shape="${batch},3,16,16"' "$T/cnn-dyn.xml" && ok || bad "no \${batch} in the input shape"
a=$(totals --batch 5 "$T/cnn-dyn.onnx")
b=$(totals --batch 5 "$T/cnn-dyn.xml")
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok; else bad "batch 5: model $a, markup $b"; fi

# --- run --input FILE.pb ---------------------------------------------------------------
tc=$DATA/node/test_softmax_axis_1
expect_exit 0 "$NTPROF" "${RUN[@]}" --input "$tc/test_data_set_0/input_0.pb" --save-outputs "$T/sm" \
    "$tc/model.onnx"
"$PY" - "$T/sm/output_0.npy" "$tc/test_data_set_0/output_0.pb" <<'EOF' && ok || bad "softmax from .pb input"
import numpy as np, onnx, sys
from onnx import numpy_helper
t = onnx.TensorProto()
t.ParseFromString(open(sys.argv[2], "rb").read())
np.testing.assert_allclose(np.load(sys.argv[1]), numpy_helper.to_array(t), rtol=1e-3, atol=1e-7)
EOF

# --- refusals ---------------------------------------------------------------------------
expect_exit 1 "$NTPROF" analyze "$SRC/tests/onnx-malformed/14-unsupported-nodes.onnx"
expect_err "3 unsupported nodes: 'nms' (NonMaxSuppression, opset 13), 'topk' (TopK, opset 13), 'fancy' (FancyOp, opset 13)"
expect_exit 1 "$NTPROF" analyze "$SRC/tests/onnx-malformed/02-truncated.onnx"
expect_err "not a valid ONNX model"

finish test_onnx_cli
