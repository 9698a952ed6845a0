#!/usr/bin/env bash
# Accuracy of `ntprof predict` on models the calibration never saw
# (docs/predict.md): torchvision models exported to ONNX at opset 13 with
# random weights (ResNet-18, SqueezeNet 1.1, ShuffleNetV2 x1.0,
# DenseNet-121: none is bundled) and the bundled DeepSpeech at other sizes.
# For each backend it calibrates (unless --no-calibrate), runs every model
# on the calibrated machine and prints per model the measured and predicted
# end-to-end latency, the error (and the error without the layers no family
# covers), the shares of layers within +-10% and +-25%, and the share of
# layers over 1% of the time within +-25%; then per backend the two
# targets' figures. Run it on a quiet machine: under load it measures the
# contention, not the model. On a quiet 2-core machine: 1 min 12 s for
# onednn, 1 min 48 s for xnnpack and ref (2026-11-25).
#
# Usage: bench/predict-accuracy.sh NTPROF [--backends onednn,xnnpack,ref]
#        [--db PATH] [--no-calibrate] [--models DIR] [--keep DIR] [--fast]
#        [--cache network|warm]
#   --cache    how the calibration times each configuration (default
#              network: caches written over before each pass, docs/predict.md)
#   --fast     two models, one DeepSpeech size, onednn only unless
#              --backends says otherwise, a --quick calibration: checks the
#              script in a minute, its figures mean nothing
#   --keep DIR keep the run reports (JSON) there
set -euo pipefail
ntprof=${1:?usage: predict-accuracy.sh NTPROF [options]}
shift
backends=
db=
calibrate=1
models=
keep=
fast=0
cache=network
while [ $# -gt 0 ]; do
    case $1 in
    --backends) backends=$2; shift 2 ;;
    --db) db=$2; shift 2 ;;
    --no-calibrate) calibrate=0; shift ;;
    --models) models=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --fast) fast=1; shift ;;
    --cache) cache=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$db" ] || db=$work/history.db
[ -n "$models" ] || models=$work/models
[ -z "$keep" ] || mkdir -p "$keep"
mkdir -p "$models"
if [ -z "$backends" ]; then
    # The built backends among those the table reports.
    built=$("$ntprof" --version 2>/dev/null | tr ' ,' '\n' || true)
    backends=
    for b in onednn xnnpack ref; do
        if [ "$fast" = 1 ] && [ "$b" != onednn ]; then continue; fi
        if [ "$b" = ref ] || grep -qx "$b" <<<"$built"; then backends=${backends:+$backends,}$b; fi
    done
fi

# The torchvision models, exported once (random weights: timing does not
# depend on their values; pretrained weights are not needed offline).
tv_models="resnet18 squeezenet1_1 shufflenet_v2_x1_0 densenet121"
[ "$fast" = 0 ] || tv_models="resnet18 squeezenet1_1"
# shellcheck disable=SC2086
/usr/bin/python3 - "$models" $tv_models <<'PY'
import os, sys, torch, torchvision.models as m
out = sys.argv[1]
for name in sys.argv[2:]:
    path = os.path.join(out, name + ".onnx")
    if os.path.exists(path):
        continue
    torch.manual_seed(0)
    net = getattr(m, name)(weights=None).eval()
    torch.onnx.export(net, torch.randn(1, 3, 224, 224), path, opset_version=13,
                      input_names=["input"], output_names=["output"])
PY

