#!/usr/bin/env bash
# ntprof train and analyze --train as a user meets them, and training
# checked end to end against PyTorch: a small CNN (conv, batch norm in
# training mode, relu, max pool, grouped conv, global average pool, linear;
# cross-entropy), an MLP (linear, tanh, sigmoid; mse), a bidirectional GRU
# into a ReLU RNN (CTC) and a reduced DeepSpeech (clipped-ReLU linears, a
# bidirectional LSTM; CTC), exported to ONNX by tests/train_torch.py,
# trained with the same inputs and labels: the
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
# The same plan in bf16 mixed precision: feature maps and their gradients
# at 2 bytes, the fp32 masters plus a bf16 copy of every matrix (all but
# the 53,120 batch-norm scales and shifts and fc's 1,000 biases).
cp "$T/out" "$T/plan-f32.json"
expect_exit 0 "$NTPROF" analyze --train --format json --batch 4 --optimizer adam \
    --precision bf16 "$SRC/models/resnet50.xml"
"$PY" - "$T/plan-f32.json" "$T/out" <<'EOF' && ok || bad "analyze --train --precision bf16"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert b["precision"] == "bf16", b["precision"]
m, n = a["memory"], b["memory"]
assert n["weights"] == m["weights"] + 2 * (25557032 - 53120 - 1000), (m, n)
assert n["gradients"] == m["gradients"] and n["optimizer_state"] == m["optimizer_state"], (m, n)
assert m["activations"] == 2 * n["activations"], (m, n)
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
expect_exit 1 "$NTPROF" train "$SRC/models/tiny-rnn.xml" --loss ctc
expect_in_err "tiny-rnn.xml: the loss reads one output and the model has 2"
expect_exit 1 "$NTPROF" train "$SRC/models/deepspeech.xml" --set n_hidden=8 --set time_steps=6
expect_in_err "output 'decode' is the transcript of ctc_decode 'decode'; train it with --loss ctc"

expect_exit 0 "$NTPROF" train "$SRC/models/tiny-attention.xml" --steps 2 --optimizer adam

# Memory per batch size in sweep: the planner's data structures per
# configuration, and the measured peak (resident-set high-water growth)
# beside the planner's count of what the engine allocates.
expect_exit 0 "$NTPROF" sweep "$SRC/models/tiny-mlp.xml" --train --set hidden=256 \
    --vary batch=1,64 --steps 1 --format json
"$PY" - "$T/out" <<'EOF' && ok || bad "sweep --train json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["kind"] == "train_sweep" and r["measured_by"] == "rss_high_water", r
c = r["configurations"]
assert [x["status"] for x in c] == ["ok", "ok"] and [x["batch"] for x in c] == [1, 64], c
h = 256  # tiny-mlp: fc1 16 x h + h, fc2 h x 2h + 2h, fc3 (h + h) x 10
params = 16 * h + h + h * 2 * h + 2 * h + 2 * h * 10
for x in c:
    m = x["memory"]
    assert m["weights"] == m["gradients"] == params * 4, (m, params)
    assert m["peak"] == sum(m[k] for k in m if k != "peak"), m
    assert x["engine_planned_bytes"] == x["allocated_bytes"], x
# Stashed activations grow with the batch, weights do not.
assert c[1]["memory"]["activations"] > 32 * c[0]["memory"]["activations"], c
big = c[1]
assert 0.9 * big["engine_planned_bytes"] <= big["rss_peak_bytes"], big
assert big["rss_peak_bytes"] <= 1.5 * big["engine_planned_bytes"] + (2 << 20), big
assert big["rss_minus_engine_planned_bytes"] == big["rss_peak_bytes"] - big["engine_planned_bytes"]
EOF
expect_exit 0 "$NTPROF" sweep "$SRC/models/tiny-mlp.xml" --train --vary batch=1,2 --steps 1
grep -q "peak, planned against measured (resident-set high-water growth)" "$T/out" &&
    grep -q "^batch     2 |W" "$T/out" && ok || bad "sweep --train table"
