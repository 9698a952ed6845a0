#!/usr/bin/env bash
# CI: 20 s of the onnx fuzzer (fuzz/fuzz_onnx.c) from its seed corpus;
# see tests/fuzz-run.sh. Usage: test_onnx_fuzz.sh <path-to-ntprof> <source-dir>
exec bash "$2/tests/fuzz-run.sh" onnx "$2"
