/* ctensor — random numbers: the Philox4x32-10 counter-based generator.
 *
 * The global stream is (seed, offset): ct_rand and ct_randn draw consecutive blocks of
 * counters from it, so the same seed gives the same numbers on every device and thread
 * count.
 *
 * Layout. Element i (C order) of a draw at offset o uses the Philox block at counter
 * c = o + i / 4, word i % 4. The 64-bit c is the counter (c & 0xffffffff, c >> 32, 0, 0);
 * the key is (seed & 0xffffffff, seed >> 32). A draw of n elements advances the offset by
 * ceil(n / 4) blocks (atomically, so concurrent draws never share blocks); a draw whose n
 * is not a multiple of 4 leaves the unused words of its last block unused.
 *
 * Uniform [0, 1): word w gives (w >> (32 - b)) * 2^-b with b the dtype's significand
 * width: 24 for f32, 11 for f16, 8 for bf16, so the value is exact and never rounds up to
 * 1; f64 takes the full word, b = 32 (one word per element for every dtype, so the same
 * seed gives the same f32 values and f64 values that agree to f32's 24 bits).
 * Normal: Box-Muller on words (2j, 2j + 1) of a block, in double precision:
 * u1 = (w[2j] + 1) * 2^-32 in (0, 1] (so the log is finite), u2 = w[2j+1] * 2^-32,
 * r = sqrt(-2 ln u1); element 2j gets r cos(2 pi u2) and element 2j + 1 gets r sin(2 pi u2),
 * then the value is rounded to the dtype.
 *
 * Reseeding (ct_manual_seed) while another thread draws is a race: that draw may use either
 * seed. */
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
