# make demo  set up the machine (scripts/setup.sh: installs the missing Debian
#            packages, configures and builds build/), then runs hilo-opt on
#            the bundled example examples/tp_fsdp_mlp.hlo (one TP x FSDP MLP
#            block) with the Neuron collective pipeline followed by dce:
#            collective-stream-id-checker, neuron_looped_einsum_replacer,
#            neuron_looped_einsum_token_replacer,
#            aws_neuron_collective_stream_id_injector,
#            neuron_unique_channel_id_enforcer, dce. It prints the rewritten
#            module on stdout and, on stderr, what each pass decided and why
#            (--explain) and the numeric check that the rewritten module
#            computes the same outputs on 8 simulated devices
#            (--check-equivalence).
# make test  the same set-up, then every test: all unit tests and the lit
#            suite, through ctest; exits non-zero if anything fails, and a
#            test that runs longer than TEST_TIMEOUT seconds (a hang) fails.
# make build configure and build only (no package check).
# make install-python  the same set-up and build, then installs the Python
#            package `hilo` into the system python3's site-packages
#            (docs/python.md).

BUILD_DIR ?= build
DEMO_INPUT ?= examples/tp_fsdp_mlp.hlo
DEMO_PASSES ?= neuron-collective-pipeline,dce
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# The slowest test takes about 40 s on a loaded 2-core machine.
TEST_TIMEOUT ?= 900

.PHONY: all setup build demo test install-python

all: build

setup:
	HILO_BUILD_DIR=$(abspath $(BUILD_DIR)) scripts/setup.sh

build:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
	ninja -C $(BUILD_DIR)

demo: setup
	@echo "=== hilo-opt $(DEMO_INPUT) --passes=$(DEMO_PASSES) --explain --check-equivalence"
	$(BUILD_DIR)/bin/hilo-opt $(DEMO_INPUT) --passes=$(DEMO_PASSES) --explain --check-equivalence

test: setup
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) --timeout $(TEST_TIMEOUT)

install-python: setup
	cmake --install $(BUILD_DIR) --component python