# The HTML page of a training sweep: memory by data structure per
# configuration to one scale, every segment's bytes the JSON's.
expect_exit 0 "$NTPROF" sweep "$SRC/models/tiny-mlp.xml" --train --vary batch=1,8 --steps 1 \
    --optimizer adam --format json -o "$T/ts.json" --html "$T/ts.html"
"$PY" - "$T/ts.json" "$T/ts.html" <<'EOF' && ok || bad "sweep --train --html"
import json, re, sys
r = json.load(open(sys.argv[1]))
h = open(sys.argv[2]).read()
assert h.startswith("<!DOCTYPE html>") and h.rstrip().endswith("</html>")
assert not re.search(r'<(script|img|link)[^>]*(src|href)=', h)  # nothing loaded
seg = re.findall(r'<rect class="seg" data-config="(\d+)" data-part="([a-z_]+)" '
                 r'data-bytes="(\d+)" x="[-\d.]+" y="[-\d.]+" width="([\d.]+)"', h)
keys = ["weights", "gradients", "optimizer_state", "activations", "workspace", "other"]
cfg = r["configurations"]
assert len(cfg) == 2 and len(seg) == 6 * len(cfg), seg
most = max(c["memory"]["peak"] for c in cfg)
plot = 1000 - 200 - 90  # the bars' width at the largest peak
for c in cfg:
    m = c["memory"]
    got = {p: int(b) for (i, p, b, w) in seg if int(i) == c["index"]}
    assert got == {k: m[k] for k in keys}, (got, m)
    assert m["optimizer_state"] == 2 * m["gradients"] > 0, m  # adam: two moments
    pk = re.search(r'class="peak" data-config="%d" data-bytes="(\d+)"' % c["index"], h)
    assert int(pk.group(1)) == m["peak"] == sum(m[k] for k in keys), (pk, m)
    for (i, p, b, w) in seg:  # to one scale
        if int(i) == c["index"]:
            assert abs(float(w) - plot * int(b) / most) < 0.01, (p, b, w)
# The table: one row per configuration with the peak's bytes.
for c in cfg:
    assert 'data-bytes="%d"' % c["engine_planned_bytes"] in h, c
assert h.count('<svg class="chart"') == 2, "memory bars and planned against measured"
EOF
# The page of one training run and of a plan: the sweep's memory figure
# with one bar, every segment's bytes the JSON's; each layer's phase
# medians (train) and FLOPs (analyze --train) the JSON's.
expect_exit 0 "$NTPROF" train "$T/net.xml" --steps 2 --optimizer adam --format json \
    -o "$T/t1.json" --html "$T/t1.html"
expect_exit 0 "$NTPROF" analyze --train "$T/net.xml" --optimizer momentum --format json \
    -o "$T/a1.json" --html "$T/a1.html"
"$PY" - "$T/t1.json" "$T/t1.html" "$T/a1.json" "$T/a1.html" <<'EOF' && ok || bad "train/analyze --html"
import json, re, sys
keys = ["weights", "gradients", "optimizer_state", "activations", "workspace", "other"]
phases = ["forward", "backward_data", "backward_weights", "update"]
def page(path, json_path):
    h = open(path).read()
    r = json.load(open(json_path))
    assert h.startswith("<!DOCTYPE html>") and h.rstrip().endswith("</html>")
    assert not re.search(r'<(script|img|link)[^>]*(src|href)=', h)  # nothing loaded
    seg = re.findall(r'<rect class="seg" data-config="0" data-part="([a-z_]+)" '
                     r'data-bytes="(\d+)" x="[-\d.]+" y="[-\d.]+" width="([\d.]+)"', h)
    m = r["memory"]
    assert {p: int(b) for (p, b, w) in seg} == {k: m[k] for k in keys}, (seg, m)
    for (p, b, w) in seg:  # one bar: the peak is the full width
        assert abs(float(w) - 710 * int(b) / m["peak"]) < 0.01, (p, b, w)
    pk = re.search(r'class="peak" data-config="0" data-bytes="(\d+)"', h)
    assert int(pk.group(1)) == m["peak"], pk
    rows = re.findall(r'<tr data-layer="(\d+)"><td class="l">([^<]*)</td><td class="l">'
                      r'([^<]*)</td>(.*?)</tr>', h)
    assert [(x[1], x[2]) for x in rows] == [(l["name"], l["type"]) for l in r["layers"]], rows
    return h, r, rows
