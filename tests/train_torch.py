"""Build the end-to-end training cases of test_train_cli.sh and
test_train_torchvision.sh with PyTorch, and compare ntprof's weights.

usage: train_torch.py DIR
       train_torch.py DIR torchvision
       train_torch.py compare DIR CASE...

Writes, for a small CNN (conv, batch norm, relu, max pool, grouped conv,
global average pool, linear; cross-entropy), an MLP (linear, tanh,
linear, sigmoid, linear; mse), a recurrent net (bidirectional GRU, ReLU
RNN, linear; CTC) and a reduced DeepSpeech (three clipped-ReLU linears, a
bidirectional LSTM, two linears into 29 classes; CTC, blank 28):
  DIR/<case>.onnx            the untrained model (batch norm kept:
                             training-mode export)
  DIR/<case>-x.npy, -y.npy   the input and the labels
  DIR/<case>-<opt>/<name>.npy  PyTorch's weights after training: one SGD
                             step (lr 0.1) and three Adam steps (lr 0.01),
                             batch norm in training mode

With `torchvision`, the cases are torchvision's ResNet-18 and MobileNetV2
(10 classes, 32 x 32 inputs, batch 4 and 8; MobileNetV2's classifier dropout
left out, as p = 0 would make it, since ONNX's training-mode Dropout is
not imported), trained by PyTorch in float64: at f32, PyTorch's own
weights after one step of these deep nets already differ from its float64
ones by more than 1e-4 (measured on ResNet-18 at 2 x 3 x 64 x 64: 1.5e-4
beyond the bound, where ntprof's double engine matched float64 within it).
Adam takes lr 0.001 (PyTorch's default) here: at 0.01 three steps of
these nets at batch 4 are chaotic (batch norm over 4 values at 1 x 1):
moving batch norm's epsilon by 2.6e-13 relative moved MobileNetV2's
weights by 2%.

`compare` checks DIR/got-<case>-<opt>/ (what ntprof saved) against
DIR/<case>-<opt>/: every weight and running statistic within 1e-4
relative (+1e-7); exit 0 when all agree, 1 otherwise.
"""
import copy
import importlib.util
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
    torch.manual_seed(1)
    yield "rnn", RecurrentNet(), torch.randn(7, 2, 3), ctc_labels([[1, 1, 3], [2]]), ctc_loss
    # Per-sequence lengths: input lengths 5 and 7 of T 7, labels padded with
    # symbols (not -1) past the target lengths 2 and 3.
    torch.manual_seed(3)
    yield "rnnvar", RecurrentNet(), torch.randn(7, 2, 3), VAR_LABELS, ctc_loss_varied
    torch.manual_seed(2)
    yield "speech", SpeechNet(), torch.randn(9, 2, 10), ctc_labels([[5, 5, 0, 27], [8, 1]]), ctc_loss


VAR_LABELS = torch.tensor([[3, 3, 0, 1], [1, 2, 2, 0]], dtype=torch.int64)
VAR_LENGTHS = {"il": np.array([5, 7], dtype=np.int64), "tl": np.array([2, 3], dtype=np.int32)}


def ctc_loss_varied(out, y):
    """As ctc_loss with VAR_LENGTHS' input and target lengths."""
    return nn.functional.ctc_loss(out.log_softmax(2), y, torch.from_numpy(VAR_LENGTHS["il"]),
                                  torch.from_numpy(VAR_LENGTHS["tl"]).long(), blank=out.shape[2] - 1)


def ctc_labels(rows):
    """Labels [N, S] as ntprof reads them: -1 after each sequence."""
    S = max(len(r) for r in rows)
    return torch.tensor([r + [-1] * (S - len(r)) for r in rows], dtype=torch.int64)


def ctc_loss(out, y):
    """torch.nn.CTCLoss's defaults on [T, N, C] logits, blank the last class."""
    T, N, C = out.shape
    return nn.functional.ctc_loss(out.log_softmax(2), y.clamp(min=0), torch.full((N,), T),
                                  (y >= 0).sum(1), blank=C - 1)


