/* Autocast inside the op layer (src/ops/autocast.c holds the op list and the region stack).
 *
 * An op on the list starts with
 *
 *     ct_tensor *cast[N];
 *     if (ct__autocast_inputs("ct_op", N, inputs, cast)) {
 *         ct_tensor *out = ct_op(cast[0], ...);   (the op again, on the cast inputs)
 *         ct__autocast_release(N, cast);
 *         return out;
 *     }
 *
 * The second call finds its inputs in the wanted dtype and runs as usual. */
#ifndef CT_AUTOCAST_IMPL_H
#define CT_AUTOCAST_IMPL_H

#include <stdbool.h>

#include "ctensor/ctensor.h"

/* Whether op (its name as ct_ names it) must run on other dtypes than those of its n
 * inputs in this thread's autocast region: then true, with out[i] a new reference to input
 * i cast as the list says (or input i itself; NULL inputs stay NULL). On a failed cast it
 * also returns true, with NULL in out where the cast failed and the error set, so the rerun
 * returns NULL. False, out untouched, when nothing must change (no region, an op not on the
 * list, inputs already right). */
bool ct__autocast_inputs(const char *op, int n, const ct_tensor *const *in, ct_tensor **out);

/* Drop the references ct__autocast_inputs gave. */
void ct__autocast_release(int n, ct_tensor **cast);

#endif
