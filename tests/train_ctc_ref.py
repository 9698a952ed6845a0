"""The CTC loss and its gradient from torch.nn.CTCLoss in float64, the
truth test_train_grad.c's test_ctc holds (run with /usr/bin/python3; it
prints the loss, then the gradient on the logits [T*N, C]).

Logits x[t][n][c] = 2 sin(1.3 t + 0.7 n + 0.37 c), T 6, C 4, blank 3,
reduction "mean".
- usage `train_ctc_ref.py`: N 2, labels [1, 1, 2] and [0], every input
  length T.
- usage `train_ctc_ref.py varied`: N 3, labels [1, 1, 2], [0] and [2, 0]
  with input lengths 4 (exactly the frames [1, 1, 2] needs), 6 and 5.
"""
import math, sys, torch
varied = len(sys.argv) > 1 and sys.argv[1] == "varied"
T, N, C = 6, 3 if varied else 2, 4
x = torch.tensor([[[2.0 * math.sin(1.3 * t + 0.7 * n + 0.37 * c) for c in range(C)] for n in range(N)] for t in range(T)], dtype=torch.float64, requires_grad=True)
if varied:
    targets = torch.tensor([[1, 1, 2], [0, 0, 0], [2, 0, 0]], dtype=torch.int64)
    tl = torch.tensor([3, 1, 2]); il = torch.tensor([4, T, 5])
else:
    targets = torch.tensor([[1, 1, 2], [0, 0, 0]], dtype=torch.int64)
    tl = torch.tensor([3, 1]); il = torch.tensor([T, T])
loss = torch.nn.CTCLoss(blank=C - 1)(x.log_softmax(2), targets, il, tl)
loss.backward()
print(repr(loss.item()))
print(",\n".join(", ".join(repr(v) for v in row) for row in x.grad.reshape(-1, C).tolist()))
