#!/bin/sh
# gpu-check.sh: build ctensor with the CUDA plugin on a GPU machine, run the whole test suite
# (tools/run-tests.sh, what `make test` runs) and the GPU benchmark, and fail if anything
# fails or if any CUDA test is skipped (on a GPU machine none may be).
#
# On the machine without a GPU, once per session:
#     tools/gpu-check.sh --prepare
# which fills .gpu-deps/ in the repository root (ignored by git: .gitignore names it):
# OpenBLAS's and zlib's .debs (from the apt cache, else apt-get download), libgfortran from this
# system, Fashion-MNIST, and in .gpu-deps/wheels the wheels of the Python packages the GPU
# machine's python3 lacks for the pytest suite (array-api-strict, at the version .venv has
# here; pip download, for CPython CT_GPU_PYTHON_VERSION, default 3.12). All of it must stay
# within the device tool's 64 MiB carry limit (it prints its size).
# Then, in one call of the device tool (the GPU machine has no network and no apt):
#     run(command="tools/gpu-check.sh --arch --jobs 8", carry=[".gpu-deps"], timeout_s=600)
# Options: --quick (small benchmark sizes), --no-bench (tests only), --tests REGEX (only the
# test programs whose names match, as `ctest -R`), --no-tests (benchmark and training only:
# for a second run after the first one's tests), --resnet-only (after the build, only the
# ResNet benchmark: bench/run_resnet_gpu.sh, resnet18 and resnet20 at batch 512 in f32 and
# bf16 beside PyTorch eager (channels-last, torch.autocast), bounded to fit one call of the
# device tool with the build: `run(command="tools/gpu-check.sh --arch --resnet-only",
# carry=[".gpu-deps"], kind="nvidia-h200", timeout_s=600)`), --gpt-only (likewise, only the
# GPT benchmark: bench/run_gpt_gpu.sh, GPT-2 124M at context 1024, batch 16 and 64 in bf16
# beside PyTorch eager with F.scaled_dot_product_attention, tokens/s and MFU, bounded to
# 240 s: `run(command="tools/gpu-check.sh --arch --gpt-only", carry=[".gpu-deps"],
# kind="nvidia-h200", timeout_s=600)`). The issues' goals are an H200's (its 400,000 tokens/s
# and its bf16 peak in the MFU), so name that kind; run --gpt-only right after --resnet-only,
# while the machine is warm, so that it reuses build-gpu (the build is incremental) and the
# two fit the session's device time; --linalg-fft-only (likewise, only issue 36's fft and
# solve beside PyTorch's torch.fft and torch.linalg.solve on the same GPU: bench_fft.py and
# bench_linalg.py with --device cuda:0 (bench/bench_device.py), one table of times, ratios and
# errors against a float64 CPU reference, each script bounded to 180 s: `run(command=
# "tools/gpu-check.sh --arch --linalg-fft-only", carry=[".gpu-deps"], timeout_s=600)`; CuPy
# is not a peer: its wheel is over the carry limit); --tests REGEX after any of them runs those
# test programs first (e.g. --resnet-only --tests "test_nn_batch_norm|test_nn_norm": the CUDA
# batch norm);
# --build-type TYPE (default Release),
# --jobs N (N test programs at once: CTEST_PARALLEL_LEVEL), --arch (build for this machine's
# GPUs only, CT_CUDA_ARCHITECTURES=<compute capability>-real from nvidia-smi; without it the
# default architectures). On the GPU machine it uses a system OpenBLAS when there is one, else
# the carried .debs, unpacked under /tmp/ct-deps (never into /), and likewise zlib's headers
# (/tmp/ct-zlib); CT_GPU_CHECK_CARRIED=1 uses the carried ones even where the system has them
# (to check that path). The carried wheels are installed with pip --no-index into
# /tmp/ct-site, which .venv/bin/python3 (a script that runs the image's python3) puts on
# PYTHONPATH: the image's python3 is itself a virtual environment (/opt/torch/.venv), and a
# new one made from it would not see its packages (torch, numpy).
#
# Logs go to build-gpu/logs/: summary.txt (the verdict and the reasons), device.txt
# (nvidia-smi, toolchain), build.log, tests.log (every test's output), tests-summary.txt,
# gpu-bench.md (ctensor beside PyTorch), bench-run.txt, gpu-train.txt (`ctensor train` beside
# PyTorch on the GPU: the CNN at batch 512, the MLP), resnet-gpu.txt (resnet18 and resnet20
# at batch 512 in f32 and bf16 beside PyTorch, and their --profile tables), gpt-gpu.txt (GPT-2
# 124M at batch 16 and 64 in bf16 beside PyTorch: tokens/s and MFU), linalg-fft-gpu.md and
# linalg-fft-gpu.err (fft and solve beside PyTorch on the GPU), two-ranks.json and two-ranks.err
# (`mpirun -np 2 ctensor train --device cuda` on one GPU), python-deps.txt. At the end, however
# it ends, they are packed into gpu-check-logs.tar.gz, which goes with a copy of summary.txt to
# $OUT when set (the device tool brings back 8 files at most), else beside the logs folder.
# The exit status is 0 only when the build, every test, the two ranks on one GPU and the
# benchmark succeeded with no CUDA test skipped.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.gpu-deps"
quick="" bench=1 tests=all build_type=Release prepare=0 jobs="" arch=0 resnet_only=0 gpt_only=0
linalg_fft_only=0
usage() {
    echo "usage: tools/gpu-check.sh [--prepare | --quick | --no-bench | --tests REGEX |" \
         "--no-tests | --resnet-only | --gpt-only | --linalg-fft-only | --build-type T |" \
         "--jobs N | --arch]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=--quick ;;
        --no-bench) bench=0 ;;
        --tests) [ $# -ge 2 ] || usage; tests=$2; shift ;;
        --no-tests) tests="" ;;
        --resnet-only) resnet_only=1 tests="" ;;
        --gpt-only) gpt_only=1 tests="" ;;
        --linalg-fft-only) linalg_fft_only=1 tests="" ;;
        --build-type) [ $# -ge 2 ] || usage; build_type=$2; shift ;;
        --jobs)
            [ $# -ge 2 ] || usage
            case "$2" in ''|*[!0-9]*|0) echo "gpu-check: --jobs takes a count: \"$2\"" >&2; exit 2 ;; esac
            jobs=$2; shift ;;
        --arch) arch=1 ;;
        --prepare) prepare=1 ;;
        *) usage ;;
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
    prepare_wheels || return 1
    # Ignored, so that it travels only when carried (an older checkout's .gitignore lacks it).
    if ! git -C "$root" check-ignore -q .gpu-deps/; then
        exclude="$(git -C "$root" rev-parse --git-common-dir)/info/exclude"
        case "$exclude" in /*) ;; *) exclude="$root/$exclude" ;; esac
        echo '/.gpu-deps/' >> "$exclude"
    fi
    du -sh "$deps"
    echo "gpu-check: now run tools/gpu-check.sh on the GPU machine with carry=[\".gpu-deps\"]"
}

# The wheels of the Python packages the GPU machine's python3 lacks (python_wheels), each at
# the version .venv has here (so that both machines test against the same one), for CPython
# CT_GPU_PYTHON_VERSION. Pure-Python wheels: none needs a compiler there. Their own needs
# (numpy) are there already, hence --no-deps.
python_wheels="array-api-strict"
prepare_wheels() {
    rm -rf "$deps/wheels" && mkdir -p "$deps/wheels"
    py="$root/.venv/bin/python3"
    [ -x "$py" ] || py=python3
    for name in $python_wheels; do
        version=$("$py" -c 'import sys, importlib.metadata as m; print(m.version(sys.argv[1]))' \
                  "$name" 2>/dev/null)
        if ! "$py" -m pip download -q --no-deps --only-binary=:all: \
                --python-version "${CT_GPU_PYTHON_VERSION:-3.12}" --implementation cp \
                --platform manylinux2014_x86_64 -d "$deps/wheels" "$name${version:+==$version}"; then
            echo "gpu-check: pip download $name${version:+==$version} failed" >&2
            return 1
        fi
    done
    ls "$deps/wheels"
}

if [ "$prepare" = 1 ]; then
    prepare_deps
    exit $?
fi

# ---- on the GPU machine ----
build="$root/build-gpu"
logs="$build/logs"
rm -rf "$logs" && mkdir -p "$logs"
summary="$logs/summary.txt"
: > "$summary"
verdict=0
# Every log in one archive, with summary.txt beside it, however the script ends (a TERM or
# INT, from timeout(1) or a user, ends it through exit so that the EXIT trap runs).
# shellcheck disable=SC2317 # run by the trap
pack_logs() {
    dest=${OUT:-$build}
    mkdir -p "$dest"
    tar -czf "$dest/gpu-check-logs.tar.gz" -C "$build" logs
    [ -n "${OUT:-}" ] && cp "$summary" "$OUT/summary.txt"
    echo "gpu-check: logs packed into $dest/gpu-check-logs.tar.gz"
}
trap pack_logs EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
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
} > "$logs/device.txt" 2>&1

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
# --arch: this machine's GPUs' architectures only (nvidia-smi's compute_cap "9.0" is 90-real),
# no PTX; else the default list, also when an earlier run with --arch left its own in the cache.
arch_args="-UCT_CUDA_ARCHITECTURES"
if [ "$arch" = 1 ]; then
    archs=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
            tr -d ' .' | grep -E '^[0-9]+$' | sort -u | sed 's/$/-real/' | paste -sd ';' -)
    if [ -z "$archs" ]; then
        fail "--arch: nvidia-smi --query-gpu=compute_cap gave no compute capability"
        exit 1
    fi
    arch_args="-DCT_CUDA_ARCHITECTURES=$archs"
    note "--arch: building for $archs only"
fi
# Without CT_WERROR: CI builds with it; here a warning of another compiler version or build
# type must not hide the GPU results.
# shellcheck disable=SC2086 # blas_args, zlib_args and cudnn_args are lists of words
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="$build_type" -DCT_CUDA=ON -DCT_WERROR=OFF \
        "$arch_args" $blas_args $zlib_args $cudnn_args &&
       cmake --build "$build" -j "$(nproc)"; } > "$logs/build.log" 2>&1; then
    fail "the build failed; the end of build.log:"
    tail -n 30 "$logs/build.log" | tee -a "$summary"
    exit 1
fi
note "built $build ($build_type, CUDA plugin $(ls "$build"/libctensor_cuda.so))"
# A dry run of this script on a machine without a GPU: CT_GPU_CHECK_FAKE=1 puts the fake GPU
# with the CPU's kernels (tests/fake_gpu_kernels.c) in the plugin's place.
if [ "${CT_GPU_CHECK_FAKE:-0}" = 1 ]; then
    cp "$build/tests/libfake_gpu_kernels_plugin.so" "$build/libctensor_cuda.so"
    note "DRY RUN: the fake GPU stands in for the CUDA plugin"
fi

# ---- the ResNet benchmark (issue 34) ----
# resnet18 and resnet20 at batch 512, f32 and --amp bf16, beside PyTorch eager at its best,
# and a --profile table of each (bench/run_resnet_gpu.sh bounds each run and the whole).
resnet_on_gpu() {
    if PYTHON=python3 "$root/bench/run_resnet_gpu.sh" "$build" > "$logs/resnet-gpu.txt" 2>&1; then
        note "ResNet benchmark: resnet-gpu.txt"
    else
        fail "the ResNet benchmark: a ctensor run failed (resnet-gpu.txt):"
        grep -A 5 "^  ctensor .*: exit" "$logs/resnet-gpu.txt" | head -n 20 | tee -a "$summary"
    fi
    cat "$logs/resnet-gpu.txt"
    grep -q "NOT met" "$logs/resnet-gpu.txt" && note "some ResNet goals are not met (resnet-gpu.txt)"
}

# ---- the GPT benchmark (issue 35) ----
# GPT-2 124M (synthetic tokens, context 1024) at batch 16 and 64 in bf16, beside PyTorch eager
# with F.scaled_dot_product_attention: tokens/s, MFU and the goals (bench/run_gpt_gpu.sh bounds
# each run and the whole).
gpt_on_gpu() {
    if PYTHON=python3 "$root/bench/run_gpt_gpu.sh" "$build" > "$logs/gpt-gpu.txt" 2>&1; then
        note "GPT benchmark: gpt-gpu.txt"
    else
        fail "the GPT benchmark: a ctensor run failed (gpt-gpu.txt):"
        awk '/^  ctensor batch .*: exit/ { show = 1; print; next } show && /^    / { print; next }
             { show = 0 }' "$logs/gpt-gpu.txt" | head -n 20 | tee -a "$summary"
    fi
    cat "$logs/gpt-gpu.txt"
    grep -q "NOT met" "$logs/gpt-gpu.txt" && note "some GPT goals are not met (gpt-gpu.txt)"
}

# ---- fft and solve beside PyTorch (issue 36) ----
# ctensor's fft (2^20 complex64; arbitrary lengths, primes among them, batched) and solve (512,
# 2048, 4096 in f32 and f64; a batch of 8 x 8) on cuda:0 beside torch.fft and torch.linalg.solve
# on the same GPU (CT_LINALG_FFT_PEER_DEVICE, default cuda:0: a dry run on the fake GPU gives
# cpu), timed to each side's synchronisation, errors against NumPy in float64 on the CPU: one
# table (bench/bench_device.py). Each script is bounded by timeout(1).
linalg_fft_on_gpu() {
    peer=${CT_LINALG_FFT_PEER_DEVICE:-cuda:0}
    # shellcheck disable=SC2086 # quick is empty or one word
    if { PYTHONPATH="$build/python" OMP_WAIT_POLICY=passive timeout 180 python3 \
             "$root/bench/bench_fft.py" --device cuda:0 --peer-device "$peer" $quick &&
         PYTHONPATH="$build/python" OMP_WAIT_POLICY=passive timeout 180 python3 \
             "$root/bench/bench_linalg.py" --device cuda:0 --peer-device "$peer" --no-header \
             $quick; } > "$logs/linalg-fft-gpu.md" 2> "$logs/linalg-fft-gpu.err"; then
        note "fft and solve beside PyTorch: linalg-fft-gpu.md"
    else
        fail "fft and solve beside PyTorch: a run failed or timed out (linalg-fft-gpu.err):"
        tail -n 20 "$logs/linalg-fft-gpu.err" | tee -a "$summary"
    fi
    cat "$logs/linalg-fft-gpu.md"
}

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

# test_safetensors, test_nn_checkpoint and the pytest suite run Python (numpy, safetensors,
# torch, pytest, array-api-strict) through .venv/bin/python3, which `make deps` makes; here the
# image's python3 has most of them, so .venv/bin/python3 runs it, with the carried wheels
# installed into /tmp/ct-site on its path. A real .venv (pyvenv.cfg: a dry run) is kept.
site=/tmp/ct-site
if [ ! -f "$root/.venv/pyvenv.cfg" ] &&
   python3 -c 'import numpy, safetensors.numpy, safetensors.torch, torch' 2>/dev/null; then
    rm -rf "$site" && mkdir -p "$site"
    if ls "$deps"/wheels/*.whl > /dev/null 2>&1; then
        if python3 -m pip install -q --no-index --no-deps --no-compile --find-links "$deps/wheels" \
               --target "$site" "$deps"/wheels/*.whl > "$logs/python-deps.txt" 2>&1; then
            note "Python wheels installed into $site: $(cd "$deps/wheels" && echo *.whl)"
        else
            fail "the carried wheels do not install (python-deps.txt); their tests will be skipped"
        fi
    else
        note "no wheels in $deps/wheels (tools/gpu-check.sh --prepare fetches them): the tests that need $python_wheels will be skipped"
    fi
    rm -rf "$root/.venv" && mkdir -p "$root/.venv/bin"
    # shellcheck disable=SC2016 # the script's own variables, expanded when it runs
    printf '#!/bin/sh\nPYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}%s" exec %s "$@"\n' "$site" \
        "$(command -v python3)" > "$root/.venv/bin/python3"
    chmod +x "$root/.venv/bin/python3"
    note ".venv/bin/python3 runs $(command -v python3) with $site on PYTHONPATH"
fi

# Test programs link the static library, so they find the plugin through CT_CUDA_PLUGIN
# (the plugin is looked for beside libctensor.so, which they do not load).
export CT_CUDA_PLUGIN="$build/libctensor_cuda.so"
# --jobs: that many test programs at once (CTest's CTEST_PARALLEL_LEVEL).
if [ -n "$jobs" ]; then
    export CTEST_PARALLEL_LEVEL="$jobs"
    note "tests: $jobs programs at once (CTEST_PARALLEL_LEVEL)"
fi
if [ -z "$tests" ]; then
    note "tests not run (--no-tests)"
else
    # Not the second runs on the fake GPU (test_*_on_fake_gpu): here the real one is there.
    if [ "$tests" = all ]; then
        "$root/tools/run-tests.sh" "$build" -E _on_fake_gpu > "$logs/tests-summary.txt" 2>&1
    else
        "$root/tools/run-tests.sh" "$build" -R "$tests" -E _on_fake_gpu \
            > "$logs/tests-summary.txt" 2>&1
    fi
    tests_status=$?
    cp "$build/test-output.log" "$logs/tests.log"
    tail -n 1 "$logs/tests-summary.txt" | sed 's/^/gpu-check: tests: /' | tee -a "$summary"
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

# --resnet-only, --gpt-only, --linalg-fft-only: that benchmark alone (several: each), once the
# plugin's libraries are found.
if [ "$resnet_only" = 1 ] || [ "$gpt_only" = 1 ] || [ "$linalg_fft_only" = 1 ]; then
    [ "$resnet_only" = 1 ] && resnet_on_gpu
    [ "$gpt_only" = 1 ] && gpt_on_gpu
    [ "$linalg_fft_only" = 1 ] && linalg_fft_on_gpu
    if [ "$verdict" = 0 ]; then note "PASS (benchmark only)"; else note "FAILED (logs in gpu-check-logs.tar.gz)"; fi
    exit "$verdict"
fi

# ---- two ranks on one GPU ----
# mpirun -np 2 ctensor train --device cuda with one GPU: NCCL refuses two ranks on one device,
# so the run must find it first and run its collectives on the MPI engine, with one warning.
# Its JSON summary (rank 0's) and stderr are kept; bounded by timeout(1).
two_ranks_on_one_gpu() {
    if ! command -v mpirun > /dev/null 2>&1; then
        note "2 ranks on one GPU: not run: mpirun not found"
        return
    fi
    if [ ! -e "$build/libctensor_mpi.so" ]; then
        fail "2 ranks on one GPU: not run: the build has no MPI plugin (libctensor_mpi.so): was MPI found? (build.log)"
        return
    fi
    # The variables the ranks need, passed on by name (mpirun warns of one that is unset).
    forward="-x CT_CUDA_PLUGIN"
    [ -n "${LD_LIBRARY_PATH:-}" ] && forward="$forward -x LD_LIBRARY_PATH"
    # shellcheck disable=SC2086 # forward is a list of words
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout 300 mpirun --oversubscribe --bind-to none -np 2 $forward \
        "$build/ctensor" train --device cuda --json --dataset "$deps/fashion-mnist" --model mlp \
        --epochs 1 --limit 8192 > "$logs/two-ranks.json" 2> "$logs/two-ranks.err"
    status=$?
    engine=$(sed -n 's/.*"engine": "\([a-z]*\)".*/\1/p' "$logs/two-ranks.json" | head -n 1)
    # ctensor's own warnings ("ctensor: warning: ...", "ctensor train: ...warning: ..."), not
    # mpirun's.
    warnings=$(grep -c "^ctensor[a-z ]*:.*warning" "$logs/two-ranks.err")
    timed_out=""
    [ "$status" = 124 ] && timed_out=" (the 300 s timeout)"
    if [ "$status" = 0 ] && [ "$engine" = mpi ]; then
        note "2 ranks on one GPU: exit 0, engine mpi, $warnings warning line(s) (two-ranks.err)"
    else
        fail "2 ranks on one GPU: exit $status$timed_out, engine \"$engine\" (expected mpi), $warnings warning line(s); the end of two-ranks.err:"
        tail -n 10 "$logs/two-ranks.err" | tee -a "$summary"
    fi
}
two_ranks_on_one_gpu

