#!/bin/sh
# Run every test program of a build folder through CTest, show each skipped and failed
# case by name, and end with one line: "N passed, N failed, N skipped" over all programs.
# Usage: run-tests.sh [BUILD_DIR [CTEST_ARGS...]], e.g. `run-tests.sh build -R conv`.
build=${1:-build}
[ $# -gt 0 ] && shift
log="$build/test-output.log"
(cd "$build" && ctest --output-on-failure -V "$@") > "$log" 2>&1
status=$?
grep -m1 -E "^[0-9]+: CUDA unavailable" "$log" | sed 's/^[0-9]*: //'
# A failed case's details follow it as "    | " lines (the shell tests' output and stderr).
grep -E "^[0-9]+: ((SKIP|FAIL) |    \| )" "$log" | sed 's/^[0-9]*: //'
grep -E "^[0-9]+: +[^ ]+:[0-9]+: " "$log" | sed 's/^[0-9]*: //'
grep -E "tests passed|tests failed" "$log"
awk '/^[0-9]+: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$/ { p += $2; f += $4; s += $6 }
     END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' "$log"
exit $status
