/* Tensors: creation, queries, views, references, scopes, host access. */
#include <stdlib.h>

#include "ct_ref.h"

DEVICE_TEST(test_tensor_full_roundtrip_every_dtype) {
    int64_t shape[2] = {3, 5};
    for (int dt = 0; dt < CT_DTYPE_COUNT; dt++) {
        ct_tensor *t = ct_full(2, shape, 1.0, (ct_dtype)dt, device);
        CHECK_NOT_NULL(t);
        double expected[15];
        for (int i = 0; i < 15; i++) expected[i] = 1.0;
        CHECK_TENSOR(t, expected);
        ct_release(t);
    }
}
