#!/usr/bin/python3
"""The training speed comparison of issue 17 (docs/train.md), both sides
in one run, interleaved: each round runs `ntprof train ... --backend onednn`
(one process, STEPS steps, its median step) and the same step on PyTorch
(the model built once, STEPS steps, their median), the order alternating
from round to round, so that a change in the machine's load hits both
alike. Both sides get THREADS threads and plain SGD (lr 0.01), f32.

  resnet50    ntprof train models/resnet50.xml --batch B (cross-entropy)
              against torchvision.models.resnet50() in train mode with
              nn.CrossEntropyLoss, input [B, 3, 224, 224], 1000 classes;
              --resnet-blocks and --classes shrink both alike (ntprof's
              blocks1..4 and classes params, torchvision's ResNet(Bottleneck,
              blocks, num_classes)) for a smoke run.
  deepspeech  ntprof train models/deepspeech.xml --loss ctc --batch B
              against bench/pytorch_bench.py's DeepSpeech (fc1-3 clipped
              ReLU, bidirectional LSTM, fc4, fc5; time-major) with
              log_softmax and nn.CTCLoss(blank=28), labels of T/4 symbols
              and full input lengths. ntprof's step also runs its MFCC
              front end (forward only, on the audio); PyTorch's is fed the
              494 features: the MFCC's median is printed beside each round,
              and the ratio without it is printed too.

Per round: each side's samples/s (batch / median step) and the ratio
ntprof / PyTorch (above 1: ntprof faster); at the end, per model, the median
of the per-round ratios with a distribution-free 95% interval (6 rounds at
least; interleave.py). ntprof's first step builds oneDNN's primitives, so
use 3 steps or more: the median then excludes it; PyTorch's side runs one
warm-up step before the first round.

Usage: train_torch_compare.py NTPROF [--rounds R] [--steps S] [--threads T]
          [--models resnet50,deepspeech] [--resnet-batch 16]
          [--resnet-blocks 3,4,6,3] [--classes 1000] [--deepspeech-batch 4]
          [--n-hidden 2048] [--time-steps 200] [--heap kept|default]
Exit 0, 2 on bad usage, 77 without torch/torchvision.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from interleave import keep_heap, verdict

if __name__ == "__main__":
    keep_heap(sys.argv)

try:
    import torch
    import torch.nn as nn
    import torchvision
    from torchvision.models.resnet import Bottleneck, ResNet
except ImportError as e:
    print("skip: %s" % e)
    sys.exit(77)

from pytorch_bench import DeepSpeech  # noqa: E402 (after the skip)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def ntprof_round(exe, args):
    """One `ntprof train` process: (median step ms, its JSON)."""
    cmd = [exe, "train"] + args + ["-f", "json"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode())
        raise SystemExit("%s failed (exit %d)" % (" ".join(cmd), r.returncode))
    d = json.loads(r.stdout)
    return d["step_ms"]["median"], d


def torch_steps(model, loss_fn, inputs, target, steps):
    """`steps` SGD steps (zero_grad, forward, loss, backward, step): the
    median step in ms."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model.train()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(*inputs), target)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


class Case:
    """One model on both sides: ntprof's arguments, PyTorch's model, input,
    loss and target."""

    def __init__(self, name, batch, nt_args, model, inputs, loss_fn, target, note=None):
        self.name, self.batch, self.nt_args = name, batch, nt_args
        self.model, self.inputs, self.loss_fn, self.target = model, inputs, loss_fn, target
        self.note = note  # f(ntprof JSON) -> ms of ntprof's step that PyTorch does not run


def resnet_case(a):
    blocks = [int(b) for b in a.resnet_blocks.split(",")]
    if len(blocks) != 4:
        raise SystemExit("--resnet-blocks expects four counts, got %s" % a.resnet_blocks)
    if blocks == [3, 4, 6, 3] and a.classes == 1000:
        model = torchvision.models.resnet50()
    else:
        model = ResNet(Bottleneck, blocks, num_classes=a.classes)
    B = a.resnet_batch
    args = [os.path.join(SRC, "models", "resnet50.xml"), "--batch", str(B), "--set",
            "classes=%d" % a.classes]
    for i, b in enumerate(blocks):
        args += ["--set", "blocks%d=%d" % (i + 1, b)]
    return Case("resnet50", B, args, model, (torch.randn(B, 3, 224, 224),), nn.CrossEntropyLoss(),
                torch.randint(0, a.classes, (B,)))


