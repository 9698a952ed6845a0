#!/usr/bin/env bash
# Accuracy of `ntprof predict` on models the calibration never saw
# (docs/predict.md): torchvision models exported to ONNX at opset 13 with
# random weights (ResNet-18, SqueezeNet 1.1, ShuffleNetV2 x1.0,
# DenseNet-121) and the bundled DeepSpeech at other sizes. For each backend
# it calibrates (unless --no-calibrate), runs every model on a calibrated
# machine and prints the end-to-end error and the share of layers over 1%
# of the time whose prediction is within +-25%, with the load average.
#
# Usage: bench/predict-accuracy.sh NTPROF [--backends onednn,ref] [--db PATH]
#        [--no-calibrate] [--models DIR]
set -euo pipefail
ntprof=${1:?usage: predict-accuracy.sh NTPROF [options]}
shift
backends=onednn,ref
db=
calibrate=1
models=
while [ $# -gt 0 ]; do
    case $1 in
    --backends) backends=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --no-calibrate) calibrate=0; shift ;;
    --models) models=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$db" ] || db=$work/history.db
[ -n "$models" ] || models=$work/models
mkdir -p "$models"

# The torchvision models, exported once (random weights: timing does not
# depend on their values).
/usr/bin/python3 - "$models" <<'PY'
import os, sys, torch, torchvision.models as m
out = sys.argv[1]
for name, ctor in [("resnet18", m.resnet18), ("squeezenet1_1", m.squeezenet1_1),
                   ("shufflenet_v2_x1_0", m.shufflenet_v2_x1_0), ("densenet121", m.densenet121)]:
    path = os.path.join(out, name + ".onnx")
    if os.path.exists(path):
        continue
    net = ctor().eval()
    torch.onnx.export(net, torch.randn(1, 3, 224, 224), path, opset_version=13,
                      input_names=["input"], output_names=["output"])
PY

run_args=(--warmup 2 --iterations 10 --min-time 0.5)
IFS=, read -r -a bes <<<"$backends"
printf '%-10s %-28s %10s %10s %8s %14s\n' backend model measured predicted e2e-err "layers>1% +-25%"
for be in "${bes[@]}"; do
    if [ "$calibrate" = 1 ]; then
        nice "$ntprof" machine --calibrate --backend "$be" --db "$db" -o "$work/cal-$be.txt" 2>/dev/null
    fi
    cases=()
    for f in "$models"/*.onnx; do cases+=("$(basename "$f" .onnx)|$f|"); done
    for h in 512 1024 1536; do
        cases+=("deepspeech-h$h|$here/models/deepspeech.xml|--set n_hidden=$h --set time_steps=100")
    done
    for c in "${cases[@]}"; do
        IFS='|' read -r name path extra <<<"$c"
        # shellcheck disable=SC2086
        if ! nice "$ntprof" run "$path" --backend "$be" --db "$db" "${run_args[@]}" $extra \
            -f json -o "$work/run.json" 2>"$work/err"; then
            printf '%-10s %-28s failed: %s\n' "$be" "$name" "$(head -1 "$work/err")"
            continue
        fi
        /usr/bin/python3 - "$work/run.json" "$be" "$name" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r.get("prediction")
if not p:
    print(f"{sys.argv[2]:<10} {sys.argv[3]:<28} no calibration")
    sys.exit(0)
share = (p["major_layers_within_25"] / p["major_layers"]) if p["major_layers"] else float("nan")
print(f"{sys.argv[2]:<10} {sys.argv[3]:<28} {p['measured_ms']:10.3f} {p['predicted_ms']:10.3f} "
      f"{100 * p['error']:+7.1f}% {p['major_layers_within_25']:>4}/{p['major_layers']:<4} "
      f"({100 * share:.0f}%)" + (f"  not predicted: {p['uncalibrated']}" if p['uncalibrated'] else ""))
PY
    done
done
echo "load average: $(cat /proc/loadavg)"
