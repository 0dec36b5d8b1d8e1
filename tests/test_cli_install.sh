#!/bin/sh
# The install, as a user makes it: `cmake --install` (what `make install PREFIX=...` runs) of
# this build into a temporary prefix gives a `ctensor` that runs without LD_LIBRARY_PATH, also
# from the prefix moved elsewhere, and pkg-config and find_package programs that run without
# it (tools/check-install.sh, which prints the PASS, FAIL and SKIP lines).
# Usage: test_cli_install.sh BUILD_DIR
here=$(cd "$(dirname "$0")" && pwd)
exec sh "$here/../tools/check-install.sh" "$1"
