#!/usr/bin/env bash
# ntprof's decoder ops against a decoder written in PyTorch (bench/
# decoder_torch.py, its own key/value cache, float64): `ntprof generate
# --save` writes the weights it generated, the prompt and the logits of the
# prefill pass and of every decode step; PyTorch runs the same prompt and
# greedy steps on those weights and every pass's logits must agree within
# 1e-4 relative. GPT-2 style (tiny-decoder: layer norm, learned positions,
# GELU MLP, tied head) and Llama style (tiny-llama: RMSNorm, RoPE,
# grouped-query attention, SwiGLU, separate head), at batch 1 and 2.
# Skipped (77) without torch.
# Usage: test_decoder_torch.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

if ! $PY -c 'import torch, numpy' 2>/dev/null; then
    echo "skip: $PY has no torch"
    exit 77
fi
REF=$SRC/bench/decoder_torch.py
gen() { # gen NAME MODEL BATCH [BACKEND]
    mkdir -p "$T/$1"
    local be=(--backend ref)
    [ "${4:-}" = default ] && be=()
    expect_exit 0 "$NTPROF" generate "$2" -P 7 -G 8 -b "$3" --no-db "${be[@]}" --save "$T/$1"
}
gen gpt2 "$SRC/models/tiny-decoder.xml" 1
gen gpt2_b2 "$SRC/models/tiny-decoder.xml" 2
gen llama "$SRC/tests/data/tiny-llama.xml" 1
gen llama_b2 "$SRC/tests/data/tiny-llama.xml" 2
# The default backend too (oneDNN where built: projections and the LM head
# there, attention on the reference backend).
gen gpt2_default "$SRC/models/tiny-decoder.xml" 2 default
# The comparison can fail: the same logits against a weight moved by 1%.
cp -r "$T/gpt2" "$T/other"
$PY - "$T/other/h0_q.W.npy" <<'PYEOF'
import numpy as np, sys
np.save(sys.argv[1], np.load(sys.argv[1]) * 1.01)
PYEOF
# One process for every check: importing torch takes seconds.
if $PY "$REF" check "$T/gpt2" gpt2 4 4 8 "$T/gpt2_b2" gpt2 4 4 8 "$T/llama" llama 4 2 8 \
    "$T/llama_b2" llama 4 2 8 "$T/gpt2_default" gpt2 4 4 8 "!$T/other" gpt2 4 4 8 >"$T/ref.log" 2>&1; then
    ok
else
    bad "ntprof's logits and PyTorch's disagree (or a perturbed weight passed)"
    cat "$T/ref.log"
fi
finish test_decoder_torch
