/* The small bf16 products of the CPU attention (cpu_attention.c) on the AVX512_BF16 units:
 * both operands rounded to bf16 (nearest even) and packed in VDPBF16PS's layout, pairs of
 * the summed axis in one 32-bit lane, then two rows of the result at a time against four
 * 16-lane column blocks, the sums in f32.
 *
 * Layouts: A's rows as bf16 rows (pairs of consecutive elements are a lane), or, for a
 * transposed A, pairs of its stored rows interleaved; B the other way round. Broadcasting
 * one lane of A against a 16-lane vector of B adds 16 columns' two products per
 * instruction. */
#include "backend/cpu/cpu_simd_impl.h"

#if CT_CPU_SIMD_KERNELS
#include <immintrin.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

static int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

size_t ct__cpu_attention_bf16_scratch(int64_t most) {
    int64_t pairs = (most + 1) / 2, padded = pad16(most);
    return (size_t)(padded * pairs + 2 * pairs * padded);
}

/* Lanes [0, n) of 16 set (none for n <= 0, all for n >= 16). */
static __mmask16 first_lanes(int64_t n) {
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* Rows of x (h x k, leading dimension ld) as bf16 rows of 2 * pairs elements (an odd k's
 * last pair padded with 0): out[r * pairs + p] holds elements 2p and 2p + 1 of row r. */
TARGET static void pack_rows(uint32_t *out, const float *x, int64_t h, int64_t k, int64_t ld) {
    int64_t pairs = (k + 1) / 2;
    for (int64_t r = 0; r < h; r++) {
        uint16_t *o = (uint16_t *)(out + r * pairs);
        for (int64_t c = 0; c < 2 * pairs; c += 16) {
            __m512 v = _mm512_maskz_loadu_ps(first_lanes(k - c), x + r * ld + c);
            __m256i h16 = (__m256i)_mm512_cvtneps_pbh(v);
            _mm256_mask_storeu_epi16(o + c, first_lanes(2 * pairs - c), h16);
        }
    }
}

/* Rows 2p and 2p + 1 of x (k x w, leading dimension ld) interleaved: out[p * pad16(w) + j]
 * holds (x[2p][j], x[2p + 1][j]); columns past w, and an odd k's missing row, are 0. */
TARGET static void pack_pairs(uint32_t *out, const float *x, int64_t k, int64_t w, int64_t ld) {
    int64_t pairs = (k + 1) / 2, wp = pad16(w);
    /* Word 2j of the result takes word j (row 2p), word 2j + 1 takes word 16 + j (row 2p + 1). */
    uint16_t order[32];
    for (int j = 0; j < 16; j++) order[2 * j] = (uint16_t)j, order[2 * j + 1] = (uint16_t)(16 + j);
    const __m512i index = _mm512_loadu_si512(order);
    for (int64_t p = 0; p < pairs; p++) {
        const float *r0 = x + 2 * p * ld, *r1 = 2 * p + 1 < k ? r0 + ld : NULL;
        for (int64_t j = 0; j < wp; j += 16) {
            __mmask16 m = first_lanes(w - j);
            __m512 a = _mm512_maskz_loadu_ps(m, r0 + j);
            __m512 b = r1 ? _mm512_maskz_loadu_ps(m, r1 + j) : _mm512_setzero_ps();
            __m512i both = (__m512i)_mm512_cvtne2ps_pbh(b, a); /* words 0-15 from a */
            _mm512_storeu_si512(out + p * wp + j, _mm512_permutexvar_epi16(index, both));
        }
    }
}

TARGET void ct__cpu_attention_gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                        const float *a, int64_t lda, const float *b, int64_t ldb,
                                        bool accumulate, float *c, int64_t ldc, uint32_t *scratch) {
    const int64_t pairs = (k + 1) / 2, np = pad16(n), mp = pad16(m);
    uint32_t *ap = scratch, *bp = ap + (ta ? pairs * mp : m * pairs), *tmp = bp + pairs * np;
    /* A's lane (i, p) at ap[i * a_row + p * a_pair]. */
    int64_t a_row = pairs, a_pair = 1;
    if (ta) {
        pack_pairs(ap, a, k, m, lda);
        a_row = 1, a_pair = mp;
    } else {
        pack_rows(ap, a, m, k, lda);
    }
    if (tb) { /* b is (n x k): its bf16 rows, transposed to lanes (p, j) */
        pack_rows(tmp, b, n, k, ldb);
        for (int64_t p = 0; p < pairs; p++)
            for (int64_t j = 0; j < np; j++) bp[p * np + j] = j < n ? tmp[j * pairs + p] : 0u;
    } else {
        pack_pairs(bp, b, k, n, ldb);
    }
    for (int64_t i = 0; i < m; i += 2) {
        const bool two = i + 1 < m;
        for (int64_t j0 = 0; j0 < np; j0 += 64) {
            const int blocks = np - j0 >= 64 ? 4 : (int)((np - j0) / 16);
            __m512 acc0[4], acc1[4];
            for (int t = 0; t < 4; t++)
                acc0[t] = _mm512_setzero_ps(), acc1[t] = _mm512_setzero_ps();
            for (int64_t p = 0; p < pairs; p++) {
                const __m512i x0 = _mm512_set1_epi32((int)ap[i * a_row + p * a_pair]);
                const __m512i x1 =
                    two ? _mm512_set1_epi32((int)ap[(i + 1) * a_row + p * a_pair]) : x0;
                const uint32_t *row = bp + p * np + j0;
#pragma GCC unroll 4
                for (int t = 0; t < 4; t++) {
                    if (t >= blocks) break;
                    const __m512bh y = (__m512bh)_mm512_loadu_si512(row + 16 * t);
                    acc0[t] = _mm512_dpbf16_ps(acc0[t], (__m512bh)x0, y);
                    acc1[t] = _mm512_dpbf16_ps(acc1[t], (__m512bh)x1, y);
                }
            }
            for (int t = 0; t < blocks; t++) {
                const int64_t col = j0 + 16 * t;
                if (col >= n) break;
                const __mmask16 mask = first_lanes(n - col);
                for (int r = 0; r < (two ? 2 : 1); r++) {
                    float *out = c + (i + r) * ldc + col;
                    __m512 v = r ? acc1[t] : acc0[t];
                    if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, out));
                    _mm512_mask_storeu_ps(out, mask, v);
                }
            }
        }
    }
}

#endif
