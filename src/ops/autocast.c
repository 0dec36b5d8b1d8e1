/* Autocast: ctensor's op list, the thread's stack of regions, and the cast cache.
 *
 * The list below is the one place that says what autocast does to an op; ops not on it run
 * in their inputs' promoted dtype (a bf16 activation plus an f32 bias gives f32, as the type
 * promotion rules say). It follows PyTorch's lists (aten/src/ATen/autocast_mode.cpp): the
 * products — matmul, linear, convolution — gain from the low precision and are on its "lower"
 * list on both CPU and CUDA; softmax, log-softmax, the losses, the norms and the sum-like
 * reductions lose accuracy in it and are on its "f32" list (CUDA's, which also covers
 * CPU's losses). Max and min are exact in any dtype and are not listed, nor are pointwise
 * ops, which run in the dtype they are given. An op's backward runs in the dtypes its
 * forward saved, so a product's backward is low precision too; the casts are on the tape,
 * so each gradient is cast back to its input's dtype.
 *
 * The cast cache holds, for the outermost region, each f32 leaf tensor that requires grad
 * (a weight) with its cast: a weight used by several ops, or by one op called several times
 * (a layer applied twice), is cast once. It holds a reference to the weight, so a new
 * tensor cannot take a freed weight's address, and the weight's storage version, so a
 * weight written in place (an optimiser step inside the region) is cast again. */
#include <stdatomic.h>
#include <string.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ops/autocast_impl.h"

typedef enum policy { LOWER, KEEP_F32 } policy;

static const struct {
    const char *op;
    policy policy;
} op_list[] = {
    {"ct_matmul", LOWER},      {"ct_linear", LOWER},         {"ct_conv2d", LOWER},
    {"ct_softmax", KEEP_F32},  {"ct_log_softmax", KEEP_F32}, {"ct_cross_entropy", KEEP_F32},
    {"ct_mse_loss", KEEP_F32}, {"ct_batch_norm", KEEP_F32},  {"ct_layer_norm", KEEP_F32},
    {"ct_sum", KEEP_F32},      {"ct_mean", KEEP_F32},        {"ct_prod", KEEP_F32},
    {"ct_var", KEEP_F32},      {"ct_std", KEEP_F32},
};
#define OP_COUNT ((int)(sizeof op_list / sizeof op_list[0]))

#define MAX_DEPTH 64

typedef struct region {
    ct_device_type type;
    ct_dtype dtype;
} region;

typedef struct cache_entry {
    ct_tensor *weight; /* a reference the cache holds */
    ct_tensor *cast;   /* likewise */
    ct_dtype dtype;
    uint64_t version; /* the weight's storage version when cast */
} cache_entry;

static _Thread_local region stack[MAX_DEPTH];
static _Thread_local int depth;
static _Thread_local cache_entry *cache;
static _Thread_local int cache_count, cache_capacity;
static _Thread_local ct_autocast_stats stats;

static atomic_flag warned_bf16 = ATOMIC_FLAG_INIT, warned_f16 = ATOMIC_FLAG_INIT;

/* Say once per process that CPU autocast in this dtype is slower than f32: emulated in f32,
 * or on bf16 units slower than the f32 ones. */
static void warn_slow(ct_dtype dtype) {
    if (dtype == CT_BF16 && !ct_cpu_has_fast_bf16() && !atomic_flag_test_and_set(&warned_bf16)) {
        if (!ct_cpu_has_native_bf16())
            ct__log(CT_LOG_WARNING,
                    "autocast: this CPU (or this build, without oneDNN) has no native bf16 "
                    "(AVX512_BF16 or AMX-BF16): bf16 is emulated in f32 and slower than f32 here");
        else
            ct__log(CT_LOG_WARNING,
                    "autocast: this CPU's bf16 units (AVX512_BF16, no AMX) multiply at %.2fx its "
                    "f32 rate (measured): bf16 is correct but slower than f32 here",
                    ct_cpu_bf16_speedup());
    }
    if (dtype == CT_F16 && !atomic_flag_test_and_set(&warned_f16))
        ct__log(CT_LOG_WARNING,
                "autocast: f16 on the CPU is emulated in f32 and slower than f32; use it for "
                "testing, and bf16 for speed");
}

ct_status ct_autocast_push(ct_device_type type, ct_dtype dtype) {
    if (!ct_device_type_name(type))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_autocast_push: invalid device type %d; ct_device_types lists them",
                         (int)type);
    if (dtype != CT_BF16 && dtype != CT_F16 && dtype != CT_F32)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_autocast_push: dtype %s; use CT_BF16 or CT_F16, or CT_F32 to turn "
                         "autocast off inside the region",
                         ct_dtype_name(dtype));
    if (depth == MAX_DEPTH)
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "ct_autocast_push: %d regions are open already; pop some (each push "
                         "needs its ct_autocast_pop)",
                         MAX_DEPTH);
    if (type == CT_DEVICE_CPU) warn_slow(dtype);
    stack[depth++] = (region){type, dtype};
    return CT_OK;
}

