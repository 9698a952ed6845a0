#!/usr/bin/env bash
# CI: 20 s of the markup fuzzer (fuzz/fuzz_markup.c) from its seed corpus;
# see tests/fuzz-run.sh. Usage: test_markup_fuzz.sh <path-to-ntprof> <source-dir>
exec bash "$2/tests/fuzz-run.sh" markup "$2"
