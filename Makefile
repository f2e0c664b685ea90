# The two set-up commands of the README:
#   make run   installs what is missing, builds Release, runs the default scenario
#   make test  installs what is missing, builds, runs every test through ctest
BUILD ?= build
JOBS ?= $(shell nproc)
SCENARIO ?= scenarios/default.yaml

.PHONY: all deps build run test clean format

all: build

deps:
	@./tools/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ./$(BUILD)/tools/p2psim run $(SCENARIO)

test: build
	@cd $(BUILD) && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ctest --output-on-failure -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.h' '*.cpp')

clean:
	@rm -rf $(BUILD)
