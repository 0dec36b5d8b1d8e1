#!/bin/sh
# Runs the array API standard's own test suite (data-apis/array-api-tests, a checkout the user
# cloned with its array-api submodule: `git clone --recurse-submodules
# https://github.com/data-apis/array-api-tests`) against the ctensor module built in build/
# (build/python), version 2023.12 with both extensions (linalg, fft), and prints how many of the
# collected items passed. The suite runs in its own virtual environment (made on first use,
# default $SUITE/.venv-ctensor, or $ARRAY_API_TESTS_VENV) with the suite's requirements; the
# project's .venv is not touched. CI cannot fetch the suite, so `make test` does not run this.
#
# Usage: tools/array-api-tests.sh PATH/TO/array-api-tests [pytest arguments...]
# Environment: MAX_EXAMPLES (hypothesis examples per test, default 20), SEED (hypothesis seed,
# default 0 for a repeatable run), BUILD (build folder, default build), PYTHON (the interpreter
# the module was built for, default python3).
set -eu
if [ $# -lt 1 ] || [ ! -d "$1/array_api_tests" ]; then
    echo "usage: $0 PATH/TO/array-api-tests [pytest arguments...]" >&2
    echo "(a checkout of https://github.com/data-apis/array-api-tests with its submodule)" >&2
    exit 2
fi
suite=$(cd "$1" && pwd)
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
if [ ! -d "$build/python/ctensor" ]; then
    echo "$0: no built module in $build/python (build ctensor first: make, or cmake --build build)" >&2
    exit 2
fi
if [ ! -d "$suite/array-api/src/array_api_stubs/_2023_12" ]; then
    echo "$0: $suite/array-api lacks the 2023.12 stubs (git submodule update --init)" >&2
    exit 2
fi
venv=${ARRAY_API_TESTS_VENV:-$suite/.venv-ctensor}
if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$suite/requirements.txt" numpy
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
(cd "$suite" && ARRAY_API_TESTS_MODULE=ctensor ARRAY_API_TESTS_VERSION=2023.12 \
    PYTHONPATH="$build/python" "$venv/bin/python" -m pytest array_api_tests -q -rN \
    -p no:cacheprovider --max-examples="${MAX_EXAMPLES:-20}" \
    --hypothesis-seed="${SEED:-0}" "$@") >"$log" 2>&1
rc=$?
set -e
tail -n 3 "$log"
# The summary line: "N failed, N passed, N skipped, N errors in S s" (pytest's order varies).
"$venv/bin/python" - "$log" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read().splitlines()
line = next((l for l in reversed(text) if re.search(r"\d+ (passed|failed)", l)), "")
count = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)", line)}
count["error"] = count.pop("errors", 0) + count.pop("error", 0)
total = sum(count.values())
passed = count.get("passed", 0)
share = 100.0 * passed / total if total else 0.0
print(f"array-api-tests 2023.12: {total} collected, {passed} passed, {count.get('failed', 0)} failed, "
      f"{count.get('skipped', 0)} skipped, {count['error']} errors: {share:.1f}% of the collected pass")
PY
exit $rc
