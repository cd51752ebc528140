# Everything a person types. `make demo` and `make test` work on a fresh
# Debian 12 machine as root: they install what they need first.

BUILD_DIR ?= build
JOBS ?= 2
VENV := .venv
PYTHON := $(VENV)/bin/python

# C++ dependencies, all from Debian's packages.
DEBIAN_PACKAGES := g++ clang-14 clang-16 make cmake ccache libeigen3-dev nlohmann-json3-dev doctest-dev \
                   libbenchmark-dev libflatbuffers-dev flatbuffers-compiler pybind11-dev \
                   python3-venv python3-pip graphviz nodejs chromium

.PHONY: all deps venv configure build test test-asan test-tsan test-sanitize fuzz demo tiny-net tiny-models tiny-examples infer-example fixtures bench bench-frameworks example-model ops-doc docs compile-time clean

all: build

# Installs the Debian packages that are missing (needs root or sudo).
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# The Python test tier's virtualenv (pinned versions in requirements-test.txt).
$(VENV)/.installed: requirements-test.txt
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

# The rml Python package, installed editable: the Python modules are read from
# python/rml/, and only the C++ extension (built by scikit-build-core) is rebuilt
# when the C++ sources change.
PYTHON_PACKAGE_SOURCES := $(wildcard python/*.toml python/*.txt python/src/*.cpp) \
                          $(shell find include -name '*.hpp')
$(VENV)/.rml-package: $(VENV)/.installed $(PYTHON_PACKAGE_SOURCES)
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PYTHON) -m pip install --quiet --disable-pip-version-check --config-settings=cmake.define.RML_NATIVE=ON -e ./python
	touch $@

venv: deps $(VENV)/.installed $(VENV)/.rml-package

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DRML_PYTHON=$(abspath $(PYTHON))

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The whole suite: C++ doctest binaries and the Python tier, all run by ctest.
test: venv build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# The C++ suites built with AddressSanitizer + UndefinedBehaviorSanitizer (any
# report fails the run), then with ThreadSanitizer; the Python tier and the
# compile-failure checks are left to `make test`. An allocation too large for
# the machine is a reported error, as in a normal build (allocator_may_return_null).
# SANITIZE_SUITES=test_io (a list of suites) builds and runs only those.
SANITIZED_TESTS := -E 'python_tier|compile_'
SANITIZE_SUITES ?=
space := $(subst ,, )
SANITIZE_BUILD = cmake --build $(1) -j $(JOBS) $(addprefix --target ,$(SANITIZE_SUITES))
SANITIZE_RUN = ctest --test-dir $(1) --output-on-failure -j $(JOBS) $(SANITIZED_TESTS) \
               $(if $(SANITIZE_SUITES),-R '^($(subst $(space),|,$(strip $(SANITIZE_SUITES))))$$')
test-asan: deps
	cmake -S . -B $(BUILD_DIR)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRML_SANITIZE=address,undefined
	$(call SANITIZE_BUILD,$(BUILD_DIR)-asan)
	ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(call SANITIZE_RUN,$(BUILD_DIR)-asan)

test-tsan: deps
	cmake -S . -B $(BUILD_DIR)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRML_SANITIZE=thread
	$(call SANITIZE_BUILD,$(BUILD_DIR)-tsan)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(call SANITIZE_RUN,$(BUILD_DIR)-tsan)

test-sanitize: test-asan test-tsan

# The libFuzzer harnesses of tests/fuzz (clang-16 from Debian; the StableHLO
# importer's is Python, with atheris from the virtualenv), each run for
# FUZZ_SECONDS (default 60; FUZZ_RUNS=N also stops it after N executions;
# FUZZ_FAST=1 for long local campaigns, see tests/fuzz/run.sh) on a
# corpus kept in $(BUILD_DIR)-fuzz/corpus; a finding fails the target and is
# left in $(BUILD_DIR)-fuzz/findings.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= -1
FUZZ_FAST ?= 0
FUZZ_HARNESSES ?= safetensors graph op protobuf stablehlo
FUZZ_TARGETS = $(addprefix fuzz_,$(filter-out stablehlo,$(FUZZ_HARNESSES)))
fuzz: deps $(if $(filter stablehlo,$(FUZZ_HARNESSES)),venv)
	@dpkg -s clang-16 libclang-rt-16-dev >/dev/null 2>&1 || { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq clang-16 libclang-rt-16-dev; }
	CXX=clang++-16 cmake -S . -B $(BUILD_DIR)-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRML_FUZZ=ON -DRML_BUILD_TESTS=OFF
	$(if $(FUZZ_TARGETS),cmake --build $(BUILD_DIR)-fuzz -j $(JOBS) $(addprefix --target ,$(FUZZ_TARGETS)))
	PYTHON=$(abspath $(PYTHON)) FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_FAST=$(FUZZ_FAST) tests/fuzz/run.sh $(BUILD_DIR)-fuzz $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

# Exports a zoo model from PyTorch, runs it with the C++ `rml` tool and prints
# the agreement with PyTorch and both latencies (tools/demo.py --help for options).
demo: venv build
	$(PYTHON) tools/demo.py --rml $(BUILD_DIR)/rml

# The exact examples: PyTorch, JAX and TensorFlow exports run by the executor
# (fused and unfused, 1, 2 and 4 threads) and checked bit for bit against
# literal outputs (examples/tiny_net, examples/tiny_models). `make
# tiny-examples` regenerates them from the frameworks (same bytes every time).
tiny-net: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target tiny_net
	$(BUILD_DIR)/tiny_net examples/tiny_net

tiny-models: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target tiny_models
	$(BUILD_DIR)/tiny_models examples/tiny_models

tiny-examples: venv
	$(PYTHON) tools/make_tiny_net.py
	$(PYTHON) tools/make_tiny_models.py

# One classifier in PyTorch, JAX and TensorFlow, exported and run by `rml run`:
# prints the table of pairwise differences (all within 1e-5).
infer-example: venv build
	$(PYTHON) tools/infer_example.py --rml $(BUILD_DIR)/rml

# Re-exports every tiny zoo model by every route into testdata/ (unchanged when
# nothing changed, on any CPU: see tools/make_fixtures.py); the golden tests read them.
fixtures: venv
	$(PYTHON) -W ignore tools/make_fixtures.py

# Builds and runs the Google Benchmark suite (results: docs/performance.md).
bench: configure
	cmake -S . -B $(BUILD_DIR) -DRML_BUILD_BENCH=ON
	cmake --build $(BUILD_DIR) -j $(JOBS) --target rml_bench
	$(BUILD_DIR)/bench/rml_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_min_time=0.2

# Times every zoo model at bench size (batch 1 and 16, 1 and 2 threads) in rml (C++ and the
# Python binding), PyTorch eager, torch.compile, jax.jit, tf.function with and without XLA and
# ONNX Runtime, each in its own pinned worker process, in interleaved rounds; writes
# docs/benchmarks.md and docs/images/benchmarks.png (ARGS="--quick" or see --help for subsets).
bench-frameworks: venv build
	$(PYTHON) bench/frameworks.py --rml $(BUILD_DIR)/rml $(ARGS)

# Regenerates the shipped example model (byte-identical on every run).
example-model: build
	$(BUILD_DIR)/make_example_model examples/tiny_classifier.json

# Regenerates the tables generated from the code: the op table in docs/ops.md
# (the registry) and the error catalogue in docs/errors.md (rml::ErrorCode).
ops-doc: build
	python3 tools/update_ops_doc.py $(BUILD_DIR)/rml docs/ops.md
	python3 tools/update_ops_doc.py $(BUILD_DIR)/rml docs/errors.md --errors

# Regenerates every generated doc: the op table in docs/ops.md, docs/exporter-ops.md
# (each exporter's framework ops and the rml ops they lower to, read from the source),
# the converter support report in docs/backend-ops.md, and the README's picture of a
# zoo model (rml dot, rendered by Debian's graphviz).
docs: ops-doc venv
	$(PYTHON) tools/exporter_coverage.py docs/exporter-ops.md
	python3 tools/update_ops_doc.py $(BUILD_DIR)/rml docs/backend-ops.md --support
	$(BUILD_DIR)/rml dot testdata/torch_transformer_block.json -o docs/images/transformer_block.dot
	dot -Tsvg docs/images/transformer_block.dot -o docs/images/transformer_block.svg

# Times the translation units a consumer compiles (g++ -O2, one job): the
# rml program, an umbrella consumer, a run-only one, and split mode's two
# kinds of file (rml/core/split.hpp). Figures in the README.
COMPILE_TIME = bash -c 'TIMEFORMAT="%6R s  $$*"; time g++ -std=c++20 -O2 -Iinclude -c "$$@" -o /dev/null' _
compile-time: deps
	@$(COMPILE_TIME) tools/rml_cli.cpp
	@$(COMPILE_TIME) tests/compile_single_header.cpp
	@$(COMPILE_TIME) tests/compile_run_only.cpp
	@$(COMPILE_TIME) -DRML_SPLIT tests/compile_run_only.cpp
	@$(COMPILE_TIME) -DRML_SPLIT examples/consumer/split/rml_implementation.cpp

clean:
	rm -rf $(BUILD_DIR)
