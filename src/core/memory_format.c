/* Memory formats: which order of the axes a dense tensor's elements take in memory. A
 * channels-last tensor is a logical (N, C, H, W) tensor whose strides are those of (N, H, W, C)
 * memory (PyTorch's torch.channels_last); ops that keep layouts read those strides. */
#include "core/error_impl.h"
#include "core/tensor_impl.h"

void ct__channels_last_strides(const int64_t *shape, int64_t *strides) {
    static const int order[4] = {1, 3, 2, 0}; /* innermost first: C, W, H, N */
    int64_t stride = 1;
    for (int i = 0; i < 4; i++) {
        strides[order[i]] = stride;
        stride *= shape[order[i]] > 0 ? shape[order[i]] : 1;
    }
}

/* Whether the axes longer than 1 of t have the steps of `strides`. */
static bool steps_match(const ct_tensor *t, const int64_t *strides) {
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] > 1 && t->strides[d] != strides[d]) return false;
    return true;
}

bool ct_is_contiguous_format(const ct_tensor *t, ct_memory_format format) {
    if (!t) return false;
    if (format == CT_FORMAT_CONTIGUOUS) return t->contiguous;
    if (format != CT_FORMAT_CHANNELS_LAST || t->ndim != 4) return false;
    if (t->numel == 0) return true;
    int64_t strides[4];
    ct__channels_last_strides(t->shape, strides);
    return steps_match(t, strides);
}

bool ct__is_channels_last(const ct_tensor *t) {
    if (!ct_is_contiguous_format(t, CT_FORMAT_CHANNELS_LAST) || t->numel == 0) return false;
    return !t->contiguous || t->strides[1] != t->shape[2] * t->shape[3];
}

bool ct__is_dense(const ct_tensor *t) {
    if (t->contiguous) return true;
    /* Walk the axes from the smallest step up: each must step over all the ones before. */
    bool used[CT_MAX_DIMS] = {false};
    int64_t expected = 1;
    for (int seen = 0; seen < t->ndim; seen++) {
        int next = -1;
        for (int d = 0; d < t->ndim; d++)
            if (!used[d] && t->shape[d] > 1 && (next < 0 || t->strides[d] < t->strides[next]))
                next = d;
        if (next < 0) return true; /* only size-1 axes left */
        if (t->strides[next] != expected) return false;
        used[next] = true;
        expected *= t->shape[next];
    }
    return true;
}

bool ct__same_dense_layout(const ct_tensor *t, const ct_tensor *u) {
    return ct__same_shape(t, u) && steps_match(u, t->strides) && ct__is_dense(t);
}

ct_tensor *ct__tensor_new_like(ct_device device, ct_dtype dtype, const ct_tensor *t) {
    if (t->contiguous || !ct__is_dense(t)) return ct__tensor_new(device, dtype, t->ndim, t->shape);
    return ct__tensor_new_strided(device, dtype, t->ndim, t->shape, t->strides);
}
