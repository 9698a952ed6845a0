"""Checks of a decoder ntprof exported to ONNX (tests/test_onnx_kv.sh).

Usage: onnx_kv_check.py MODEL.onnx DIR [MODEL.onnx DIR ...]
  For each: onnx.checker.check_model(full_check=True); the inputs and
  outputs are the past-key-value layout (input_ids, position_ids,
  past_key_values.{i}.key/.value in; logits, present.{i}.key/.value,
  next_token out: the greedy choice, an ArgMax of the logits, INT64);
  then the model runs in numpy (onnx_np.py, float64): the prompt of
  DIR/tokens.npy with empty past key/values, then one step per
  DIR/logits_decode_<i>.npy with the presents fed back as the past and the
  greedy token of ntprof's previous pass, and every pass's logits must
  equal ntprof's (what `ntprof generate --save DIR` wrote) within 1e-4
  relative (max |a-b| / max |b|). A model with a padding mask (the input
  attention_mask [batch, past + seq_len], after position_ids) is fed
  DIR/positions.npy and DIR/attention_mask.npy (`generate --pad`), then
  the next position and a 1 per step; its prefill logits are compared at
  the tokens' rows only (a padded query's row is Hugging Face's average of
  the padding there, 0 in ntprof). Exit 0, 1 on a difference, 77 without
  onnx or numpy."""
import glob
import os
import sys

try:
    import numpy as np
    import onnx
except ImportError as e:
    print("skip: %s" % e)
    sys.exit(77)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_np  # noqa: E402


def check(path, d):
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    ins = [i.name for i in m.graph.input]
    outs = [o.name for o in m.graph.output]
    layers = sum(1 for n in ins if n.startswith("past_key_values.")) // 2
    masked = "attention_mask" in ins
    want_in = ["input_ids", "position_ids"] + (["attention_mask"] if masked else []) + \
        ["past_key_values.%d.%s" % (l, kv) for l in range(layers) for kv in ("key", "value")]
    want_out = ["logits"] + ["present.%d.%s" % (l, kv) for l in range(layers)
                             for kv in ("key", "value")] + ["next_token"]
    if ins != want_in or outs != want_out or layers == 0:
        print("%s: inputs %s, outputs %s" % (path, ins, outs))
        return False
    dims = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in m.graph.input}
    tokens = np.load(d + "/tokens.npy").astype(np.int64)
    B = tokens.shape[0]
    past = {}
    for l in range(layers):
        for kv in ("key", "value"):
            s = dims["past_key_values.%d.%s" % (l, kv)]
            past["past_key_values.%d.%s" % (l, kv)] = np.zeros((B, s[1], 0, s[3]))
    steps = len(glob.glob(d + "/logits_decode_*.npy"))
    ids, start, ok, worst = tokens, 0, True, 0.0
    if masked:
        pos = np.load(d + "/positions.npy").astype(np.int64)
        keep = np.load(d + "/attention_mask.npy").astype(np.int64)
        rows = keep.astype(bool)  # the prefill's tokens
    for step in range(steps + 1):
        S = ids.shape[1]
        if masked:
            feeds = dict(past, input_ids=ids, position_ids=pos, attention_mask=keep)
        else:
            feeds = dict(past, input_ids=ids,
                         position_ids=np.broadcast_to(np.arange(start, start + S), (B, S)).copy())
        out = onnx_np.run(m, feeds)
        name = "logits_prefill.npy" if step == 0 else "logits_decode_%d.npy" % (step - 1)
        theirs = np.load(d + "/" + name).reshape(out["logits"].shape)
        mine, ref = out["logits"], theirs
        if masked and step == 0:
            mine, ref = mine[rows], ref[rows]
        r = float(np.abs(mine - ref).max() / np.abs(ref).max())
        worst = max(worst, r)
        if r > 1e-4:
            print("%s: %s differs by %.3g relative" % (path, name, r))
            ok = False
        for l in range(layers):
            for kv in ("key", "value"):
                past["past_key_values.%d.%s" % (l, kv)] = out["present.%d.%s" % (l, kv)]
        start += S
        if masked:
            pos = pos[:, -1:] + 1
            keep = np.concatenate([keep, np.ones((B, 1), np.int64)], 1)
        nt = out["next_token"]
        if nt.dtype != np.int64 or nt.shape != out["logits"].shape[:2] or \
                (nt != out["logits"].argmax(-1)).any():
            print("%s: next_token is not the logits' argmax: %s" % (path, nt))
            ok = False
        ids = theirs[:, -1, :].argmax(-1).astype(np.int64)[:, None]
        if (nt[:, -1] != ids[:, 0]).any():
            print("%s: next_token %s, ntprof chose %s" % (path, nt[:, -1], ids[:, 0]))
            ok = False
    print("%s: checker passed, %d passes in numpy, worst relative difference %.3g"
          % (path, steps + 1, worst))
    return ok


if __name__ == "__main__":
    a = sys.argv[1:]
    results = [check(a[i], a[i + 1]) for i in range(0, len(a), 2)]
    sys.exit(0 if all(results) else 1)
