#!/bin/sh
# Install a build into a temporary prefix and build a small program against it twice:
# with pkg-config and with CMake's find_package(ctensor).
set -e
build=${1:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -n1)
program="$prefix/version.c"
cat > "$program" <<'C'
#include <stdio.h>
#include <ctensor/ctensor.h>
int main(void) {
    ct_tensor *t = ct_zeros(1, (int64_t[]){3}, CT_F32, CT_CPU);
    printf("ctensor %s: %lld elements\n", ct_version(), (long long)ct_numel(t));
    ct_release(t);
    return t ? 0 : 1;
}
C
PKG_CONFIG_PATH="$libdir/pkgconfig" cc "$program" -o "$prefix/with-pkg-config" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs ctensor) -Wl,-rpath,"$libdir"
"$prefix/with-pkg-config"
mkdir -p "$prefix/consumer"
cat > "$prefix/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(consumer C)
find_package(ctensor REQUIRED)
add_executable(version ../version.c)
target_link_libraries(version PRIVATE ctensor::ctensor)
CMAKE
cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$prefix/consumer/build" >/dev/null
"$prefix/consumer/build/version"
echo "install check: pkg-config and find_package both work"
