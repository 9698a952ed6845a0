# ntprof: a thin wrapper over CMake.
#
#   make run     install missing Debian packages, build, profile the bundled DeepSpeech
#   make check   the same set-up, then a check that every C source is formatted
#                (.clang-format), then the whole test suite: a gcc build, and a clang
#                build with AddressSanitizer and UndefinedBehaviorSanitizer (which also
#                builds the ONNX fuzzer and fuzzes for 20 s); then a gcc Release build
#                at -O3, compiled only, whose optimiser finds warnings (such as
#                -Wmaybe-uninitialized) the other two builds do not
#   make format  format every C source with clang-format (.clang-format);
#                `make check-format` only lists the files that differ
#
# Every build here treats warnings as errors (NTP_WERROR=ON; a plain cmake
# leaves it off).
#
# The package list lives in scripts/deps.sh, which CI (.ci/run) calls too.

BUILD      ?= build
SAN_BUILD  ?= build-sanitize
REL_BUILD  ?= build-release
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# Tests to leave out of the sanitizer pass (a ctest -E regex); none by
# default: the whole suite runs under ASan + UBSan too (the whole-model
# equivalence tests take about 2.5 minutes there on 2 idle cores).
SAN_EXCLUDE ?= ^$$
# oneDNN 2.6.3 (Debian 12) segfaults inside dnnl_primitive_create for one of
# ResNet-50's bf16 AMX convolutions in a process under ASan (test_onednn_models
# on an Intel Xeon with AMX, 2026-12-07; the same at 652b0c4, before ntprof
# measured AMX itself; the gcc pass runs it, and with oneDNN capped below AMX
# the sanitizer pass does too). The sanitizer pass caps oneDNN at AVX-512 BF16;
# `make test` runs its AMX kernels. A CPU without AMX is not affected.
SAN_ENV ?= DNNL_MAX_CPU_ISA=AVX512_CORE_BF16 ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16

.PHONY: all deps build run check test test-sanitize build-release bench install clean \
	format check-format

all: build

deps:
	@scripts/deps.sh build

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNTP_WERROR=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/ntprof run models/deepspeech.xml

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-sanitize: deps
	@CC=clang CXX=clang++ cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DNTP_WERROR=ON -DNTP_SANITIZE=ON -DNTP_FUZZ=ON \
		-DNTP_BUILD_BENCH=OFF -DCMAKE_C_FLAGS_DEBUG="-O1 -g" $(CMAKE_ARGS) >/dev/null
	@cmake --build $(SAN_BUILD) -j$(JOBS)
	$(SAN_ENV) ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --test-dir $(SAN_BUILD) --output-on-failure -j$(JOBS) -E '$(SAN_EXCLUDE)'

# Compiled, not run: the tests above already ran this code, and the point is
# the warnings gcc gives only at -O3.
build-release: deps
	@CC=gcc cmake -S . -B $(REL_BUILD) -DCMAKE_BUILD_TYPE=Release -DNTP_WERROR=ON \
		-DCMAKE_C_FLAGS_RELEASE="-O3 -DNDEBUG" $(CMAKE_ARGS) >/dev/null
	@cmake --build $(REL_BUILD) -j$(JOBS)

check: check-format test test-sanitize build-release

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

format: deps
	@scripts/check-format.sh --fix

check-format: deps
	@scripts/check-format.sh

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(REL_BUILD)
