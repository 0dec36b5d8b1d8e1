#!/bin/sh
# gpu-check.sh: build ctensor with the CUDA plugin on a GPU machine, run the whole test suite
# (tools/run-tests.sh, what `make test` runs) and the GPU benchmark, and fail if anything
# fails or if any CUDA test is skipped (on a GPU machine none may be).
#
# On the machine without a GPU, once per session (no network needed: it copies OpenBLAS's
# .debs from the apt cache and libgfortran from this system):
#     tools/gpu-check.sh --prepare
# which fills .gpu-deps/ in the repository root (ignored by git through .git/info/exclude).
# Then, in one call of the device tool (the GPU machine has no network and no apt):
#     run(command="tools/gpu-check.sh", carry=[".gpu-deps"], timeout_s=600)
# Options: --quick (small benchmark sizes), --no-bench (tests only), --tests REGEX (only the
# test programs whose names match, as `ctest -R`), --no-tests (benchmark and training only:
# for a second run after the first one's tests), --build-type TYPE (default Release). On the GPU machine it uses a system OpenBLAS when there is one, else the
# carried .debs, unpacked under /tmp/ct-deps (never into /), and likewise zlib's headers
# (/tmp/ct-zlib); CT_GPU_CHECK_CARRIED=1 uses the carried ones even where the system has them
# (to check that path).
#
# Logs go to $OUT when set (the device tool brings them back), else to build-gpu/logs/:
# summary.txt (the verdict and the reasons), device.txt (nvidia-smi, toolchain), build.log,
# tests.log (every test's output), gpu-bench.md (ctensor beside PyTorch), gpu-train.txt
# (`ctensor train` beside PyTorch on the GPU: the CNN at batch 512, the MLP). The exit status is
# 0 only when the build, every test and the benchmark succeeded with no CUDA test skipped.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.gpu-deps"
quick="" bench=1 tests=all build_type=Release prepare=0
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=--quick ;;
        --no-bench) bench=0 ;;
        --tests) tests=$2; shift ;;
        --no-tests) tests="" ;;
        --build-type) build_type=$2; shift ;;
        --prepare) prepare=1 ;;
        *) echo "usage: tools/gpu-check.sh [--prepare | --quick | --no-bench | --tests REGEX |" \
                "--no-tests | --build-type T]" >&2
           exit 2 ;;
    esac
    shift
done

