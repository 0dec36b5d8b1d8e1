/* CPU elementwise kernels of complex operands: the unary and binary kernels hand an op over
 * here when it computes in a complex dtype (or, for abs and the predicates, reads one). Each
 * element is loaded as complex128, takes its formula from backend/complex_impl.h (the CUDA
 * kernels' too) and is stored into the output's dtype. */
#include "backend/complex_impl.h"
#include "backend/cpu/cpu_ew_impl.h"

typedef struct {
    int op;
    ct_dtype dtype[3];
} complex_ctx;

static void unary_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    const complex_ctx *c = vctx;
    for (int64_t i = 0; i < n; i++) {
        ct__z z = ct__load_c128(ptrs[1] + i * strides[1], c->dtype[1]);
        ct__store_c128(ptrs[0] + i * strides[0], c->dtype[0], ct__z_unary((ct__unary_op)c->op, z));
    }
}

static void binary_row(char *const *ptrs, const int64_t *strides, int64_t n, void *vctx) {
    const complex_ctx *c = vctx;
    for (int64_t i = 0; i < n; i++) {
        ct__z a = ct__load_c128(ptrs[1] + i * strides[1], c->dtype[1]);
        ct__z b = ct__load_c128(ptrs[2] + i * strides[2], c->dtype[2]);
        ct__store_c128(ptrs[0] + i * strides[0], c->dtype[0],
                       ct__z_binary((ct__binary_op)c->op, a, b));
    }
}

void ct__cpu_complex_unary(ct__unary_op op, const ct__ew_args *args) {
    complex_ctx ctx = {op, {args->dtype[0], args->dtype[1], args->dtype[1]}};
    ct__cpu_parallel_rows(args, unary_row, &ctx);
}

void ct__cpu_complex_binary(ct__binary_op op, const ct__ew_args *args, char *const *data) {
    complex_ctx ctx = {op, {args->dtype[0], args->dtype[1], args->dtype[2]}};
    ct__cpu_parallel_rows_at(args, data, binary_row, &ctx);
}
