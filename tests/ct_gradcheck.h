/* Finite-difference gradient checks: the gradients ct_backward gives against central
 * differences, in float64, as torch.autograd.gradcheck. */
#ifndef CT_GRADCHECK_H
#define CT_GRADCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "ct_test.h"

/* The function under test: inputs to one output tensor (a new reference). */
typedef ct_tensor *(*ct_gradcheck_fn)(ct_tensor *const *inputs, void *context);

/* inputs: float64 tensors on the test's device; those that require grad are checked. The
 * output's gradient is a fixed pseudo-random tensor u, so the check covers the whole
 * Jacobian-vector product: d(sum(u * f))/dx by ct_backward against (F(x + eps) - F(x - eps))
 * / 2 eps per element. The global Philox stream is reseeded before every evaluation, so
 * random functions (dropout) see the same draws each time. Prints the worst element and
 * returns false when |analytic - numeric| > atol + rtol * |numeric| anywhere. Leaves the
 * inputs' values as they were and their gradients dropped. */
bool ct_gradcheck(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *context, double eps,
                  double atol, double rtol);

/* A float64 tensor on device with values uniform in [lo, hi) (ref_random with seed),
 * requiring grad when asked; NULL on failure. */
ct_tensor *ct_gradcheck_leaf(ct_device device, int ndim, const int64_t *shape, uint64_t seed,
                             double lo, double hi, bool requires_grad);

#endif
