/* ct_matmul: numpy.matmul semantics.
 *
 * Each operand is read as a stack of matrices: a 1-D a of size k is a 1 x k row and a 1-D
 * b a k x 1 column; the axis this adds is left out of the result. The batch axes (all but
 * the last two) broadcast as NumPy's. Operands of different dtypes are cast to the promoted
 * dtype (complex ones too: cgemm and zgemm). bool @ bool is logical (any over k of a and b), as in
 * NumPy. 0-d operands are rejected, as NumPy does: scaling is ct_mul's job. The kernel gets strided
 * views (no copy here), so transposed operands reach BLAS as they are. */
#include <stdio.h>
#include <string.h>

#include "ops/grad_impl.h"
#include "ops/autocast_impl.h"
#include "ops/op_impl.h"

#define OP "ct_matmul"

/* "(2,3)", "(3,)": the shapes as the error messages show them. */
static void shape_str(char *buf, size_t size, const ct_tensor *t) {
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < t->ndim && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (used < size) snprintf(buf + used, size - used, t->ndim == 1 ? ",)" : ")");
}

/* An operand as a stack of matrices. */
typedef struct {
    int batch_ndim;
    int64_t rows, cols, row_stride, col_stride;
} matrix_view;

/* a (is_b false) or b as matrices: a 1-D a is a row, a 1-D b a column. */
static matrix_view as_matrices(const ct_tensor *t, bool is_b) {
    matrix_view v = {t->ndim - 2, 1, 1, 0, 0};
    if (t->ndim == 1) {
        v.batch_ndim = 0;
        if (is_b) {
            v.rows = t->shape[0];
            v.row_stride = t->strides[0];
        } else {
            v.cols = t->shape[0];
            v.col_stride = t->strides[0];
        }
        return v;
    }
    v.rows = t->shape[t->ndim - 2];
    v.cols = t->shape[t->ndim - 1];
    v.row_stride = t->strides[t->ndim - 2];
    v.col_stride = t->strides[t->ndim - 1];
    return v;
}

/* CT_ERR_SHAPE with a message naming both shapes, then detail. */
static ct_status shape_error(const ct_tensor *a, const ct_tensor *b, const char *detail) {
    char sa[CT__SHAPE_TEXT_SIZE], sb[CT__SHAPE_TEXT_SIZE];
    shape_str(sa, sizeof sa, a);
    shape_str(sb, sizeof sb, b);
    return ct__error(CT_ERR_SHAPE, OP ": %s @ %s: %s", sa, sb, detail);
}

/* Check ranks, the inner sizes and the batch broadcast; writes the batch shape. */
static ct_status check_shapes(const ct_tensor *a, const ct_tensor *b, int *batch_ndim,
                              int64_t *batch_shape) {
    char detail[200];
    if (a->ndim == 0 || b->ndim == 0) {
        snprintf(detail, sizeof detail,
                 "argument %d is 0-d; matmul needs operands of rank >= 1 (use ct_mul to scale "
                 "by a scalar)",
                 a->ndim == 0 ? 1 : 2);
        return shape_error(a, b, detail);
    }
    matrix_view va = as_matrices(a, false), vb = as_matrices(b, true);
    if (va.cols != vb.rows) {
        snprintf(detail, sizeof detail,
                 "inner sizes %lld and %lld differ; the last axis of argument 1 must match the "
                 "%s axis of argument 2",
                 (long long)va.cols, (long long)vb.rows, b->ndim == 1 ? "only" : "second-to-last");
        return shape_error(a, b, detail);
    }
    int n = va.batch_ndim > vb.batch_ndim ? va.batch_ndim : vb.batch_ndim;
    for (int d = 0; d < n; d++) {
        int da = d - (n - va.batch_ndim), db = d - (n - vb.batch_ndim);
        int64_t xa = da < 0 ? 1 : a->shape[da], xb = db < 0 ? 1 : b->shape[db];
        if (xa != xb && xa != 1 && xb != 1) {
            snprintf(detail, sizeof detail,
                     "batch axes do not broadcast (size %lld against %lld); batch sizes must "
                     "match or be 1",
                     (long long)xa, (long long)xb);
            return shape_error(a, b, detail);
        }
        batch_shape[d] = xa == 1 ? xb : xa;
    }
    *batch_ndim = n;
    return CT_OK;
}

/* Batch strides of t's leading axes, right-aligned to the broadcast batch shape (0 where t
 * has no such axis or a size-1 one). */
static void batch_strides(const ct_tensor *t, int tb, int n, int64_t *out) {
    for (int d = 0; d < n; d++) {
        int td = d - (n - tb);
        out[d] = td < 0 || t->shape[td] == 1 ? 0 : t->strides[td];
    }
}

