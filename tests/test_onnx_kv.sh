#!/usr/bin/env bash
# Decoders with past key/values through ONNX (docs/onnx.md, "Decoders with
# a key/value cache"), each against something ntprof did not compute:
#  - import: a tiny decoder written in PyTorch (bench/decoder_onnx_kv.py,
#    GPT-2 style and RoPE style), exported by torch.onnx with
#    past_key_values inputs and present outputs; `ntprof generate` runs it
#    with its own cache and PyTorch (its own cache, float64) must give the
#    same logits for the prefill and every decode step, within 1e-4;
#  - the same for a Llama-style one (Hugging Face's repeat_kv for 4 query
#    heads on 2 key/value heads, an attention_mask input) at batch 2 with
#    the second prompt left-padded by 2 masked tokens (--pad 2): within
#    2e-6, the prefill at the tokens' rows;
#  - an import with the batch left symbolic warns once, naming the count
#    of inputs (2 + 2 x layers);
#  - export: tiny-decoder and tiny-llama (grouped-query) exported by ntprof
#    pass onnx.checker (full check), and run by a numpy interpreter of the
#    ONNX operators (tests/support/onnx_np.py) through a prefill and decode
#    steps with the presents fed back give generate's logits within 1e-4;
#  - round trip: generate on the exported tiny-decoder gives the markup's
#    logits;
#  - refusals: a past-key-value model without position_ids, attention
#    scaled otherwise than by 1/sqrt(head_dim).
# Skipped (77) without torch or onnx in Debian's python3.
# Usage: test_onnx_kv.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

if ! $PY -c 'import torch, onnx, numpy' 2>/dev/null; then
    echo "skip: $PY has no torch or onnx"
    exit 77
fi
GEN=(generate -P 5 -G 4 -b 2 --no-db --backend ref)

# Import: PyTorch's export, both styles, in one process (torch starts slowly).
if $PY "$SRC/bench/decoder_onnx_kv.py" export "$T/gpt2.onnx" gpt2 "$T/rope.onnx" rope \
    "$T/llama.onnx" llama >"$T/export.log" 2>&1; then ok; else
    bad "torch.onnx export failed"
    cat "$T/export.log"
fi
for s in gpt2 rope; do
    mkdir -p "$T/$s"
    expect_exit 0 "$NTPROF" "${GEN[@]}" "$T/$s.onnx" --save "$T/$s"
done
mkdir -p "$T/llama"
expect_exit 0 "$NTPROF" "${GEN[@]}" "$T/llama.onnx" --pad 2 --save "$T/llama"
if $PY - "$T/llama" <<'PYEOF'; then ok; else bad "--pad 2: the mask or positions saved are not as documented"; fi
import sys
import numpy as np
d = sys.argv[1]
m, p = np.load(d + "/attention_mask.npy"), np.load(d + "/positions.npy")
assert m.tolist() == [[1] * 5, [0, 0, 1, 1, 1]], m
assert p.tolist() == [[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]], p
PYEOF
if $PY "$SRC/bench/decoder_onnx_kv.py" check "$T/gpt2.onnx" gpt2 "$T/gpt2" 4 \
    "$T/rope.onnx" rope "$T/rope" 4 "$T/llama.onnx" llama "$T/llama" 4 >"$T/check.log" 2>&1; then ok; else
    bad "ntprof's logits on torch.onnx's decoders differ from PyTorch's"
fi
cat "$T/check.log"

# Export: the checker and the numpy interpreter against generate's logits.
for m in "models/tiny-decoder.xml td" "tests/data/tiny-llama.xml tl"; do
    set -- $m
    mkdir -p "$T/$2"
    expect_exit 0 "$NTPROF" export "$SRC/$1" -o "$T/$2.onnx"
    expect_exit 0 "$NTPROF" "${GEN[@]}" "$SRC/$1" --save "$T/$2"
done
if $PY "$SRC/tests/support/onnx_kv_check.py" "$T/td.onnx" "$T/td" "$T/tl.onnx" "$T/tl" \
    >"$T/np.log" 2>&1; then ok; else
    bad "the exported decoders fail the checker or differ from generate"
fi
cat "$T/np.log"

