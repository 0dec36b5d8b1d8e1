#!/bin/sh
# Install what ctensor needs, if any is missing: the Debian packages (with apt-get when run
# as root, else print the exact command to run), then a Python virtual environment in .venv
# with the packages the interop tests use (safetensors), seeing the system's numpy, and what
# the Python module needs to build and test (scikit-build-core, pytest, hypothesis,
# array-api-strict).
# Quick when everything is there already.
set -e
cd "$(dirname "$0")/.."
# python3-torch: the checkpoint test loads ctensor's files in PyTorch and back, and the
# training benchmarks run it as the peer. locales: test_c_locale makes a locale with a
# decimal comma (de_DE) from its sources. openmpi-bin, libopenmpi-dev: the MPI plugin and the
# tests of data parallelism across processes (mpirun); iproute2: their two-machine case.
# python3-dev: the CPython headers the Python module (python/) is built against.
# liblapacke-dev: lapack.h, the declarations of the LAPACK routines OpenBLAS provides (ct.linalg).
# libdnnl-dev: oneDNN's bf16 GEMM for mixed precision on CPUs with AVX512_BF16 or AMX.
packages="build-essential cmake pkg-config libopenblas-dev liblapacke-dev zlib1g-dev python3-numpy python3-venv
          python3-dev libdnnl-dev openmpi-bin libopenmpi-dev iproute2
          python3-torch gnuplot-nox dataset-fashion-mnist locales"
# clang: the libFuzzer harnesses (make fuzz); valgrind: test_cli_files runs ctensor under it.
packages="$packages clang valgrind"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing:$missing"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    else
        echo "missing Debian packages:$missing"
        echo "run: sudo apt-get install -y$missing"
        exit 1
    fi
fi

# The interpreter the tests run (tests/CMakeLists.txt points them at .venv/bin/python3).
venv=.venv
if ! "$venv/bin/python3" -c "import numpy, safetensors.numpy" 2>/dev/null; then
    echo "setting up $venv (Python with safetensors)"
    [ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check safetensors
fi
# The Python module's build (pip install .) and its tests (python/tests).
if ! "$venv/bin/python3" -c "import scikit_build_core, pytest, hypothesis, array_api_strict" \
    2>/dev/null; then
    echo "adding the Python module's build and test packages to $venv"
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check scikit-build-core \
        pytest hypothesis array-api-strict
fi