h, r, rows = page(sys.argv[2], sys.argv[1])
assert r["memory"]["optimizer_state"] == 2 * r["memory"]["gradients"] > 0  # adam
assert 'data-bytes="%d"' % r["engine_planned_bytes"] in h
assert 'data-bytes="%d"' % r["allocated_bytes"] in h
assert h.count('<svg class="chart"') == 3, "memory bars, planned against measured, loss per step"
timed = 0
for (i, name, typ, cells), l in zip(rows, r["layers"]):
    got = re.findall(r'<td(?: data-ms="([^"]+)")?>[^<]*</td>', cells)[:4]
    for ph, v in zip(phases, got):
        if ph in l:
            assert float(v) == l[ph]["median"], (name, ph, v, l[ph])
            timed += 1
        else:
            assert v == "", (name, ph, v)
    assert ('<td class="l">%s</td><td class="l">%s</td>'
            % (l.get("forward_by", "-"), l.get("backward_by", "-"))) in cells, (name, cells)
assert timed >= 2 * len(rows), timed
h, p, rows = page(sys.argv[4], sys.argv[3])
assert p["memory"]["optimizer_state"] == p["memory"]["gradients"] > 0  # momentum
assert h.count('<svg class="chart"') == 1, "nothing measured: no planned against measured"
for (i, name, typ, cells), l in zip(rows, p["layers"]):
    got = [int(x) for x in re.findall(r'data-flops="(\d+)"', cells)]
    assert got == [l["flops"][ph] for ph in phases], (name, got, l["flops"])
    assert 'data-bytes="%d"' % l["stashed_bytes"] in cells, (name, cells)
assert sum(int(x) for x in re.findall(r'data-flops="(\d+)"', h)) == p["step_flops"] > 0
EOF
expect_exit 2 "$NTPROF" analyze "$T/net.xml" --html "$T/x.html"
expect_err "--html is for analyze --train"
# analyze --train --batch LIST: a plan per batch, nothing run. Each
# batch's figures are those of analyze --train --batch N alone; the page
# draws one TBD bar per batch with the sweep's code, every segment the
# JSON's bytes; CSV and the table a row per batch.
for n in 1 3 8; do
    expect_exit 0 "$NTPROF" analyze --train "$SRC/models/tiny-cnn.xml" --optimizer adam \
        --batch $n --format json -o "$T/b$n.json"
done
expect_exit 0 "$NTPROF" analyze --train "$SRC/models/tiny-cnn.xml" --optimizer adam \
    --batch 1,3,8 --format json -o "$T/bl.json" --html "$T/bl.html"
expect_exit 0 "$NTPROF" analyze --train "$SRC/models/tiny-cnn.xml" --optimizer adam \
    --batch 1,3,8 --format csv -o "$T/bl.csv"
expect_exit 0 "$NTPROF" analyze --train "$SRC/models/tiny-cnn.xml" --optimizer adam \
    --batch 1,3,8
cp "$T/out" "$T/bl.txt"
"$PY" - "$T" <<'EOF' && ok || bad "analyze --train --batch LIST"
import csv, json, re, sys
T = sys.argv[1]
r = json.load(open(T + "/bl.json"))
assert r["kind"] == "train_plans" and r["optimizer"] == "adam", r
assert [p["batch"] for p in r["plans"]] == [1, 3, 8], r["plans"]
for p in r["plans"]:
    one = json.load(open("%s/b%d.json" % (T, p["batch"])))
    assert p["memory"] == one["memory"], (p["batch"], p["memory"], one["memory"])
    assert p["flops"] == one["flops"] and p["step_flops"] == one["step_flops"], p["batch"]
