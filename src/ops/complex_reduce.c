/* Reductions of complex tensors, made of the real ops every backend has: sum and mean of the
 * real and imaginary parts (views of the storage), prod as a pairwise product of halves
 * (elementwise complex multiplications, log2(n) of them), all and any of z != 0. The other
 * reductions (max, min, var, std, argmax, argmin) refuse complex tensors, naming themselves. */
#include "ops/op_impl.h"

typedef ct_tensor *(*reduce_fn)(const ct_tensor *x, int naxes, const int *axes, bool keepdim);

static ct_tensor *by_parts(reduce_fn fn, const char *op, const ct_tensor *x, int naxes,
                           const int *axes, bool keepdim) {
    ct_tensor *xr = ct__complex_part_view(x, 0), *xi = xr ? ct__complex_part_view(x, 1) : NULL;
    ct_tensor *re = xi ? fn(xr, naxes, axes, keepdim) : NULL;
    ct_tensor *im = re ? fn(xi, naxes, axes, keepdim) : NULL;
    ct_tensor *out = ct__complex_from_parts(re, im, x->dtype, op);
    ct_release(xr);
    ct_release(xi);
    ct_release(re);
    ct_release(im);
    return out;
}

/* The product over the reduced axes: they are moved last and flattened to one axis of n,
 * which halves (the first half times the second, an odd last entry kept) until one is left. */
static ct_tensor *pairwise_prod(const ct_tensor *x, const bool *reduced, bool keepdim) {
    int perm[CT_MAX_DIMS] = {0}, k = 0;
    int64_t shape[CT_MAX_DIMS + 1], kept_shape[CT_MAX_DIMS], n = 1;
    for (int d = 0; d < x->ndim; d++)
        if (!reduced[d]) kept_shape[k] = x->shape[d], perm[k++] = d;
    for (int d = 0, j = k; d < x->ndim; d++)
        if (reduced[d]) perm[j++] = d, n *= x->shape[d];
    for (int d = 0; d < k; d++) shape[d] = kept_shape[d];
    shape[k] = n;
    ct_tensor *moved = ct_permute(x, x->ndim, perm);
    ct_tensor *y = moved ? ct_reshape(moved, k + 1, shape) : NULL;
    ct_release(moved);
    while (y && n > 1) {
        int64_t half = n / 2;
        ct_tensor *a = ct_slice(y, k, 0, half, 1), *b = ct_slice(y, k, half, 2 * half, 1);
        ct_tensor *p = a && b ? ct_mul(a, b) : NULL;
        if (p && n % 2) {
            ct_tensor *last = ct_slice(y, k, n - 1, n, 1);
            const ct_tensor *both[2] = {p, last};
            ct_tensor *joined = last ? ct_concat(2, both, k) : NULL;
            ct_release(last);
            ct_release(p);
            p = joined;
        }
        ct_release(a);
        ct_release(b);
        ct_release(y);
        y = p;
        n = half + n % 2;
    }
    ct_tensor *out = NULL;
    if (y && n == 0)
        out = ct__full_on(y->storage->device, k, kept_shape, 1.0, x->dtype);
    else if (y)
        out = ct_reshape(y, k, kept_shape);
    ct_release(y);
    if (!out || !keepdim) return out;
    for (int d = 0, j = 0; d < x->ndim; d++) shape[d] = reduced[d] ? 1 : kept_shape[j++];
    ct_tensor *kept = ct_reshape(out, x->ndim, shape);
    ct_release(out);
    return kept;
}

ct_tensor *ct__complex_reduce(const char *name, ct__reduce_op op, const ct_tensor *x,
                              const bool *reduced, bool keepdim) {
    int axes[CT_MAX_DIMS], naxes = 0;
    for (int d = 0; d < x->ndim; d++)
        if (reduced[d]) axes[naxes++] = d;
    switch (op) {
    case CT_ROP_SUM: return by_parts(ct_sum, name, x, naxes, axes, keepdim);
    case CT_ROP_MEAN: return by_parts(ct_mean, name, x, naxes, axes, keepdim);
    case CT_ROP_PROD: return pairwise_prod(x, reduced, keepdim);
    case CT_ROP_ALL:
    case CT_ROP_ANY: {
        ct_tensor *nonzero = ct_ne_scalar(x, 0.0);
        ct_tensor *out =
            nonzero ? (op == CT_ROP_ALL ? ct_all : ct_any)(nonzero, naxes, axes, keepdim) : NULL;
        ct_release(nonzero);
        return out;
    }
    default: ct__refuse_complex(name, 1, &x); return NULL;
    }
}
