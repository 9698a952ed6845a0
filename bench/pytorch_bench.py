#!/usr/bin/python3
"""PyTorch side of bench/bench_frameworks.c: the same architectures as
ntprof's bundled models, timed the same way (warm-up, then the median of N
end-to-end passes), so the two frameworks are compared side by side.

  resnet50     torchvision.models.resnet50(), batch 1, 3x224x224
  mobilenetv2  torchvision.models.mobilenet_v2(), batch 1, 3x224x224
  bert         BERT-base: word/position/token-type embeddings, LayerNorm
               (eps 1e-12), 12 post-norm TransformerEncoderLayer(768, 12,
               3072, gelu, batch_first), sequence 128, batch 1
  deepspeech   DeepSpeech's acoustic model without MFCC and CTC (the bench
               times the same layers on ntprof): fc 494->2048, 2048->2048,
               2048->2048 with ReLU clipped at 20, a bidirectional LSTM of 2048
               per direction, fc 4096->2048 clipped, fc 2048->29; 200 steps,
               batch 1, time-major

Weights are random (timing does not depend on their values). bf16 runs use
torch.autocast('cpu', dtype=torch.bfloat16), PyTorch's own mixed-precision
path. Prints one line per run:  RESULT <model> <precision> <median ms>
and, for a model it cannot run, RESULT <model> <precision> n/a <reason>.
--heap default runs under glibc's default malloc settings (see interleave.HEAP_KEPT).
"""
import argparse
import statistics
import sys
import time

from interleave import keep_heap

# PyTorch's timings keep freed memory in the process (interleave.HEAP_KEPT
# says why); --heap default runs under glibc's own settings. The bench's
# importers (train_torch_compare.py) choose for themselves.
if __name__ == "__main__":
    keep_heap(sys.argv)

try:
    import torch
    import torch.nn as nn
except ImportError:  # the C bench prints "PyTorch: n/a"
    print("PYTORCH n/a (python3-torch not installed)")
    sys.exit(0)


class ClippedReLU(nn.Module):
    def forward(self, x):
        return torch.clamp(x, 0.0, 20.0)


class DeepSpeech(nn.Module):
    def __init__(self, n_input=494, n_hidden=2048, n_classes=29):
        super().__init__()
        self.fc1 = nn.Linear(n_input, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_hidden)
        self.fc3 = nn.Linear(n_hidden, n_hidden)
        self.lstm = nn.LSTM(n_hidden, n_hidden, bidirectional=True)
        self.fc4 = nn.Linear(2 * n_hidden, n_hidden)
        self.fc5 = nn.Linear(n_hidden, n_classes)
        self.act = ClippedReLU()

    def forward(self, x):  # x: [T, N, 494]
        x = self.act(self.fc1(x))
        x = self.act(self.fc2(x))
        x = self.act(self.fc3(x))
        x, _ = self.lstm(x)
        x = self.act(self.fc4(x))
        return self.fc5(x)


class Bert(nn.Module):
    def __init__(self, vocab=30522, d=768, heads=12, ff=3072, layers=12, max_pos=512):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(max_pos, d)
        self.token_type = nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu",
                                           batch_first=True, layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids, types, positions):
        x = self.word(ids) + self.position(positions) + self.token_type(types)
        x = self.dropout(self.norm(x))
        return self.encoder(x)


def build(name, seq_len, precision):
    if name in ("resnet50", "mobilenetv2"):
        import torchvision
        m = torchvision.models.resnet50() if name == "resnet50" else torchvision.models.mobilenet_v2()
        return m, (torch.randn(1, 3, 224, 224),)
    if name == "bert":
        ids = torch.randint(0, 30522, (1, seq_len))
        m = Bert()
        if precision == "bf16":
            # PyTorch 1.13's fused encoder fast path
            # (torch._transformer_encoder_layer_fwd) fails under CPU
            # autocast ("expected scalar type BFloat16 but found Float"):
            # bf16 takes the layer's ordinary path, which autocast handles.
            for layer in m.encoder.layers:
                layer.activation_relu_or_gelu = False
        return m, (ids, torch.zeros_like(ids), torch.arange(seq_len).unsqueeze(0))
    if name == "deepspeech":
        return DeepSpeech(), (torch.randn(200, 1, 494),)
    raise ValueError(name)


def time_model(model, inputs, precision, warmup, iters):
    model.eval()
    times = []
    with torch.inference_mode():
        ctx = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16"
               else torch.autocast("cpu", enabled=False))
        with ctx:
            for _ in range(warmup):
                model(*inputs)
            for _ in range(iters):
                t0 = time.perf_counter()
                model(*inputs)
                times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--models", default="resnet50,mobilenetv2,bert,deepspeech")
    ap.add_argument("--precisions", default="f32,bf16")
    ap.add_argument("--heap", choices=("kept", "default"), default="kept",
                    help="kept: glibc malloc keeps freed memory (see interleave.HEAP_KEPT); "
                    "default: glibc's own settings")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    print("PYTORCH %s threads %d mkldnn %s heap %s" % (torch.__version__, torch.get_num_threads(),
                                                       torch.backends.mkldnn.is_available(),
                                                       a.heap), flush=True)
    for name in a.models.split(","):
        for p in a.precisions.split(","):
            try:
                torch.manual_seed(0)
                model, inputs = build(name, a.seq_len, p)
                ms = time_model(model, inputs, p, a.warmup, a.iterations)
                print("RESULT %s %s %.3f" % (name, p, ms), flush=True)
            except Exception as e:
                print("RESULT %s %s n/a %s" % (name, p, str(e).replace("\n", " ")), flush=True)


if __name__ == "__main__":
    main()