# Round trip: the exported models, imported, give the markup's logits
# (tiny-decoder bit for bit; tiny-llama's RMSNorm and RoPE come back as
# their formulas, within 1e-5), with the markup's parameters: tiny-
# decoder's tied head is one tensor again (29,568); tiny-llama's 21,664
# gain its RoPE tables, which load as embeddings of the positions (cos and
# sin for q and k in 2 layers: 8 x 64 positions x head_dim 8 = 4,096); its
# weight bytes count the 5 RMSNorms' epsilons too (buffers, 20 bytes).
for m in "td 29568 118272" "tl 25760 103060"; do
    set -- $m
    mkdir -p "$T/rt_$1"
    expect_exit 0 "$NTPROF" "${GEN[@]}" "$T/$1.onnx" --save "$T/rt_$1" -f json
    if $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["params"] != int(sys.argv[2]) or d["weight_bytes"] != int(sys.argv[3]))' "$T/out" "$2" "$3"; then ok; else
        bad "$1: the round trip's params or weight bytes are not $2 and $3"
    fi
    # The export's ArgMax (next_token) comes back as the one argmax.
    if $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); a=[l["name"] for l in d["layers"] if l["type"] == "argmax"]; sys.exit(a != ["next_token"])' "$T/out"; then ok; else
        bad "$1: the round trip has not exactly one argmax, next_token"
    fi
    if $PY - "$T/$1" "$T/rt_$1" <<'PYEOF'; then ok; else bad "$1: round trip logits differ"; fi
import glob, os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
names = sorted(os.path.basename(p) for p in glob.glob(a + "/logits_*.npy"))
assert len(names) == 5, names
for n in names:
    x, y = np.load(a + "/" + n), np.load(b + "/" + n)
    r = float(np.abs(x - y).max() / np.abs(x).max())
    assert r <= (1e-5 if "tl" in a else 0), (n, r)
assert (np.load(a + "/tokens.npy") == np.load(b + "/tokens.npy")).all()
PYEOF
done
# A padding mask exported (tiny-llama-mask: attention_mask [batch, past +
# seq_len], Hugging Face's, an additive -FLT_MAX on padded keys): the
# checker and numpy against `generate --pad 2` at the tokens' rows
# (measured 2.6e-7; an export whose padding bias is cancelled differs by
# 0.56, a mask of ones fed instead by 0.68), and the round trip gives the
# markup's logits at every row (measured 3.8e-7).
mkdir -p "$T/tm" "$T/rt_tm"
expect_exit 0 "$NTPROF" export "$SRC/tests/data/tiny-llama-mask.xml" -o "$T/tm.onnx"
expect_exit 0 "$NTPROF" "${GEN[@]}" --pad 2 "$SRC/tests/data/tiny-llama-mask.xml" --save "$T/tm"
if $PY "$SRC/tests/support/onnx_kv_check.py" "$T/tm.onnx" "$T/tm" >"$T/npm.log" 2>&1; then ok; else
    bad "the exported padding mask fails the checker or differs from generate"
fi
cat "$T/npm.log"
expect_exit 0 "$NTPROF" "${GEN[@]}" --pad 2 "$T/tm.onnx" --save "$T/rt_tm"
if $PY - "$T/tm" "$T/rt_tm" <<'PYEOF'; then ok; else bad "tm: round trip logits differ"; fi
import glob, os, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
names = sorted(os.path.basename(p) for p in glob.glob(a + "/logits_*.npy"))
assert len(names) == 5, names
for n in names:
    x, y = np.load(a + "/" + n), np.load(b + "/" + n)
    r = float(np.abs(x - y).max() / np.abs(x).max())
    assert r <= 1e-5, (n, r)
assert (np.load(a + "/tokens.npy") == np.load(b + "/tokens.npy")).all()
PYEOF
# Refusals, from the torch.onnx model edited: position_ids renamed, and the
# scores divided by 2 instead of sqrt(8).
if $PY - "$T/gpt2.onnx" "$T/nopos.onnx" "$T/scale.onnx" <<'PYEOF'; then ok; else bad "editing the model failed"; fi
import sys
import numpy as np
import onnx
from onnx import numpy_helper
src, nopos, scale = sys.argv[1:]
m = onnx.load(src)
for i in m.graph.input:
    if i.name == "position_ids":
        i.name = "pos"
