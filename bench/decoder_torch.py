#!/usr/bin/python3
"""A minimal decoder transformer in PyTorch, with its own key/value cache,
to check ntprof's decoder ops (docs/decoders.md) against code nobody here
wrote the kernels of: torch's matmul, softmax, layer_norm, gelu, silu.

Two styles, chosen by the weights present:
  GPT-2 (models/tiny-decoder.xml): learned positions (wpe), pre-norm blocks,
      multi-head attention with biases, GELU MLP (erf form), LM head tied to
      the token embedding.
  Llama (tests/data/tiny-llama.xml): RMSNorm, rotary embedding (rotate-half
      form, theta 10000), grouped-query attention, SwiGLU MLP, LM head of its
      own.

Usage: decoder_torch.py check DIR STYLE HEADS KV_HEADS GEN [DIR STYLE ...]
  DIR holds what `ntprof generate --save DIR` wrote: the weights as
  <layer>.<weight>.npy, tokens.npy (the prompt), logits_prefill.npy and
  logits_decode_<i>.npy. The model runs the prompt in one pass and GEN
  greedy decode steps, in float64, and compares every pass's logits with
  ntprof's: max |a - b| / max |b| must stay within 1e-4. Exit 0 when all
  agree, 1 otherwise, 77 without torch. Several checks may follow one
  another; a DIR written !DIR must disagree (a check that can fail).

Usage: decoder_torch.py speed LAYERS CONTEXT STEPS
  GPT-2 small's shape with random weights in float32: times a prefill of
  CONTEXT tokens and STEPS decode steps after it (the speed comparison of
  docs/decoders.md).

Usage: decoder_torch.py compare NTPROF ROUNDS CONTEXT STEPS [LAYERS [THREADS]]
  The speed comparison of issue 18 in one run, interleaved: each round
  runs `NTPROF generate models/gpt2-small.xml --backend onednn -P CONTEXT
  -G STEPS -b 1` (GPT-2 small, random weights; prefill of CONTEXT tokens,
  then STEPS decode steps at a CONTEXT-token context) and the same
  prefill and steps on this PyTorch GPT-2 in float32 (loaded once), the
  order alternating from round to round. Both use THREADS threads (default:
  torch's count). Prints each round's ratios ntprof / PyTorch of prefill
  tokens/s and of decode tokens/s (1 / the mean step, as generate's), and
  for each the median ratio with a distribution-free 95% interval (order
  statistics of the rounds, binomial; at least 6 rounds). LAYERS (default
  12) shrinks the model for a smoke run. Exit 0, 2 on bad usage, 77
  without torch.
"""
import json
import math
import os
import subprocess
import sys
import time

from interleave import verdict

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the test is skipped, not failed
    print("skip: %s" % e)
    sys.exit(77)