def torchvision_cases():
    import torchvision
    torch.manual_seed(0)
    x = torch.randn(4, 3, 32, 32)
    y = torch.tensor([3, 7, 0, 9], dtype=torch.int64)
    yield "resnet18", torchvision.models.resnet18(num_classes=10), x, y, nn.CrossEntropyLoss()
    # Batch 8: at batch 4 its last batch norms (over 4 values at 1 x 1)
    # leave three Adam steps 2.2e-7 past the bound.
    m = torchvision.models.mobilenet_v2(num_classes=10)
    m.classifier[0] = nn.Identity()
    x = torch.randn(8, 3, 32, 32)
    y = torch.tensor([3, 7, 0, 9, 1, 2, 5, 4], dtype=torch.int64)
    yield "mobilenetv2", m, x, y, nn.CrossEntropyLoss()



def compare(d, names):
    bad = 0
    for name in names:  # CASE (both optimizers) or CASE:OPT
        case, _, one = name.partition(":")
        for opt in [one] if one else ("sgd", "adam"):
            want = os.path.join(d, case + "-" + opt)
            got = os.path.join(d, "got-" + case + "-" + opt)
            files = sorted(os.listdir(want))
            assert len(files) >= 6, files
            for f in files:
                a, b = np.load(os.path.join(want, f)), np.load(os.path.join(got, f))
                assert a.shape == b.shape, (case, opt, f, a.shape, b.shape)
                err = np.abs(a - b) - 1e-4 * np.abs(a) - 1e-7
                if err.max() > 0:
                    print("%s %s %s: differs by %.3g, largest value %.3g"
                          % (case, opt, f, np.abs(a - b).max(), np.abs(a).max()))
                    bad += 1
    return 1 if bad else 0


def rows(x, f):
    """A linear layer on [T, N, F] as a 2-d Gemm (its weight keeps its
    name in the ONNX file) between two reshapes."""
    T, N, _ = x.shape
    y = f(x.reshape(T * N, -1))
    return y.reshape(T, N, -1)


class RecurrentNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 4, bidirectional=True)
        self.rnn = nn.RNN(8, 3, nonlinearity="relu")
        self.out = nn.Linear(3, 5)

    def forward(self, x):
        y, _ = self.gru(x)
        y, _ = self.rnn(y)
        return rows(y, self.out)


class SpeechNet(nn.Module):
    def __init__(self, F=10, H=6, C=29):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(F, H), nn.Linear(H, H), nn.Linear(H, H)
        self.lstm = nn.LSTM(H, H, bidirectional=True)
        self.fc4, self.fc5 = nn.Linear(2 * H, H), nn.Linear(H, C)

    def forward(self, x):
        clip = nn.functional.hardtanh
        y = rows(x, lambda v: clip(self.fc3(clip(self.fc2(clip(self.fc1(v), 0, 20)), 0, 20)), 0, 20))
        y, _ = self.lstm(y)
        return rows(y, lambda v: self.fc5(clip(self.fc4(v), 0, 20)))


# Gate blocks in ONNX's order, from PyTorch's (LSTM i f g o -> i o f c;
# GRU r z n -> z r h).
GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN": [0]}


def onnx_names(path, model):
    """{ONNX initializer name: PyTorch state_dict key or a recurrent weight
    in ONNX's layout} for the file's recurrent layers' W, R and B."""
    import onnx
    import onnx.numpy_helper
    m = onnx.load(path)
    mods = [mod for mod in model.modules() if isinstance(mod, (nn.LSTM, nn.GRU, nn.RNN))]
    nodes = [n for n in m.graph.node if n.op_type in GATES]
    assert len(nodes) == len(mods), (len(nodes), len(mods))
    # The layout is checked on the untrained weights the file holds.
    init = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    for n, mod in zip(nodes, mods):
        for f, v in zip(n.input[1:4], onnx_layout(n.op_type, mod)):
            assert np.array_equal(init[f], v.detach().numpy()), (n.op_type, f)
    return [(n.op_type, n.input[1], n.input[2], n.input[3], mod) for n, mod in zip(nodes, mods)]


