/* The public Philox4x32-10 block function (random.h); the algorithm lives in
 * philox_impl.h, shared with the kernels of every device. */
#include "core/philox_impl.h"
#include "ctensor/random.h"

void ct_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
    ct__philox_block(counter, key, out);
}
