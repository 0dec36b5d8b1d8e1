/* Branch-free float math for the CPU kernels: written so that GCC vectorizes the loops that
 * call it (no libm calls, no data-dependent branches, only selects), which libm's expf does
 * not allow. Used by exp and sigmoid on float32, float16 and bfloat16, and by the softmax,
 * norm and loss kernels. The algorithm is ew_formula_impl.h's, shared with CUDA. */
#ifndef CT_CPU_MATH_IMPL_H
#define CT_CPU_MATH_IMPL_H

#include "backend/ew_formula_impl.h"

/* e^x with separate multiplications and additions (every x86-64). */
static inline float ct__expf(float x) { return ct__ew_exp_f32(x); }

/* The same with fused multiply-adds: CUDA's results exactly. For code compiled for FMA
 * processors only (elsewhere __builtin_fmaf is a libm call). */
#if defined(__GNUC__)
static inline float ct__expf_fma(float x) { CT_EXPF_BODY(x, __builtin_fmaf) }
#endif

/* 1 / (1 + e^-x): no cancellation, so the relative error stays that of ct__expf. */
static inline float ct__sigmoidf(float x) { return ct__ew_sigmoid_f32(x); }

#endif
