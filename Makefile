# The two set-up commands of the README:
#   make run   installs what is missing, builds Release, runs the default scenario
#   make test  installs what is missing, builds, runs every test through ctest
BUILD ?= build
JOBS ?= $(shell nproc)
SCENARIO ?= scenarios/default.yaml

SANITIZE_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
SOAK_CASES ?= 2000
SOAK_FIRST ?= 1001

.PHONY: all deps build run test sanitize fuzz soak clean format format-check

all: build

deps:
	@./tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ./$(BUILD)/tools/p2psim/p2psim run $(SCENARIO)

test: build
	@cd $(BUILD) && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ctest --output-on-failure -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.h' '*.cpp' '*.c')

# Fails when a tracked source file is not formatted as .clang-format says (.ci/run runs it
# before `make test`); `make format` fixes it.
format-check: deps
	@git ls-files '*.h' '*.cpp' '*.c' | xargs clang-format --dry-run -Werror

# The unit, model and conformance tests again, built with AddressSanitizer and
# UndefinedBehaviorSanitizer (.ci/run runs it after `make test`). SystemC switches thread
# stacks by hand, which ASan's stack-use-after-return check cannot follow, and which
# LeakSanitizer's tracer crashes on (a thread still waiting when a simulation ends is never
# unwound, so its locals would show as leaks anyway): both are off.
sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DP2PSIM_SANITIZE=ON >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS) --target unit_tests model_tests conformance_tests \
	  driver_property_tests \
	  c_headers_tests
	@cd $(SANITIZE_BUILD) && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 \
	  ASAN_OPTIONS=detect_stack_use_after_return=0:detect_leaks=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -R '^(unit|model|conformance):'

# libFuzzer on the input loaders (tests/fuzz, built with clang++ and ASan/UBSan), each target
# for FUZZ_SECONDS on a seed corpus of the repository's own inputs; fails on any finding.
fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DP2PSIM_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) ./tools/fuzz.sh $(FUZZ_BUILD)

# Generated machines beyond the ctest batches (docs/testing.md, "Generated machines"):
# SOAK_CASES seeds from SOAK_FIRST, JOBS at a time; every finding is printed with the command
# that reproduces it, then how far burst fidelity was from TLP fidelity, the count and the
# wall time.
soak: build
	@cmake --build $(BUILD) --target generated_check >/dev/null
	@start=$$(date +%s); \
	./$(BUILD)/tests/generated/generated_check --first $(SOAK_FIRST) --count $(SOAK_CASES) \
	  --jobs $(JOBS) --summary --p2psim ./$(BUILD)/tools/p2psim/p2psim \
	  --platforms topologies/platforms --dir $(BUILD)/soak/cases \
	  --known tests/generated/known_findings.txt; rc=$$?; \
	echo "soak: $(SOAK_CASES) generated cases from seed $(SOAK_FIRST) in $$(( $$(date +%s) - start )) s"; \
	exit $$rc

clean:
	@rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
