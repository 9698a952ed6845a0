#!/usr/bin/python3
"""Export torchvision's ResNet-50 (random weights) to ONNX for bench_onnx_load.

Usage: /usr/bin/python3 export_resnet50.py OUT.onnx
Needs Debian's python3-torch and python3-torchvision (scripts/deps.sh bench).
The model is written at bench time into a temporary directory and never
committed: it is ~100 MB.
"""
import sys

import torch
import torchvision


def main():
    torch.manual_seed(0)
    model = torchvision.models.resnet50().eval()
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, x, sys.argv[1], opset_version=13, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "batch"}})


if __name__ == "__main__":
    main()
