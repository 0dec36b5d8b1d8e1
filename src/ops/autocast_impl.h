/* Autocast inside the op layer: each op's policy (the autocast column of op_list.h's tables
 * and of autocast_ops.h) as an index, and the front door an op with a policy goes through
 * (src/ops/autocast.c holds the region stack and the cast cache).
 *
 * An op with a policy passes its inputs through the front door, which replaces them in place
 * by their casts where the region wants them, then runs its body on them:
 *
 *     ct__autocast ac;
 *     if (!ct__autocast_begin(&ac, CT__AC_MATMUL, 2, (const ct_tensor **[]){&a, &b}))
 *         return NULL;
 *     ct_tensor *out = matmul(a, b);
 *     ct__autocast_end(&ac);
 *
 * As in PyTorch, the ops the body calls are not cast again: inside an op that autocast
 * handled, the front door passes inputs through. */
#ifndef CT_AUTOCAST_IMPL_H
#define CT_AUTOCAST_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "ctensor/ctensor.h"
#include "ops/autocast_ops.h"

/* The policies: the autocast column's values. */
typedef enum ct__autocast_policy {
    CT__AUTOCAST_LOWER,   /* to the region's dtype (f64 stays) */
    CT__AUTOCAST_F32,     /* f16 and bf16 to f32 */
    CT__AUTOCAST_PROMOTE, /* f16, bf16, f32 to the widest of them */
    CT__AUTOCAST_AS_IS,   /* unchanged */
} ct__autocast_policy;

/* One id per row of the unary, binary and reduction tables and of CT_AUTOCAST_OPS. */
typedef enum ct__autocast_op {
#define CT__AC_UNARY_(name, NAME, kind, grad, autocast) CT__AC_U_##NAME,
#define CT__AC_BINARY_(name, NAME, kind, grad, autocast) CT__AC_B_##NAME,
#define CT__AC_REDUCE_(name, NAME, autocast) CT__AC_R_##NAME,
#define CT__AC_OTHER_(name, NAME, autocast) CT__AC_##NAME,
    CT_UNARY_OPS(CT__AC_UNARY_) CT_BINARY_OPS(CT__AC_BINARY_) CT_REDUCE_OPS(CT__AC_REDUCE_)
        CT_AUTOCAST_OPS(CT__AC_OTHER_)
#undef CT__AC_UNARY_
#undef CT__AC_BINARY_
#undef CT__AC_REDUCE_
#undef CT__AC_OTHER_
            CT__AC_COUNT
} ct__autocast_op;

/* The row's op name without "ct_" ("exp", "matmul"), and its policy (tests read them). */
const char *ct__autocast_op_name(ct__autocast_op op);
ct__autocast_policy ct__autocast_op_policy(ct__autocast_op op);

#define CT__AUTOCAST_MAX_INPUTS 3

/* The casts an op runs on, which the front door holds until the op ends. */
typedef struct ct__autocast {
    ct_tensor *held[CT__AUTOCAST_MAX_INPUTS];
    int n;
    bool entered; /* autocast handled the op: its body's ops pass through */
} ct__autocast;

/* The autocast regions open on all threads together: while there are none, the front door
 * costs a load of this (no thread-local lookup, no call). */
extern atomic_int ct__autocast_regions;

/* ct__autocast_begin's work while a region is open (src/ops/autocast.c). */
bool ct__autocast_enter(ct__autocast *ac, ct__autocast_op op, int n,
                        const ct_tensor **const *inputs);
void ct__autocast_leave(ct__autocast *ac);

/* Replace op's n inputs (*inputs[i], n <= CT__AUTOCAST_MAX_INPUTS; NULL ones stay NULL) by
 * what this thread's autocast region and op's policy want: each f16, bf16 or f32 input on a
 * device type with an open region is cast (weights through the region's cast cache), others
 * are kept. False with the error set when a cast fails (the inputs are then unchanged and ac
 * holds nothing). Each true return needs its ct__autocast_end once the op is done with the
 * inputs. */
static inline bool ct__autocast_begin(ct__autocast *ac, ct__autocast_op op, int n,
                                      const ct_tensor **const *inputs) {
    ac->entered = false;
    if (atomic_load_explicit(&ct__autocast_regions, memory_order_relaxed) == 0) return true;
    return ct__autocast_enter(ac, op, n, inputs);
}

/* Drop the casts ac holds and leave the op. */
static inline void ct__autocast_end(ct__autocast *ac) {
    if (ac->entered) ct__autocast_leave(ac);
}

#endif
