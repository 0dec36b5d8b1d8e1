/* Whether the CPU's bf16 units are faster than its f32 ones (ct_cpu_bf16_speedup,
 * ct_cpu_has_fast_bf16 in autocast.h).
 *
 * Having AVX512_BF16 does not make bf16 faster. One VDPBF16PS does 32 products to one
 * VFMADDPS's 16, but the rate it issues at differs by processor (on some it issues at a
 * quarter of the FMA's rate, so bf16 is slower than f32 there: docs/PERFORMANCE.md, "Design
 * choices and their measurements"). So the rate is measured, not looked up: twelve independent
 * chains of each instruction (more than latency times issue width, so the chains do not wait on
 * each other), timed in turn five times, the fastest of each kept, so that a preemption during one
 * run does not count. About a millisecond, once per process.
 *
 * AMX-BF16 tiles are not measured (using them needs the kernel's permission, which oneDNN
 * asks for): where the processor and the operating system have them, oneDNN runs bf16 on the
 * tiles, and bf16 counts as fast. */
#include <math.h>
#include <pthread.h>

#include "backend/cpu/cpu_impl.h"
#include "backend/cpu/cpu_simd_impl.h"
#include "ctensor/autocast.h"

#if CT_CPU_SIMD_KERNELS
#include <cpuid.h>
#include <immintrin.h>

#define STEPS 20000
#define RUNS 5

/* The empty asm keeps every chain in a register and stops the compiler from folding or
 * dropping the steps. */
#define KEEP(v) __asm__ volatile("" : "+v"(v))
#define EACH_CHAIN(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* Nanoseconds for STEPS rounds of the twelve chains' f32 fused multiply-adds on 16 lanes. */
__attribute__((target("avx512f"))) static double time_f32_fma(void) {
    __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(0x1p-20f);
#define DECLARE(i) __m512 a##i = _mm512_setzero_ps();
    EACH_CHAIN(DECLARE)
    KEEP(x);
    KEEP(y);
    double start = ct__cpu_now_ns();
    for (int s = 0; s < STEPS; s++) {
#define FMA(i)                                                                                     \
    a##i = _mm512_fmadd_ps(x, y, a##i);                                                            \
    KEEP(a##i);
        EACH_CHAIN(FMA)
    }
    return ct__cpu_now_ns() - start;
}

/* Nanoseconds for STEPS rounds of the twelve chains' bf16 dot products on 16 lanes of pairs. */
__attribute__((target("avx512f,avx512bf16"))) static double time_bf16_dot(void) {
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = x; /* pairs of 1.0 */
    EACH_CHAIN(DECLARE)
    KEEP(x);
    KEEP(y);
    double start = ct__cpu_now_ns();
    for (int s = 0; s < STEPS; s++) {
#define DOT(i)                                                                                     \
    a##i = _mm512_dpbf16_ps(a##i, x, y);                                                           \
    KEEP(a##i);
        EACH_CHAIN(DOT)
    }
    return ct__cpu_now_ns() - start;
}

static double measure(void) {
    double fma = INFINITY, dot = INFINITY;
    for (int r = 0; r < RUNS; r++) {
        fma = fmin(fma, time_f32_fma());
        dot = fmin(dot, time_bf16_dot());
    }
    /* products per second: 32 per dot instruction, 16 per FMA */
    return (32.0 / dot) / (16.0 / fma);
}

/* AMX-BF16 and the tile state enabled by the operating system (XCR0 bits 17 and 18). */
static bool amx_bf16_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22))) return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false; /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & (3u << 17)) == (3u << 17);
}
#else
static double measure(void) { return 0; }
static bool amx_bf16_usable(void) { return false; }
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static double speedup;
static bool amx;

static void init(void) {
    if (!ct_cpu_has_native_bf16()) return;
    speedup = measure();
    amx = amx_bf16_usable();
}

double ct_cpu_bf16_speedup(void) {
    pthread_once(&once, init);
    return speedup;
}

bool ct_cpu_has_fast_bf16(void) {
    pthread_once(&once, init);
    return amx || speedup > 1.0;
}
