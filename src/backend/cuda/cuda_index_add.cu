// CUDA index_add / scatter_add / index_copy kernel (ct__index_add_args in
// backend/norm_args_impl.h): dst[..., index, ...] += src along one axis, repeated indices
// accumulating, or dst[..., index, ...] = src (assign), where of repeated indices the last
// one's value stays, as on the CPU.
//
// Assignment with an index that is the same at every position off the axis (ct_index_copy's)
// runs in two parallel passes: one thread per position on the axis marks, for each index
// value, the last position that names it (atomicMax of position + 1 into a zeroed 64-bit word
// per value, which the CUDA C++ Programming Guide's atomic functions give from compute
// capability 5.0: the maximum does not depend on the order the threads arrive in); then, in
// stream order after it, one thread per element (position on the axis, position off it)
// stores its source element where its position is the mark, so each dst element has exactly
// one writer, the last. An assignment whose index varies off the axis (ct_index_copy's never
// does) takes the serial walk.
//
// Additions in f32 and f64 take one of three paths:
// - by default, one thread per (position off the axis, position on it), adding with
//   atomicAdd: the order of additions into one element, so its rounding, follows the
//   scheduling;
// - with args->deterministic and an index that is the same at every position off the axis
//   (index_add, the backward of index_select and embedding), the sorted path: the positions
//   on the axis are sorted by index value with CUB's radix sort (stable, so equal indices
//   keep their order) and one thread per (position off the axis, run of equal indices) adds
//   its run in order;
// - with args->deterministic otherwise (scatter_add with an index that varies off the
//   axis, or more positions on it than CUB sorts at once), the serial walk.
// Both deterministic paths add into each element in the order of the indexed axis, one
// rounding each, as cpu_index_add.c does: the bits are the CPU's. Every other dtype takes
// the serial walk: one thread per position off the axis, which walks the indexed axis in
// order (no two threads meet in dst, so no atomics: integers wrap, bool is a logical or, f16
// and bf16 add in float and round, as on the CPU). A bad index is reported through a device
// slot read back after the kernel (this waits for the stream).
#include <limits.h>

#include <cub/cub.cuh>

#include "backend/cuda/cuda_nn_impl.cuh"

namespace {

// Element offsets (not bytes) of position r off the axis in the three operands of rest.
NN_DEV void rest_offsets(const ct__ew_args &rest, int64_t r, int64_t off[3]) {
    off[0] = off[1] = off[2] = 0;
    for (int d = rest.ndim - 1; d >= 0; d--) {
        int64_t c = r % rest.shape[d];
        r /= rest.shape[d];
        for (int k = 0; k < 3; k++) off[k] += c * rest.strides[k][d];
    }
}

// The index value at position (r, k), off[1] being r's offset in the index, made
// non-negative; -1 (reported) for one out of range.
NN_DEV int64_t index_at(const ct__index_add_args &a, int64_t off1, int64_t k, nn_bad_slot *slot) {
    const ct__ew_args &rest = a.rest;
    const char *ip = rest.data[1] + (off1 + k * a.index_stride) * ct_cuda_dtype_size(rest.dtype[1]);
    int64_t v = rest.dtype[1] == CT_I32 ? *(const int32_t *)ip : *(const int64_t *)ip;
    int64_t at = v < 0 ? v + a.dst_axis_size : v;
    if (at < 0 || at >= a.dst_axis_size) {
        nn_report_bad(slot, v);
        return -1;
    }
    return at;
}

// The dst element of position (r, k), or NULL (reported) for an index out of range.
NN_DEV char *target(const ct__index_add_args &a, const int64_t off[3], int64_t k,
                    nn_bad_slot *slot) {
    int64_t at = index_at(a, off[1], k, slot);
    if (at < 0) return NULL;
    return a.rest.data[0] + (off[0] + at * a.dst_axis_stride) * ct_cuda_dtype_size(a.rest.dtype[0]);
}

template <typename T>
__global__ void __launch_bounds__(NN_THREADS) add_atomic(ct__index_add_args a, nn_bad_slot *slot) {
    int64_t total = a.rest.numel * a.k;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / a.k, k = i % a.k, off[3];
        rest_offsets(a.rest, r, off);
        char *dst = target(a, off, k, slot);
        if (dst) atomicAdd((T *)dst, ((const T *)a.rest.data[2])[off[2] + k * a.src_stride]);
    }
}

