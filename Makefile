# ntprof: a thin wrapper over CMake.
#
#   make run     install missing Debian packages, build, profile the bundled DeepSpeech
#   make check   the same set-up, then the whole test suite: a gcc build, and a clang
#                build with AddressSanitizer and UndefinedBehaviorSanitizer (which also
#                builds the ONNX fuzzer and fuzzes for 20 s)
#
# The package list lives in scripts/deps.sh, which CI (.ci/run) calls too.

BUILD      ?= build
SAN_BUILD  ?= build-sanitize
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# Tests to leave out of the sanitizer pass (a ctest -E regex); none by
# default: the whole suite runs under ASan + UBSan too (the whole-model
# equivalence tests take about 2.5 minutes there on 2 idle cores).
SAN_EXCLUDE ?= ^$$

.PHONY: all deps build run check test test-sanitize bench install clean

all: build

deps:
	@scripts/deps.sh build

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

run: build
	$(BUILD)/ntprof run models/deepspeech.xml

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-sanitize: deps
	@CC=clang cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DNTP_SANITIZE=ON -DNTP_FUZZ=ON \
		-DNTP_BUILD_BENCH=OFF -DCMAKE_C_FLAGS_DEBUG="-O1 -g" $(CMAKE_ARGS) >/dev/null
	@cmake --build $(SAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --test-dir $(SAN_BUILD) --output-on-failure -j$(JOBS) -E '$(SAN_EXCLUDE)'

check: test test-sanitize

bench: build
	@for b in $(BUILD)/bench/bench_*; do echo "== $$b"; $$b || exit 1; done

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
