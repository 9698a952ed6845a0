#!/usr/bin/env bash
# bf16 and weight-only int8 weights in `ntprof generate --weight-dtype`
# (docs/decoders.md). bf16:
#  - every weight is held as bf16: weight_bytes is exactly params x 2 (f32:
#    x 4), for tiny-decoder (tied head: one table) and tiny-llama;
#  - the kernels widen them and accumulate in f32: PyTorch (bench/
#    decoder_torch.py, float64) on the bf16 values (`--save` writes them
#    widened) gives the same logits within 1e-4, prefill and 8 decode steps;
#  - against the f32 weights' logits the difference is above 0 and within
#    1/16 relative (max |a-b| / max |b|). Why: round to nearest keeps 8
#    significant bits, so each weight moves by at most 2^-8 of itself, and to
#    first order a product's relative error is at most the sum of its
#    factors'; the longest chain of weights from the embedding to the logits
#    in these 2-layer models has 16 of them (per layer: norm scale, q and k
#    or v, o, norm scale, gate or up, down; then the final norm and the
#    head), so 16 x 2^-8 = 1/16;
#  - i8 (every matrix as int8 with an f32 scale per row, vectors f32): the
#    bytes are n + 4 x rows per matrix and 4 n per vector; PyTorch on the
#    dequantised values within 1e-4; against f32 within 16/254 (each weight
#    moves by at most max|row| / 254, the same chain of 16) and above bf16's
#    difference;
#  - --vary weight_dtype=f32,bf16 sweeps it, and the roofline's bytes per
#    decode step fall by exactly the weight bytes saved;
#  - refused: bf16 weights run on another backend; --static prices them on
#    any backend (it runs nothing): the weight bytes and a decode step's
#    bytes are the reference backend's;
# Skipped (77) without torch.
# Usage: test_generate_bf16.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

if ! $PY -c 'import torch, numpy' 2>/dev/null; then
    echo "skip: $PY has no torch"
    exit 77
fi
for m in "models/tiny-decoder.xml td 29568" "tests/data/tiny-llama.xml tl 21664"; do
    set -- $m
    for wd in f32 bf16 i8; do
        mkdir -p "$T/$2_$wd"
        expect_exit 0 "$NTPROF" generate "$SRC/$1" -P 7 -G 8 --no-db --backend ref \
            --weight-dtype $wd --save "$T/$2_$wd" -f json
        $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["weight_bytes"])' "$T/out" \
            >"$T/$2_${wd}_bytes"
        if $PY - "$T/out" "$3" "$wd" "$T/$2_f32" <<'PYEOF'; then ok; else
import glob, json, sys
import numpy as np
d = json.load(open(sys.argv[1]))
params, wd = int(sys.argv[2]), sys.argv[3]
if wd == "i8":  # the f32 run's weights give the shapes (the tied table once)
    want = 0
    for p in glob.glob(sys.argv[4] + "/*.npy"):
        if p.endswith(("/tokens.npy", "/positions.npy", "/attention_mask.npy")) or "/logits_" in p:
            continue
        a = np.load(p)
        want += a.size + 4 * a.shape[0] if a.ndim >= 2 else 4 * a.size
else:
    want = params * (4 if wd == "f32" else 2)
print("%s: weight_bytes %d (want %d)" % (wd, d["weight_bytes"], want))
sys.exit(d["params"] != params or d["weight_bytes"] != want or d["weight_dtype"] != wd)
PYEOF
            bad "$2 $wd: weight_bytes is not as held"
            cat "$T/out"
        fi
    done
done
if $PY - "$T" <<'PYEOF'; then ok; else bad "bf16/i8 logits not within their bounds of f32's"; fi
import glob, os, sys
import numpy as np
t = sys.argv[1]
for m in ("td", "tl"):
    names = sorted(os.path.basename(p) for p in glob.glob("%s/%s_f32/logits_*.npy" % (t, m)))
    assert len(names) == 9, names
    worst = {}
    for wd in ("bf16", "i8"):
        worst[wd] = 0.0
        for n in names:
            a, b = np.load("%s/%s_%s/%s" % (t, m, wd, n)), np.load("%s/%s_f32/%s" % (t, m, n))
            worst[wd] = max(worst[wd], float(np.abs(a - b).max() / np.abs(b).max()))
    print("%s: logits within %.3g (bf16 weights, bound 1/16) and %.3g (i8, bound 16/254) of f32's"
          % (m, worst["bf16"], worst["i8"]))
    assert 0 < worst["bf16"] <= 1 / 16 and worst["bf16"] < worst["i8"] <= 16 / 254, worst