def deepspeech_case(a):
    B, T, H = a.deepspeech_batch, a.time_steps, a.n_hidden
    model = DeepSpeech(n_hidden=H)
    ctc = nn.CTCLoss(blank=28)
    S = max(1, T // 4)

    def loss_fn(out, target):
        lp = out.log_softmax(2)
        return ctc(lp, target, torch.full((B,), T, dtype=torch.long),
                   torch.full((B,), S, dtype=torch.long))

    def mfcc_ms(d):
        return sum(l["forward"]["median"] for l in d["layers"] if l["type"] == "mfcc")

    args = [os.path.join(SRC, "models", "deepspeech.xml"), "--loss", "ctc", "--batch", str(B),
            "--set", "n_hidden=%d" % H, "--set", "time_steps=%d" % T]
    return Case("deepspeech", B, args, model, (torch.randn(T, B, 494),), loss_fn,
                torch.randint(0, 28, (B, S)), mfcc_ms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ntprof")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="resnet50,deepspeech")
    ap.add_argument("--resnet-batch", type=int, default=16)
    ap.add_argument("--resnet-blocks", default="3,4,6,3")
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--deepspeech-batch", type=int, default=4)
    ap.add_argument("--n-hidden", type=int, default=2048)
    ap.add_argument("--time-steps", type=int, default=200)
    ap.add_argument("--heap", choices=("kept", "default"), default="kept")
    a = ap.parse_args()
    if a.rounds < 1 or a.steps < 1 or a.threads < 1:
        ap.error("--rounds, --steps and --threads take positive counts")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    build = {"resnet50": resnet_case, "deepspeech": deepspeech_case}
    names = a.models.split(",")
    if any(n not in build for n in names):
        ap.error("--models takes resnet50 and/or deepspeech, got %s" % a.models)
    cases = [build[n](a) for n in names]
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[0]
    print("training step, f32, SGD, %d threads, %d steps a round; torch %s, torchvision %s; "
          "ntprof train --backend onednn; load average %s"
          % (a.threads, a.steps, torch.__version__, torchvision.__version__, load0))
    for c in cases:
        torch_steps(c.model, c.loss_fn, c.inputs, c.target, 1)  # warm-up
    ratios = {c.name: [] for c in cases}
    bare = {c.name: [] for c in cases}
    print("%-11s %5s %12s %12s %8s %s" % ("model", "round", "ntprof smp/s", "torch smp/s",
                                          "ratio", "(ntprof layers on oneDNN / ref: forward; backward)"))
    for r in range(a.rounds):
        for c in cases:
            nt_args = c.nt_args + ["--backend", "onednn", "--threads", str(a.threads),
                                   "--optimizer", "sgd", "--lr", "0.01", "--steps", str(a.steps)]
            if r % 2 == 0:
                nt_ms, d = ntprof_round(a.ntprof, nt_args)
                pt_ms = torch_steps(c.model, c.loss_fn, c.inputs, c.target, a.steps)
            else:
                pt_ms = torch_steps(c.model, c.loss_fn, c.inputs, c.target, a.steps)
                nt_ms, d = ntprof_round(a.ntprof, nt_args)
            ratios[c.name].append(pt_ms / nt_ms)
            by = [l.get("backward_by") for l in d["layers"]]
            fby = [l.get("forward_by") for l in d["layers"]]
            extra = ""
            if c.note:
                pre = c.note(d)
                bare[c.name].append(pt_ms / max(nt_ms - pre, 1e-9))
                extra = ", MFCC forward %.1f ms of %.1f" % (pre, nt_ms)
            print("%-11s %5d %12.3f %12.3f %8.3f (%d / %d; %d / %d%s)"
                  % (c.name, r + 1, c.batch * 1000.0 / nt_ms, c.batch * 1000.0 / pt_ms,
                     ratios[c.name][-1], fby.count("onednn"), fby.count("ref"),
                     by.count("onednn"), by.count("ref"), extra), flush=True)
    for c in cases:
        print(verdict("%s samples/s, ntprof / PyTorch" % c.name, ratios[c.name]))
        if bare[c.name]:
            print(verdict("%s without ntprof's MFCC forward" % c.name, bare[c.name]))
    with open("/proc/loadavg") as f:
        print("load average after: %s" % f.read().split()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