sizes="512 1024 1536"
[ "$fast" = 0 ] || sizes=512
IFS=, read -r -a bes <<<"$backends"
echo "load average at the start: $(cat /proc/loadavg)"
# Calibrate first, ref before the others: the layers a backend hands to
# ref (xnnpack's recurrent layers, oneDNN's unsupported ops) are predicted
# with ref's calibration, so ref is calibrated even when --backends leaves
# it out of the table.
if [ "$calibrate" = 1 ]; then
    cal_bes=(ref)
    for be in "${bes[@]}"; do [ "$be" = ref ] || cal_bes+=("$be"); done
    for be in "${cal_bes[@]}"; do
        q=()
        [ "$fast" = 0 ] || q=(--quick)
        if ! nice "$ntprof" machine --calibrate --backend "$be" "${q[@]}" --cache "$cache" \
            --db "$db" -o "$work/cal-$be.txt" 2>"$work/err"; then
            printf '%-8s calibration failed: %s\n' "$be" "$(grep -v '^ntprof: warning' "$work/err" | head -1)"
            touch "$work/calfail-$be"
            continue
        fi
        grep -m1 '^timed with' "$work/cal-$be.txt" | sed "s/^/$be: /" || true
    done
fi
printf '%-8s %-22s %10s %10s %8s %9s %9s %9s %12s\n' backend model "meas ms" "pred ms" e2e-err \
    "covered" "+-10%" "+-25%" "major +-25%"
for be in "${bes[@]}"; do
    # The slow reference backend: fewer iterations (its times vary little).
    run_args=(--warmup 2 --iterations 10 --min-time 0.5)
    [ "$be" != ref ] || run_args=(--warmup 1 --iterations 3 --min-time 0)
    [ "$fast" = 0 ] || run_args=(--warmup 1 --iterations 2 --min-time 0)
    if [ -e "$work/calfail-$be" ]; then continue; fi
    cases=()
    for f in "$models"/*.onnx; do cases+=("$(basename "$f" .onnx)|$f|"); done
    for h in $sizes; do
        cases+=("deepspeech-h$h|$here/models/deepspeech.xml|--set n_hidden=$h --set time_steps=100")
    done
    for c in "${cases[@]}"; do
        IFS='|' read -r name path extra <<<"$c"
        out=$work/run.json
        [ -z "$keep" ] || out=$keep/$be-$name.json
        # shellcheck disable=SC2086
        if ! nice "$ntprof" run "$path" --backend "$be" --db "$db" "${run_args[@]}" $extra \
            -f json -o "$out" 2>"$work/err"; then
            printf '%-8s %-22s failed: %s\n' "$be" "$name" "$(head -1 "$work/err")"
            continue
        fi
        /usr/bin/python3 - "$out" "$be" "$name" "$work/sum-$be" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
be, name = sys.argv[2], sys.argv[3]
p = r.get("prediction")
if not p:
    print(f"{be:<8} {name:<22} no calibration for this backend")
    sys.exit(0)
def pct(a, b):
    return f"{100 * a / b:.0f}%" if b else "-"
cov = p.get("covered_error")
cov = f"{100 * cov:+.1f}%" if isinstance(cov, (int, float)) else "-"
n = p["layers_compared"]
print(f"{be:<8} {name:<22} {p['measured_ms']:10.3f} {p['predicted_ms']:10.3f} "
      f"{100 * p['error']:+7.1f}% {cov:>9} {pct(p['layers_within_10'], n):>9} "
      f"{pct(p['layers_within_25'], n):>9} "
      f"{p['major_layers_within_25']:>4}/{p['major_layers']:<4}"
      + ("" if not p["uncalibrated"] else f"  not predicted: {p['uncalibrated']}")
      + ("  STALE" if p["stale"] else "")
      + ("  THREADS DIFFER" if p.get("threads_differ") else ""))
with open(sys.argv[4], "a") as f:
    f.write(f"{p['error']} {p['major_layers_within_25']} {p['major_layers']}\n")
PY
    done
    if [ -s "$work/sum-$be" ]; then
        awk -v be="$be" '{ n++; if ($1 <= 0.10 && $1 >= -0.10) ok++; mw += $2; m += $3 }
            END { printf "%-8s targets: end to end within +-10%% on %d of %d models (%.0f%%, target 90%%); " \
                  "layers over 1%% within +-25%%: %d of %d (%.0f%%, target 80%%)\n",
                  be, ok, n, n ? 100 * ok / n : 0, mw, m, m ? 100 * mw / m : 0 }' "$work/sum-$be"
    fi
done
echo "load average at the end: $(cat /proc/loadavg)"
