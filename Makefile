# The two entry points named in the README. Both install missing Debian packages first (idempotent).
BUILD_DIR ?= build
JOBS ?= $(shell nproc)

.PHONY: deps test-deps configure build demo test clean format

deps:
	@bash scripts/install-deps.sh

test-deps:
	@bash scripts/install-deps.sh --test

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD_DIR)/fmsim

test: test-deps build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	@rm -rf $(BUILD_DIR)
