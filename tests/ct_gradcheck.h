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

/* ct_gradcheck for complex functions, in PyTorch's convention: inputs are complex128 or float64
 * tensors, the output complex or real. The loss is L = sum Re(conj(u) f) (u a fixed pseudo-
 * random tensor, complex for a complex output), so ct_backward_with(f, u) gives each input z
 * the gradient dL/dRe z + i dL/dIm z, compared with central differences along the real and
 * (complex z) the imaginary part of each element. */
bool ct_gradcheck_complex(ct_gradcheck_fn f, int n, ct_tensor *const *inputs, void *context,
                          double eps, double atol, double rtol);

/* A complex128 tensor on device with real parts uniform in [re_lo, re_hi) and imaginary parts
 * in [im_lo, im_hi), requiring grad when asked; NULL on failure. */
ct_tensor *ct_gradcheck_complex_leaf(ct_device device, int ndim, const int64_t *shape,
                                     uint64_t seed, const double re[2], const double im[2],
                                     bool requires_grad);

#endif
