#!/bin/sh
# An op is a table row plus its formula, backward rule and test reference: a row added to
# include/ctensor/op_list.h without them must not build, and the compiler's message must name
# the op. This builds a copy of the table with one new unary row (cbrt, differentiable) and
# one new binary row (fdim), each with nothing else, and compiles one translation unit per
# place the row needs (syntax only: cheap): the CPU kernels, the backward rules and the
# tests' references. Each must fail naming the missing piece; the unchanged table must pass.
# A row without its autocast column must not build either (a macro arity error at the row).
# With NVCC set (a build with the CUDA plugin), the CUDA kernels are checked the same way,
# through nvcc's front end alone (--cuda: no device code generated).
#
# Usage: [NVCC=nvcc] tools/check-op-table.sh CC [compiler flags]   (ctest: test_op_table_rows)
set -eu
cc=$1
shift
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/check_row_lib.sh"
make_trees . "$here/include/ctensor"
awk '{ print }
     /X\(exp2, EXP2, FLOAT, GRAD, / { print "    X(cbrt, CBRT, FLOAT, GRAD, AS_IS) \\" }
     /X\(add, ADD, ARITH, GRAD, / { print "    X(fdim, FDIM, ARITH, GRAD, AS_IS) \\" }' \
    "$here/include/ctensor/op_list.h" > "$work/bad/ctensor/op_list.h"
grep -q 'X(cbrt, CBRT' "$work/bad/ctensor/op_list.h" && grep -q 'X(fdim, FDIM' "$work/bad/ctensor/op_list.h"
# A row without its autocast column (all else in place: the op layer is where it is read).
mkdir -p "$work/short"
cp -r "$here/include/ctensor" "$work/short/"
awk '{ print }
     /X\(exp2, EXP2, FLOAT, GRAD, / { print "    X(exp10, EXP10, FLOAT, GRAD) \\" }' \
    "$here/include/ctensor/op_list.h" > "$work/short/ctensor/op_list.h"
grep -q 'X(exp10, EXP10' "$work/short/ctensor/op_list.h"

checks="src/backend/cpu/cpu_unary.c:ct__ew_cbrt_f32 src/backend/cpu/cpu_binary.c:ct__ew_fdim_f32
src/ops/elementwise_grad.c:grad_cbrt src/ops/elementwise_grad.c:grad_fdim
tests/test_ops_unary.c:uref_cbrt tests/test_ops_binary.c:bref_fdim
tests/test_autograd_ops.c:range_cbrt"
if [ -n "${NVCC:-}" ]; then
    checks="$checks src/backend/cuda/cuda_unary.cu:ct__ew_cbrt_f32
src/backend/cuda/cuda_binary.cu:ct__ew_fdim_f32"
else
    echo "check-op-table: the CUDA kernels are not checked: this build has no nvcc"
fi
status=0
file=src/ops/autocast.c
if compile "$work/short" "$@"; then
    echo "check-op-table: $file builds with a row that lacks its autocast column"
    status=1
elif ! grep -q "exp10" "$work/err"; then
    echo "check-op-table: $file fails on a row without its autocast column, not naming it:"
    cat "$work/err"
    status=1
else
    echo "check-op-table: $file: $(grep -m1 'error:' "$work/err" | sed 's/^.*error: //')" \
        "at $(grep -m1 "exp10" "$work/err" | sed 's/^[ 0-9|]*//')"
fi
for check in $checks; do
    file=${check%:*}
    check_row check-op-table "$file" "${check#*:}" compile "$@"
done
exit "$status"
