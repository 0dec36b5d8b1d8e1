/* ctensor — the table of elementwise ops. Each row is one op: ops.h declares ct_NAME (and
 * ct_NAME_scalar, ct_NAME_rscalar for binary ops) from it, the backends generate their kernels from
 * it (the per-element formulas are in src/backend/ew_formula_impl.h), the op layer its result dtype
 * and its autograd record (the backward rules are in src/ops/elementwise_*_grad.c), and the
 * tests their cases (each row has a float64 reference in tests/). A row whose formula,
 * backward rule or reference is missing does not compile (docs/ARCHITECTURE.md).
 *
 * Columns: X(name, NAME, kind, grad, autocast) for unary and binary ops, X(name, NAME,
 * autocast) for reductions, and a one-line contract above each row.
 *
 * Unary kinds: FLOAT  integer and bool inputs compute in float32 (as PyTorch)
 *              SAME   keeps the input dtype (bool is taken as uint8 for arithmetic)
 *              BOOL   a predicate: gives bool
 *              INT    integer and bool inputs only (CT_ERR_DTYPE for floats); keeps the dtype
 * Binary kinds: ARITH   promoted dtype (ct_promote_types)
 *               FLOAT   promoted, and integer/bool results become float32
 *               COMPARE promoted for the comparison, gives bool
 *               LOGICAL any dtypes, gives bool
 *               INT     integers and bool only (CT_ERR_DTYPE for floats); promoted dtype
 *               SHIFT   integers only (CT_ERR_DTYPE for floats and bool); promoted dtype
 * grad: GRAD    differentiable: a backward rule (for floating results)
 *       NOGRAD  no backward rule: a floating result from an input that requires grad is
 *               CT_ERR_UNSUPPORTED naming the op; bool and integer results carry no grad.
 * autocast: what an autocast region (autocast.h) does to the op's f16, bf16 and f32 inputs on
 * its device type, after PyTorch's lists (an op on its CUDA or its CPU list has that policy
 * on every device; the ops of other tables are in src/ops/autocast_ops.h):
 *       LOWER   cast to the region's dtype (PyTorch's lower_precision_fp)
 *       F32     f16 and bf16 inputs cast to float32 (PyTorch's fp32)
 *       PROMOTE cast to the widest of the inputs' dtypes (PyTorch's promote)
 *       AS_IS   on no list: runs in the dtypes it is given
 *       mean is ctensor's addition to the F32 list, as sum (a sum, divided). */
#ifndef CTENSOR_OP_LIST_H
#define CTENSOR_OP_LIST_H

