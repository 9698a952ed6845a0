#!/usr/bin/python3
"""PyTorch side of bench/bench_cuda.c: the same architectures as ntprof's
models on the same GPU, timed the same way (warm-up, then the median of N
passes, each timed with CUDA events around the forward pass).

  resnet50    ResNet-50 v1.5 (stride on the 3x3 convolution of each
              downsampling bottleneck, as torchvision and models/resnet50.xml),
              3x224x224
  bert        BERT-base: word/position/token-type embeddings, LayerNorm
              (eps 1e-12), 12 post-norm TransformerEncoderLayer(768, 12,
              3072, gelu, batch_first), sequence 128
  deepspeech  DeepSpeech's acoustic model without MFCC and CTC: fc 494->2048,
              2048->2048, 2048->2048 clipped at 20, bidirectional LSTM 2048,
              fc 4096->2048 clipped, fc 2048->29; 200 steps, time-major

Inputs are on the device before timing and the output stays there (ntprof's
"network" figure leaves out its copy rows to match). f32 is IEEE f32
(allow_tf32 off for cuDNN and cuBLAS, as ntprof's f32); f16 and bf16 convert
the model and inputs (model.to(dtype)), as ntprof stores those types.
cudnn.benchmark is on: ntprof also measures cuDNN's algorithms at prepare.
Weights are random. Prints "PYTORCH <version> ..." then one line per run:
  RESULT <model> <batch> <precision> <median ms>
or RESULT <model> <batch> <precision> n/a <reason>.
"""
import argparse
import os
import statistics
import sys

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("PYTORCH n/a (python3-torch not installed)")
    sys.exit(0)

# BERT-base and DeepSpeech's network are the CPU bench's, so both benches
# time the same architectures.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_bench import Bert, DeepSpeech  # noqa: E402


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + (self.down(x) if self.down is not None else x))


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def build(name, batch, precision, dev, seq_len):
    dt = DTYPES[precision]
    if name == "resnet50":
        return ResNet50(), (torch.randn(batch, 3, 224, 224, device=dev, dtype=dt),)
    if name == "bert":
        ids = torch.randint(0, 30522, (batch, seq_len), device=dev)
        pos = torch.arange(seq_len, device=dev).unsqueeze(0).expand(batch, seq_len)
        return Bert(), (ids, torch.zeros_like(ids), pos)
    if name == "deepspeech":
        return DeepSpeech(), (torch.randn(200, batch, 494, device=dev, dtype=dt),)
    raise ValueError(name)


def time_model(model, inputs, warmup, iters):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    with torch.inference_mode():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        for _ in range(iters):
            start.record()
            model(*inputs)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--models", default="resnet50,bert,deepspeech")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--precisions", default="f32,f16,bf16")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("PYTORCH %s n/a (no CUDA device or a CPU-only build)" % torch.__version__)
        return
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    print("PYTORCH %s cuda %s cudnn %s on %s" % (torch.__version__, torch.version.cuda,
                                                 torch.backends.cudnn.version(),
                                                 torch.cuda.get_device_name(0)), flush=True)
    for name in a.models.split(","):
        for batch in (int(b) for b in a.batches.split(",")):
            for p in a.precisions.split(","):
                try:
                    torch.manual_seed(0)
                    model, inputs = build(name, batch, p, dev, a.seq_len)
                    model = model.to(dev, DTYPES[p]).eval()
                    ms = time_model(model, inputs, a.warmup, a.iterations)
                    print("RESULT %s %d %s %.3f" % (name, batch, p, ms), flush=True)
                except Exception as e:  # one model failing must not hide the others
                    print("RESULT %s %d %s n/a %s" % (name, batch, p, str(e).replace("\n", " ")),
                          flush=True)
                finally:
                    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