// *dst += *src in dtype, one rounding (cpu_index_add.c's add_element).
NN_DEV void add_element(char *dst, const char *src, ct_dtype dtype) {
    switch (dtype) {
    case CT_F32: *(float *)dst += *(const float *)src; break;
    case CT_F64: *(double *)dst += *(const double *)src; break;
    case CT_F16:
    case CT_BF16:
        ct__store_f64(dst, dtype,
                      (double)((float)ct__load_f64(dst, dtype) + (float)ct__load_f64(src, dtype)));
        break;
    case CT_I32:
    case CT_U32: *(uint32_t *)dst += *(const uint32_t *)src; break;
    case CT_I64:
    case CT_U64: *(unsigned long long *)dst += *(const unsigned long long *)src; break;
    case CT_U8:
    case CT_I8: *(uint8_t *)dst = (uint8_t)(*(uint8_t *)dst + *(const uint8_t *)src); break;
    case CT_I16:
    case CT_U16: *(uint16_t *)dst = (uint16_t)(*(uint16_t *)dst + *(const uint16_t *)src); break;
    case CT_C64:
        ((float *)dst)[0] += ((const float *)src)[0];
        ((float *)dst)[1] += ((const float *)src)[1];
        break;
    case CT_C128:
        ((double *)dst)[0] += ((const double *)src)[0];
        ((double *)dst)[1] += ((const double *)src)[1];
        break;
    default: *(uint8_t *)dst = *(uint8_t *)dst || *(const uint8_t *)src; break;
    }
}

// *dst = *src, one element of `size` bytes.
NN_DEV void store_element(char *dst, const char *src, int64_t size) {
    for (int64_t b = 0; b < size; b++) dst[b] = src[b];
}

__global__ void __launch_bounds__(NN_THREADS) add_serial(ct__index_add_args a, nn_bad_slot *slot) {
    ct_dtype dtype = a.rest.dtype[0];
    int64_t size = ct_cuda_dtype_size(dtype);
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < a.rest.numel;
         r += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        rest_offsets(a.rest, r, off);
        for (int64_t k = 0; k < a.k; k++) {
            char *dst = target(a, off, k, slot);
            if (!dst) break;
            const char *src = a.rest.data[2] + (off[2] + k * a.src_stride) * size;
            if (a.assign)
                store_element(dst, src, size);
            else
                add_element(dst, src, dtype);
        }
    }
}

// ---- the sorted path ----

// keys[k] = the index value at position k on the axis (the same at every position off
// it), or dst_axis_size for one out of range (reported; it sorts last and adds nothing);
// order[k] = k.
__global__ void __launch_bounds__(NN_THREADS)
    sort_keys(ct__index_add_args a, uint64_t *keys, int64_t *order, nn_bad_slot *slot) {
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < a.k;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t at = index_at(a, 0, k, slot);
        keys[k] = (uint64_t)(at < 0 ? a.dst_axis_size : at);
        order[k] = k;
    }
}

// Thread (r, j) where j starts a run of equal keys: dst at (r, key) += src at (r, order[i])
// for i over the run, in order (the sort kept equal keys in their order on the axis).
template <typename T>
__global__ void __launch_bounds__(NN_THREADS)
    add_sorted(ct__index_add_args a, const uint64_t *keys, const int64_t *order) {
    int64_t total = a.rest.numel * a.k;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / a.k, j = i % a.k;
        uint64_t at = keys[j];
        if (at >= (uint64_t)a.dst_axis_size || (j > 0 && keys[j - 1] == at)) continue;
        int64_t off[3];
        rest_offsets(a.rest, r, off);
        T *dst = (T *)a.rest.data[0] + off[0] + (int64_t)at * a.dst_axis_stride;
        const T *src = (const T *)a.rest.data[2] + off[2];
        T sum = *dst;
        for (; j < a.k && keys[j] == at; j++) sum += src[order[j] * a.src_stride];
        *dst = sum;
    }
}