#define CT_UNARY_OPS(X)                                                                            \
    /* -x; integers wrap (-INT_MIN is INT_MIN); bool is CT_ERR_DTYPE */                            \
    X(neg, NEG, SAME, GRAD, AS_IS)                                                                 \
    /* |x|; integers wrap (|INT_MIN| is INT_MIN); -0.0 gives 0.0 */                                \
    X(abs, ABS, SAME, GRAD, AS_IS)                                                                 \
    /* -1, +0 or 1 (+0 for either zero, as NumPy); NaN is kept; gradient 0 */                      \
    X(sign, SIGN, SAME, GRAD, AS_IS)                                                               \
    /* IEEE square root: NaN below 0, -0.0 gives -0.0 */                                           \
    X(sqrt, SQRT, FLOAT, GRAD, AS_IS)                                                              \
    /* 1 / sqrt(x): inf at 0, NaN below 0 */                                                       \
    X(rsqrt, RSQRT, FLOAT, GRAD, F32)                                                              \
    /* e^x; float32 within 1.1 ulp, the same bits on CPU and CUDA */                               \
    X(exp, EXP, FLOAT, GRAD, F32)                                                                  \
    /* e^x - 1, accurate near 0 */                                                                 \
    X(expm1, EXPM1, FLOAT, GRAD, F32)                                                              \
    /* natural log: -inf at 0, NaN below 0 */                                                      \
    X(log, LOG, FLOAT, GRAD, F32)                                                                  \
    /* log(1 + x), accurate near 0 */                                                              \
    X(log1p, LOG1P, FLOAT, GRAD, F32)                                                              \
    /* sine (radians) */                                                                           \
    X(sin, SIN, FLOAT, GRAD, AS_IS)                                                                \
    /* cosine (radians) */                                                                         \
    X(cos, COS, FLOAT, GRAD, AS_IS)                                                                \
    /* hyperbolic tangent */                                                                       \
    X(tanh, TANH, FLOAT, GRAD, AS_IS)                                                              \
    /* 1 / (1 + e^-x), no cancellation */                                                          \
    X(sigmoid, SIGMOID, FLOAT, GRAD, AS_IS)                                                        \
    /* max(x, 0) with NaN kept */                                                                  \
    X(relu, RELU, SAME, GRAD, AS_IS)                                                               \
    /* the erf form x/2 (1 + erf(x / sqrt 2)), not the tanh approximation */                       \
    X(gelu, GELU, FLOAT, GRAD, AS_IS)                                                              \
    /* GPT-2's tanh form x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate='tanh') */     \
    X(gelu_tanh, GELU_TANH, FLOAT, GRAD, AS_IS)                                                    \
    /* the error function */                                                                       \
    X(erf, ERF, FLOAT, GRAD, AS_IS)                                                                \
    /* round toward -inf; integers unchanged; gradient 0 */                                        \
    X(floor, FLOOR, SAME, GRAD, AS_IS)                                                             \
    /* round toward +inf; integers unchanged; gradient 0 */                                        \
    X(ceil, CEIL, SAME, GRAD, AS_IS)                                                               \
    /* round half to even (numpy.round); integers unchanged; gradient 0 */                         \
    X(round, ROUND, SAME, GRAD, AS_IS)                                                             \
    /* x == 0 */                                                                                   \
    X(logical_not, LOGICAL_NOT, BOOL, NOGRAD, AS_IS)                                               \
    /* round toward 0; integers unchanged; gradient 0 */                                           \
    X(trunc, TRUNC, SAME, GRAD, AS_IS)                                                             \
    /* x * x; integers wrap */                                                                     \
    X(square, SQUARE, SAME, GRAD, AS_IS)                                                           \
    /* 1 / x: inf at 0 with the zero's sign */                                                     \
    X(reciprocal, RECIPROCAL, FLOAT, GRAD, F32)                                                    \
    /* base-2 log */                                                                               \
    X(log2, LOG2, FLOAT, GRAD, F32)                                                                \
    /* base-10 log */                                                                              \
    X(log10, LOG10, FLOAT, GRAD, F32)                                                              \
    /* tangent (radians) */                                                                        \
    X(tan, TAN, FLOAT, GRAD, F32)                                                                  \
    /* arcsine: NaN outside [-1, 1] */                                                             \
    X(asin, ASIN, FLOAT, GRAD, F32)                                                                \
    /* arccosine: NaN outside [-1, 1] */                                                           \
    X(acos, ACOS, FLOAT, GRAD, F32)                                                                \
    /* arctangent, in (-pi/2, pi/2) */                                                             \
    X(atan, ATAN, FLOAT, GRAD, AS_IS)                                                              \
    /* hyperbolic sine */                                                                          \
    X(sinh, SINH, FLOAT, GRAD, F32)                                                                \
    /* hyperbolic cosine */                                                                        \
    X(cosh, COSH, FLOAT, GRAD, F32)                                                                \
    /* inverse hyperbolic sine */                                                                  \
    X(asinh, ASINH, FLOAT, GRAD, AS_IS)                                                            \
    /* inverse hyperbolic cosine: NaN below 1 */                                                   \
    X(acosh, ACOSH, FLOAT, GRAD, AS_IS)                                                            \
    /* inverse hyperbolic tangent: +-inf at +-1, NaN outside [-1, 1] */                            \
    X(atanh, ATANH, FLOAT, GRAD, AS_IS)                                                            \
    /* 2^x */                                                                                      \
    X(exp2, EXP2, FLOAT, GRAD, AS_IS)                                                              \
    /* the sign bit: true for -0.0 and negative NaNs */                                            \
    X(signbit, SIGNBIT, BOOL, NOGRAD, AS_IS)                                                       \
    /* x is NaN */                                                                                 \
    X(isnan, ISNAN, BOOL, NOGRAD, AS_IS)                                                           \
    /* x is +inf or -inf */                                                                        \
    X(isinf, ISINF, BOOL, NOGRAD, AS_IS)                                                           \
    /* x is neither NaN nor infinite; integers always are finite */                                \
    X(isfinite, ISFINITE, BOOL, NOGRAD, AS_IS)                                                     \
    /* ~x (two's complement); on bool, logical not (as NumPy) */                                   \
    X(bitwise_invert, BITWISE_INVERT, INT, NOGRAD, AS_IS)

