# The two targets the README's commands run (`bash scripts/bootstrap.sh demo|test` installs make and the
# other missing Debian packages first, then runs them). Both install missing Debian packages (idempotent).
# `make demo` builds only the fmsim binary (no unit tests, no test-only packages); `make test` builds
# everything and runs every test through CTest.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_CONFIGURE = cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: deps test-deps configure build demo test validate clean format

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

# `make validate`: `fmsim validate` over every category against the calibration measurements (MEASUREMENTS):
# their tables as one markdown document and raw JSON in $(VALIDATION_DIR), and the error bands fmsim states
# with its results regenerated in configs/validation/error_bands.json (docs/validation.md). Needs python3
# (make test-deps); the training part takes 3-8 minutes on 2 cores.
MEASUREMENTS ?= ../shared/calibration/measurements.json
VALIDATION_DIR ?= $(BUILD_DIR)/validation
BANDS ?= configs/validation/error_bands.json
validate: deps
	@$(CMAKE_CONFIGURE) >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target fmsim
	@test -r $(MEASUREMENTS) || { echo "make validate: $(MEASUREMENTS) not found (set MEASUREMENTS=FILE)" >&2; exit 2; }
	$(BUILD_DIR)/fmsim validate --measurements $(MEASUREMENTS) --out $(VALIDATION_DIR) --bands $(BANDS)

format:
	@clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	@rm -rf $(BUILD_DIR)
