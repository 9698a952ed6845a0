#!/usr/bin/python3
"""A tiny decoder in PyTorch exported by torch.onnx with past key/values,
the layout Hugging Face and optimum use (docs/onnx.md, "Decoders with a
key/value cache"): inputs input_ids and position_ids [batch, seq] int64 and
past_key_values.{i}.key / .value [batch, heads, past, head_dim]; outputs
logits [batch, seq, vocab] and present.{i}.key / .value (past and the new
positions, concatenated on dim 2).

Usage: decoder_onnx_kv.py export OUT.onnx STYLE [OUT.onnx STYLE ...]
  STYLE gpt2 (learned positions, layer norm, GELU MLP, tied head),
  rope (rotary embedding on the heads, RMSNorm written out, SiLU-gated
  MLP, separate head) or llama (rope's, with Hugging Face Llama's
  grouped-query attention, 4 query heads on 2 key/value heads repeated by
  repeat_kv's expand + reshape, and an attention_mask input [batch, past +
  seq], 1 for a token and 0 for padding, that masks the keys as Hugging
  Face's does, beside the causal mask).
Usage: decoder_onnx_kv.py check OUT.onnx STYLE DIR GEN [OUT.onnx STYLE DIR GEN ...]
  DIR holds what `ntprof generate --save DIR` wrote from OUT.onnx
  (tokens.npy, logits_prefill.npy, logits_decode_<i>.npy): PyTorch runs the
  same prompt in one pass and GEN greedy steps with its own cache, and
  every pass's logits must agree within 1e-4 relative (max |a-b| / max
  |b|). The weights are the exported model's (the same seed). Exit 0 when
  they agree, 1 otherwise, 77 without torch. For llama, DIR also holds
  positions.npy and attention_mask.npy (the prompt's, [B, P]): PyTorch
  feeds the same, the decode steps at the next positions with mask 1, and
  the prefill's logits are compared at the tokens only (a padding row's
  are nobody's), within 2e-6.
"""
import math
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print("skip: %s" % e)
    sys.exit(77)

VOCAB, DIM, HEADS, LAYERS, MAXPOS = 40, 32, 4, 2, 64
HD = DIM // HEADS
KV_HEADS = 2  # llama style


def kv_heads(style):
    return KV_HEADS if style == "llama" else HEADS


def repeat_kv(h, n_rep):  # Hugging Face Llama's
    b, kvh, slen, hd = h.shape
    if n_rep == 1:
        return h
    h = h[:, :, None, :, :].expand(b, kvh, n_rep, slen, hd)
    return h.reshape(b, kvh * n_rep, slen, hd)


