/* ctensor — random numbers: the Philox4x32-10 counter-based generator.
 *
 * The global stream is (seed, offset): ct_rand and ct_randn draw consecutive blocks of
 * counters from it, so the same seed gives the same numbers on every device and thread
 * count. Element i of a draw at offset o uses counter o + i / 4, word i % 4 (normal values
 * use Box-Muller on words 2k and 2k+1 of a block). */
#ifndef CTENSOR_RANDOM_H
#define CTENSOR_RANDOM_H

#include <stdint.h>

#include "ctensor/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reseed the global stream and reset its offset to 0. The default seed is 0. */
CT_API void ct_manual_seed(uint64_t seed);
CT_API uint64_t ct_initial_seed(void);

/* One Philox4x32-10 block: out = philox(counter, key). */
CT_API void ct_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

#ifdef __cplusplus
}
#endif
#endif
