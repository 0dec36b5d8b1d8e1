#!/bin/sh
# `pip install .` of this checkout into a fresh virtual environment (scikit-build-core from
# the package index, through pip), then import the installed module from outside the source
# tree and compute on the best device present. Usage: check-python-install.sh
set -e
cd "$(dirname "$0")/.."
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check . \
    --config-settings=build-dir="$venv/build"
cd "$venv"
"$venv/bin/python3" -c "import ctensor as ct; print(ct.sqrt(ct.asarray([1., 4., 9.], device='auto')))"
"$venv/bin/python3" - <<'PY'
import os
import ctensor as ct
import sys
where = os.path.dirname(ct.__file__)
assert where.startswith(sys.prefix) and "site-packages" in where, where  # the venv's copy
files = sorted(os.listdir(where))
assert any(f.startswith("libctensor.so") for f in files), files
print("installed:", ", ".join(f for f in files if not f.startswith("__")))
assert ct.sqrt(ct.asarray([1.0, 4.0, 9.0])).tolist() == [1.0, 2.0, 3.0]
from ctensor.utils.data import DataLoader, TensorDataset  # a subpackage is installed too
x, = next(iter(DataLoader(TensorDataset(ct.ones((3, 2))), batch_size=3)))
assert x.shape == (3, 2), x.shape
PY
