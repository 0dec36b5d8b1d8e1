#!/bin/sh
# `pip install .` of this checkout into a fresh virtual environment (scikit-build-core from
# the package index, through pip), then import the installed module from outside the source
# tree and compute on the best device present; ct.__version__ is the package's version, and
# the `ctensor` command the install put in the environment's bin runs (without
# LD_LIBRARY_PATH) and says that version. Usage: check-python-install.sh
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
# The version: one source (include/ctensor/ctensor.h) for the package, the module and the command.
"$venv/bin/python3" - <<'PY'
import importlib.metadata
import ctensor as ct
assert ct.__version__ == importlib.metadata.version("ctensor"), ct.__version__
print("ct.__version__", ct.__version__)
PY
version=$("$venv/bin/python3" -c "import ctensor; print(ctensor.__version__)")
command_says=$(env -u LD_LIBRARY_PATH "$venv/bin/ctensor" --version)
[ "$command_says" = "ctensor $version" ] || {
    echo "the installed ctensor command says \"$command_says\", expected \"ctensor $version\"" >&2
    exit 1
}
env -u LD_LIBRARY_PATH "$venv/bin/ctensor" devices >/dev/null
echo "python install check: the module, ct.__version__ $version and the ctensor command work"
