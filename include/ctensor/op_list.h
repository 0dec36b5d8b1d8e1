/* ctensor — the table of elementwise ops, read by ops.h (declarations) and by the op layer
 * and backends (enums and kernel tables). Adding an elementwise op means adding a line here,
 * its kernel, and (later) its backward rule.
 *
 * Unary kinds: FLOAT  integer and bool inputs compute in float32 (as PyTorch)
 *              SAME   keeps the input dtype (bool is taken as uint8 for arithmetic)
 *              BOOL   gives bool
 * Binary kinds: ARITH   promoted dtype (ct_promote_types)
 *               DIV     promoted, and integer/bool results become float32
 *               COMPARE promoted for the comparison, gives bool
 *               LOGICAL any dtypes, gives bool */
#ifndef CTENSOR_OP_LIST_H
#define CTENSOR_OP_LIST_H

#define CT_UNARY_OPS(X)                                                                            \
    X(neg, NEG, SAME)                                                                              \
    X(abs, ABS, SAME)                                                                              \
    X(sign, SIGN, SAME)                                                                            \
    X(sqrt, SQRT, FLOAT)                                                                           \
    X(rsqrt, RSQRT, FLOAT)                                                                         \
    X(exp, EXP, FLOAT)                                                                             \
    X(expm1, EXPM1, FLOAT)                                                                         \
    X(log, LOG, FLOAT)                                                                             \
    X(log1p, LOG1P, FLOAT)                                                                         \
    X(sin, SIN, FLOAT)                                                                             \
    X(cos, COS, FLOAT)                                                                             \
    X(tanh, TANH, FLOAT)                                                                           \
    X(sigmoid, SIGMOID, FLOAT)                                                                     \
    X(relu, RELU, SAME)                                                                            \
    X(gelu, GELU, FLOAT)                                                                           \
    X(erf, ERF, FLOAT)                                                                             \
    X(floor, FLOOR, SAME)                                                                          \
    X(ceil, CEIL, SAME)                                                                            \
    X(round, ROUND, SAME)                                                                          \
    X(logical_not, LOGICAL_NOT, BOOL)

#define CT_BINARY_OPS(X)                                                                           \
    X(add, ADD, ARITH)                                                                             \
    X(sub, SUB, ARITH)                                                                             \
    X(mul, MUL, ARITH)                                                                             \
    X(div, DIV, DIV)                                                                               \
    X(pow, POW, ARITH)                                                                             \
    X(maximum, MAXIMUM, ARITH)                                                                     \
    X(minimum, MINIMUM, ARITH)                                                                     \
    X(remainder, REMAINDER, ARITH)                                                                 \
    X(eq, EQ, COMPARE)                                                                             \
    X(ne, NE, COMPARE)                                                                             \
    X(lt, LT, COMPARE)                                                                             \
    X(le, LE, COMPARE)                                                                             \
    X(gt, GT, COMPARE)                                                                             \
    X(ge, GE, COMPARE)                                                                             \
    X(logical_and, LOGICAL_AND, LOGICAL)                                                           \
    X(logical_or, LOGICAL_OR, LOGICAL)

#define CT_REDUCE_OPS(X)                                                                           \
    X(sum, SUM)                                                                                    \
    X(mean, MEAN)                                                                                  \
    X(prod, PROD)                                                                                  \
    X(max, MAX)                                                                                    \
    X(min, MIN)                                                                                    \
    X(all, ALL)                                                                                    \
    X(any, ANY)

#endif