class Decoder:
    def __init__(self, w, style, heads, kv_heads, dtype=torch.float64):
        self.w = {k: torch.as_tensor(v).to(dtype) for k, v in w.items()}
        self.style, self.heads, self.kv_heads = style, heads, kv_heads
        self.layers = 0
        while ("h%d_q.W" % self.layers) in self.w or ("l%d_q.W" % self.layers) in self.w:
            self.layers += 1
        self.cache = [[None, None] for _ in range(self.layers)]

    def lin(self, x, name, bias=True):
        y = x @ self.w[name + ".W"].T
        if bias and (name + ".b") in self.w:
            y = y + self.w[name + ".b"]
        return y

    def rms(self, x, name, eps=1e-5):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.w[name + ".scale"]

    def rope(self, x, pos, hd, theta=10000.0):
        # x [B, S, H, hd]; the rotate-half form of GPT-NeoX and HF Llama.
        inv = theta ** (-torch.arange(0, hd, 2, dtype=x.dtype) / hd)
        ang = pos.to(x.dtype)[..., None] * inv  # [B, S, hd/2]
        cos = torch.cat([ang.cos(), ang.cos()], -1)[:, :, None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1)[:, :, None, :]
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        rot = torch.cat([-x2, x1], -1)
        return x * cos + rot * sin

    def attend(self, i, q, k, v, past):
        # q [B,S,H,hd], k, v [B,S,KVH,hd]; append to the cache, then attend.
        ck, cv = self.cache[i]
        k = k if ck is None else torch.cat([ck, k], 1)
        v = v if cv is None else torch.cat([cv, v], 1)
        self.cache[i] = [k, v]
        B, S, H, hd = q.shape
        L = k.shape[1]
        rep = H // self.kv_heads
        if rep > 1:  # grouped-query: each KV head serves `rep` query heads
            k = k.repeat_interleave(rep, dim=2)
            v = v.repeat_interleave(rep, dim=2)
        s = torch.einsum("bshd,bthd->bhst", q, k) / math.sqrt(hd)
        qi = torch.arange(S)[:, None] + past
        kj = torch.arange(L)[None, :]
        s = s.masked_fill(kj > qi, float("-inf"))
        p = torch.softmax(s, -1)
        return torch.einsum("bhst,bthd->bshd", p, v).reshape(B, S, H * hd)

    def forward(self, tokens, past):
        B, S = tokens.shape
        pos = torch.arange(past, past + S)[None, :].expand(B, S)
        if self.style == "gpt2":
            x = self.w["wte.table"][tokens] + self.w["wpe.table"][pos]
        else:
            x = self.w["embed.table"][tokens]
        for i in range(self.layers):
            if self.style == "gpt2":
                p = "h%d_" % i
                D = x.shape[-1]
                h = F.layer_norm(x, (D,), self.w[p + "ln_1.gamma"], self.w[p + "ln_1.beta"])
                hd = D // self.heads
                q = self.lin(h, p + "q").reshape(B, S, self.heads, hd)
                k = self.lin(h, p + "k").reshape(B, S, self.kv_heads, hd)
                v = self.lin(h, p + "v").reshape(B, S, self.kv_heads, hd)
                x = x + self.lin(self.attend(i, q, k, v, past), p + "attn_proj")
                h = F.layer_norm(x, (D,), self.w[p + "ln_2.gamma"], self.w[p + "ln_2.beta"])
                x = x + self.lin(F.gelu(self.lin(h, p + "mlp_fc")), p + "mlp_proj")
            else:
                p = "l%d_" % i
                D = x.shape[-1]
                hd = D // self.heads
                h = self.rms(x, p + "input_norm")
                q = self.rope(self.lin(h, p + "q").reshape(B, S, self.heads, hd), pos, hd)
                k = self.rope(self.lin(h, p + "k").reshape(B, S, self.kv_heads, hd), pos, hd)
                v = self.lin(h, p + "v").reshape(B, S, self.kv_heads, hd)
                x = x + self.lin(self.attend(i, q, k, v, past), p + "o")
                h = self.rms(x, p + "post_norm")
                x = x + self.lin(F.silu(self.lin(h, p + "gate")) * self.lin(h, p + "up"), p + "down")
        if self.style == "gpt2":
            D = x.shape[-1]
            x = F.layer_norm(x, (D,), self.w["ln_f.gamma"], self.w["ln_f.beta"])
            return x @ self.w["wte.table"].T
        return self.rms(x, "norm") @ self.w["lm_head.W"].T


def rel_err(a, b):
    return float((a - b).abs().max() / b.abs().max())


def check(d, style, heads, kv_heads, gen):
    w = {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d)
         if f.endswith(".npy") and not f.startswith(("logits", "tokens"))}
    m = Decoder(w, style, heads, kv_heads)
    tokens = torch.as_tensor(np.load(os.path.join(d, "tokens.npy")).astype(np.int64))
    worst = 0.0
    logits = m.forward(tokens, 0)
    theirs = torch.as_tensor(np.load(os.path.join(d, "logits_prefill.npy"))).double()
    e = rel_err(theirs, logits)
    worst = max(worst, e)
    print("prefill: %d tokens, relative error %.3g" % (tokens.shape[1], e))
    past = tokens.shape[1]
    nxt = logits[:, -1].argmax(-1)
    for i in range(gen):
        logits = m.forward(nxt[:, None], past)
        theirs = torch.as_tensor(np.load(os.path.join(d, "logits_decode_%d.npy" % i))).double()
        e = rel_err(theirs, logits)
        worst = max(worst, e)
        print("decode %d: token %s, relative error %.3g" % (i, nxt.tolist(), e))
        past += 1
        nxt = logits[:, -1].argmax(-1)
    print("worst relative error %.3g (limit 1e-4)" % worst)
    return 0 if worst <= 1e-4 else 1


def gpt2_weights(layers):
    torch.manual_seed(0)
    D, V = 768, 50257
    w = {"wte.table": torch.randn(V, D) * 0.02, "wpe.table": torch.randn(1024, D) * 0.01,
         "ln_f.gamma": torch.ones(D), "ln_f.beta": torch.zeros(D)}
    for i in range(layers):
        p = "h%d_" % i
        for n, (o, k) in {"q": (D, D), "k": (D, D), "v": (D, D), "attn_proj": (D, D),
                          "mlp_fc": (4 * D, D), "mlp_proj": (D, 4 * D)}.items():
            w[p + n + ".W"] = torch.randn(o, k) / math.sqrt(k)
            w[p + n + ".b"] = torch.zeros(o)
        for n in ("ln_1", "ln_2"):
            w[p + n + ".gamma"], w[p + n + ".beta"] = torch.ones(D), torch.zeros(D)
    return w, V


