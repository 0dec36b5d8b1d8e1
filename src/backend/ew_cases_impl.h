/* The switch cases of the elementwise kernels, one per op-table row and compute domain, for
 * both backends. A case list expands, for each row, to the row's case where its kind
 * computes in the domain, else to an empty case; what a case does is the including file's:
 * before it expands a list it defines
 *     CASE_FORMULA_(name, NAME, S)  a unary row's case (its formula ct__ew_<name>_<S>),
 *     CASE_FLOAT_(name, NAME, S)    a binary row's case in a float domain or a comparison,
 *     CASE_INT_(name, NAME, S)      a binary row's case in an integer domain (may fail),
 *     CASE_NONE_(name, NAME, S)     a row that does not compute in the domain,
 * so that the CPU's loops and CUDA's per-element functions share one enumeration. */
#ifndef CT_BACKEND_EW_CASES_IMPL_H
#define CT_BACKEND_EW_CASES_IMPL_H

#include "backend/ew_formula_impl.h"

/* Unary rows (CT_UNARY_OPS(CT_EW_U_CASE_F32) ...). */
#define CT_EW_U_CASE_F32(name, NAME, kind, grad, autocast)                                         \
    CT_EW_U_FLOATS_##kind(CASE_FORMULA_, CASE_NONE_)(name, NAME, f32)
#define CT_EW_U_CASE_F64(name, NAME, kind, grad, autocast)                                         \
    CT_EW_U_FLOATS_##kind(CASE_FORMULA_, CASE_NONE_)(name, NAME, f64)
#define CT_EW_U_CASE_I32(name, NAME, kind, grad, autocast)                                         \
    CT_EW_U_INTS_##kind(CASE_FORMULA_, CASE_NONE_)(name, NAME, i32)
#define CT_EW_U_CASE_I64(name, NAME, kind, grad, autocast)                                         \
    CT_EW_U_INTS_##kind(CASE_FORMULA_, CASE_NONE_)(name, NAME, i64)
#define CT_EW_U_CASE_U64(name, NAME, kind, grad, autocast)                                         \
    CT_EW_U_INTS_##kind(CASE_FORMULA_, CASE_NONE_)(name, NAME, u64)
#define CT_EW_U_CASE_TEST(name, NAME, kind, grad, autocast)                                        \
    CT_EW_U_TESTS_##kind(CASE_FORMULA_, CASE_NONE_)(name, NAME, test)

/* Binary rows: arithmetic, then comparisons (bool out). */
#define CT_EW_B_CASE_F32(name, NAME, kind, grad, autocast)                                         \
    CT_EW_B_FLOATS_##kind(CASE_FLOAT_, CASE_NONE_)(name, NAME, f32)
#define CT_EW_B_CASE_F64(name, NAME, kind, grad, autocast)                                         \
    CT_EW_B_FLOATS_##kind(CASE_FLOAT_, CASE_NONE_)(name, NAME, f64)
#define CT_EW_B_CASE_I32(name, NAME, kind, grad, autocast)                                         \
    CT_EW_B_INTS_##kind(CASE_INT_, CASE_NONE_)(name, NAME, i32)
#define CT_EW_B_CASE_I64(name, NAME, kind, grad, autocast)                                         \
    CT_EW_B_INTS_##kind(CASE_INT_, CASE_NONE_)(name, NAME, i64)
#define CT_EW_B_CASE_U64(name, NAME, kind, grad, autocast)                                         \
    CT_EW_B_INTS_##kind(CASE_INT_, CASE_NONE_)(name, NAME, u64)
#define CT_EW_B_CMP_F32(name, NAME, kind, grad, autocast)                                          \
    CT_EW_B_COMPARES_##kind(CASE_FLOAT_, CASE_NONE_)(name, NAME, f32)
#define CT_EW_B_CMP_F64(name, NAME, kind, grad, autocast)                                          \
    CT_EW_B_COMPARES_##kind(CASE_FLOAT_, CASE_NONE_)(name, NAME, f64)
#define CT_EW_B_CMP_I32(name, NAME, kind, grad, autocast)                                          \
    CT_EW_B_COMPARES_##kind(CASE_FLOAT_, CASE_NONE_)(name, NAME, i32)
#define CT_EW_B_CMP_I64(name, NAME, kind, grad, autocast)                                          \
    CT_EW_B_COMPARES_##kind(CASE_FLOAT_, CASE_NONE_)(name, NAME, i64)
#define CT_EW_B_CMP_U64(name, NAME, kind, grad, autocast)                                          \
    CT_EW_B_COMPARES_##kind(CASE_FLOAT_, CASE_NONE_)(name, NAME, u64)

#endif