m = [p["memory"] for p in r["plans"]]
for k in ("weights", "gradients", "optimizer_state"):  # the model's, whatever the batch
    assert m[0][k] == m[1][k] == m[2][k] > 0, (k, m)
assert m[0]["activations"] < m[1]["activations"] < m[2]["activations"], m
assert m[0]["peak"] < m[1]["peak"] < m[2]["peak"], m
rows = list(csv.DictReader(open(T + "/bl.csv")))
assert [int(x["batch"]) for x in rows] == [1, 3, 8], rows
for x, p in zip(rows, r["plans"]):
    assert {k: int(x[k]) for k in p["memory"]} == p["memory"], (x, p)
    assert int(x["step_flops"]) == p["step_flops"], (x, p)
t = open(T + "/bl.txt").read()
assert len(re.findall(r"^batch=\d+ ", t, re.M)) == 3, t
assert len(re.findall(r"^batch +\d+ \|W", t, re.M)) == 3, t
h = open(T + "/bl.html").read()
assert h.startswith("<!DOCTYPE html>") and h.rstrip().endswith("</html>")
assert not re.search(r'<(script|img|link)[^>]*(src|href)=', h)
seg = re.findall(r'<rect class="seg" data-config="(\d+)" data-part="([a-z_]+)" '
                 r'data-bytes="(\d+)" x="[-\d.]+" y="[-\d.]+" width="([\d.]+)"', h)
keys = ["weights", "gradients", "optimizer_state", "activations", "workspace", "other"]
assert len(seg) == 6 * 3, seg
most = m[2]["peak"]
for c, mm in enumerate(m):
    got = {p: int(b) for (i, p, b, w) in seg if int(i) == c}
    assert got == {k: mm[k] for k in keys}, (got, mm)
    pk = re.search(r'class="peak" data-config="%d" data-bytes="(\d+)"' % c, h)
    assert int(pk.group(1)) == mm["peak"], (pk, mm)
    for (i, p, b, w) in seg:  # to one scale
        if int(i) == c:
            assert abs(float(w) - 710 * int(b) / most) < 0.01, (p, b, w)
assert h.count('<svg class="chart"') == 1, "a plan measures nothing"
assert h.count(">batch=") >= 3, "each bar named by its batch"
EOF
expect_exit 2 "$NTPROF" analyze --train "$SRC/models/tiny-cnn.xml" --batch 0,8
expect_err "ntprof: --batch 0,8: '0' is not a positive integer"
expect_exit 2 "$NTPROF" analyze --train "$SRC/models/tiny-cnn.xml" --batch 1,,2
expect_err "ntprof: --batch 1,,2: '' is not a positive integer"
expect_exit 2 "$NTPROF" analyze --train "$SRC/models/tiny-cnn.xml" --batch 8,8
expect_err "ntprof: --batch 8,8: '8' given twice"
expect_exit 2 "$NTPROF" analyze "$SRC/models/tiny-cnn.xml" --batch 1,8
expect_err "ntprof: --batch 1,8: a list of batches is for analyze --train; give one N"
expect_exit 1 "$NTPROF" sweep "$SRC/models/tiny-mlp.xml" --train --vary threads=1,2 --steps 1
expect_in_err "a training sweep varies batch and the topology's params, not threads"
expect_exit 2 "$NTPROF" sweep "$SRC/models/tiny-mlp.xml" --loss mse --vary batch=1,2
expect_err "--loss, --optimizer, --lr and --steps are for sweep --train"
expect_exit 2 "$NTPROF" sweep "$SRC/models/tiny-mlp.xml" --train --iterations 3 --vary batch=1,2
expect_in_err "sweep --train takes --set, --batch, --seed, --backend, --loss, --optimizer, --lr and --steps, not --iterations"

# Backward on oneDNN where it has the primitives, ref for the rest.
if "$NTPROF" run --help 2>&1 | grep -q 'built: [a-z,]*onednn'; then
    expect_exit 0 "$NTPROF" train "$SRC/models/tiny-cnn.xml" --steps 1 --backend onednn \
        --format json
    "$PY" - "$T/out" <<'EOF' && ok || bad "train --backend onednn json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["backend"] == "onednn", r["backend"]
