#!/bin/sh
# The libFuzzer harnesses of tests/fuzz/ (IDX, NPY, CSV, safetensors readers and the
# `ctensor train` command-line parser), built with clang against a copy of the library
# instrumented for coverage with AddressSanitizer + UBSan (build-fuzz/), each run for
# SECONDS (default 60) from its committed seed corpus in tests/fuzz/corpus/. Prints each
# fuzzer's run count; fails on any crash, leak or sanitizer report (the input is kept in
# build-fuzz/crashes/). Without clang it says so and fails: CI installs clang.
# Usage: tools/run-fuzz.sh [SECONDS]
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
cc=$(command -v clang || true)
if [ -z "$cc" ]; then
    echo "FAIL fuzz: clang is not installed (tools/install-deps.sh installs it)"
    exit 1
fi
build=build-fuzz
# OpenMP off: clang's runtime (libomp) is not a dependency; the readers do not use threads.
# oneDNN off: the readers do not use it, and the fuzzers link the static library alone.
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCT_SANITIZE=address,undefined,fuzzer-no-link -DCT_CUDA=OFF -DCT_OPENMP=OFF -DCT_DNNL=OFF \
    -DCT_BUILD_TESTS=OFF -DCT_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target ctensor_static -j"$(nproc)" >/dev/null
libs="$build/libctensor_static.a -lopenblas -lz -lm -ldl -lpthread"
flags="-g -O1 -D_GNU_SOURCE -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude"
mkdir -p "$build/crashes"
status=0
for name in idx npy csv safetensors train_args; do
    extra="" quiet=""
    # (the parser prints a line for each bad option: its stdout and stderr closed)
    [ "$name" = train_args ] && extra="tools/train_options.c tools/cli_status.c tools/cli_common.c" \
        quiet="-close_fd_mask=3"
    # shellcheck disable=SC2086
    "$cc" $flags "tests/fuzz/fuzz_$name.c" $extra $libs -o "$build/fuzz_$name"
    corpus="$build/corpus_$name"
    mkdir -p "$corpus"
    log="$build/fuzz_$name.log"
    if ASAN_OPTIONS=detect_leaks=1 "$build/fuzz_$name" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 $quiet -artifact_prefix="$build/crashes/$name-" \
        "$corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "PASS fuzz_$name: $runs runs in $seconds s, no crash"
    else
        echo "FAIL fuzz_$name: see $log"
        tail -30 "$log"
        status=1
    fi
done
exit $status
