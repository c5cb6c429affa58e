# The two targets the README's commands run (`bash scripts/bootstrap.sh demo|test` installs make and the
# other missing Debian packages first, then runs them). Both install missing Debian packages (idempotent).
# `make demo` builds only the fmsim binary (no unit tests, no test-only packages); `make test` builds
# everything and runs every test through CTest.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_CONFIGURE = cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: deps test-deps configure build demo test clean format

deps:
	@bash scripts/install-deps.sh

test-deps:
	@bash scripts/install-deps.sh --test

# The full build, tests included (needs `make test-deps`).
configure: test-deps
	@$(CMAKE_CONFIGURE) -DFMSIM_BUILD_TESTS=ON >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

demo: deps
	@$(CMAKE_CONFIGURE) -DFMSIM_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target fmsim
	@bash scripts/demo.sh $(BUILD_DIR)/fmsim

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	@rm -rf $(BUILD_DIR)
