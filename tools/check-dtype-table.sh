#!/bin/sh
# A dtype is a row of CT_DTYPES in include/ctensor/dtype.h plus its conversions
# (src/core/dtype_impl.h) and its promotion row (src/core/dtype.c): a row added without them
# must not build, and the compiler's message must name the row. This builds a copy of the
# public headers with one new row (float8_e4m3fn, F8E4M3: a float format with nothing else)
# and compiles one translation unit per place that needs the row's pieces (syntax only:
# cheap): the core, the data formats and the CPU kernels, which are the fake GPU's kernels
# too (its plugin links them). Each must fail naming F8E4M3; the unchanged table must pass.
# With NVCC set (a build with the CUDA plugin), a CUDA kernel file is checked the same way,
# through nvcc's front end alone (--cuda: no device code).
#
# Usage: [NVCC=nvcc] tools/check-dtype-table.sh CC [compiler flags]   (ctest: test_dtype_table_rows)
set -eu
cc=$1
shift
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/check_row_lib.sh"
make_trees . "$here/include/ctensor"
# The new row goes after the table's last row (the one without a continuation).
awk '/^#define CT_DTYPES\(X\)/ { table = 1 }
     table && /^    X\(/ && !/\\$/ {
         print $0 " \\"
         print "    X(float8_e4m3fn, F8E4M3, 13, 1, FLOAT, uint8_t, NULL, NULL, Float, 8, " \
               "\"F8_E4M3\")"
         table = 0
         next
     }
     { print }' "$here/include/ctensor/dtype.h" > "$work/bad/ctensor/dtype.h"
grep -q 'X(float8_e4m3fn, F8E4M3' "$work/bad/ctensor/dtype.h"

files="src/core/dtype.c src/data/safetensors_json.c src/backend/cpu/cpu_ew_block.c
src/backend/cpu/cpu_index_add.c"
if [ -n "${NVCC:-}" ]; then
    files="$files src/backend/cuda/cuda_unary.cu"
else
    echo "check-dtype-table: the CUDA kernels are not checked: this build has no nvcc"
fi
status=0
for file in $files; do
    check_row check-dtype-table "$file" 'error.*F8E4M3' compile -Werror=switch "$@"
done
exit "$status"