for n in m.graph.node:
    for k, v in enumerate(n.input):
        if v == "position_ids":
            n.input[k] = "pos"
onnx.save(m, nopos)
m = onnx.load(src)
consts = {n.output[0]: n for n in m.graph.node if n.op_type == "Constant"}
edited = 0
for n in m.graph.node:
    c = consts.get(n.input[1]) if n.op_type == "Div" and len(n.input) > 1 else None
    if c is not None:
        v = numpy_helper.to_array(c.attribute[0].t)
        if v.size == 1 and v.dtype.kind == "f" and abs(float(v) - 8 ** 0.5) < 1e-4:
            c.attribute[0].t.CopyFrom(numpy_helper.from_array(np.array(2.0, v.dtype)))
            edited += 1
assert edited == 2, edited
onnx.save(m, scale)
PYEOF
expect_exit 1 "$NTPROF" "${GEN[@]}" "$T/nopos.onnx"
expect_err "needs the inputs 'input_ids' and 'position_ids'"
expect_exit 1 "$NTPROF" "${GEN[@]}" "$T/scale.onnx"
expect_err "past_key_values.0 is not in a form ntprof recognises: the scores are scaled by something other than 1/sqrt(head_dim)"
# Padding: a model without attention_mask, and no token left.
expect_exit 1 "$NTPROF" "${GEN[@]}" "$T/gpt2.onnx" --pad 2
expect_err "padding needs a decoder with an 'attention_mask' input"
expect_exit 1 "$NTPROF" "${GEN[@]}" "$T/llama.onnx" --pad 5
expect_err "ntp_generate_opts.pad 5: expected 0 to the prompt length - 1 (4)"
# The batch left symbolic: one warning for the import's 6 inputs (tokens,
# positions, 2 x 2 past key/values), not one per input, and not again for
# the decode pass's import.
expect_exit 0 "$NTPROF" generate -P 3 -G 1 --no-db --backend ref --static "$T/rope.onnx"
if [ "$(grep -c 'symbolic batch' "$T/err")" = 1 ] &&
    grep -q "6 inputs have a symbolic batch dim ('tokens' dim 0, 'positions' dim 0, 'past_key_values.0.key' dim 0, ...): batch 1 assumed" "$T/err"; then ok; else
    bad "the symbolic batch is not one warning naming 6 inputs"
    cat "$T/err"
fi
# ArgMax on import: over the last axis without keepdims, an argmax; over
# another axis, of the last largest, or keeping the axis (ONNX's default),
# refused, naming why.
if $PY - "$T" <<'PYEOF'; then ok; else bad "writing the ArgMax models failed"; fi
import sys
import onnx
from onnx import TensorProto, helper as h
for name, attrs in (("ok", {"axis": 1, "keepdims": 0}), ("keep", {"axis": 1}),
                    ("axis0", {"axis": 0, "keepdims": 0}),
                    ("last", {"axis": -1, "keepdims": 0, "select_last_index": 1})):
    g = h.make_graph([h.make_node("ArgMax", ["x"], ["y"], **attrs)], name,
                     [h.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7])],
                     [h.make_tensor_value_info("y", TensorProto.INT64, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    onnx.save(m, "%s/argmax_%s.onnx" % (sys.argv[1], name))
PYEOF
expect_exit 0 "$NTPROF" analyze "$T/argmax_ok.onnx"
if grep -q "argmax" "$T/out"; then ok; else bad "ArgMax did not import as an argmax"; fi
expect_exit 1 "$NTPROF" analyze "$T/argmax_keep.onnx"
expect_err "keepdims 1 (the default): the IR's argmax drops the axis"
expect_exit 1 "$NTPROF" analyze "$T/argmax_axis0.onnx"
expect_err "ArgMax over axis 0 of 2: the IR's argmax takes the last axis"
expect_exit 1 "$NTPROF" analyze "$T/argmax_last.onnx"
expect_err "select_last_index 1: the IR's argmax takes the first largest"

finish test_onnx_kv
