#!/usr/bin/env bash
# `ntprof generate` and the decoder topologies: parameter counts against the
# published figures (GPT-2 small 124,439,808 with the tied embedding,
# TinyLlama-1.1B 1,100,048,384), KV bytes per token against
# 2 x layers x kv_heads x head_dim x bytes, the JSON report's keys and
# values, and the inputs refused before anything is allocated.
# Usage: test_generate_cli.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

TINY=$SRC/models/tiny-decoder.xml
LLAMA=$SRC/tests/data/tiny-llama.xml
FAST=(--no-db --backend ref)

params() { "$NTPROF" analyze "$1" -f json | $PY -c 'import json,sys; print(json.load(sys.stdin)["totals"]["params"])'; }
for m in "gpt2-small 124439808" "tinyllama 1100048384" "tiny-decoder 29568"; do
    set -- $m
    got=$(params "$SRC/models/$1.xml")
    if [ "$got" = "$2" ]; then ok; else bad "$1: $got parameters, published $2"; fi
done
got=$(params "$LLAMA")
if [ "$got" = 21664 ]; then ok; else bad "tiny-llama: $got parameters, want 21664"; fi

# JSON: keys and values. tiny-decoder: 2 layers x 4 heads x head_dim 8 x 2
# (K and V) x 4 bytes = 256 B... per layer 2 x 4 x 8 x 4 = 256, two layers 512.
expect_exit 0 "$NTPROF" generate "$TINY" -P 5 -G 6 -b 2 -D 3 "${FAST[@]}" -f json -o "$T/g.json"
$PY - "$T/g.json" <<'PYEOF' && ok || bad "generate JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["kv_bytes_per_token"] == 2 * 2 * 4 * 8 * 4, r["kv_bytes_per_token"]
assert r["kv_bytes_total"] == 512 * 2 * (3 + 5 + 6), r["kv_bytes_total"]
assert r["batch"] == 2 and r["prompt_len"] == 5 and r["gen_len"] == 6 and r["context_depth"] == 3
assert r["params"] == 29568
t = r["tpot_ms"]
assert 0 < t["p50"] <= t["p90"] <= t["p99"], t
assert len(r["step_ms"]) == 6 and abs(sorted(r["step_ms"])[2] + sorted(r["step_ms"])[3] - 2 * t["p50"]) < 1e-9
assert r["ttft_ms"] > 0
assert abs(r["prefill_tokens_per_s"] - 2 * 5 / (r["ttft_ms"] / 1e3)) < 1e-6 * r["prefill_tokens_per_s"]
assert abs(r["decode_tokens_per_s"] - 2 / (t["mean"] / 1e3)) < 1e-6 * r["decode_tokens_per_s"]
assert len(r["tokens"]) == 2 * 7 and all(0 <= x < 64 for x in r["tokens"])
assert r["prefill"]["compute_share"] is None and "ntprof machine" in r["roofline_note"]
names = [l["name"] for l in r["layers"]]
assert names[0] == "wte" and names[-1] == "next_token", names
att = [l for l in r["layers"] if l["type"] == "kv_attention"]
assert len(att) == 2
# Prefill attention FLOPs: N=2, heads 4, hd 8, 5 queries after 3 cached:
# pairs 5*3 + 5*6/2 = 30; 2 products x 2 FLOP x hd + 5 softmax per pair.
assert att[0]["prefill_flops"] == 2 * 4 * 30 * (4 * 8 + 5), att[0]["prefill_flops"]
# Decode at the mean context: past = 3 + 5 + (6-1)//2 = 10, 11 pairs.
assert att[0]["decode_flops"] == 2 * 4 * 11 * (4 * 8 + 5), att[0]["decode_flops"]
PYEOF
# bf16 cache: half the bytes per token.
expect_exit 0 "$NTPROF" generate "$LLAMA" -P 4 -G 3 --kv-dtype bf16 "${FAST[@]}" -f json -o "$T/b.json"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["kv_bytes_per_token"] == 2*2*2*8*2, r' "$T/b.json" \
    && ok || bad "bf16 KV bytes per token"
# The table, with the roofline's reason.
expect_exit 0 "$NTPROF" generate "$TINY" -P 4 -G 2 "${FAST[@]}"
grep -q "^TTFT" "$T/out" && grep -q "no machine ceilings" "$T/out" && ok || bad "table"

# Refused: beyond max_positions (64), kv_heads not dividing heads, a cache
# beyond --max-memory, an unsupported cache type, a topology without the
# params of a decoder.
expect_exit 1 "$NTPROF" generate "$TINY" -P 60 -G 5 "${FAST[@]}"
expect_err "0 + prompt 60 + generation 5 = 65 positions, beyond the model's max_positions 64"
expect_exit 1 "$NTPROF" generate "$LLAMA" -P 4 -G 2 --set kv_heads=3 "${FAST[@]}"
expect_err "kv_heads 3 must divide heads 4"
expect_exit 1 "$NTPROF" generate "$TINY" -P 8 -G 8 -b 64 --set max_positions=4096 -D 4000 \
    --max-memory 4MiB "${FAST[@]}"