def onnx_layout(kind, mod):
    """W, R and B of a PyTorch recurrent layer as ONNX lays them out."""
    def reorder(t):
        k = len(GATES[kind])
        return torch.cat([t.chunk(k, 0)[i] for i in GATES[kind]], 0)
    sfx = [""] + (["_reverse"] if mod.bidirectional else [])
    W = torch.stack([reorder(getattr(mod, "weight_ih_l0" + s)) for s in sfx])
    R = torch.stack([reorder(getattr(mod, "weight_hh_l0" + s)) for s in sfx])
    B = torch.stack([torch.cat([reorder(getattr(mod, "bias_ih_l0" + s)),
                                reorder(getattr(mod, "bias_hh_l0" + s))]) for s in sfx])
    return W, R, B


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3:]))
    out = sys.argv[1]
    if len(sys.argv) == 3 and sys.argv[2] == "torchvision":
        if importlib.util.find_spec("torchvision") is None:
            print("torchvision is not importable: skipped")
            sys.exit(77)
        train(out, torchvision_cases(), torch.float64, 0.001)
        return
    # Labels the CLI must refuse: a class out of range, the wrong shape.
    np.save(os.path.join(out, "bad-range.npy"), np.array([0, 1, 9, 2]))
    np.save(os.path.join(out, "bad-shape.npy"), np.array([0, 1]))
    # CTC labels the CLI must refuse (rnn: T 7, 5 classes): the blank as a
    # symbol, a sequence that needs more frames than there are.
    np.save(os.path.join(out, "ctc-blank.npy"), np.array([[1, 2], [4, -1]]))
    np.save(os.path.join(out, "ctc-long.npy"), np.array([[1, 1, 1, 1, 2], [2, -1, -1, -1, -1]]))
    # Lengths the CLI must refuse: 8 frames of T 7 (and 8 symbols of 4
    # columns); 2 frames for [3, 3], which needs 3.
    np.save(os.path.join(out, "ctc-il-long.npy"), np.array([8, 7]))
    np.save(os.path.join(out, "ctc-il-short.npy"), np.array([2, 7]))
    train(out, cases(), torch.float32, 0.01)


def train(out, all_cases, dtype, adam_lr):
    """Export each case, then train copies of it in dtype (one SGD step of
    lr 0.1, three Adam steps of adam_lr) and save their weights as f32."""
    for name, model, x, y, loss_fn in all_cases:
        # Exported in training mode so that batch norm stays a layer of its
        # own (an eval export folds it into the convolution); from a copy,
        # since tracing runs the model and moves its running statistics.
        exported = copy.deepcopy(model)
        exported.train()
        recurrent = name in ("rnn", "rnnvar", "speech")
        # The recurrent layers' gates are reordered for ONNX: constant
        # folding makes that new initializers, with no batch norm to keep.
        torch.onnx.export(exported, x, os.path.join(out, name + ".onnx"), input_names=["x"],
                          output_names=["out"], do_constant_folding=recurrent, opset_version=13,
                          training=torch.onnx.TrainingMode.EVAL if recurrent
                          else torch.onnx.TrainingMode.TRAINING)
        model.load_state_dict(exported.state_dict())  # the statistics the file holds
        np.save(os.path.join(out, name + "-x.npy"), x.numpy())
        np.save(os.path.join(out, name + "-y.npy"), y.numpy())
        if name == "rnnvar":
            for k, v in VAR_LENGTHS.items():
                np.save(os.path.join(out, name + "-" + k + ".npy"), v)
        for opt_name, make, steps in (
            ("sgd", lambda p: torch.optim.SGD(p, lr=0.1), 1),
            ("adam", lambda p: torch.optim.Adam(p, lr=adam_lr), 3),
        ):
            m = copy.deepcopy(model).to(dtype)
            m.train()
            opt = make(m.parameters())
            for _ in range(steps):
                opt.zero_grad()
                loss_fn(m(x.to(dtype)), y).backward()
                opt.step()
            d = os.path.join(out, name + "-" + opt_name)
            os.makedirs(d, exist_ok=True)
            for k, v in m.state_dict().items():
                if v.is_floating_point() and "_l0" not in k:
                    np.save(os.path.join(d, k + ".npy"), v.detach().float().numpy())
            if recurrent:
                for kind, wn, rn, bn, mod in onnx_names(os.path.join(out, name + ".onnx"), model):
                    mod_after = dict(m.named_modules())[
                        [k for k, v in model.named_modules() if v is mod][0]]
                    for f, v in zip((wn, rn, bn), onnx_layout(kind, mod_after)):
                        f = f.replace("/", "_")
                        np.save(os.path.join(d, f + ".npy"), v.detach().numpy())


main()
