/* Autocast inside the op layer: each op's policy (the autocast column of op_list.h's tables
 * and of autocast_ops.h) as an index, and the front door an op with a policy goes through
 * (src/ops/autocast.c holds the region stack and the cast cache).
 *
 * An op with a policy runs its body on the inputs the front door gives:
 *
 *     ct__autocast ac;
 *     if (!ct__autocast_begin(&ac, CT__AC_MATMUL, 2, (const ct_tensor *[]){a, b})) return NULL;
 *     ct_tensor *out = matmul(ac.in[0], ac.in[1]);
 *     ct__autocast_end(&ac);
 *
 * As in PyTorch, the ops the body calls are not cast again: inside an op that autocast
 * handled, the front door passes inputs through. */
#ifndef CT_AUTOCAST_IMPL_H
#define CT_AUTOCAST_IMPL_H

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

/* The inputs an op runs on: in[i] is the caller's input i or a cast of it that this holds. */
typedef struct ct__autocast {
    const ct_tensor *in[CT__AUTOCAST_MAX_INPUTS];
    ct_tensor *held[CT__AUTOCAST_MAX_INPUTS];
    int n;
    bool entered; /* autocast handled the op: its body's ops pass through */
} ct__autocast;

/* Fill ac with op's n inputs (n <= CT__AUTOCAST_MAX_INPUTS; NULL inputs stay NULL) as this
 * thread's autocast region and op's policy want them: each f16, bf16 or f32 input on a device
 * type with an open region is cast (weights through the region's cast cache), others are
 * kept. False with the error set when a cast fails (ac then holds nothing). Each true return
 * needs its ct__autocast_end. */
bool ct__autocast_begin(ct__autocast *ac, ct__autocast_op op, int n, const ct_tensor *const *in);

/* Drop the casts ac holds and leave the op. */
void ct__autocast_end(ct__autocast *ac);

#endif