# ---- on the machine without a GPU: gather what the GPU machine lacks ----
prepare_deps() {
    mkdir -p "$deps/lib"
    for pkg in libopenblas0-pthread libopenblas-pthread-dev; do
        deb=$(find /var/cache/apt/archives -name "${pkg}_*_amd64.deb" 2>/dev/null | head -n 1)
        if [ -z "$deb" ]; then
            (cd "$deps" && apt-get download "$pkg") || {
                echo "gpu-check: no .deb of $pkg in the apt cache and apt-get download failed" >&2
                return 1
            }
        else
            cp "$deb" "$deps/"
        fi
    done
    # zlib's headers, which a bare image may lack (the library is nearly always there).
    rm -rf "$deps/zlib" && mkdir -p "$deps/zlib"
    for pkg in zlib1g zlib1g-dev; do
        deb=$(find /var/cache/apt/archives -name "${pkg}_*_amd64.deb" 2>/dev/null | head -n 1)
        if [ -z "$deb" ]; then
            (cd "$deps/zlib" && apt-get download "$pkg") || {
                echo "gpu-check: no .deb of $pkg in the apt cache and apt-get download failed" >&2
                return 1
            }
            deb=$(find "$deps/zlib" -name "${pkg}_*_amd64.deb" | head -n 1)
        fi
        cp "$deb" "$deps/zlib/$pkg.deb" && rm -f "$deps/zlib/${pkg}_"*.deb
    done
    # Fashion-MNIST for the training runs (Debian's dataset-fashion-mnist, 30 MB).
    mkdir -p "$deps/fashion-mnist"
    cp /usr/share/datasets/fashion-mnist/*.gz "$deps/fashion-mnist/" || {
        echo "gpu-check: Fashion-MNIST is missing here; install dataset-fashion-mnist" >&2
        return 1
    }
    for lib in libgfortran.so.5 libquadmath.so.0; do
        path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ { print $NF; exit }')
        [ -n "$path" ] && cp -L "$path" "$deps/lib/$lib"
    done
    exclude="$(git -C "$root" rev-parse --git-common-dir)/info/exclude"
    case "$exclude" in /*) ;; *) exclude="$root/$exclude" ;; esac
    grep -qx '/.gpu-deps/' "$exclude" 2>/dev/null || echo '/.gpu-deps/' >> "$exclude"
    du -sh "$deps"
    echo "gpu-check: now run tools/gpu-check.sh on the GPU machine with carry=[\".gpu-deps\"]"
}

if [ "$prepare" = 1 ]; then
    prepare_deps
    exit $?
fi

# ---- on the GPU machine ----
build="$root/build-gpu"
out=${OUT:-$build/logs}
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
verdict=0
note() { echo "gpu-check: $*" | tee -a "$summary"; }
fail() { note "FAIL: $*"; verdict=1; }
# Whether any of the paths exists (`ls a b` fails when one of them is missing).
any_exists() { for candidate in "$@"; do [ -e "$candidate" ] && return 0; done; return 1; }

export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v cmake > /dev/null; then
    for dir in /opt/torch/.venv/bin /usr/local/bin "$HOME/.local/bin"; do
        [ -x "$dir/cmake" ] && PATH="$PATH:$dir" && break
    done
fi
{
    nvidia-smi 2>&1
    echo; command -v nvcc && nvcc --version
    echo; command -v cmake && cmake --version
    echo; cc --version 2>&1 | head -n 1
    echo; python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
} > "$out/device.txt" 2>&1

# OpenBLAS: the system's, else the carried .debs.
blas_args=""
system_blas=0
if ldconfig -p | grep -q 'libopenblas\.so' &&
   any_exists /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/*/cblas.h; then
    system_blas=1
fi
if [ "${CT_GPU_CHECK_CARRIED:-0}" = 1 ] || [ "$system_blas" = 0 ]; then
    if ! ls "$deps"/*.deb > /dev/null 2>&1; then
        fail "no OpenBLAS here and no .debs in $deps; run tools/gpu-check.sh --prepare on the machine without a GPU and carry .gpu-deps"
        exit 1
    fi
    rm -rf /tmp/ct-deps && mkdir -p /tmp/ct-deps
    for deb in "$deps"/*.deb; do dpkg -x "$deb" /tmp/ct-deps; done
    header=$(find /tmp/ct-deps -name cblas.h | head -n 1)
    library=$(find /tmp/ct-deps -name 'libopenblas.so' | head -n 1)
    blas_args="-DCBLAS_INCLUDE_DIR=$(dirname "$header") -DOPENBLAS_LIBRARY=$library"
    LD_LIBRARY_PATH="$(dirname "$library"):$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    note "OpenBLAS from the carried .debs: $library"
fi

# zlib: the system's headers, else the carried .debs (the library they bring is used only
# where the system has no libz.so.1).
zlib_args=""
if [ "${CT_GPU_CHECK_CARRIED:-0}" = 1 ] || ! any_exists /usr/include/zlib.h /usr/include/*/zlib.h; then
    if ! ls "$deps"/zlib/*.deb > /dev/null 2>&1; then
        fail "no zlib.h here and no zlib .debs in $deps/zlib; run tools/gpu-check.sh --prepare on the machine without a GPU and carry .gpu-deps"
        exit 1
    fi
    rm -rf /tmp/ct-zlib && mkdir -p /tmp/ct-zlib
    for deb in "$deps"/zlib/*.deb; do dpkg -x "$deb" /tmp/ct-zlib; done
    zlib_library=$(find /tmp/ct-zlib -name 'libz.so.1.*' | head -n 1)
    zlib_args="-DZLIB_INCLUDE_DIR=/tmp/ct-zlib/usr/include -DZLIB_LIBRARY=$zlib_library"
    ldconfig -p | grep -q 'libz\.so\.1 ' ||
        LD_LIBRARY_PATH="$(dirname "$zlib_library")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    note "zlib headers from the carried .debs: /tmp/ct-zlib/usr/include"
fi

# cuDNN: beside the toolkit or in the system paths (where CMake looks), else the Python
# package nvidia-cudnn that PyTorch brings (headers and libraries), found through python3.
nvcc_path=$(command -v nvcc || true)
toolkit=${nvcc_path:+$(dirname "$(dirname "$nvcc_path")")}
cudnn_args=""
if ! any_exists "$toolkit"/include/cudnn.h "$toolkit"/targets/*/include/cudnn.h \
        /usr/include/cudnn.h /usr/include/*/cudnn.h; then
    cudnn_dir=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)
    cudnn_lib=""
    [ -n "$cudnn_dir" ] && [ -f "$cudnn_dir/include/cudnn.h" ] &&
        cudnn_lib=$(find "$cudnn_dir/lib" -name 'libcudnn.so*' 2>/dev/null | sort | head -n 1)
    if [ -n "$cudnn_lib" ]; then
        cudnn_args="-DCUDNN_INCLUDE_DIR=$cudnn_dir/include -DCUDNN_LIBRARY=$cudnn_lib"
        LD_LIBRARY_PATH="$cudnn_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LD_LIBRARY_PATH
        note "cuDNN from Python's nvidia-cudnn package: $cudnn_dir"
    fi
fi

# ---- build ----
# Without CT_WERROR: CI builds with it; here a warning of another compiler version or build
# type must not hide the GPU results.
# shellcheck disable=SC2086 # blas_args, zlib_args and cudnn_args are lists of words
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="$build_type" -DCT_CUDA=ON -DCT_WERROR=OFF \
        $blas_args $zlib_args $cudnn_args &&
       cmake --build "$build" -j "$(nproc)"; } > "$out/build.log" 2>&1; then
    fail "the build failed; the end of build.log:"
    tail -n 30 "$out/build.log" | tee -a "$summary"
    exit 1
fi
note "built $build ($build_type, CUDA plugin $(ls "$build"/libctensor_cuda.so))"
# A dry run of this script on a machine without a GPU: CT_GPU_CHECK_FAKE=1 puts the fake GPU
# with the CPU's kernels (tests/fake_gpu_kernels.c) in the plugin's place.
if [ "${CT_GPU_CHECK_FAKE:-0}" = 1 ]; then
    cp "$build/tests/libfake_gpu_kernels_plugin.so" "$build/libctensor_cuda.so"
    note "DRY RUN: the fake GPU stands in for the CUDA plugin"
fi

# ---- tests ----
# The plugin's libraries (cuBLAS, cuDNN) must load, else every CUDA test is only skipped:
# those the loader does not find are looked for beside the toolkit and in Python's nvidia
# packages, and their folders go on LD_LIBRARY_PATH.
plugin="$build/libctensor_cuda.so"
search="$toolkit/lib $toolkit/lib64 $(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)"
for lib in $(ldd "$plugin" 2>/dev/null | awk '/not found/ { print $1 }'); do
    # shellcheck disable=SC2086 # search is a list of folders
    found=$(find -H $search -name "$lib" 2>/dev/null | head -n 1)
    [ -z "$found" ] && continue
    LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    note "$lib from $(dirname "$found") (added to LD_LIBRARY_PATH)"
done
missing=$(ldd "$plugin" 2>/dev/null | awk '/not found/ { printf "%s%s", sep, $1; sep = " " }')
[ -n "$missing" ] && fail "the CUDA plugin cannot load: $missing not found (every CUDA test would be skipped)"

# test_safetensors and test_nn_checkpoint run Python (numpy, safetensors, torch) through
# .venv/bin/python3, which `make deps` makes; here the image's python3 has them, so .venv
# points at it.
if [ ! -x "$root/.venv/bin/python3" ] &&
   python3 -c 'import numpy, safetensors.numpy, safetensors.torch, torch' 2>/dev/null; then
    mkdir -p "$root/.venv/bin"
    printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" > "$root/.venv/bin/python3"
    chmod +x "$root/.venv/bin/python3"
    note ".venv/bin/python3 runs $(command -v python3)"
fi

# Test programs link the static library, so they find the plugin through CT_CUDA_PLUGIN
# (the plugin is looked for beside libctensor.so, which they do not load).
export CT_CUDA_PLUGIN="$build/libctensor_cuda.so"
if [ -z "$tests" ]; then
    note "tests not run (--no-tests)"
else
    # Not the second runs on the fake GPU (test_*_on_fake_gpu): here the real one is there.
    if [ "$tests" = all ]; then
        "$root/tools/run-tests.sh" "$build" -E _on_fake_gpu > "$out/tests-summary.txt" 2>&1
    else
        "$root/tools/run-tests.sh" "$build" -R "$tests" -E _on_fake_gpu \
            > "$out/tests-summary.txt" 2>&1
    fi
    tests_status=$?
    cp "$build/test-output.log" "$out/tests.log"
    tail -n 1 "$out/tests-summary.txt" | sed 's/^/gpu-check: tests: /' | tee -a "$summary"
    if [ "$tests_status" != 0 ]; then
        fail "tests failed (see tests.log):"
        grep -E "^[0-9]+: FAIL " "$build/test-output.log" | sed 's/^[0-9]*: //' | tee -a "$summary"
    fi
    # A CUDA case skipped: a device test's [cuda] case, or a GPU test of test_cuda_plugin (its
    # no-GPU test skips on a GPU by design; test_cuda_registry hides the plugin on purpose).
    cuda_skips=$(grep -E "^[0-9]+: SKIP ([^ ]*\[cuda|test_cuda_plugin_)" "$build/test-output.log" |
                 grep -v "test_cuda_plugin_reason_without_gpu" | sed 's/^[0-9]*: //')
    if [ -n "$cuda_skips" ]; then
        fail "$(echo "$cuda_skips" | wc -l) CUDA test case(s) skipped:"
        echo "$cuda_skips" | head -n 50 | tee -a "$summary"
    fi
fi

# ---- benchmark ----
if [ "$bench" = 1 ]; then
    # shellcheck disable=SC2086 # quick is empty or one word
    if ! "$root/bench/run_gpu.sh" "$build" "$out/gpu-bench.md" $quick > "$out/bench-run.txt" 2>&1; then
        fail "the GPU benchmark failed:"
        tail -n 20 "$out/bench-run.txt" | tee -a "$summary"
    elif grep -q "^no CUDA device" "$out/bench-run.txt"; then
        fail "bench_gpu found no CUDA device: $(cat "$out/bench-run.txt")"
    else
        cat "$out/gpu-bench.md"
        grep -q "NOT met" "$out/gpu-bench.md" && note "some benchmark targets are not met (gpu-bench.md)"
    fi
fi

# ---- training, ctensor beside PyTorch on the GPU (the training issue) ----
# The CNN at batch 512 for speed, the MLP at batch 128 for accuracy, both on cuda.
train_on_gpu() { # MODEL BATCH EPOCHS
    if BENCH_MODELS=$1 BENCH_BATCH=$2 BENCH_DEVICE=cuda BENCH_DATA="$deps/fashion-mnist" \
       BENCH_PYTHON=python3 "$root/bench/run_train.sh" "$build" "$3" >> "$out/gpu-train.txt" 2>&1
    then
        note "training: $1, batch $2, $3 epochs on cuda (gpu-train.txt)"
    else
        fail "training $1 on cuda failed:"
        tail -n 20 "$out/gpu-train.txt" | tee -a "$summary"
    fi
}
if [ "$bench" = 1 ]; then
    train_on_gpu cnn 512 3
    # PyTorch's own default lets cuDNN use TF32 (run_train.sh's peer computes in f32, as
    # ctensor does): its figures that way too, for the record.
    echo "PyTorch alone, cnn on cuda, batch 512, convolutions in TF32 (its default):" \
        >> "$out/gpu-train.txt"
    python3 "$root/bench/peer_torch_train.py" cnn 3 512 2 --data "$deps/fashion-mnist" \
        --device cuda --tf32 >> "$out/gpu-train.txt" 2>&1 ||
        note "PyTorch's TF32 run failed (gpu-train.txt)"
    train_on_gpu mlp 128 5
    cat "$out/gpu-train.txt"
fi

if [ "$verdict" = 0 ]; then note "PASS"; else note "FAILED (logs in $out)"; fi
exit "$verdict"