// The scratch of one sorted addition: keys and positions, before and after the sort, and
// CUB's temporary storage.
struct sorted_scratch {
    uint64_t *keys = NULL, *keys_out = NULL;
    int64_t *order = NULL, *order_out = NULL;
    void *temp = NULL;
};

// Whether the index is the same at every position off the axis.
bool same_off_axis(const ct__index_add_args *args) {
    for (int d = 0; d < args->rest.ndim; d++)
        if (args->rest.strides[1][d] != 0 && args->rest.shape[d] != 1) return false;
    return true;
}

// Whether the sorted path applies: the index is the same at every position off the axis,
// and CUB's sort takes the axis's length (an int).
bool sortable(const ct__index_add_args *args) { return same_off_axis(args) && args->k <= INT_MAX; }

ct_status add_sorted_run(int device, cudaStream_t stream, const ct__index_add_args *args,
                         nn_bad_slot *slot, sorted_scratch &s) {
    size_t n = (size_t)args->k;
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&s.keys, n * sizeof *s.keys, stream));
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&s.keys_out, n * sizeof *s.keys, stream));
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&s.order, n * sizeof *s.order, stream));
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&s.order_out, n * sizeof *s.order, stream));
    sort_keys<<<nn_item_blocks(args->k), NN_THREADS, 0, stream>>>(*args, s.keys, s.order, slot);
    CT_CUDA_CHECK(device, cudaGetLastError());
    // Keys lie in [0, dst_axis_size]: the bits above dst_axis_size's are zero.
    int end_bit = 64 - __builtin_clzll((unsigned long long)args->dst_axis_size | 1u);
    size_t bytes = 0;
    CT_CUDA_CHECK(device,
                  cub::DeviceRadixSort::SortPairs(NULL, bytes, s.keys, s.keys_out, s.order,
                                                  s.order_out, (int)args->k, 0, end_bit, stream));
    CT_CUDA_CHECK(device, cudaMallocAsync(&s.temp, bytes ? bytes : 1, stream));
    CT_CUDA_CHECK(device,
                  cub::DeviceRadixSort::SortPairs(s.temp, bytes, s.keys, s.keys_out, s.order,
                                                  s.order_out, (int)args->k, 0, end_bit, stream));
    unsigned blocks = nn_item_blocks(args->rest.numel * args->k);
    if (args->rest.dtype[0] == CT_F32)
        add_sorted<float><<<blocks, NN_THREADS, 0, stream>>>(*args, s.keys_out, s.order_out);
    else
        add_sorted<double><<<blocks, NN_THREADS, 0, stream>>>(*args, s.keys_out, s.order_out);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

ct_status add_sorted_path(int device, cudaStream_t stream, const ct__index_add_args *args,
                          nn_bad_slot *slot) {
    sorted_scratch s;
    ct_status status = add_sorted_run(device, stream, args, slot, s);
    cudaError_t freed = cudaSuccess, e;
    void *scratch[5] = {s.keys, s.keys_out, s.order, s.order_out, s.temp};
    for (void *p : scratch)
        if (p && (e = cudaFreeAsync(p, stream)) != cudaSuccess) freed = e;
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, freed);
    return CT_OK;
}

// ---- assignment in two passes ----

// mark[v] = 1 + the last position on the axis whose index is v (0: none), for an index the
// same at every position off the axis. An index out of range is reported and marks nothing.
__global__ void __launch_bounds__(NN_THREADS)
    mark_last(ct__index_add_args a, unsigned long long *mark, nn_bad_slot *slot) {
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < a.k;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t at = index_at(a, 0, k, slot);
        if (at >= 0) atomicMax(&mark[at], (unsigned long long)k + 1);
    }
}

// *dst = *src for one element of `size` bytes (1, 2, 4 or 8), in one access.
NN_DEV void store_sized(char *dst, const char *src, int64_t size) {
    switch (size) {
    case 8: *(uint64_t *)dst = *(const uint64_t *)src; break;
    case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
    case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
    default: store_element(dst, src, size); break;
    }
}

