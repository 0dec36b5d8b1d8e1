/* One output row of 2x2 max pooling at stride 2 with vector instructions: for processors with
 * AVX-512 (F, DQ, VL, BW; cpu_simd_impl.h), 16 outputs per step, on f32 and on bf16 as it is;
 * for processors with AVX2 only, 8 f32 outputs per step.
 *
 * The scalar row of cpu_pool_typed_impl.h spends most of its time in the rows' tails (the CNN's
 * rows are 14 and 7 outputs wide), where the compiler's vector loop does not reach. Here every
 * chunk, the last one masked, takes the same path: the two input rows deinterleaved into the
 * window's four cells p q / r s, then the tournament of the scalar row (each row's pair, the
 * first cell winning ties, then the two winners, the top one winning ties), so the maximum and
 * its index are the scalar row's. A bf16 cell widens to f32 exactly (a shift) and the maximum,
 * one of the cells, narrows back exactly. A chunk holding a NaN is reported, and the caller
 * redoes the row with the scalar NaN rules. */
#include "backend/cpu/cpu_simd_impl.h"

#if CT_CPU_SIMD_KERNELS
#include <immintrin.h>

#define CT_POOL_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

/* The first n lanes of 16 (none for n <= 0). */
static inline __mmask16 lanes_of(int64_t n) {
    return n >= 16 ? 0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

/* The chunk's four cells, each 16 lanes: output lane j's window is p[j] q[j] over r[j] s[j]. */
typedef struct {
    __m512 p, q, r, s;
} window_cells;

CT_POOL_AVX512_TARGET static inline void deinterleave(__m512 lo, __m512 hi, __m512 *even,
                                                      __m512 *odd) {
    const __m512i even_at =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd_at = _mm512_add_epi32(even_at, _mm512_set1_epi32(1));
    *even = _mm512_permutex2var_ps(lo, even_at, hi);
    *odd = _mm512_permutex2var_ps(lo, odd_at, hi);
}

/* The 2n (at most 32) cells of row x from its first: lanes past them read as 0. */
CT_POOL_AVX512_TARGET static inline void load_f32(const float *x, int64_t n, __m512 *lo,
                                                  __m512 *hi) {
    *lo = _mm512_maskz_loadu_ps(lanes_of(2 * n), x);
    *hi = _mm512_maskz_loadu_ps(lanes_of(2 * n - 16), x + 16);
}

CT_POOL_AVX512_TARGET static inline __m512 widen_bf16(__m256i v) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

CT_POOL_AVX512_TARGET static inline void load_bf16(const uint16_t *x, int64_t n, __m512 *lo,
                                                   __m512 *hi) {
    /* A window's pair of cells is one 32-bit lane: a dword mask, which some CPUs load faster
     * than a word mask (docs/PERFORMANCE.md, "Design choices and their measurements"). */
    __m512i v = _mm512_maskz_loadu_epi32(lanes_of(n), x);
    *lo = widen_bf16(_mm512_castsi512_si256(v));
    *hi = widen_bf16(_mm512_extracti64x4_epi64(v, 1));
}

/* The maximum of each lane's window and its in-plane index: at0 is the first cell's index of
 * lane 0, w the row length. The lanes in mask are the chunk's; returns whether one of them holds
 * a NaN. */
CT_POOL_AVX512_TARGET static inline bool tournament(window_cells c, __mmask16 mask, int64_t at0,
                                                    int64_t w, __m512 *max, __m512i *at) {
    __mmask16 nan = _mm512_mask_cmp_ps_mask(mask, c.p, c.q, _CMP_UNORD_Q) |
                    _mm512_mask_cmp_ps_mask(mask, c.r, c.s, _CMP_UNORD_Q);
    __mmask16 top_right = _mm512_cmp_ps_mask(c.q, c.p, _CMP_GT_OQ);
    __mmask16 bottom_right = _mm512_cmp_ps_mask(c.s, c.r, _CMP_GT_OQ);
    __m512 top = _mm512_mask_blend_ps(top_right, c.p, c.q);
    __m512 bottom = _mm512_mask_blend_ps(bottom_right, c.r, c.s);
    __mmask16 bottom_wins = _mm512_cmp_ps_mask(bottom, top, _CMP_GT_OQ);
    *max = _mm512_mask_blend_ps(bottom_wins, top, bottom);
    __m512i top_at = _mm512_maskz_set1_epi32(top_right, 1);
    __m512i bottom_at =
        _mm512_add_epi32(_mm512_set1_epi32((int)w), _mm512_maskz_set1_epi32(bottom_right, 1));
    __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    *at = _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32((int)at0), lane2),
                           _mm512_mask_blend_epi32(bottom_wins, top_at, bottom_at));
    return nan != 0;
}

/* The row of either element type (bf16: 16-bit cells), inlined into each so that the test of
 * bf16 folds away. */
