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
        mixed) want="24 6" ;;      # 30 layers: mish, swish, 3 reorg parts, softmax's flatten
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
# Darknet layer, as in Darknet's own network. 30 layers: 17 on Darknet, the
# same 6 on ref, 7 fused (3 batch norms, 4 activations; mish and swish stay
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
[ "$got" = "17 6 7" ] && ok || bad "fuse: darknet ran/fell back/fused '$got', expected '17 6 7'"
finish
