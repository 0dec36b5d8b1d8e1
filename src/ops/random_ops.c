/* The global random stream and the ops that draw from it: ct_manual_seed, ct_initial_seed,
 * ct_rand, ct_randn.
 *
 * The stream is a (seed, offset) pair: a draw of n elements takes the next ceil(n / 4)
 * Philox blocks by advancing the offset atomically, so draws from several threads never
 * overlap, and each device's kernel turns the blocks into values the same way (random.h).
 * Reseeding while another thread draws is a race in the caller's program: the draw may
 * use either seed. */
#include <stdatomic.h>

#include "ops/op_impl.h"
#include "ops/random_impl.h"

static atomic_uint_fast64_t stream_seed;
static atomic_uint_fast64_t stream_offset;

void ct_manual_seed(uint64_t seed) {
    atomic_store(&stream_seed, seed);
    atomic_store(&stream_offset, 0);
}

uint64_t ct_initial_seed(void) { return (uint64_t)atomic_load(&stream_seed); }

void ct__random_take(uint64_t blocks, uint64_t *seed, uint64_t *offset) {
    *seed = (uint64_t)atomic_load(&stream_seed);
    *offset = (uint64_t)atomic_fetch_add(&stream_offset, blocks);
}

/* Check that dtype is a floating dtype; CT_ERR_DTYPE naming op otherwise. */
static ct_status check_float_dtype(const char *op, ct_dtype dtype) {
    if (!ct_dtype_is_valid(dtype))
        return ct__error(CT_ERR_DTYPE,
                         "%s: invalid dtype %d; use CT_F32, CT_F64, CT_F16 or CT_BF16", op,
                         (int)dtype);
    if (!ct_dtype_is_floating(dtype))
        return ct__error(CT_ERR_DTYPE,
                         "%s: dtype %s is not a floating dtype; draw in CT_F32, CT_F64, CT_F16 or "
                         "CT_BF16 (and ct_cast the result if needed)",
                         op, ct_dtype_name(dtype));
    return CT_OK;
}

static ct_tensor *draw(const char *op, int ndim, const int64_t *shape, ct_dtype dtype,
                       ct_device requested, ct__random_kind kind) {
    int64_t numel;
    ct_device device;
    if (check_float_dtype(op, dtype) != CT_OK ||
        ct__check_shape(op, ndim, shape, &numel) != CT_OK ||
        ct__resolve_device(op, requested, &device) != CT_OK)
        return NULL;
    int physical;
    const ct__kernel_table *k = ct__kernels(device, &physical);
    if (!k) return NULL;
    ct_tensor *t = ct__tensor_new(device, dtype, ndim, shape);
    if (!t || numel == 0) return t;
    uint64_t blocks = ((uint64_t)numel + 3) / 4;
    uint64_t seed, offset;
    ct__random_take(blocks, &seed, &offset);
    ct__ew_args args;
    ct__ew_init(&args, ndim, shape);
    ct__ew_add(&args, t);
    ct__ew_coalesce(&args);
    if (k->random(physical, &args, kind, seed, offset) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

ct_tensor *ct_rand(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device) {
    return draw("ct_rand", ndim, shape, dtype, device, CT_RANDOM_UNIFORM);
}

ct_tensor *ct_randn(int ndim, const int64_t *shape, ct_dtype dtype, ct_device device) {
    return draw("ct_randn", ndim, shape, dtype, device, CT_RANDOM_NORMAL);
}