PYEOF
if $PY "$SRC/bench/decoder_torch.py" check "$T/td_bf16" gpt2 4 4 8 "$T/tl_bf16" llama 4 2 8 \
    "$T/td_i8" gpt2 4 4 8 "$T/tl_i8" llama 4 2 8 >"$T/ref.log" 2>&1; then ok; else
    bad "PyTorch on the bf16 or i8 weights disagrees with ntprof"
fi
cat "$T/ref.log"
# A sweep over the weights' type: the weight bytes halve from f32 to bf16.
expect_exit 0 "$NTPROF" generate "$SRC/tests/data/tiny-llama.xml" -P 2 -G 1 --no-db --backend ref \
    --vary weight_dtype=f32,bf16 -f json
if $PY -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"]; w=[x["result"]["weight_bytes"] for x in p]; sys.exit(w != [86656, 43328])' "$T/out"; then ok; else
    bad "--vary weight_dtype=f32,bf16: weight bytes are not 86,656 and 43,328"
    cat "$T/out"
fi
# The roofline reads the weights as held: tiny-llama reads each of its
# weights once per decode step and shares none, so a step's bytes drop by
# exactly the 43,328 bytes bf16 saves.
if $PY -c 'import json,sys; p=json.load(open(sys.argv[1]))["points"]; b=[x["result"]["decode"]["bytes"] for x in p]; print("decode bytes per step", b); sys.exit(b[0] - b[1] != 43328)' "$T/out"; then ok; else
    bad "--vary weight_dtype=f32,bf16: a decode step's bytes do not drop by the 43,328 weight bytes saved"
fi
expect_exit 1 "$NTPROF" generate "$SRC/tests/data/tiny-llama.xml" --no-db --vary weight_dtype=f32,f16
expect_err "sweep axis weight_dtype: expected f32, bf16 or i8, got 'f16'"
# Another backend (oneDNN where built) is refused.
expect_exit 1 "$NTPROF" generate "$SRC/models/tiny-decoder.xml" -P 2 -G 1 --no-db \
    --backend onednn --weight-dtype bf16
grep -q "unknown backend" "$T/err" || expect_err "bf16 weights run on the reference backend only"
# --static runs nothing, so any backend prices bf16 and i8 weights: the
# same bytes as on the reference backend (oneDNN where built).
for wd in bf16 i8; do
    expect_exit 0 "$NTPROF" generate "$SRC/tests/data/tiny-llama.xml" --static --no-db \
        --backend ref --weight-dtype $wd -f json
    cp "$T/out" "$T/static_ref_$wd.json"
    if "$NTPROF" generate "$SRC/tests/data/tiny-llama.xml" --static --no-db --backend onednn \
        --weight-dtype $wd -f json >"$T/out" 2>"$T/err"; then
        if $PY - "$T/out" "$T/static_ref_$wd.json" <<'PYEOF'; then ok; else bad "--static --weight-dtype $wd on onednn: bytes differ from ref's"; fi
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("static", a["backend"], a["weight_dtype"], a["weight_bytes"], a["decode"]["bytes"])
assert a["backend"] == "onednn" and a["static"] is True, a["backend"]
assert (a["weight_bytes"], a["decode"]["bytes"], a["prefill"]["bytes"]) == \
    (b["weight_bytes"], b["decode"]["bytes"], b["prefill"]["bytes"])
PYEOF
    elif grep -q "unknown backend" "$T/err"; then
        echo "onednn not built: --static on another backend not checked"
    else
        bad "--static --weight-dtype $wd refused on onednn"
        cat "$T/err"
    fi
done
# --static counts the weights as they would be held.
expect_exit 0 "$NTPROF" generate "$SRC/tests/data/tiny-llama.xml" --static --no-db --backend ref \
    --weight-dtype i8 -f json
if $PY -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["weight_bytes"] != int(sys.argv[2]))' "$T/out" "$(cat "$T/tl_i8_bytes" 2>/dev/null || echo 0)"; then ok; else
    bad "--static --weight-dtype i8: weight bytes differ from the run's"
fi
finish test_generate_bf16