by = {l["name"]: l.get("backward_by") for l in r["layers"]}
assert by["conv2"] == "onednn" and by["fc"] == "onednn", by
assert by["bn1"] == "onednn" and by["relu1"] == "onednn" and by["pool1"] == "onednn", by
assert by["up"] == "onednn", by  # a transposed convolution
# The forward too (f32), but for the layers left on ref (docs/train.md).
fby = {l["name"]: l.get("forward_by") for l in r["layers"]}
for n in ("conv1", "bn1", "relu1", "pool1", "conv2", "act2", "residual", "up", "fc"):
    assert fby[n] == "onednn", (n, fby)
assert fby["to_float"] == "ref" and fby["pad"] == "ref", fby
EOF
fi
# bf16 mixed precision against f32 (docs/train.md), 20 SGD steps on
# tiny-cnn: the ref engine's bf16 curve, then oneDNN's (with its bf16
# primitives where this CPU's oneDNN has them, and forced off with
# ONEDNN_MAX_CPU_ISA=AVX2), each with the same steps at f32 beside it.
expect_exit 0 "$NTPROF" train "$SRC/models/tiny-cnn.xml" --steps 20 --precision bf16 \
    --format json -o "$T/bf16-ref.json" --save-weights "$T" --html "$T/bf16.html"
mkdir -p "$T/w32" "$T/w0"
expect_exit 0 "$NTPROF" train "$SRC/models/tiny-cnn.xml" --steps 20 --save-weights "$T/w32"
expect_exit 0 "$NTPROF" train "$SRC/models/tiny-cnn.xml" --steps 1 --lr 1e-30 \
    --save-weights "$T/w0"
expect_exit 1 "$NTPROF" train "$SRC/models/tiny-cnn.xml" --steps 1 --precision f16
expect_in_err "tiny-cnn.xml: training runs at f32 or bf16 (mixed precision), not f16"
runs="ref"
if "$NTPROF" run --help 2>&1 | grep -q 'built: [a-z,]*onednn'; then
    for isa in "" AVX2; do
        expect_exit 0 env ONEDNN_MAX_CPU_ISA=$isa "$NTPROF" train "$SRC/models/tiny-cnn.xml" \
            --steps 20 --precision bf16 --backend onednn --format json -o "$T/bf16-dnn$isa.json"
        runs="$runs dnn$isa"
    done
fi
"$PY" - "$T" $runs <<'EOF' && ok || bad "train --precision bf16"
import json, os, re, sys
import numpy as np
T = sys.argv[1]
u = 2.0 ** -9  # bf16's unit roundoff (8 significant bits)
flags = set(re.findall(r"^flags\s*:(.*)$", open("/proc/cpuinfo").read(), re.M)[0].split())
# oneDNN 2.6 runs bf16 from AVX512_CORE (F, BW, VL, DQ) on, emulated
# before AVX512_BF16; below it, conv and fc run their f32 primitives.
bf16_isa = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
ref = json.load(open(os.path.join(T, "bf16-ref.json")))
for run in sys.argv[2:]:
    r = json.load(open(os.path.join(T, "bf16-%s.json" % run)))
    assert r["precision"] == "bf16", r["precision"]
    b, f = np.array(r["losses"]), np.array(r["losses_f32"])
    assert len(b) == len(f) == 20
    # The curves track: every stored value rounds by at most u, and the
    # loss of this 19-layer net moves by a few u of it (observed 1.9e-3
    # relative at most); 8u is the bound. They must differ: f32 storage
    # would give equal losses.
    gap = np.abs(b - f) / np.abs(f)
    assert gap.max() <= 8 * u, (run, gap.max())
    assert gap.max() > 1e-6, (run, "bf16 losses equal f32's: nothing rounded", gap.max())
    assert f[-1] < f[0] - 0.3 and b[-1] < b[0] - 0.3, (run, b, f)  # both learn
    # oneDNN's backward (bf16 or f32 primitives) on the same bf16 values as
    # the ref engine: equal up to a rare flipped rounding (observed 7.9e-4
    # relative at step 20, 0 before), within one u.
    rel = np.abs(b - np.array(ref["losses"])) / np.abs(b)
    assert rel.max() <= u, (run, rel.max())
    prec = {l["name"]: l.get("backward_precision") for l in r["layers"]}
    want = "bf16" if run == "dnn" and bf16_isa else "f32"
    for name in ("conv1", "conv2", "conv3", "fc"):
        assert prec[name] == want, (run, name, prec[name], want)
    assert prec["bn1"] == "f32", prec
