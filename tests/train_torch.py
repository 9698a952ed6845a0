"""Build the end-to-end training cases of test_train_torch.sh with PyTorch.

usage: train_torch.py DIR

Writes, for a small CNN (conv, batch norm, relu, max pool, grouped conv,
global average pool, linear; cross-entropy) and an MLP (linear, tanh,
linear, sigmoid, linear; mse):
  DIR/<case>.onnx            the untrained model (batch norm kept:
                             training-mode export)
  DIR/<case>-x.npy, -y.npy   the input and the labels
  DIR/<case>-<opt>/<name>.npy  PyTorch's weights after training: one SGD
                             step (lr 0.1) and three Adam steps (lr 0.01),
                             batch norm in training mode
"""
import copy
import os
import sys

import numpy as np

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("PyTorch is not importable: skipped")
    sys.exit(77)


def cases():
    torch.manual_seed(0)
    cnn = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1, bias=False),  # batch norm follows: no bias
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, padding=1, groups=2, bias=False),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(6, 5),
    )
    x = torch.randn(4, 3, 8, 8)
    y = torch.tensor([0, 3, 4, 1], dtype=torch.int64)
    yield "cnn", cnn, x, y, nn.CrossEntropyLoss()
    mlp = nn.Sequential(
        nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 8), nn.Sigmoid(), nn.Linear(8, 3)
    )
    x = torch.randn(5, 6)
    y = torch.randn(5, 3)
    yield "mlp", mlp, x, y, nn.MSELoss()


def main():
    out = sys.argv[1]
    # Labels the CLI must refuse: a class out of range, the wrong shape.
    np.save(os.path.join(out, "bad-range.npy"), np.array([0, 1, 9, 2]))
    np.save(os.path.join(out, "bad-shape.npy"), np.array([0, 1]))
    for name, model, x, y, loss_fn in cases():
        # Exported in training mode so that batch norm stays a layer of its
        # own (an eval export folds it into the convolution); from a copy,
        # since tracing runs the model and moves its running statistics.
        exported = copy.deepcopy(model)
        exported.train()
        torch.onnx.export(exported, x, os.path.join(out, name + ".onnx"), input_names=["x"],
                          output_names=["out"], do_constant_folding=False, opset_version=13,
                          training=torch.onnx.TrainingMode.TRAINING)
        model.load_state_dict(exported.state_dict())  # the statistics the file holds
        np.save(os.path.join(out, name + "-x.npy"), x.numpy())
        np.save(os.path.join(out, name + "-y.npy"), y.numpy())
        for opt_name, make, steps in (
            ("sgd", lambda p: torch.optim.SGD(p, lr=0.1), 1),
            ("adam", lambda p: torch.optim.Adam(p, lr=0.01), 3),
        ):
            m = copy.deepcopy(model)
            m.train()
            opt = make(m.parameters())
            for _ in range(steps):
                opt.zero_grad()
                loss_fn(m(x), y).backward()
                opt.step()
            d = os.path.join(out, name + "-" + opt_name)
            os.makedirs(d, exist_ok=True)
            for k, v in m.state_dict().items():
                if v.dtype == torch.float32:
                    np.save(os.path.join(d, k + ".npy"), v.detach().numpy())


main()
