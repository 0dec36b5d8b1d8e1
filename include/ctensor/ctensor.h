/* ctensor — tensors on devices, from C. This header includes the whole public API.
 * ../docs and DESIGN.md give the concepts; each header gives its functions' contracts. */
#ifndef CTENSOR_CTENSOR_H
#define CTENSOR_CTENSOR_H

#include "ctensor/export.h"
#include "ctensor/status.h"
#include "ctensor/dtype.h"
#include "ctensor/device.h"
#include "ctensor/tensor.h"
#include "ctensor/op_list.h"
#include "ctensor/ops.h"
#include "ctensor/sorting.h"
#include "ctensor/stats.h"
#include "ctensor/fft.h"
#include "ctensor/transfer.h"
#include "ctensor/profile.h"
#include "ctensor/memory.h"
#include "ctensor/random.h"
#include "ctensor/autograd.h"
#include "ctensor/nn_functional.h"
#include "ctensor/nn.h"
#include "ctensor/loader.h"
#include "ctensor/state_dict.h"
#include "ctensor/optim.h"
#include "ctensor/autocast.h"
#include "ctensor/data.h"
#include "ctensor/dist.h"
#include "ctensor/linalg.h"

#define CT_VERSION_MAJOR 0
#define CT_VERSION_MINOR 1
#define CT_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
CT_API const char *ct_version(void);

#ifdef __cplusplus
}
#endif
#endif