# ---- benchmark ----
if [ "$bench" = 1 ]; then
    # shellcheck disable=SC2086 # quick is empty or one word
    if ! "$root/bench/run_gpu.sh" "$build" "$logs/gpu-bench.md" $quick > "$logs/bench-run.txt" 2>&1; then
        fail "the GPU benchmark failed:"
        tail -n 20 "$logs/bench-run.txt" | tee -a "$summary"
    elif grep -q "^no CUDA device" "$logs/bench-run.txt"; then
        fail "bench_gpu found no CUDA device: $(cat "$logs/bench-run.txt")"
    else
        cat "$logs/gpu-bench.md"
        grep -q "NOT met" "$logs/gpu-bench.md" && note "some benchmark targets are not met (gpu-bench.md)"
    fi
fi

# ---- training, ctensor beside PyTorch on the GPU (the training issue) ----
# The CNN at batch 512 for speed, the MLP at batch 128 for accuracy, both on cuda.
train_on_gpu() { # MODEL BATCH EPOCHS
    if BENCH_MODELS=$1 BENCH_BATCH=$2 BENCH_DEVICE=cuda BENCH_DATA="$deps/fashion-mnist" \
       BENCH_PYTHON=python3 "$root/bench/run_train.sh" "$build" "$3" >> "$logs/gpu-train.txt" 2>&1
    then
        note "training: $1, batch $2, $3 epochs on cuda (gpu-train.txt)"
    else
        fail "training $1 on cuda failed:"
        tail -n 20 "$logs/gpu-train.txt" | tee -a "$summary"
    fi
}
if [ "$bench" = 1 ]; then
    train_on_gpu cnn 512 3
    # PyTorch's own default lets cuDNN use TF32 (run_train.sh's peer computes in f32, as
    # ctensor does): its figures that way too, for the record.
    echo "PyTorch alone, cnn on cuda, batch 512, convolutions in TF32 (its default):" \
        >> "$logs/gpu-train.txt"
    python3 "$root/bench/peer_torch_train.py" cnn 3 512 2 --data "$deps/fashion-mnist" \
        --device cuda --tf32 >> "$logs/gpu-train.txt" 2>&1 ||
        note "PyTorch's TF32 run failed (gpu-train.txt)"
    train_on_gpu mlp 128 5
    cat "$logs/gpu-train.txt"
    resnet_on_gpu
    gpt_on_gpu
    linalg_fft_on_gpu
fi

if [ "$verdict" = 0 ]; then note "PASS"; else note "FAILED (logs in gpu-check-logs.tar.gz)"; fi
exit "$verdict"