class Tiny(torch.nn.Module):
    def __init__(self, style):
        super().__init__()
        torch.manual_seed(7)
        self.style = style
        self.wte = torch.nn.Parameter(torch.randn(VOCAB, DIM) * 0.5)
        if style == "gpt2":
            self.wpe = torch.nn.Parameter(torch.randn(MAXPOS, DIM) * 0.5)
        else:
            self.head = torch.nn.Parameter(torch.randn(VOCAB, DIM) * 0.3)
            inv = 1.0 / (10000.0 ** (torch.arange(0, HD, 2).float() / HD))
            ang = torch.arange(MAXPOS).float()[:, None] * inv[None, :]
            ang = torch.cat([ang, ang], -1)
            self.register_buffer("cos", ang.cos())
            self.register_buffer("sin", ang.sin())
        self.blocks = torch.nn.ModuleList()
        for _ in range(LAYERS):
            b = torch.nn.Module()
            b.ln1 = torch.nn.LayerNorm(DIM)
            b.ln2 = torch.nn.LayerNorm(DIM)
            for n in ("q", "k", "v", "o"):
                out = DIM if n in ("q", "o") else kv_heads(style) * HD
                setattr(b, n, torch.nn.Linear(DIM, out, bias=style == "gpt2"))
            b.up = torch.nn.Linear(DIM, 4 * DIM)
            b.down = torch.nn.Linear(4 * DIM, DIM)
            with torch.no_grad():
                for p in b.parameters():
                    p.add_(torch.randn_like(p) * 0.1)
            self.blocks.append(b)
        self.lnf = torch.nn.LayerNorm(DIM)

    def heads(self, x):  # [B, S, H·hd] -> [B, H, S, hd]
        B, S, D = x.shape
        return x.view(B, S, D // HD, HD).transpose(1, 2)

    def rope(self, x, pos):  # x [B, H, S, hd], rotate-half form
        c, s = self.cos[pos].unsqueeze(1), self.sin[pos].unsqueeze(1)
        x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
        return x * c + torch.cat([-x2, x1], -1) * s

    def forward(self, input_ids, position_ids, *past):
        mask = None
        if self.style == "llama":  # (input_ids, attention_mask, position_ids, *past)
            mask, position_ids, past = position_ids, past[0], past[1:]
        x = self.wte[input_ids]
        if self.style == "gpt2":
            x = x + self.wpe[position_ids]
        present = []
        S = input_ids.shape[1]
        for i, b in enumerate(self.blocks):
            h = b.ln1(x)
            q, k, v = self.heads(b.q(h)), self.heads(b.k(h)), self.heads(b.v(h))
            if self.style != "gpt2":
                q, k = self.rope(q, position_ids), self.rope(k, position_ids)
            k = torch.cat([past[2 * i], k], 2)
            v = torch.cat([past[2 * i + 1], v], 2)
            present += [k, v]
            T = k.shape[2]
            if mask is not None:
                k, v = repeat_kv(k, HEADS // KV_HEADS), repeat_kv(v, HEADS // KV_HEADS)
            sc = q @ k.transpose(-1, -2) / math.sqrt(HD)
            causal = torch.ones(S, T, dtype=torch.bool).tril(T - S)
            if mask is None:
                sc = sc.masked_fill(~causal, float("-inf"))
            else:
                keep = causal[None, None, :, :] & mask[:, None, None, :].bool()
                bias = torch.zeros(keep.shape, dtype=sc.dtype)
                sc = sc + bias.masked_fill(~keep, torch.finfo(torch.float32).min)
            a = torch.softmax(sc, -1) @ v
            a = a.transpose(1, 2).reshape(x.shape)
            x = x + b.o(a)
            m = b.ln2(x)
            m = b.up(m)
            m = F.gelu(m) if self.style == "gpt2" else F.silu(m)
            x = x + b.down(m)
        x = self.lnf(x)
        head = self.wte if self.style == "gpt2" else self.head
        return (x @ head.T, *present)


def export(path, style):
    m = Tiny(style).eval()
    B, S, P = 1, 3, 2
    ids = torch.randint(0, VOCAB, (B, S))
    pos = torch.arange(P, P + S)[None, :]
    past = [torch.randn(B, kv_heads(style), P, HD) for _ in range(2 * LAYERS)]
    names_in = ["input_ids", "position_ids"]
    names_out = ["logits"]
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "position_ids": {0: "batch", 1: "seq"},
           "logits": {0: "batch", 1: "seq"}}
    if style == "llama":
        names_in = ["input_ids", "attention_mask", "position_ids"]
        dyn["attention_mask"] = {0: "batch", 1: "total_length"}
        past = [torch.ones(B, P + S, dtype=torch.long), pos] + past
        pos = None
    for i in range(LAYERS):
        for kv in ("key", "value"):
            pi, po = "past_key_values.%d.%s" % (i, kv), "present.%d.%s" % (i, kv)
            names_in.append(pi)
            names_out.append(po)
            dyn[pi] = {0: "batch", 2: "past_sequence_length"}
            dyn[po] = {0: "batch", 2: "total_length"}
    args = (ids, pos, *past) if pos is not None else (ids, *past)
    torch.onnx.export(m, args, path, input_names=names_in, output_names=names_out,
                      dynamic_axes=dyn, opset_version=14, do_constant_folding=True)


def rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def check(path, style, d, gen):
    m = Tiny(style).double().eval()
    tokens = torch.as_tensor(np.load(d + "/tokens.npy")).long()
    B, P = tokens.shape
    past = [torch.zeros(B, kv_heads(style), 0, HD, dtype=torch.float64)
            for _ in range(2 * LAYERS)]
    llama = style == "llama"
    bound = 2e-6 if llama else 1e-4
    if llama:
        pos = torch.as_tensor(np.load(d + "/positions.npy")).long()
        keep = torch.as_tensor(np.load(d + "/attention_mask.npy")).long()
        mask = keep
    worst, ok = 0.0, True
    with torch.no_grad():
        ids, start = tokens, 0
        for step in range(gen + 1):
            S = ids.shape[1]
            if llama:
                if step > 0:
                    pos = pos[:, -1:] + 1
                    mask = torch.cat([mask, torch.ones(B, 1, dtype=torch.long)], 1)
                out = m(ids, mask, pos, *past)
            else:
                pos = torch.arange(start, start + S)[None, :].expand(B, S)
                out = m(ids, pos, *past)
            logits, past = out[0].numpy(), list(out[1:])
            name = "logits_prefill.npy" if step == 0 else "logits_decode_%d.npy" % (step - 1)
            theirs = np.load(d + "/" + name).reshape(logits.shape)
            if llama and step == 0:  # the tokens' rows only
                rows = keep.numpy().astype(bool)
                r = rel(theirs[rows], logits[rows])
            else:
                r = rel(theirs, logits)
            worst = max(worst, r)
            if r > bound:
                print("%s: %s differs by %.3g relative" % (path, name, r))
                ok = False
            start += S
            ids = torch.as_tensor(theirs[:, -1, :].argmax(-1))[:, None]
    print("%s (%s): %d passes, worst relative difference %.3g" % (path, style, gen + 1, worst))
    return ok


if __name__ == "__main__":
    a = sys.argv[2:]
    if sys.argv[1] == "export":
        for i in range(0, len(a), 2):
            export(a[i], a[i + 1])
    else:
        ok = [check(a[i], a[i + 1], a[i + 2], int(a[i + 3])) for i in range(0, len(a), 4)]
        sys.exit(0 if all(ok) else 1)