#define CT_BINARY_OPS(X)                                                                           \
    /* a + b; integers wrap */                                                                     \
    X(add, ADD, ARITH, GRAD, AS_IS)                                                                \
    /* a - b; integers wrap; bool - bool is CT_ERR_DTYPE */                                        \
    X(sub, SUB, ARITH, GRAD, AS_IS)                                                                \
    /* a * b; integers wrap */                                                                     \
    X(mul, MUL, ARITH, GRAD, AS_IS)                                                                \
    /* true division: integers give float32; x/0 is inf or NaN */                                  \
    X(div, DIV, FLOAT, GRAD, AS_IS)                                                                \
    /* a^b; integers wrap, a negative integer exponent is CT_ERR_INVALID_ARG */                    \
    X(pow, POW, ARITH, GRAD, F32)                                                                  \
    /* NaN-propagating maximum (numpy.maximum) */                                                  \
    X(maximum, MAXIMUM, ARITH, GRAD, AS_IS)                                                        \
    /* NaN-propagating minimum (numpy.minimum) */                                                  \
    X(minimum, MINIMUM, ARITH, GRAD, AS_IS)                                                        \
    /* Python-style remainder (the divisor's sign); integer % 0 is CT_ERR_INVALID_ARG */           \
    X(remainder, REMAINDER, ARITH, GRAD, AS_IS)                                                    \
    /* a == b (NaN is unequal to everything) */                                                    \
    X(eq, EQ, COMPARE, NOGRAD, AS_IS)                                                              \
    /* a != b (true with NaN) */                                                                   \
    X(ne, NE, COMPARE, NOGRAD, AS_IS)                                                              \
    /* a < b */                                                                                    \
    X(lt, LT, COMPARE, NOGRAD, AS_IS)                                                              \
    /* a <= b */                                                                                   \
    X(le, LE, COMPARE, NOGRAD, AS_IS)                                                              \
    /* a > b */                                                                                    \
    X(gt, GT, COMPARE, NOGRAD, AS_IS)                                                              \
    /* a >= b */                                                                                   \
    X(ge, GE, COMPARE, NOGRAD, AS_IS)                                                              \
    /* a != 0 and b != 0 */                                                                        \
    X(logical_and, LOGICAL_AND, LOGICAL, NOGRAD, AS_IS)                                            \
    /* a != 0 or b != 0 */                                                                         \
    X(logical_or, LOGICAL_OR, LOGICAL, NOGRAD, AS_IS)                                              \
    /* sqrt(a^2 + b^2) without overflow; inf if either is inf, even with NaN */                    \
    X(hypot, HYPOT, FLOAT, GRAD, AS_IS)                                                            \
    /* |a| with the sign of b (signed zeros and NaN signs count) */                                \
    X(copysign, COPYSIGN, FLOAT, GRAD, AS_IS)                                                      \
    /* the angle of (b, a) in [-pi, pi], signed zeros as C's atan2 */                              \
    X(atan2, ATAN2, FLOAT, GRAD, PROMOTE)                                                          \
    /* log(e^a + e^b) without overflow; logaddexp(-inf, -inf) is -inf */                           \
    X(logaddexp, LOGADDEXP, FLOAT, GRAD, AS_IS)                                                    \
    /* the next value after a in the direction of b (b when a == b); float16/bfloat16 refused */   \
    X(nextafter, NEXTAFTER, FLOAT, NOGRAD, AS_IS)                                                  \
    /* floor(a / b) as Python's //; integers wrap, integer // 0 is CT_ERR_INVALID_ARG */           \
    X(floor_divide, FLOOR_DIVIDE, ARITH, NOGRAD, AS_IS)                                            \
    /* a & b (bool: logical and) */                                                                \
    X(bitwise_and, BITWISE_AND, INT, NOGRAD, AS_IS)                                                \
    /* a | b (bool: logical or) */                                                                 \
    X(bitwise_or, BITWISE_OR, INT, NOGRAD, AS_IS)                                                  \
    /* a ^ b (bool: logical xor) */                                                                \
    X(bitwise_xor, BITWISE_XOR, INT, NOGRAD, AS_IS)                                                \
    /* a << b in the result's width; b < 0 or b >= the width gives 0 (NumPy) */                    \
    X(bitwise_left_shift, BITWISE_LEFT_SHIFT, SHIFT, NOGRAD, AS_IS)                                \
    /* a >> b (arithmetic); b < 0 or b >= the width gives 0, or -1 for negative a */               \
    X(bitwise_right_shift, BITWISE_RIGHT_SHIFT, SHIFT, NOGRAD, AS_IS)

#define CT_REDUCE_OPS(X)                                                                           \
    X(sum, SUM, F32)                                                                               \
    X(mean, MEAN, F32)                                                                             \
    X(prod, PROD, F32)                                                                             \
    X(max, MAX, AS_IS)                                                                             \
    X(min, MIN, AS_IS)                                                                             \
    X(all, ALL, AS_IS)                                                                             \
    X(any, ANY, AS_IS)

#endif