static void cache_clear(void) {
    for (int i = 0; i < cache_count; i++) {
        ct__tensor_drop(cache[i].cast);
        ct__tensor_drop(cache[i].weight);
    }
    ct__free_mem(cache);
    cache = NULL;
    cache_count = cache_capacity = 0;
}

ct_status ct_autocast_pop(void) {
    if (depth == 0)
        return ct__error(CT_ERR_STATE,
                         "ct_autocast_pop: no autocast region is open (a pop without its push)");
    if (--depth == 0) cache_clear();
    return CT_OK;
}

ct_dtype ct_autocast_dtype(ct_device_type type) {
    for (int i = depth - 1; i >= 0; i--)
        if (stack[i].type == type) return stack[i].dtype;
    return CT_F32;
}

ct_autocast_stats ct_autocast_get_stats(void) { return stats; }

static int find_op(const char *op) {
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(op_list[i].op, op) == 0) return i;
    return -1;
}

/* The dtype input t must have for an op of policy p with autocast dtype low, or t's own. */
static ct_dtype wanted(const ct_tensor *t, policy p, ct_dtype low) {
    ct_dtype d = t->dtype;
    if (p == LOWER) return d == CT_F32 || (d != low && (d == CT_F16 || d == CT_BF16)) ? low : d;
    return d == CT_F16 || d == CT_BF16 ? CT_F32 : d;
}

static bool cacheable(const ct_tensor *t, ct_dtype to) {
    return t->dtype == CT_F32 && (to == CT_BF16 || to == CT_F16) && t->requires_grad &&
           !t->grad_fn && ct_grad_enabled();
}

/* t cast to `to` through the cache (a new reference), or NULL with the error set. */
static ct_tensor *cached_cast(const ct_tensor *t, ct_dtype to) {
    for (int i = 0; i < cache_count; i++) {
        cache_entry *e = &cache[i];
        if (e->weight != t || e->dtype != to) continue;
        if (e->version == ct__storage_version(t)) {
            stats.cache_hits++;
            return ct__new_ref(e->cast);
        }
        ct_tensor *fresh = ct_cast(t, to);
        if (!fresh) return NULL;
        stats.casts++;
        ct__tensor_drop(e->cast);
        e->cast = ct_retain(fresh);
        e->version = ct__storage_version(t);
        return fresh;
    }
    ct_tensor *cast = ct_cast(t, to);
    if (!cast) return NULL;
    stats.casts++;
    if (cache_count == cache_capacity) {
        int capacity = cache_capacity ? 2 * cache_capacity : 16;
        cache_entry *grown = ct__realloc(cache, (size_t)capacity * sizeof *grown);
        if (!grown) return cast; /* correct without the cache, only slower */
        cache = grown;
        cache_capacity = capacity;
    }
    cache[cache_count++] =
        (cache_entry){ct_retain((ct_tensor *)t), ct_retain(cast), to, ct__storage_version(t)};
    return cast;
}

static ct_tensor *cast_input(const ct_tensor *t, ct_dtype to, policy p) {
    if (t->dtype == to) return ct__new_ref(t);
    if (p == LOWER && cacheable(t, to)) return cached_cast(t, to);
    if (p == LOWER) stats.casts++;
    return ct_cast(t, to);
}

bool ct__autocast_inputs(const char *op, int n, const ct_tensor *const *in, ct_tensor **out) {
    if (depth == 0) return false;
    int row = find_op(op);
    if (row < 0) return false;
    policy p = op_list[row].policy;
    bool change = false;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = in[i];
        if (!t || !ct__is_float(t->dtype)) continue;
        ct_dtype low = ct_autocast_dtype(t->storage->device.type);
        if (low == CT_F32) continue;
        if (wanted(t, p, low) != t->dtype) change = true;
    }
    if (!change) return false;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = in[i];
        out[i] = NULL;
        if (!t) continue;
        ct_dtype low = ct_autocast_dtype(t->storage->device.type);
        ct_dtype to = ct__is_float(t->dtype) && low != CT_F32 ? wanted(t, p, low) : t->dtype;
        if (!(out[i] = cast_input(t, to, p))) {
            /* All NULL, so that the rerun fails rather than drop an input. */
            for (int j = 0; j < i; j++) ct_release(out[j]), out[j] = NULL;
            return true;
        }
    }
    return true;
}

void ct__autocast_release(int n, ct_tensor **cast) {
    for (int i = 0; i < n; i++) ct_release(cast[i]);
}
