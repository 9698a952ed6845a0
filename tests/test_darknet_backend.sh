#!/usr/bin/env bash
# --backend darknet against the reference backend: the small .cfg networks
# that cover every layer type Darknet runs (tests/data/darknet/), the same
# weights and inputs on both, outputs within 1e-5 relative L2 of ref's.
#
# The tolerance: both compute in f32 and differ only in the order of the
# sums (Darknet's own GEMM loops against ref's) and in the batch norm's
# epsilon, which Darknet adds to the standard deviation (sqrt(var) + 1e-6)
# and ref to the variance (sqrt(var + 1e-6)); both are ~1e-6 relative.
# Usage: test_darknet_backend.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"
PY=/usr/bin/python3
# libdarknet's free_network leaks (sanitizer builds): not ours to report
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SRC/tests/data/darknet/lsan.supp"

if ! "$NTPROF" --version | grep -q 'darknet'; then
    echo "SKIP: the darknet backend is not built (package darknet)"
    exit 77
fi
QUICK=(-n 3 -w 1 --min-time 0 -t 1 --no-db -f json)
for cfg in mixed connected; do
    expect_exit 0 "$NTPROF" run "$SRC/tests/data/darknet/$cfg.cfg" --backend darknet,ref "${QUICK[@]}"
    # every layer Darknet has ran on Darknet; the rest (mish, swish, reshapes,
    # slices) fell back to ref, and the count of each is what the .cfg holds
    case $cfg in
        mixed) want="24 7" ;;      # 31 layers: mish, swish, 3 reorg parts, softmax's flatten, the [yolo] inlay
        connected) want="9 5" ;;   # 14 layers: crop, 2 flattens, dropout, the 4d reshape
    esac
    got=$($PY - "$T/out" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = [x for x in d["backends"] if x["backend"] == "darknet"][0]
assert b["rel_l2"] < 1e-5, "rel L2 %g >= 1e-5" % b["rel_l2"]
for dev in b["deviation"]:
    assert dev["rel_l2"] < 1e-5, "%s: rel L2 %g" % (dev["output"], dev["rel_l2"])
print(b["layers_own"], b["layers_fallback"])
PYEOF
    ) && ok || bad "$cfg: $got"
    [ "$got" = "$want" ] && ok || bad "$cfg: darknet ran/fell back '$got', expected '$want'"
done
# --fuse: the engine folds each inference batch norm into its convolution and
# the backend takes the activation after it into the same Darknet layer
# (activation= of the generated [convolutional]): conv0 + bn + leaky is one
# Darknet layer, as in Darknet's own network. 31 layers: 17 on Darknet, the
# same 7 on ref (with the [yolo] inlay), 7 fused (3 batch norms, 4 activations; mish and swish stay
# apart).
expect_exit 0 "$NTPROF" run "$SRC/tests/data/darknet/mixed.cfg" --backend darknet,ref --fuse \
    "${QUICK[@]}"
got=$($PY - "$T/out" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = [x for x in d["backends"] if x["backend"] == "darknet"][0]
assert b["rel_l2"] < 1e-5, "rel L2 %g >= 1e-5" % b["rel_l2"]
fused = {l["name"]: l.get("fused_into") for l in b["report"]["layers"] if l.get("fused")}
assert fused.get("conv0_bn") == "conv0" and fused.get("conv0_leaky") == "conv0", fused
assert fused.get("conv15_tanh") == "conv15", fused
print(b["layers_own"], b["layers_fallback"], b["layers_fused"])
PYEOF
) && ok || bad "fuse: $got"
[ "$got" = "17 7 7" ] && ok || bad "fuse: darknet ran/fell back/fused '$got', expected '17 7 7'"
# Darknet's recurrent and [local] sections run whole by libdarknet's own
# layer (forward_rnn_layer, ...), one timed unit each, with the weights ntprof holds
# loaded by Darknet's load_weights in Darknet's order; ref runs the unrolled
# layers. Over 10 (rnn), 3 (gru), 4 (lstm, lstm-bn) and 2 (crnn) time steps,
# the network's outputs (the sections' outputs through what follows them)
# within 1e-5 relative L2 of ref's, as for the other layers: f32 on both,
# differing in the order of the sums and in the batch norm's epsilon. Each
# section is one row (its last layer's) with Darknet's forward as its
# implementation and every other layer of the section fused into it.
for cfg in rnn gru lstm crnn lstm-bn flat-sections; do
    expect_exit 0 "$NTPROF" run "$SRC/tests/data/darknet/$cfg.cfg" --backend darknet,ref \
        "${QUICK[@]}"
    case $cfg in
        rnn) want="rnn0_out_leaky:forward_rnn_layer rnn1_out_tanh:forward_rnn_layer" ;;
        gru) want="gru0_states_cat0:forward_gru_layer gru1_states_cat0:forward_gru_layer" ;;
        lstm) want="lstm0_rows:forward_lstm_layer" ;;
        # and crnn.cfg's two [local] sections, by forward_local_layer
        crnn) want="crnn0_out_leaky:forward_crnn_layer local1_image:forward_local_layer local2_leaky:forward_local_layer" ;;
        lstm-bn) want="lstm0_states_cat0:forward_lstm_layer" ;;
        # after a [connected], which Darknet hands on as a 1x1 image
        flat-sections) want="local1_leaky:forward_local_layer crnn3_out_leaky:forward_crnn_layer" ;;
    esac
    got=$($PY - "$T/out" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = [x for x in d["backends"] if x["backend"] == "darknet"][0]
assert b["rel_l2"] < 1e-5, "rel L2 %g >= 1e-5" % b["rel_l2"]
for dev in b["deviation"]:
    assert dev["rel_l2"] < 1e-5, "%s: rel L2 %g" % (dev["output"], dev["rel_l2"])
layers = b["report"]["layers"]
heads = [l for l in layers if (l.get("impl") or "").startswith("darknet:forward_")]
for h in heads:
    # the section's other layers: fused into its row, none timed apart
    sect = h["name"].split("_")[0]
    rest = [l for l in layers if l["name"].split("_")[0] == sect and l is not h]
    assert rest and all(l.get("fused_into") == h["name"] for l in rest), \
        (h["name"], [(l["name"], l.get("fused_into")) for l in rest])
r = [x for x in d["backends"] if x["backend"] == "ref"][0]["report"]["layers"]
assert not any((l.get("impl") or "").startswith("darknet") for l in r)
print(" ".join(h["name"] + ":" + h["impl"].split(":")[1] for h in heads))
PYEOF
    ) && ok || bad "$cfg: $got"
    [ "$got" = "$want" ] && ok || bad "$cfg: Darknet's sections ran '$got', expected '$want'"
done
# Three sequences at once: Darknet's batch is the sequences, its rows step-major
# as ntprof's (steps x batch).
for cfg in rnn gru crnn; do
    expect_exit 0 "$NTPROF" run "$SRC/tests/data/darknet/$cfg.cfg" --backend darknet,ref \
        --batch 3 "${QUICK[@]}"
    got=$($PY - "$T/out" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = [x for x in d["backends"] if x["backend"] == "darknet"][0]
assert b["rel_l2"] < 1e-5, "rel L2 %g >= 1e-5" % b["rel_l2"]
print(sum((l.get("impl") or "").startswith("darknet:forward_") for l in b["report"]["layers"]))
PYEOF
    ) && ok || bad "$cfg --batch 3: $got"
    case $cfg in rnn | gru) want=2 ;; crnn) want=3 ;; esac
    [ "$got" = "$want" ] && ok || bad "$cfg --batch 3: $got sections on Darknet's forward, expected $want"
done
finish