def speed(layers, context, steps):
    w, V = gpt2_weights(layers)
    with torch.no_grad():
        m = Decoder(w, "gpt2", 12, 12, dtype=torch.float32)
        tokens = torch.randint(0, V, (1, context))
        t0 = time.perf_counter()
        logits = m.forward(tokens, 0)
        t1 = time.perf_counter()
        nxt = logits[:, -1].argmax(-1)
        step = []
        for i in range(steps):
            a = time.perf_counter()
            logits = m.forward(nxt[:, None], context + i)
            nxt = logits[:, -1].argmax(-1)
            step.append(time.perf_counter() - a)
    step.sort()
    print("torch %s, %d threads: prefill %d tokens %.1f ms (%.1f tok/s); decode at context %d: "
          "p50 %.2f ms (%.1f tok/s)" % (torch.__version__, torch.get_num_threads(), context,
                                         (t1 - t0) * 1e3, context / (t1 - t0), context,
                                         step[len(step) // 2] * 1e3, 1 / step[len(step) // 2]))
    return 0


def torch_round(m, V, context, steps):
    """One prefill of `context` tokens and `steps` decode steps on a fresh
    cache: (prefill tokens/s, decode tokens/s = 1 / mean step)."""
    m.cache = [[None, None] for _ in range(m.layers)]
    with torch.no_grad():
        tokens = torch.randint(0, V, (1, context))
        t0 = time.perf_counter()
        logits = m.forward(tokens, 0)
        nxt = logits[:, -1].argmax(-1)
        t1 = time.perf_counter()
        total = 0.0
        for i in range(steps):
            a = time.perf_counter()
            logits = m.forward(nxt[:, None], context + i)
            nxt = logits[:, -1].argmax(-1)
            total += time.perf_counter() - a
    return context / (t1 - t0), steps / total


def ntprof_round(exe, layers, context, steps, threads):
    cmd = [exe, "generate", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "models", "gpt2-small.xml"),
           "--backend", "onednn", "-P", str(context), "-G", str(steps), "-b", "1",
           "--threads", str(threads), "--no-db", "-f", "json", "--set", "layers=%d" % layers]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:  # the fallback warnings are kept quiet, an error is not
        sys.stderr.write(r.stderr.decode())
        raise SystemExit("%s failed (exit %d)" % (" ".join(cmd), r.returncode))
    d = json.loads(r.stdout)
    return d["prefill_tokens_per_s"], d["decode_tokens_per_s"]


def compare(exe, rounds, context, steps, layers, threads):
    w, V = gpt2_weights(layers)
    m = Decoder(w, "gpt2", 12, 12, dtype=torch.float32)
    torch.set_num_threads(threads)
    torch_round(m, V, min(context, 16), 1)  # warm-up (ntprof warms up inside generate)
    print("GPT-2 small%s, batch 1, prefill %d tokens, %d decode steps at a %d-token context, "
          "%d threads; torch %s, ntprof --backend onednn"
          % ("" if layers == 12 else " (%d layers)" % layers, context, steps, context, threads,
             torch.__version__))
    print("%5s %12s %12s %12s %12s %8s %8s" % ("round", "ntp pre t/s", "torch pre", "ntp dec t/s",
                                               "torch dec", "pre x", "dec x"))
    rp, rd = [], []
    for r in range(rounds):
        if r % 2 == 0:
            a = ntprof_round(exe, layers, context, steps, threads)
            b = torch_round(m, V, context, steps)
        else:
            b = torch_round(m, V, context, steps)
            a = ntprof_round(exe, layers, context, steps, threads)
        rp.append(a[0] / b[0])
        rd.append(a[1] / b[1])
        print("%5d %12.1f %12.1f %12.1f %12.1f %8.3f %8.3f"
              % (r + 1, a[0], b[0], a[1], b[1], rp[-1], rd[-1]), flush=True)
    for name, x in (("prefill", rp), ("decode", rd)):
        print(verdict("%s tokens/s, ntprof / PyTorch" % name, x))
    return 0


if __name__ == "__main__":
    if len(sys.argv) in (6, 7, 8) and sys.argv[1] == "compare":
        a = sys.argv
        sys.exit(compare(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]) if len(a) > 6 else 12,
                         int(a[7]) if len(a) > 7 else torch.get_num_threads()))
    if len(sys.argv) >= 7 and sys.argv[1] == "check" and (len(sys.argv) - 2) % 5 == 0:
        # Several checks in one process (importing torch takes seconds); a
        # DIR written "!DIR" must fail the check.
        rc = 0
        for i in range(2, len(sys.argv), 5):
            d, want_fail = sys.argv[i].lstrip("!"), sys.argv[i].startswith("!")
            print("== %s%s" % (d, " (must differ)" if want_fail else ""))
            r = check(d, sys.argv[i + 1], int(sys.argv[i + 2]), int(sys.argv[i + 3]),
                      int(sys.argv[i + 4]))
            if (r != 0) != want_fail:
                print("FAIL: %s" % d)
                rc = 1
        sys.exit(rc)
    if len(sys.argv) == 5 and sys.argv[1] == "speed":
        sys.exit(speed(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
    print(__doc__)
    sys.exit(2)
