/* The CPU FFT engine's plans and their execution, private to cpu_fft*.c (the interface is
 * cpu_fft.h).
 *
 * A complex plan of length n is either mixed radix, n = p_0 p_1 ... p_{s-1} (stage 0 the
 * outermost): stage i combines p_i transforms of length m_i = p_{i+1} ... p_{s-1} into one of
 * length p_i m_i, by decimation in time (X[k + q m] = sum_r w_{pm}^{rk} Y_r[k] w_p^{rq}, Y_r
 * the transform of x[r], x[r + p], ...); or Bluestein's: X[k] = c_k sum_j (x_j c_j)
 * conj(c_{k-j}), c_j = e^{sign pi i j^2 / n}, a cyclic convolution of length M >= 2n - 1 done
 * with a forward mixed-radix plan of length M. A real plan holds a complex plan (n/2 points
 * for even n, n for odd n) and, for even n, the twiddles e^{sign 2 pi i k / n}, k < n/2.
 *
 * Plans compute in double whatever the data's precision (cpu_fft.c widens float data).
 * Tables hold double (re, im) pairs, computed in long double from the exact rational angle
 * and rounded once (cpu_fft_plan.c, roots). */
#ifndef CT_CPU_FFT_IMPL_H
#define CT_CPU_FFT_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum ct__fft_kind { CT_FFT_C2C, CT_FFT_R2C, CT_FFT_C2R } ct__fft_kind;

/* At most 62 stages (n < 2^62); generic radices up to CT_FFT_GENERIC_MAX, whose butterfly
 * keeps p values on the stack; a length with a larger prime factor runs by Bluestein. */
#define CT_FFT_MAX_STAGES 64
#define CT_FFT_GENERIC_MAX 128

typedef struct ct__fft_stage {
    int p;
    int64_t m;
    void *tw; /* (p - 1) m pairs: w_{pm}^{rk} at [k (p - 1) + r - 1], w_N = e^{sign 2 pi i / N} */
    void *roots; /* radices above 5: w_p^q at [q], q < p; else NULL */
} ct__fft_stage;

typedef struct ct__fft_plan ct__fft_plan;
struct ct__fft_plan {
    int64_t n;
    int sign; /* -1 forward, +1 backward; R2C is forward, C2R backward */
    ct__fft_kind kind;
    /* C2C, mixed radix (blue_m == 0): stages; n == 1 has none. */
    int stages;
    ct__fft_stage stage[CT_FFT_MAX_STAGES];
    /* C2C, Bluestein (blue_m > 0): chirp c_j (n pairs), filter FFT_M(conj c)/M (M pairs),
     * and the forward plan of length M. */
    int64_t blue_m;
    void *chirp, *filter;
    ct__fft_plan *inner;
    /* R2C, C2R: the complex plan (same sign) and, for even n, the n/2 twiddles. */
    ct__fft_plan *sub;
    void *rtw;
    /* Complex pairs of scratch one execution needs. */
    int64_t scratch;
    /* A work buffer of n + scratch pairs kept between executions (cpu_fft.c), as cuFFT's
     * plans keep their work area; NULL while a thread holds it, or before the first. */
    _Atomic(double *) spare;
    /* The cache's bookkeeping (cpu_fft_plan.c): users holding it, its last use. */
    int refs;
    uint64_t used;
};

/* The cached plan for (n, kind, sign) with a reference the caller gives back with
 * ct__fft_plan_release; NULL when it cannot be allocated. */
ct__fft_plan *ct__fft_plan_get(int64_t n, ct__fft_kind kind, int sign);
void ct__fft_plan_release(ct__fft_plan *plan);

/* A transform's input: element i (a (re, im) pair; a real for r2c) at base + i * stride
 * elements, float (widened as it is read) or double. */
typedef struct ct__fft_input {
    const void *base;
    int64_t stride;
    bool f32;
} ct__fft_input;

/* One transform (cpu_fft_exec.c), computed in double. out is contiguous and does not
 * overlap the input; scratch holds plan->scratch pairs.
 *   c2c: n complex   ->  n complex at out
 *   r2c: n reals     ->  n/2 + 1 complex at out
 *   c2r: n/2 + 1 complex  ->  n reals at out */
void ct__fft_exec_c2c(const ct__fft_plan *plan, ct__fft_input in, double *out, double *scratch);
void ct__fft_exec_r2c(const ct__fft_plan *plan, ct__fft_input in, double *out, double *scratch);
void ct__fft_exec_c2r(const ct__fft_plan *plan, ct__fft_input in, double *out, double *scratch);

#endif
