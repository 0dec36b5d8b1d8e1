# ctensor — a thin front for CMake. `make demo` and `make test` work on a fresh Debian
# machine: they install what is missing (tools/install-deps.sh), build, and run.
BUILD ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: all build deps test demo bench bench-step bench-train bench-loader bench-dist sanitize install clean \
	format format-check python-install bench-python bench-python-train

all: build

deps:
	@tools/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: deps
	@$(MAKE) --no-print-directory build
	@tools/run-tests.sh $(BUILD)

# The main job: the small CNN on Fashion-MNIST for one epoch on the best device present.
demo: deps
	@$(MAKE) --no-print-directory build
	$(BUILD)/ctensor train --model cnn --epochs 1 --device auto

bench: deps
	@$(MAKE) --no-print-directory build
	@bench/run.sh $(BUILD)
	@PYTHONPATH=$(BUILD)/python OMP_WAIT_POLICY=passive $${BENCH_NUMPY_PYTHON:-.venv/bin/python3} bench/bench_linalg.py

# One training step of the small CNN and the MLP, ctensor against PyTorch (CPU).
bench-step: deps
	@$(MAKE) --no-print-directory build
	@bench/run_step.sh $(BUILD)

# Whether the data loader keeps up: training from it against batches already on the device.
bench-loader: deps
	@$(MAKE) --no-print-directory build
	@for w in 0 1 2; do OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive $(BUILD)/bench/bench_loader $$w; done

# Training on Fashion-MNIST, epoch by epoch, ctensor against PyTorch (CPU).
bench-train: deps
	@$(MAKE) --no-print-directory build
	@bench/run_train.sh $(BUILD)

# Data-parallel scaling: the CNN alone on 1 and 2 threads, on 2 MPI ranks, on 2 devices.
bench-dist: deps
	@$(MAKE) --no-print-directory build
	@bench/run_dist.sh $(BUILD)

# The suite under AddressSanitizer and UndefinedBehaviorSanitizer, in its own build folder.
# libFuzzer harnesses of the readers and of `ctensor train`'s parser, FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
.PHONY: fuzz
fuzz: deps
	@tools/run-fuzz.sh $(FUZZ_SECONDS)

sanitize: deps
	@$(MAKE) --no-print-directory build BUILD=$(BUILD)-sanitize BUILD_TYPE=Debug \
		CMAKE_FLAGS="-DCT_SANITIZE=address,undefined -DCT_BUILD_BENCH=OFF -DCT_CUDA=OFF $(CMAKE_FLAGS)"
	@tools/run-tests.sh $(BUILD)-sanitize

# `make install PREFIX=/opt/ctensor` installs there (default: CMake's prefix, /usr/local).
install: build
	cmake --install $(BUILD) $(if $(PREFIX),--prefix $(PREFIX))

# The Python module into .venv (pip install . through scikit-build-core, its own build
# folder kept for the next time).
python-install: deps
	.venv/bin/python3 -m pip install --no-build-isolation --disable-pip-version-check . \
		--config-settings=build-dir=$(BUILD)-python

# The Python module's speed: a + b against NumPy and PyTorch.
bench-python: deps
	@$(MAKE) --no-print-directory build
	PYTHONPATH=$(BUILD)/python OMP_WAIT_POLICY=passive .venv/bin/python3 bench/bench_python.py

# The CNN's training loop from Python against `ctensor train` and PyTorch's, interleaved.
bench-python-train: deps
	@$(MAKE) --no-print-directory build
	@bench/run_python_train.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD) $(BUILD)-sanitize $(BUILD)-python
