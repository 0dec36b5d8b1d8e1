/* Initialisers used by the layers' constructors. */
#ifndef CT_INIT_IMPL_H
#define CT_INIT_IMPL_H

#include <stdint.h>

#include "ctensor/tensor.h"

/* f32 on the CPU, uniform in [-bound, bound). */
ct_tensor *ct__init_uniform(int ndim, const int64_t *shape, double bound);
/* The bound of PyTorch's default Kaiming-uniform weights and uniform biases. */
double ct__kaiming_uniform_bound(int64_t fan_in);

#endif
