/* Shared machinery of the CPU elementwise kernels (unary, binary, where).
 *
 * The kernels compute in one of four domains: float (f32, and f16/bf16 as PyTorch does),
 * double (f64), int64 (every integer dtype and bool; integer results wrap when stored) and
 * int32 (the same for operands of at most 32 bits, where it is exact and faster).
 * A row of any dtype and stride is processed in blocks of CT_CPU_BLOCK elements: each
 * input is loaded (converted) into a small aligned buffer of the domain's type, the op runs
 * as a plain contiguous loop over buffers (which the compiler vectorizes), and the result is
 * stored (converted) into the output. Operands that already are contiguous and of the
 * domain's type skip the buffers, so the common case is one vectorized loop.
 *
 * Large contiguous outputs are written with non-temporal (streaming) stores: the result
 * cannot stay in cache anyway, and streaming avoids reading each output line before writing
 * it, which is a quarter of the memory traffic of a binary op. */
#ifndef CT_CPU_EW_IMPL_H
#define CT_CPU_EW_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cpu/cpu_impl.h"

#define CT_CPU_BLOCK 512
/* Output size from which contiguous results are streamed past the cache. */
#define CT_CPU_STREAM_BYTES ((int64_t)8 << 20)

/* Load n elements of dtype, stride bytes apart (0 repeats one element), into the buffer dst
 * of the domain's type (float, double, int64_t, int32_t, uint64_t). Bool loads as 0/1;
 * floats load into integers by truncation. */
void ct__cpu_load_f32(void *dst, const char *src, int64_t stride, ct_dtype dtype, int64_t n);
void ct__cpu_load_f64(void *dst, const char *src, int64_t stride, ct_dtype dtype, int64_t n);
void ct__cpu_load_i64(void *dst, const char *src, int64_t stride, ct_dtype dtype, int64_t n);
void ct__cpu_load_i32(void *dst, const char *src, int64_t stride, ct_dtype dtype, int64_t n);
void ct__cpu_load_u64(void *dst, const char *src, int64_t stride, ct_dtype dtype, int64_t n);

/* Store n values of the domain's type from src into elements of dtype stride bytes apart
 * (ct__store_f64 and ct__store_i64 rules: floats round to nearest even, integers wrap, bool
 * is v != 0). ct__cpu_store_bool stores 0/1 bytes into a bool output (dtype is CT_BOOL). */
void ct__cpu_store_f32(char *dst, int64_t stride, ct_dtype dtype, const void *src, int64_t n);
void ct__cpu_store_f64(char *dst, int64_t stride, ct_dtype dtype, const void *src, int64_t n);
void ct__cpu_store_i64(char *dst, int64_t stride, ct_dtype dtype, const void *src, int64_t n);
void ct__cpu_store_i32(char *dst, int64_t stride, ct_dtype dtype, const void *src, int64_t n);
void ct__cpu_store_u64(char *dst, int64_t stride, ct_dtype dtype, const void *src, int64_t n);
void ct__cpu_store_bool(char *dst, int64_t stride, ct_dtype dtype, const void *src, int64_t n);

/* The loads and stores of one domain, as the kernels' row functions take them. */
typedef void (*ct__cpu_load_fn)(void *dst, const char *src, int64_t stride, ct_dtype dtype,
                                int64_t n);
typedef void (*ct__cpu_store_fn)(char *dst, int64_t stride, ct_dtype dtype, const void *src,
                                 int64_t n);

/* Copy bytes to dst with streaming stores where dst allows (else memcpy); call
 * ct__cpu_stream_fence before other threads may read what was streamed. */
void ct__cpu_stream_copy(void *dst, const void *src, size_t bytes);
void ct__cpu_stream_fence(void);

/* The unary and binary kernels of ops on complex operands (cpu_complex.c): every operand
 * read as complex128, the result stored into operand 0's dtype (abs, predicates and
 * comparisons in the real part); data are the binary operands' pointers (the scalar's too). */
void ct__cpu_complex_unary(ct__unary_op op, const ct__ew_args *args);
void ct__cpu_complex_binary(ct__binary_op op, const ct__ew_args *args, char *const *data);

/* Whether an op writing args' operand 0 should stream it: contiguous and large. */
bool ct__cpu_should_stream(const ct__ew_args *args);

#endif
