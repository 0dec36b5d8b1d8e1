/* Whether the CPU computes bf16 products natively: the processor has AVX512_BF16 or
 * AMX-BF16 and the build has oneDNN (CT_DNNL), whose bf16 kernels use them. */
#include "backend/cpu/cpu_impl.h"
#include "ctensor/autocast.h"

bool ct_cpu_has_native_bf16(void) {
#ifdef CT_HAVE_DNNL
    return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
#else
    return false;
#endif
}
