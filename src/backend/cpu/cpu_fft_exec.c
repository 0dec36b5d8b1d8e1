/* The CPU FFT's transforms (cpu_fft_typed_impl.h) in float and in double. */
#include <stdint.h>

#include "backend/cpu/cpu_fft_impl.h"

#define CT_FFT_T float
#define CT_FFT_FN(name) name##_f32
#include "backend/cpu/cpu_fft_typed_impl.h"
#undef CT_FFT_T
#undef CT_FFT_FN

#define CT_FFT_T double
#define CT_FFT_FN(name) name##_f64
#include "backend/cpu/cpu_fft_typed_impl.h"
#undef CT_FFT_T
#undef CT_FFT_FN
