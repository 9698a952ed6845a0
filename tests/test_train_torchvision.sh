#!/usr/bin/env bash
# Training end to end against PyTorch on torchvision's own models (issue 17):
# ResNet-18 and MobileNetV2 (10 classes, 32 x 32, batch 4 and 8), exported to ONNX
# in training mode (batch norm kept) by tests/train_torch.py, trained by
# ntprof from the same weights, inputs and labels: every weight and running
# statistic after one SGD step (lr 0.1) and after three Adam steps (lr
# 0.001) equals PyTorch's (trained in float64) within 1e-4 relative. Skips
# (77) without torch or torchvision.
# Usage: test_train_torchvision.sh <path-to-ntprof> <source-dir>
. "$(dirname "$0")/support/cli-lib.sh" "$@"

"$PY" "$SRC/tests/train_torch.py" "$T" torchvision >"$T/torch.out" 2>"$T/torch.err"
rc=$?
if [ $rc = 77 ]; then
    cat "$T/torch.out"
    exit 77
fi
[ $rc = 0 ] && ok || { bad "train_torch.py torchvision failed"; cat "$T/torch.err"; }
for case in resnet18 mobilenetv2; do
    for opt in sgd adam; do
        steps=1 lr=0.1
        [ $opt = adam ] && steps=3 lr=0.001
        mkdir "$T/got-$case-$opt"
        expect_exit 0 "$NTPROF" train "$T/$case.onnx" --input "x=$T/$case-x.npy" \
            --labels "$T/$case-y.npy" --optimizer $opt --lr $lr --steps $steps \
            --save-weights "$T/got-$case-$opt"
    done
done
"$PY" "$SRC/tests/train_torch.py" compare "$T" resnet18 mobilenetv2 && ok ||
    bad "weights differ from PyTorch's"
finish
