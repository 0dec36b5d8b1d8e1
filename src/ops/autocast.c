/* Autocast: the policy of every op (an index into one array made from the autocast column
 * of op_list.h's tables and of autocast_ops.h), the thread's stack of regions, the ops' front
 * door, and the cast cache.
 *
 * The column follows PyTorch's lists (aten/src/ATen/autocast_mode.h and autocast_mode.cpp):
 * the products gain from the low precision (LOWER); the ops that lose accuracy or range in it
 * (softmax, the losses, the norms, sums, exp and log and their kin, pow) run in f32 (F32); a
 * few ops of several inputs run in the widest of their dtypes (PROMOTE); ops on no list run in
 * the dtypes they are given, which for binary ops is the promoted dtype. An op on PyTorch's
 * CUDA list or its CPU list has that policy on every device type. An op's backward runs in the
 * dtypes its forward saved, so a product's backward is low precision too; the casts are on
 * the tape, so each gradient is cast back to its input's dtype.
 *
 * The cast cache holds, for the outermost region, each f32 leaf tensor that requires grad
 * (a weight) with its cast: a weight used by several ops, or by one op called several times
 * (a layer applied twice), is cast once. It holds a reference to the weight, so a new
 * tensor cannot take a freed weight's address, and the weight's storage version, so a
 * weight written in place (an optimiser step inside the region) is cast again. */
#include <stdatomic.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ops/autocast_impl.h"

static const struct {
    const char *name;
    ct__autocast_policy policy;
} op_rows[] = {
#define UNARY_(name, NAME, kind, grad, autocast)                                                   \
    [CT__AC_U_##NAME] = {#name, CT__AUTOCAST_##autocast},
#define BINARY_(name, NAME, kind, grad, autocast)                                                  \
    [CT__AC_B_##NAME] = {#name, CT__AUTOCAST_##autocast},
#define REDUCE_(name, NAME, autocast) [CT__AC_R_##NAME] = {#name, CT__AUTOCAST_##autocast},
#define OTHER_(name, NAME, autocast) [CT__AC_##NAME] = {#name, CT__AUTOCAST_##autocast},
    CT_UNARY_OPS(UNARY_) CT_BINARY_OPS(BINARY_) CT_REDUCE_OPS(REDUCE_) CT_AUTOCAST_OPS(OTHER_)
#undef UNARY_
#undef BINARY_
#undef REDUCE_
#undef OTHER_
};
_Static_assert(sizeof op_rows / sizeof op_rows[0] == CT__AC_COUNT,
               "every ct__autocast_op needs its row (an autocast column)");

const char *ct__autocast_op_name(ct__autocast_op op) {
    return op >= 0 && op < CT__AC_COUNT ? op_rows[op].name : NULL;
}

ct__autocast_policy ct__autocast_op_policy(ct__autocast_op op) {
    return op >= 0 && op < CT__AC_COUNT ? op_rows[op].policy : CT__AUTOCAST_AS_IS;
}

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
static _Thread_local int inside; /* ops autocast handled, running on this thread */

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
    atomic_fetch_add_explicit(&ct__autocast_regions, 1, memory_order_relaxed);
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
    atomic_fetch_sub_explicit(&ct__autocast_regions, 1, memory_order_relaxed);
    return CT_OK;
}

ct_dtype ct_autocast_dtype(ct_device_type type) {
    for (int i = depth - 1; i >= 0; i--)
        if (stack[i].type == type) return stack[i].dtype;
    return CT_F32;
}

ct_autocast_stats ct_autocast_get_stats(void) { return stats; }

/* Whether autocast casts an input of dtype d in a region of dtype low (f64 never). */
static bool eligible(ct_dtype d, ct_dtype low) {
    return low != CT_F32 && (d == CT_F32 || d == CT_F16 || d == CT_BF16);
}

/* The dtype an eligible input must have for policy p in a region of dtype low; widest is the
 * promotion of the region's dtype and every eligible input's dtype (for PROMOTE). */
static ct_dtype wanted(ct__autocast_policy p, ct_dtype low, ct_dtype widest) {
    return p == CT__AUTOCAST_LOWER ? low : p == CT__AUTOCAST_F32 ? CT_F32 : widest;
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

/* t cast to `to` for policy p (a new reference), or NULL with the error set. */
static ct_tensor *cast_input(const ct_tensor *t, ct_dtype to, ct__autocast_policy p) {
    if (p == CT__AUTOCAST_LOWER && cacheable(t, to)) return cached_cast(t, to);
    if (p == CT__AUTOCAST_LOWER) stats.casts++;
    return ct_cast(t, to);
}

atomic_int ct__autocast_regions;

bool ct__autocast_enter(ct__autocast *ac, ct__autocast_op op, int n,
                        const ct_tensor **const *inputs) {
    if (depth == 0 || inside > 0) return true;
    ct__autocast_policy p = ct__autocast_op_policy(op);
    if (p == CT__AUTOCAST_AS_IS) return true;
    ct_dtype lows[CT__AUTOCAST_MAX_INPUTS], widest = CT_F16;
    bool any = false;
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = *inputs[i];
        lows[i] = t ? ct_autocast_dtype(t->storage->device.type) : CT_F32;
        if (!t || !eligible(t->dtype, lows[i])) continue;
        ct_dtype with_low = ct_promote_types(lows[i], t->dtype);
        widest = any ? ct_promote_types(widest, with_low) : with_low;
        any = true;
    }
    for (int i = 0; i < n; i++) {
        const ct_tensor *t = *inputs[i];
        ac->held[i] = NULL;
        if (!t || !eligible(t->dtype, lows[i]) || wanted(p, lows[i], widest) == t->dtype) continue;
        if (!(ac->held[i] = cast_input(t, wanted(p, lows[i], widest), p))) {
            for (int j = 0; j < i; j++) ct_release(ac->held[j]);
            return false;
        }
    }
    for (int i = 0; i < n; i++)
        if (ac->held[i]) *inputs[i] = ac->held[i];
    ac->n = n;
    ac->entered = true;
    inside++;
    return true;
}

void ct__autocast_leave(ct__autocast *ac) {
    inside--;
    for (int i = 0; i < ac->n; i++) ct_release(ac->held[i]);
    ac->entered = false;
}