expect_err "bytes per token x 4016 positions x batch 64"
expect_exit 1 "$NTPROF" generate "$TINY" -P 4 -G 2 --kv-dtype u8 "${FAST[@]}"
expect_err "a u8 key/value cache is not supported"
expect_exit 1 "$NTPROF" generate "$SRC/models/tiny-mlp.xml" -P 4 -G 2 "${FAST[@]}"
expect_err "no param 'seq_len'"
expect_exit 2 "$NTPROF" generate "$TINY" -P 0 "${FAST[@]}"

# analyze of a decoder: the prefill/decode split, by the same code as
# generate --static. With the topology's own seq_len (8) and past (0) the
# prefill pass is the analysed graph: its FLOPs are the analysis' totals.
expect_exit 0 "$NTPROF" analyze "$TINY" --db none -f json -o "$T/a.json"
expect_exit 0 "$NTPROF" generate "$TINY" -P 8 -G 32 --static --no-db -f json -o "$T/s.json"
$PY - "$T/a.json" "$T/s.json" <<'PYEOF' && ok || bad "analyze phases"
import json, sys
a, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ph = a["phases"]
assert ph["prefill"]["flops"] == a["totals"]["flops"], (ph["prefill"]["flops"], a["totals"]["flops"])
assert ph["prompt_len"] == 8 and ph["gen_len"] == 32 and ph["context_depth"] == 0
for k in ("flops", "bytes", "intensity"):
    assert ph["prefill"][k] == s["prefill"][k] and ph["decode"][k] == s["decode"][k], k
assert ph["weight_bytes"] == 29568 * 4 and ph["kv_bytes_per_token"] == 512
assert ph["decode"]["intensity"] < ph["prefill"]["intensity"] / 2
assert ph["decode"]["bound"] is None and "ntprof machine" in ph["roofline_note"]
PYEOF
expect_exit 0 "$NTPROF" analyze "$TINY" --db none --prompt-len 4 --kv-dtype i8
grep -q "^decoder phases" "$T/out" && grep -q "KV cache i8: 192 B per token" "$T/out" && ok \
    || bad "analyze phases table"
expect_exit 0 "$NTPROF" analyze "$SRC/models/tiny-mlp.xml" -f json -o "$T/m.json"
$PY -c 'import json,sys; assert "phases" not in json.load(open(sys.argv[1]))' "$T/m.json" \
    && ok || bad "no phases for a non-decoder"

# Sweeps: --vary over context and cache type, static, with the HTML chart.
expect_exit 0 "$NTPROF" generate "$TINY" -P 4 -G 4 --static --no-db --vary context=0,20,50 \
    --vary kv_dtype=f32,i8 -f json -o "$T/sw.json" --html "$T/sw.html"
$PY - "$T/sw.json" <<'PYEOF' && ok || bad "sweep JSON"
import json, sys
s = json.load(open(sys.argv[1]))
assert [a["name"] for a in s["axes"]] == ["context", "kv_dtype"] and s["static"]
pts = s["points"]
assert len(pts) == 6
for p in pts:
    d, t, r = int(p["values"]["context"]), p["values"]["kv_dtype"], p["result"]
    per = 512 if t == "f32" else 2 * 2 * 4 * (8 + 4)
    assert r["kv_bytes_per_token"] == per and r["kv_bytes_total"] == per * (d + 8), p
PYEOF
grep -c '<svg class="chart"' "$T/sw.html" | grep -qx 4 && ok || bad "sweep HTML charts"
# ntprof sweep --generate is the same sweep: the same points, byte for byte
# (a static sweep has no timings); without --vary it is refused.
expect_exit 0 "$NTPROF" sweep "$TINY" --generate -P 4 -G 4 --static --no-db --vary context=0,20,50 \
    --vary kv_dtype=f32,i8 -f json -o "$T/sw2.json"
$PY - "$T/sw.json" "$T/sw2.json" <<'PYEOF' && ok || bad "sweep --generate JSON"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["axes"] == b["axes"] and a["points"] == b["points"] and len(b["points"]) == 6
PYEOF
expect_exit 2 "$NTPROF" sweep "$TINY" --generate -P 4 -G 4 --static --no-db
expect_err "sweep --generate needs at least one --vary"
expect_exit 0 "$NTPROF" generate "$TINY" -P 2 -G 2 "${FAST[@]}" --vary context=0,4
grep -q "TPOT p50" "$T/out" && ok || bad "measured sweep table"
expect_exit 2 "$NTPROF" generate "$TINY" --html "$T/x.html" "${FAST[@]}"
expect_exit 1 "$NTPROF" generate "$TINY" --static --no-db --vary context=0,60
expect_err "sweep point context=60"
finish test_generate_cli
