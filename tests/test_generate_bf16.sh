#!/usr/bin/env bash
# bf16 weights in `ntprof generate --weight-dtype bf16` (docs/decoders.md):
#  - every weight is held as bf16: weight_bytes is exactly params x 2 (f32:
#    x 4), for tiny-decoder (tied head: one table) and tiny-llama;
#  - the kernels widen them and accumulate in f32: PyTorch (bench/
#    decoder_torch.py, float64) on the bf16 values (`--save` writes them
#    widened) gives the same logits within 1e-4, prefill and 8 decode steps;
#  - against the f32 weights' logits the difference is above 0 and within
#    1/32 relative (max |a-b| / max |b|). Why: round to nearest keeps 8
#    significant bits, so each weight moves by at most 2^-9 of itself, and to
#    first order a product's relative error is at most the sum of its
#    factors'; the longest chain of weights from the embedding to the logits
#    in these 2-layer models has 16 of them (per layer: norm scale, q and k
#    or v, o, norm scale, gate or up, down; then the final norm and the
#    head), so 16 x 2^-9 = 1/32;
#  - refused: bf16 weights on another backend, int8 weights.
# Skipped (77) without torch.
# Usage: test_generate_bf16.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

if ! $PY -c 'import torch, numpy' 2>/dev/null; then
    echo "skip: $PY has no torch"
    exit 77
fi
for m in "models/tiny-decoder.xml td 29568" "tests/data/tiny-llama.xml tl 21664"; do
    set -- $m
    for wd in f32 bf16; do
        mkdir -p "$T/$2_$wd"
        expect_exit 0 "$NTPROF" generate "$SRC/$1" -P 7 -G 8 --no-db --backend ref \
            --weight-dtype $wd --save "$T/$2_$wd" -f json
        bytes=$([ $wd = f32 ] && echo 4 || echo 2)
        if $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["params"] != int(sys.argv[2]) or d["weight_bytes"] != int(sys.argv[2]) * int(sys.argv[3]) or d["weight_dtype"] != sys.argv[4])' \
            "$T/out" "$3" "$bytes" "$wd"; then ok; else
            bad "$2 $wd: weight_bytes is not $3 x $bytes"
            cat "$T/out"
        fi
    done
done
if $PY - "$T" <<'PYEOF'; then ok; else bad "bf16 logits not within 1/32 of f32's, or equal to them"; fi
import glob, os, sys
import numpy as np
t = sys.argv[1]
for m in ("td", "tl"):
    worst = 0.0
    names = sorted(os.path.basename(p) for p in glob.glob("%s/%s_f32/logits_*.npy" % (t, m)))
    assert len(names) == 9, names
    for n in names:
        a, b = np.load("%s/%s_bf16/%s" % (t, m, n)), np.load("%s/%s_f32/%s" % (t, m, n))
        worst = max(worst, float(np.abs(a - b).max() / np.abs(b).max()))
    print("%s: bf16 weights' logits within %.3g of f32's (bound 1/32)" % (m, worst))
    assert 0 < worst <= 1 / 32, worst
PYEOF
if $PY "$SRC/bench/decoder_torch.py" check "$T/td_bf16" gpt2 4 4 8 "$T/tl_bf16" llama 4 2 8 \
    >"$T/ref.log" 2>&1; then ok; else
    bad "PyTorch on the bf16 weights disagrees with ntprof"
fi
cat "$T/ref.log"
expect_exit 2 "$NTPROF" generate "$SRC/models/tiny-decoder.xml" --weight-dtype i8 --no-db
expect_err "--weight-dtype: expected f32 or bf16, got 'i8'"
# Another backend (oneDNN where built) is refused.
expect_exit 1 "$NTPROF" generate "$SRC/models/tiny-decoder.xml" -P 2 -G 1 --no-db \
    --backend onednn --weight-dtype bf16
grep -q "unknown backend" "$T/err" || expect_err "bf16 weights run on the reference backend only"
finish test_generate_bf16