CT_POOL_AVX512_TARGET static inline __attribute__((always_inline)) int
max_row(const void *x0, const void *x1, void *y, int32_t *idx, int64_t ow_n, int64_t at0, int64_t w,
        bool bf16) {
    bool nan = false;
    for (int64_t ow = 0; ow < ow_n; ow += 16) {
        int64_t n = ow_n - ow < 16 ? ow_n - ow : 16;
        __m512 lo, hi, max;
        __m512i at;
        window_cells c;
        for (int row = 0; row < 2; row++) {
            const void *x = row ? x1 : x0;
            if (bf16)
                load_bf16((const uint16_t *)x + 2 * ow, n, &lo, &hi);
            else
                load_f32((const float *)x + 2 * ow, n, &lo, &hi);
            deinterleave(lo, hi, row ? &c.r : &c.p, row ? &c.s : &c.q);
        }
        nan |= tournament(c, lanes_of(n), at0 + 2 * ow, w, &max, &at);
        if (bf16)
            _mm256_mask_storeu_epi16(
                (uint16_t *)y + ow, lanes_of(n),
                _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(max), 16)));
        else
            _mm512_mask_storeu_ps((float *)y + ow, lanes_of(n), max);
        _mm512_mask_storeu_epi32(idx + ow, lanes_of(n), at);
    }
    return nan;
}

CT_POOL_AVX512_TARGET int ct__cpu_max_row_2x2_f32_avx512(const float *x0, const float *x1, float *y,
                                                         int32_t *idx, int64_t ow_n, int64_t at0,
                                                         int64_t w) {
    return max_row(x0, x1, y, idx, ow_n, at0, w, false);
}

CT_POOL_AVX512_TARGET int ct__cpu_max_row_2x2_bf16_avx512(const uint16_t *x0, const uint16_t *x1,
                                                          uint16_t *y, int32_t *idx, int64_t ow_n,
                                                          int64_t at0, int64_t w) {
    return max_row(x0, x1, y, idx, ow_n, at0, w, true);
}

/* ---- AVX2: no mask registers, so a lane mask is a vector of all-ones 32-bit lanes ---- */

#define CT_POOL_AVX2_TARGET __attribute__((target("avx2")))

/* The first n lanes of 8 (none for n <= 0). */
CT_POOL_AVX2_TARGET static inline __m256i lanes8_of(int64_t n) {
    int k = n >= 8 ? 8 : n <= 0 ? 0 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The 2n (at most 16) cells of row x from its first, deinterleaved into the even and the odd
 * ones: lanes past them read as 0. A full chunk loads unmasked, since AVX2's masked loads and
 * stores are slow on some CPUs (docs/PERFORMANCE.md, "Design choices and their measurements"). */
CT_POOL_AVX2_TARGET static inline void load_pairs8(const float *x, int64_t n, __m256 *even,
                                                   __m256 *odd) {
    __m256 lo = n == 8 ? _mm256_loadu_ps(x) : _mm256_maskload_ps(x, lanes8_of(2 * n));
    __m256 hi = n == 8 ? _mm256_loadu_ps(x + 8) : _mm256_maskload_ps(x + 8, lanes8_of(2 * n - 8));
    /* Within each 128-bit half: lo's even (odd) pair, then hi's; then the 64-bit pieces
     * (lo 0-3, hi 0-3, lo 4-7, hi 4-7) put in order. */
    __m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
    __m256 o = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

CT_POOL_AVX2_TARGET int ct__cpu_max_row_2x2_f32_avx2(const float *x0, const float *x1, float *y,
                                                     int32_t *idx, int64_t ow_n, int64_t at0,
                                                     int64_t w) {
    const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i one = _mm256_set1_epi32(1), row = _mm256_set1_epi32((int)w);
    int nan = 0;
    for (int64_t ow = 0; ow < ow_n; ow += 8) {
        int64_t n = ow_n - ow < 8 ? ow_n - ow : 8;
        __m256i mask = lanes8_of(n);
        __m256 p, q, r, s;
        load_pairs8(x0 + 2 * ow, n, &p, &q);
        load_pairs8(x1 + 2 * ow, n, &r, &s);
        __m256 unordered =
            _mm256_or_ps(_mm256_cmp_ps(p, q, _CMP_UNORD_Q), _mm256_cmp_ps(r, s, _CMP_UNORD_Q));
        nan |= _mm256_movemask_ps(_mm256_and_ps(unordered, _mm256_castsi256_ps(mask)));
        __m256 top_right = _mm256_cmp_ps(q, p, _CMP_GT_OQ);
        __m256 bottom_right = _mm256_cmp_ps(s, r, _CMP_GT_OQ);
        __m256 top = _mm256_blendv_ps(p, q, top_right);
        __m256 bottom = _mm256_blendv_ps(r, s, bottom_right);
        __m256 bottom_wins = _mm256_cmp_ps(bottom, top, _CMP_GT_OQ);
        __m256i top_at = _mm256_and_si256(_mm256_castps_si256(top_right), one);
        __m256i bottom_at =
            _mm256_add_epi32(row, _mm256_and_si256(_mm256_castps_si256(bottom_right), one));
        __m256i at = _mm256_add_epi32(
            _mm256_add_epi32(_mm256_set1_epi32((int)(at0 + 2 * ow)), lane2),
            _mm256_blendv_epi8(top_at, bottom_at, _mm256_castps_si256(bottom_wins)));
        __m256 max = _mm256_blendv_ps(top, bottom, bottom_wins);
        if (n == 8) {
            _mm256_storeu_ps(y + ow, max);
            _mm256_storeu_si256((__m256i *)(idx + ow), at);
        } else { /* through the stack, faster than masked stores where those are slow */
            float max_part[8];
            int32_t at_part[8];
            _mm256_storeu_ps(max_part, max);
            _mm256_storeu_si256((__m256i *)at_part, at);
            for (int64_t k = 0; k < n; k++) y[ow + k] = max_part[k], idx[ow + k] = at_part[k];
        }
    }
    return nan != 0;
}
#endif
