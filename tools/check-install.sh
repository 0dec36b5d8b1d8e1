#!/bin/sh
# Install a build into a temporary prefix, then, with LD_LIBRARY_PATH unset: run the installed
# `ctensor` (and again from the prefix moved elsewhere: its run path is relative to itself),
# and build and run a small program against the install twice, with pkg-config (whose Libs
# carry the run path) and with CMake's find_package(ctensor). One PASS, FAIL or SKIP line
# each, then "N passed, N failed, N skipped"; exit 1 when one failed.
# Usage: check-install.sh [BUILD_DIR]
build=${1:-build}
passed=0 failed=0 skipped=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; [ -s "$log" ] && sed 's/^/    | /' "$log"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
finish() {
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" = 0 ]
    exit
}
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
prefix="$top/prefix" log="$top/log"
unset LD_LIBRARY_PATH

if ! cmake --install "$build" --prefix "$prefix" >"$log" 2>&1; then
    fail check_install_cmake_install "cmake --install failed"
    finish
fi
libdir=$(dirname "$(find "$prefix" -name 'libctensor.so' | head -n1)")
# A sanitizer build's programs need its runtime first in the process, which a plain program
# built against it does not have.
if ldd "$libdir/libctensor.so" 2>/dev/null | grep -q "libasan\|libtsan"; then
    skip check_install_without_ld_library_path "a sanitizer build"
    finish
fi

# run_ok NAME COMMAND...: runs without LD_LIBRARY_PATH and exits 0.
run_ok() {
    name=$1
    shift
    if "$@" >"$log" 2>&1; then pass "$name"
    else fail "$name" "exit status $? (run path: $(readelf -d "$1" 2>/dev/null | grep -o 'R.*PATH.*' | head -1))"; fi
}

run_ok check_install_ctensor_version "$prefix/bin/ctensor" --version
run_ok check_install_ctensor_devices "$prefix/bin/ctensor" devices
mv "$prefix" "$top/moved"
run_ok check_install_ctensor_moved_prefix "$top/moved/bin/ctensor" --version
mv "$top/moved" "$prefix"

program="$top/version.c"
cat >"$program" <<'C'
#include <stdio.h>
#include <ctensor/ctensor.h>
int main(void) {
    ct_tensor *t = ct_zeros(1, (int64_t[]){3}, CT_F32, CT_CPU);
    printf("ctensor %s: %lld elements\n", ct_version(), (long long)ct_numel(t));
    ct_release(t);
    return t ? 0 : 1;
}
C
pc_flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs ctensor)
if cc "$program" -o "$top/with-pkg-config" $pc_flags >"$log" 2>&1; then
    run_ok check_install_pkg_config_program "$top/with-pkg-config"
else fail check_install_pkg_config_program "cc $pc_flags failed"; fi

mkdir -p "$top/consumer"
cat >"$top/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(ctensor REQUIRED)
add_executable(version ../version.c)
target_link_libraries(version PRIVATE ctensor::ctensor)
CMAKE
if cmake -S "$top/consumer" -B "$top/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" >"$log" 2>&1 &&
    cmake --build "$top/consumer/build" >"$log" 2>&1; then
    run_ok check_install_find_package_program "$top/consumer/build/version"
else fail check_install_find_package_program "the CMake consumer did not build"; fi
finish