/* Kernel arguments for a @ b (same dtype) into the contiguous out. */
static void build_args(ct__matmul_args *x, const ct_tensor *a, const ct_tensor *b,
                       const ct_tensor *out, int batch_ndim, const int64_t *batch_shape) {
    matrix_view va = as_matrices(a, false), vb = as_matrices(b, true);
    *x = (ct__matmul_args){.dtype = out->dtype, .m = va.rows, .n = vb.cols, .k = va.cols};
    x->batch_ndim = batch_ndim;
    x->a = ct__data(a);
    x->b = ct__data(b);
    x->out = ct__data(out);
    batch_strides(a, va.batch_ndim, batch_ndim, x->a_batch_strides);
    batch_strides(b, vb.batch_ndim, batch_ndim, x->b_batch_strides);
    int64_t stride = x->m * x->n;
    for (int d = batch_ndim - 1; d >= 0; d--) {
        x->batch_shape[d] = batch_shape[d];
        x->out_batch_strides[d] = stride;
        stride *= batch_shape[d];
    }
    x->a_row_stride = va.row_stride;
    x->a_col_stride = va.col_stride;
    x->b_row_stride = vb.row_stride;
    x->b_col_stride = vb.col_stride;
    x->out_row_stride = x->n;
    x->allow_tf32 = strcmp(ct_get_matmul_precision(), "high") == 0;
    x->deterministic = ct_are_deterministic_algorithms_enabled();
}

/* a @ b (+ bias, NULL or a contiguous row the kernel takes) for operands of the result's
 * dtype, with shapes already checked. */
static ct_tensor *run(ct_device device, const ct_tensor *a, const ct_tensor *b,
                      const ct_tensor *bias, int batch_ndim, const int64_t *batch_shape) {
    int64_t shape[CT_MAX_DIMS];
    int ndim = batch_ndim;
    for (int d = 0; d < batch_ndim; d++) shape[d] = batch_shape[d];
    if (a->ndim > 1) shape[ndim++] = a->shape[a->ndim - 2];
    if (b->ndim > 1) shape[ndim++] = b->shape[b->ndim - 1];
    ct_tensor *out = ct__tensor_new(device, a->dtype, ndim, shape);
    if (!out || out->numel == 0) return out;
    ct__matmul_args x;
    build_args(&x, a, b, out, batch_ndim, batch_shape);
    x.bias = bias ? ct__data(bias) : NULL;
    ct_status status;
    if (x.k == 0) {
        status = ct_fill(out, 0.0);
    } else {
        int physical;
        const ct__kernel_table *k = ct__kernels(device, &physical);
        status = k ? k->matmul(physical, &x) : ct_last_status();
    }
    if (status != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static ct_tensor *matmul(const ct_tensor *a, const ct_tensor *b) {
    const ct_tensor *args[2] = {a, b};
    ct_device device;
    if (!ct__check_args_complex(OP, 2, args, &device)) return NULL;
    int batch_ndim = 0;
    int64_t batch_shape[CT_MAX_DIMS];
    if (check_shapes(a, b, &batch_ndim, batch_shape) != CT_OK) return NULL;
    ct_dtype dtype = ct_promote_types(a->dtype, b->dtype);
    ct_tensor *ca = ct_cast(a, dtype);
    ct_tensor *cb = ca ? ct_cast(b, dtype) : NULL;
    ct_tensor *out = cb ? run(device, ca, cb, NULL, batch_ndim, batch_shape) : NULL;
    ct_release(ca);
    ct_release(cb);
    return ct__grad_needed(2, args) ? ct__record_matmul(out, a, b) : out;
}

ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b) {
    ct__autocast ac;
    if (!ct__autocast_begin(&ac, CT__AC_MATMUL, 2, (const ct_tensor **[]){&a, &b})) return NULL;
    ct_tensor *out = matmul(a, b);
    ct__autocast_end(&ac);
    return out;
}

ct_tensor *ct__matmul_bias(const ct_tensor *a, const ct_tensor *b, const ct_tensor *bias) {
    ct_device device = a->storage->device;
    bool fused = device.type == CT_DEVICE_CPU && (a->dtype == CT_F32 || a->dtype == CT_F64) &&
                 b->dtype == a->dtype && bias->dtype == a->dtype && a->ndim >= 1 && b->ndim == 2 &&
                 bias->ndim == 1 && bias->shape[0] == b->shape[1] && bias->strides[0] == 1 &&
                 b->shape[0] > 0;
    int batch_ndim = 0;
    int64_t batch_shape[CT_MAX_DIMS];
    if (!fused) {
        ct_tensor *y = ct_matmul(a, b);
        ct_tensor *out = y ? ct_add(y, bias) : NULL;
        ct_release(y);
        return out;
    }
    if (check_shapes(a, b, &batch_ndim, batch_shape) != CT_OK) return NULL;
    return run(device, a, b, bias, batch_ndim, batch_shape);
}
