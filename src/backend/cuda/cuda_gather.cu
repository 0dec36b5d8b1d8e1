// CUDA gather kernel (ct__gather_args in backend_impl.h) for ct_gather and ct_index_select:
// out[i] = src[i with its `axis` coordinate replaced by index[i]], elements copied as raw
// bytes (src and out share a dtype), negative indices counting from the end.
//
// Every index is bounds-checked on the device. A bad one leaves its element unwritten and
// records its position in a device slot with atomicMin, so the smallest bad position (in
// C order over the output) is reported whatever the scheduling; after the kernel the slot
// is copied back (which waits for the stream), and the launcher reads the index at that
// position to write the same message as the CPU kernel. The op layer then releases the
// output.
#include <stdint.h>

#include "backend/cuda/cuda_impl.h"
#include "backend/cuda/cuda_load_impl.cuh"
#include "backend/cuda/cuda_param_impl.cuh"

namespace {

#define GATHER_THREADS 256
#define GATHER_MAX_BLOCKS 65536
#define NO_BAD_POSITION UINT64_MAX

// The iteration of ct__gather_args with byte strides; operands out, index, src.
struct gather_geom {
    int ndim;
    int64_t numel;
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[3][CT_MAX_DIMS];
    char *out;
    const char *index;
    const char *src;
    int elem_size;
    bool index_i32;
    int64_t axis_size, axis_stride; // axis stride in bytes
};
CT_CUDA_BY_VALUE_FITS(gather_geom);

// Byte offsets of linear position i (C order) in the three operands.
static __host__ __device__ void gather_offsets(const gather_geom &g, int64_t i, int64_t off[3]) {
    off[0] = off[1] = off[2] = 0;
    for (int d = g.ndim - 1; d >= 0; d--) {
        int64_t c = i % g.shape[d];
        i /= g.shape[d];
        for (int k = 0; k < 3; k++) off[k] += c * g.strides[k][d];
    }
}

template <typename T> static __device__ void copy_element(char *dst, const char *src) {
    *(T *)dst = *(const T *)src;
}

__global__ void __launch_bounds__(GATHER_THREADS)
    gather_kernel(gather_geom g, unsigned long long *bad_position) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.numel; i += step) {
        int64_t off[3];
        gather_offsets(g, i, off);
        const char *ip = g.index + off[1];
        int64_t idx = g.index_i32 ? *(const int32_t *)ip : *(const int64_t *)ip;
        int64_t at = idx < 0 ? idx + g.axis_size : idx;
        if (at < 0 || at >= g.axis_size) {
            atomicMin(bad_position, (unsigned long long)i);
            continue;
        }
        char *dst = g.out + off[0];
        const char *src = g.src + off[2] + at * g.axis_stride;
        switch (g.elem_size) {
        case 1: copy_element<uint8_t>(dst, src); break;
        case 2: copy_element<uint16_t>(dst, src); break;
        case 4: copy_element<uint32_t>(dst, src); break;
        case 8: copy_element<uint64_t>(dst, src); break;
        default: copy_element<ct_complex128>(dst, src); break; /* complex128 */
        }
    }
}

static void geom_init(gather_geom *g, const ct__gather_args *args) {
    const ct__ew_args *it = &args->it;
    *g = gather_geom{};
    g->ndim = it->ndim;
    g->numel = it->numel;
    for (int d = 0; d < it->ndim; d++) {
        g->shape[d] = it->shape[d];
        for (int k = 0; k < 3; k++)
            g->strides[k][d] = it->strides[k][d] * ct_cuda_dtype_size(it->dtype[k]);
    }
    g->out = it->data[0];
    g->index = it->data[1];
    g->src = it->data[2];
    g->elem_size = (int)ct_cuda_dtype_size(it->dtype[0]);
    g->index_i32 = it->dtype[1] == CT_I32;
    g->axis_size = args->src_axis_size;
    g->axis_stride = args->src_axis_stride * g->elem_size;
}

// The CPU kernel's message for a bad index.
static ct_status bad_index_error(int64_t index, int64_t axis_size) {
    if (axis_size == 0)
        return ct_cuda_fail(CT_ERR_INVALID_ARG,
                            "index %lld is out of range for an axis of size 0 (it has no "
                            "elements to pick)",
                            (long long)index);
    return ct_cuda_fail(CT_ERR_INVALID_ARG,
                        "index %lld is out of range for an axis of size %lld (valid indices are "
                        "-%lld to %lld)",
                        (long long)index, (long long)axis_size, (long long)axis_size,
                        (long long)axis_size - 1);
}

static_assert(sizeof(unsigned long long) == CT_READBACK_BAD_POSITION,
              "the op layer counts this read");

// Run the kernel with the slot at bad_position; *first_bad gets the smallest bad position
// (NO_BAD_POSITION when every index is in range). Waits for the stream.
static ct_status launch(int device, cudaStream_t stream, const gather_geom &g,
                        unsigned long long *bad_position, unsigned long long *first_bad) {
    CT_CUDA_CHECK(device, cudaMemsetAsync(bad_position, 0xff, sizeof *bad_position, stream));
    int64_t blocks = (g.numel + GATHER_THREADS - 1) / GATHER_THREADS;
    unsigned grid = (unsigned)(blocks < GATHER_MAX_BLOCKS ? blocks : GATHER_MAX_BLOCKS);
    gather_kernel<<<grid, GATHER_THREADS, 0, stream>>>(g, bad_position);
    CT_CUDA_CHECK(device, cudaGetLastError());
    return ct_cuda_read_back(device, stream, first_bad, bad_position, sizeof *first_bad,
                             "gather's index check");
}

// The index value at position (the one the kernel found out of range).
static ct_status read_index(int device, cudaStream_t stream, const gather_geom &g, int64_t position,
                            int64_t *index) {
    int64_t off[3];
    gather_offsets(g, position, off);
    int32_t i32 = 0;
    int64_t i64 = 0;
    void *dst = g.index_i32 ? (void *)&i32 : (void *)&i64;
    size_t size = g.index_i32 ? sizeof i32 : sizeof i64;
    ct_status status =
        ct_cuda_read_back(device, stream, dst, g.index + off[1], size, "gather's bad index");
    if (status != CT_OK) return status;
    *index = g.index_i32 ? i32 : i64;
    return CT_OK;
}

} // namespace

extern "C" ct_status ct_cuda_gather(int device, const ct__gather_args *args) {
    gather_geom g;
    geom_init(&g, args);
    if (g.numel == 0) return CT_OK;
    cudaStream_t stream = ct_cuda_stream(device);
    if (!stream) return CT_ERR_BACKEND; // ct_cuda_stream recorded why
    unsigned long long *slot = NULL, first_bad = NO_BAD_POSITION;
    CT_CUDA_CHECK(device, cudaMallocAsync((void **)&slot, sizeof *slot, stream));
    ct_status status = launch(device, stream, g, slot, &first_bad);
    cudaError_t freed = cudaFreeAsync(slot, stream);
    if (status != CT_OK) return status;
    CT_CUDA_CHECK(device, freed);
    if (first_bad == NO_BAD_POSITION) return CT_OK;
    int64_t index = 0;
    status = read_index(device, stream, g, (int64_t)first_bad, &index);
    if (status != CT_OK) return status;
    return bad_index_error(index, g.axis_size);
}
