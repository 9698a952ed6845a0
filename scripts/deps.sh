#!/usr/bin/env bash
# The one list of Debian packages ntprof needs. The Makefile (`make deps`, run by
# `make run` and `make check`) and CI both call this script, so a package added
# here is installed everywhere and a package missing here fails everywhere.
#
# Usage: scripts/deps.sh [--print] [GROUP...]
#   groups: build (default: building and the whole test suite), bench (hyperfine)
set -euo pipefail

build_pkgs=(
    build-essential cmake pkg-config clang git
    # clang-format 14: `make format`, scripts/check-format.sh
    clang-format
    libxml2-dev libxml2-utils
    protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata
    libdnnl-dev libxnnpack-dev libpthreadpool-dev libopenblas-dev
    libsqlite3-dev libjansson-dev libfftw3-dev libhwloc-dev
    libpfm4-dev libpapi-dev papi-tools valgrind linux-perf libcmocka-dev
    python3 python3-numpy python3-onnx python3-jsonschema
    # PyTorch 1.13 and torchvision, the independent truth of the tests that hold
    # ntprof's values to PyTorch's (test_precision, test_models, the decoder,
    # training and bf16 tests): without them those tests skip (77), so the suite
    # would not judge what they check
    python3-torch python3-torchvision
    # headless Chromium renders the HTML report in its test
    chromium
    # the shared history store (--db postgresql://, docs/cluster.md) and the
    # PostgreSQL 15 server its tests start (scripts/local-postgres.sh)
    postgresql libpq-dev
    # the torch backend (optional: absent, it is not built): libtorch 1.13
    libtorch-dev
    # Darknet (libdarknet.so, darknet.h and its bundled .cfg files, one package;
    # there is no -dev): the .cfg reader's check against Darknet (docs/darknet.md)
    darknet
    # sweeps on Slurm (docs/cluster.md): scripts/local-slurm.sh starts munged,
    # slurmctld and slurmd for tests/test_slurm_cli.sh; sbatch and scontrol
    slurm-wlm slurmctld slurmd slurm-client munge
)
bench_pkgs=( hyperfine )

print=0
groups=()
for a in "$@"; do
    case "$a" in
        --print) print=1 ;;
        build|bench) groups+=("$a") ;;
        *) echo "deps.sh: unknown argument '$a' (expected --print, build or bench)" >&2; exit 2 ;;
    esac
done
[ ${#groups[@]} -gt 0 ] || groups=(build)

want=()
for g in "${groups[@]}"; do
    case "$g" in
        build) want+=("${build_pkgs[@]}") ;;
        bench) want+=("${bench_pkgs[@]}") ;;
    esac
done

if [ "$print" = 1 ]; then printf '%s\n' "${want[@]}"; exit 0; fi

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