# The master weights stay fp32 and take every update: the layers read bf16
# copies, but the saved conv and fc matrices hold values no bf16 has, and
# they moved from the start (w0) as far as f32 training's (w32) did: the
# distance to w32 is a small part of the way travelled (an update lost to
# bf16 rounding, or one made to the copy, would leave them near w0).
for w in ("conv1.W", "conv2.W", "fc.W"):
    a = np.load(os.path.join(T, w + ".npy"))
    assert a.dtype == np.float32
    low = (a.view(np.uint32) & 0xFFFF) != 0
    assert low.mean() > 0.9, (w, low.mean())
    w0, w32 = (np.load(os.path.join(T, d, w + ".npy")).astype(np.float64) for d in ("w0", "w32"))
    moved, off = np.linalg.norm(w32 - w0), np.linalg.norm(a - w32)
    assert off <= 0.1 * moved, (w, off, moved)
# The HTML page draws both curves, every point the JSON's loss.
h = open(os.path.join(T, "bf16.html")).read()
pts = re.findall(r'<circle class="loss" data-curve="([a-z0-9]+)" data-step="(\d+)" '
                 r'data-loss="([^"]+)"', h)
got = {(c, int(k)): float(v) for c, k, v in pts}
assert len(got) == 40, len(got)
for k in range(20):
    assert got[("bf16", k + 1)] == float("%.15g" % ref["losses"][k]), k
    assert got[("f32", k + 1)] == float("%.15g" % ref["losses_f32"][k]), k
EOF
expect_exit 1 "$NTPROF" train "$SRC/models/tiny-cnn.xml" --steps 1 --backend nosuch
expect_in_err "backend 'nosuch' is not built here; built:"

# DeepSpeech trains end to end with CTC at a reduced size: MFCC is input
# preprocessing (forward only), the decoder is replaced by the loss.
expect_exit 0 "$NTPROF" train "$SRC/models/deepspeech.xml" --set n_hidden=8 --set time_steps=12 \
    --batch 2 --loss ctc --optimizer adam --lr 0.01 --steps 4 --format json
"$PY" - "$T/out" <<'EOF' && ok || bad "deepspeech ctc"
import json, math, sys
r = json.load(open(sys.argv[1]))
l = r["losses"]
assert len(l) == 4 and all(math.isfinite(v) and v > 0 for v in l), l
assert l[-1] < l[0], l  # adam at lr 0.01 brings the CTC loss down
ly = {x["name"]: x for x in r["layers"]}
assert "backward_data" in ly["lstm"] and "backward_weights" in ly["lstm"], ly["lstm"]
assert "backward_data" not in ly["mfcc"] and "backward_data" not in ly["fc1"]
assert ly["loss"]["type"] == "ctc", ly["loss"]
EOF
# DeepSpeech's bidirectional LSTM (and every other layer with a backward)
# on oneDNN: the losses of three SGD steps equal the reference engine's
# (f32 against double).
if "$NTPROF" run --help 2>&1 | grep -q 'built: [a-z,]*onednn'; then
    expect_exit 0 "$NTPROF" train "$SRC/models/deepspeech.xml" --set n_hidden=8 \
        --set time_steps=12 --batch 2 --loss ctc --steps 3 --format json
    cp "$T/out" "$T/ds-ref.json"
    expect_exit 0 "$NTPROF" train "$SRC/models/deepspeech.xml" --set n_hidden=8 \
        --set time_steps=12 --batch 2 --loss ctc --steps 3 --backend onednn --format json
    "$PY" - "$T/ds-ref.json" "$T/out" <<'EOF' && ok || bad "deepspeech ctc, backward on onednn"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