// Thread (k, r), r the faster so that neighbours share k's index and mark: the source
// element at (r, k) goes to dst at (r, index k) when k is the index's last position.
__global__ void __launch_bounds__(NN_THREADS)
    store_last(ct__index_add_args a, const unsigned long long *mark, nn_bad_slot *slot) {
    int64_t size = ct_cuda_dtype_size(a.rest.dtype[0]), total = a.rest.numel * a.k;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = i / a.rest.numel, r = i % a.rest.numel;
        int64_t at = index_at(a, 0, k, slot);
        if (at < 0 || mark[at] != (unsigned long long)k + 1) continue;
        int64_t off[3];
        rest_offsets(a.rest, r, off);
        store_sized(a.rest.data[0] + (off[0] + at * a.dst_axis_stride) * size,
                    a.rest.data[2] + (off[2] + k * a.src_stride) * size, size);
    }
}

ct_status assign_run(int device, cudaStream_t stream, const ct__index_add_args *args,
                     nn_bad_slot *slot, unsigned long long **mark) {
    size_t n = args->dst_axis_size > 0 ? (size_t)args->dst_axis_size : 1;
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)mark, n * sizeof **mark, stream));
    CT_CUDA_CHECK(device, cudaMemsetAsync(*mark, 0, n * sizeof **mark, stream));
    mark_last<<<nn_item_blocks(args->k), NN_THREADS, 0, stream>>>(*args, *mark, slot);
    CT_CUDA_CHECK(device, cudaGetLastError());
    store_last<<<nn_item_blocks(args->rest.numel * args->k), NN_THREADS, 0, stream>>>(*args, *mark,
                                                                                      slot);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

ct_status assign_path(int device, cudaStream_t stream, const ct__index_add_args *args,
                      nn_bad_slot *slot) {
    unsigned long long *mark = NULL;
    ct_status status = assign_run(device, stream, args, slot, &mark);
    cudaError_t freed = mark ? cudaFreeAsync(mark, stream) : cudaSuccess;
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, freed);
    return CT_OK;
}

// ---- the choice of path ----

ct_status launch(int device, cudaStream_t stream, const ct__index_add_args *args,
                 nn_bad_slot *slot) {
    ct_dtype dtype = args->rest.dtype[0];
    int64_t total = args->rest.numel * args->k;
    bool float_add = (dtype == CT_F32 || dtype == CT_F64) && !args->assign;
    if (args->assign && same_off_axis(args)) return assign_path(device, stream, args, slot);
    if (float_add && args->deterministic && sortable(args))
        return add_sorted_path(device, stream, args, slot);
    if (float_add && !args->deterministic && dtype == CT_F32)
        add_atomic<float><<<nn_item_blocks(total), NN_THREADS, 0, stream>>>(*args, slot);
    else if (float_add && !args->deterministic)
        add_atomic<double><<<nn_item_blocks(total), NN_THREADS, 0, stream>>>(*args, slot);
    else
        add_serial<<<nn_item_blocks(args->rest.numel), NN_THREADS, 0, stream>>>(*args, slot);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return CT_OK;
}

} // namespace

extern "C" ct_status ct_cuda_index_add(int device, const ct__index_add_args *args) {
    if (args->rest.numel == 0 || args->k == 0) return CT_OK;
    cudaStream_t stream;
    ct_status status = ct_cuda_stream_get(device, &stream);
    nn_bad_slot *slot = NULL;
    if (status == CT_OK) status = nn_slot_begin(device, stream, &slot);
    if (status != CT_OK) return status;
    status = launch(device, stream, args, slot);
    bool failed = false;
    int64_t index = 0;
    ct_status finished = nn_slot_finish(device, stream, slot, &failed, &index);
    if (status != CT_OK) return status;
    if (finished != CT_OK) return finished;
    if (!failed) return CT_OK;
    int64_t size = args->dst_axis_size;
    if (size == 0)
        return ct_cuda_fail(CT_ERR_INVALID_ARG,
                            "index %lld is out of range for an axis of size 0 (it has no "
                            "elements to add into)",
                            (long long)index);
    return ct_cuda_fail(CT_ERR_INVALID_ARG,
                        "index %lld is out of range for an axis of size %lld (valid indices are "
                        "-%lld to %lld)",
                        (long long)index, (long long)size, (long long)size, (long long)size - 1);
}
