/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011;
 * the Random123 algorithm) and the mapping of its words to ctensor's random values.
 *
 * Header-only and free of library calls so that every device's kernels share one
 * definition: the CPU kernels include it as C, the CUDA kernels as host/device code. The
 * names carry no double underscore because C++ reserves those.
 *
 * The stream layout (random.h): element i of a draw at offset o of stream `seed` takes word
 * i % 4 of the block at counter o + i / 4, where a 64-bit counter c is the Philox counter
 * (c low 32 bits, c high 32 bits, 0, 0) and the key is (seed low 32 bits, seed high). */
#ifndef CT_PHILOX_IMPL_H
#define CT_PHILOX_IMPL_H

#include <math.h>
#include <stdint.h>

#include "core/dtype_impl.h"

#if defined(__CUDACC__)
#define CT_PHILOX_FN static inline __host__ __device__
#else
#define CT_PHILOX_FN static inline
#endif

/* Random123's round multipliers and Weyl key increments (golden ratio, sqrt(3) - 1). */
#define CT_PHILOX_M0 0xD2511F53u
#define CT_PHILOX_M1 0xCD9E8D57u
#define CT_PHILOX_W0 0x9E3779B9u
#define CT_PHILOX_W1 0xBB67AE85u

/* One round: two 32x32->64 multiplications, their halves mixed with the other words and
 * the round key. */
CT_PHILOX_FN void ct__philox_round(uint32_t c[4], uint32_t k0, uint32_t k1) {
    uint64_t p0 = (uint64_t)CT_PHILOX_M0 * c[0];
    uint64_t p1 = (uint64_t)CT_PHILOX_M1 * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = (uint32_t)p1;
    c[2] = n2;
    c[3] = (uint32_t)p0;
}

/* out = Philox4x32-10(counter, key): ten rounds, the key bumped between rounds. */
CT_PHILOX_FN void ct__philox_block(const uint32_t counter[4], const uint32_t key[2],
                                   uint32_t out[4]) {
    uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += CT_PHILOX_W0;
            k1 += CT_PHILOX_W1;
        }
        ct__philox_round(c, k0, k1);
    }
    for (int i = 0; i < 4; i++) out[i] = c[i];
}

/* The four words of block `counter` (a 64-bit block index) of stream `seed`. */
CT_PHILOX_FN void ct__philox_stream_block(uint64_t seed, uint64_t counter, uint32_t out[4]) {
    uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0u, 0u};
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    ct__philox_block(c, k, out);
}

/* splitmix64's finaliser: a bijection of 64-bit words that sends nearby inputs far apart,
 * to derive independent keys (or well-spread numbers) from a seed or a counter. */
CT_PHILOX_FN uint64_t ct__splitmix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A uniform value in [0, 1) with `bits` bits of resolution from the top of word w:
 * (w >> (32 - bits)) * 2^-bits. Every such value is exact in a float type whose significand
 * has at least `bits` bits, so rounding can never reach 1. bits is 1..32. */
/* The bits of uniform resolution for dtype: a float's significand width, at most 32 (f64
 * takes one 32-bit word per element, like the other dtypes); 24 for the other dtypes. */
CT_PHILOX_FN int ct__philox_uniform_bits(ct_dtype dtype) {
    int digits = ct__float_digits(dtype);
    return digits == 0 ? 24 : digits > 32 ? 32 : digits;
}

CT_PHILOX_FN double ct__philox_uniform(uint32_t w, int bits) {
    return (double)(w >> (32 - bits)) * (1.0 / (double)(1ull << bits));
}

/* Box-Muller on two words: u1 = (w0 + 1) * 2^-32 lies in (0, 1], so the log is finite,
 * and u2 = w1 * 2^-32 in [0, 1). z0 = r cos(2 pi u2), z1 = r sin(2 pi u2). */
CT_PHILOX_FN void ct__philox_box_muller(uint32_t w0, uint32_t w1, double *z0, double *z1) {
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = ((double)w0 + 1.0) * (1.0 / 4294967296.0);
    double u2 = (double)w1 * (1.0 / 4294967296.0);
    double r = sqrt(-2.0 * log(u1));
    *z0 = r * cos(two_pi * u2);
    *z1 = r * sin(two_pi * u2);
}

#endif