by = {l["name"]: l.get("backward_by") for l in b["layers"]}
assert by["lstm"] == "onednn" and by["fc4"] == "onednn" and by["fc1"] == "onednn", by
fby = {l["name"]: l.get("forward_by") for l in b["layers"]}
assert fby["lstm"] == "onednn" and fby["fc1"] == "onednn" and fby["mfcc"] == "ref", fby
assert len(a["losses"]) == len(b["losses"]) == 3
for x, y in zip(a["losses"], b["losses"]):
    assert abs(x - y) <= 1e-5 * abs(x), (a["losses"], b["losses"])
EOF
fi
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
expect_exit 1 "$NTPROF" train "$T/rnn.onnx" --loss ctc --labels "$T/cnn-y.npy"
expect_in_err "cnn-y.npy: labels are [4]; ctc on 2 sequences needs [2, S]"
expect_exit 1 "$NTPROF" train "$T/rnn.onnx" --loss ctc --labels "$T/ctc-blank.npy"
expect_in_err "ctc-blank.npy: label 4 of sequence 1 (position 0) is not a symbol: the 5 classes end with the blank 4"
expect_exit 1 "$NTPROF" train "$T/rnn.onnx" --loss ctc --labels "$T/ctc-long.npy"
expect_in_err "ctc-long.npy: sequence 0 (5 symbols) needs 8 frames and the output has 7"
expect_exit 1 "$NTPROF" train "$T/rnn.onnx" --loss ctc --labels "$T/rnnvar-y.npy" \
    --target-lengths "$T/rnnvar-tl.npy" --input-lengths "$T/ctc-il-long.npy"
expect_in_err "ctc-il-long.npy: input length 8 of sequence 0 is outside [1, 7] (the output's frames)"
expect_exit 1 "$NTPROF" train "$T/rnn.onnx" --loss ctc --labels "$T/rnnvar-y.npy" \
    --target-lengths "$T/rnnvar-tl.npy" --input-lengths "$T/ctc-il-short.npy"
expect_in_err "rnnvar-y.npy: sequence 0 (2 symbols) needs 3 frames and its input length is 2"
expect_exit 1 "$NTPROF" train "$T/rnn.onnx" --loss ctc --labels "$T/rnnvar-y.npy" \
    --target-lengths "$T/ctc-il-long.npy"
expect_in_err "ctc-il-long.npy: target length 8 of sequence 0 is outside [0, 4] (the labels' columns)"
expect_exit 1 "$NTPROF" train "$T/rnn.onnx" --input-lengths "$T/rnnvar-il.npy"
expect_in_err "--input-lengths and --target-lengths are for --loss ctc"
expect_exit 1 "$NTPROF" train "$T/rnn.onnx"
expect_in_err "cross_entropy needs an output [batch, classes]"

for case in cnn mlp rnn rnnvar speech; do
    loss=cross_entropy lens=
    [ $case = mlp ] && loss=mse
    [ $case = rnn ] || [ $case = rnnvar ] || [ $case = speech ] && loss=ctc
    [ $case = rnnvar ] && lens="--input-lengths $T/rnnvar-il.npy --target-lengths $T/rnnvar-tl.npy"
    for opt in sgd adam; do
        steps=1 lr=0.1
        [ $opt = adam ] && steps=3 lr=0.01
        mkdir "$T/got-$case-$opt"
        expect_exit 0 "$NTPROF" train "$T/$case.onnx" --input "x=$T/$case-x.npy" \
            --labels "$T/$case-y.npy" --loss $loss --optimizer $opt --lr $lr --steps $steps \
            --save-weights "$T/got-$case-$opt" $lens
    done
done
"$PY" "$SRC/tests/train_torch.py" compare "$T" cnn mlp rnn rnnvar speech && ok ||
    bad "weights differ from PyTorch's"
finish
