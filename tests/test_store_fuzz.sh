#!/usr/bin/env bash
# CI: 20 s of the store fuzzer (fuzz/fuzz_store.c) from its seed corpus;
# see tests/fuzz-run.sh. Usage: test_store_fuzz.sh <path-to-ntprof> <source-dir>
exec bash "$2/tests/fuzz-run.sh" store "$2"
