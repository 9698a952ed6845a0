"""What the Python side-by-side benchmarks share (decoder_torch.py,
train_torch_compare.py, pytorch_bench.py): the median of per-round ratios
with a distribution-free 95% interval, its verdict line, and the glibc heap
settings under which PyTorch's timings are taken. Pure Python: importing it
needs no torch."""
import math
import os
import sys

# glibc's malloc settings under which freed memory stays in the process.
# PyTorch's eager mode allocates every activation and frees it after its
# consumer; with glibc's defaults each one above the mmap threshold is a
# fresh mapping whose pages fault in again on every pass, and on a virtual
# machine a fresh page can cost tens of microseconds (MobileNetV2 b1, 1
# thread, on this project's VMs: 80 ms per pass, 14 ms with the heap kept).
# ntprof plans its activations before it measures, so the like-for-like
# comparison keeps PyTorch's heap too.
HEAP_KEPT = {"MALLOC_MMAP_THRESHOLD_": "4294967296", "MALLOC_TRIM_THRESHOLD_": "4294967296",
             "MALLOC_TOP_PAD_": "536870912"}


def keep_heap(argv):
    """Run this script again with HEAP_KEPT set, unless it is set already or
    argv asks for `--heap default`. glibc reads them when the process
    starts, so this re-executes the interpreter; call it first thing."""
    chosen = [v.split("=")[-1] for v in argv if v.startswith("--heap=")] + \
        [argv[i + 1] for i, v in enumerate(argv[:-1]) if v == "--heap"]
    if "default" not in chosen and any(os.environ.get(k) != v for k, v in HEAP_KEPT.items()):
        os.execve(sys.executable, [sys.executable] + argv, dict(os.environ, **HEAP_KEPT))


def median_interval(x):
    """Median of x and a distribution-free interval of at least 95% for it:
    the order statistics x(k), x(n-1-k) with the largest k such that
    P(Binomial(n, 1/2) <= k) <= 2.5%; (median, None, None) below 6 values."""
    x = sorted(x)
    n = len(x)
    med = x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2
    k, cum = -1, 0.0
    while True:
        cum += math.comb(n, k + 1) / 2.0 ** n
        if cum > 0.025:
            break
        k += 1
    if k < 0:
        return med, None, None
    return med, x[k], x[n - 1 - k]


def verdict(what, ratios):
    """One line: the median of the per-round ratios and its 95% interval."""
    med, lo, hi = median_interval(ratios)
    ci = ("95%% interval [%.3f, %.3f]" % (lo, hi)) if lo is not None else \
        "no 95%% interval with %d rounds (6 at least)" % len(ratios)
    return "%s: median %.3f over %d rounds, %s" % (what, med, len(ratios), ci)
