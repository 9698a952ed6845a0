"""The CTC loss and its gradient from torch.nn.CTCLoss in float64, the
truth test_train_grad.c's test_ctc holds (run with /usr/bin/python3; it
prints the loss, then the gradient on the logits [T*N, C]).

Logits x[t][n][c] = 2 sin(1.3 t + 0.7 n + 0.37 c), T 6, N 2, C 4, blank 3,
labels [1, 1, 2] and [0], every input length T, reduction "mean".
"""
import math, torch
T, N, C = 6, 2, 4
x = torch.tensor([[[2.0 * math.sin(1.3 * t + 0.7 * n + 0.37 * c) for c in range(C)] for n in range(N)] for t in range(T)], dtype=torch.float64, requires_grad=True)
targets = torch.tensor([[1, 1, 2], [0, 0, 0]], dtype=torch.int64)
tl = torch.tensor([3, 1]); il = torch.tensor([T, T])
loss = torch.nn.CTCLoss(blank=C - 1)(x.log_softmax(2), targets, il, tl)
loss.backward()
print(repr(loss.item()))
print(",\n".join(", ".join(repr(v) for v in row) for row in x.grad.reshape(-1, C).tolist()))
