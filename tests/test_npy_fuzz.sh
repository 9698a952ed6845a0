#!/usr/bin/env bash
# CI: 20 s of the npy fuzzer (fuzz/fuzz_npy.c) from its seed corpus;
# see tests/fuzz-run.sh. Usage: test_npy_fuzz.sh <path-to-ntprof> <source-dir>
exec bash "$2/tests/fuzz-run.sh" npy "$2"
