# make demo  install whatever packages are missing (scripts/setup.sh
#            --no-build, apt-get only), configure build/, build only
#            hilo-opt, then run it on the bundled example
#            examples/tp_fsdp_mlp.hlo (one TP x FSDP MLP block) with the
#            Neuron collective pipeline followed by dce: the rewritten module
#            on stdout; on stderr what each pass changed and why (--explain)
#            and the numeric check that the rewritten module computes the
#            same outputs on 8 simulated devices (--check-equivalence).
# make test  the same set-up, then build everything (tools, every test,
#            the benchmarks, the Python package) and run every test: all unit
#            tests, the lit suite and the pytest suite, through ctest; exits non-zero if anything fails, and a
#            test that runs longer than TEST_TIMEOUT seconds (a hang) fails.
#            Tests that need the shared folder (the opcode table and the
#            real-HLO corpus, $HILO_SHARED_DIR, default ../shared) are
#            skipped without it, and a line at the end says so.
# make build configure and build everything (no package check).
# make install-python  the same set-up and build, then install the Python
#            package `hilo` into the system python3's site-packages
#            (docs/python.md).
#
# CMAKE_ARGS adds configure options, e.g.
#   make test CMAKE_ARGS=-DCMAKE_CXX_COMPILER_LAUNCHER=ccache

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=
DEMO_INPUT ?= examples/tp_fsdp_mlp.hlo
DEMO_PASSES ?= neuron-collective-pipeline,dce
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# The slowest test takes about 40 s on a loaded 2-core machine.
TEST_TIMEOUT ?= 900

.PHONY: all setup configure build demo test install-python

all: build

setup:
	scripts/setup.sh --no-build

# The configure log is shown only if configuring fails.
configure:
	@mkdir -p $(BUILD_DIR)
	@echo "cmake: configuring $(BUILD_DIR)/ (log in $(BUILD_DIR)/configure.log)"
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) \
	  > $(BUILD_DIR)/configure.log 2>&1 || { cat $(BUILD_DIR)/configure.log; exit 1; }

build: configure
	ninja -C $(BUILD_DIR)

demo: setup configure
	ninja -C $(BUILD_DIR) hilo-opt
	@echo "=== hilo-opt $(DEMO_INPUT) --passes=$(DEMO_PASSES) --explain --check-equivalence"
	$(BUILD_DIR)/bin/hilo-opt $(DEMO_INPUT) --passes=$(DEMO_PASSES) --explain --check-equivalence

# ctest's log of the run holds every skipped test's reason; the last line
# repeats the one for the shared folder, if any test gave it.
test: setup build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout $(TEST_TIMEOUT)
	@grep -ho "needs the shared folder.*not found at [^;]*" \
	  $(BUILD_DIR)/Testing/Temporary/LastTest.log 2>/dev/null | head -n 1 | \
	  sed -e 's/^needs/make test: the tests listed as Skipped above (and lit'"'"'s UNSUPPORTED ones) need/' \
	      -e 's/$$/; to run them, set HILO_SHARED_DIR=<folder> (see README.md)/' || true

install-python: setup build
	cmake --install $(BUILD_DIR) --component python
