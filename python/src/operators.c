/* Tensor's operators: arithmetic, comparison, bitwise and matmul, with their reflected and
 * in-place forms and Python scalars (weakly typed). Each operator is a row of the op table,
 * found by name when the module loads, so that an operator the core lacks (floor division,
 * bitwise ops on integers) raises a TypeError that names the missing op, and appears when
 * the row is added. In-place forms (x += y) write the result into x's storage, so views of
 * x see it; they refuse a result of another dtype or shape, as the standard says. */
#include "ctpy_impl.h"

typedef enum slot {
    SLOT_ADD,
    SLOT_SUB,
    SLOT_MUL,
    SLOT_DIV,
    SLOT_FLOORDIV,
    SLOT_MOD,
    SLOT_POW,
    SLOT_AND,
    SLOT_OR,
    SLOT_XOR,
    SLOT_LSHIFT,
    SLOT_RSHIFT,
    SLOT_EQ,
    SLOT_NE,
    SLOT_LT,
    SLOT_LE,
    SLOT_GT,
    SLOT_GE,
    SLOT_COUNT
} slot;

typedef struct op_slot {
    const char *name;              /* the row's name in op_list.h */
    const char *logical;           /* the row used for two bool operands instead, or NULL */
    ctpy_binary_op op, logical_op; /* found when the module loads (fn NULL: absent) */
} op_slot;

static op_slot slots[SLOT_COUNT] = {
    [SLOT_ADD] = {.name = "add"},
    [SLOT_SUB] = {.name = "sub"},
    [SLOT_MUL] = {.name = "mul"},
    [SLOT_DIV] = {.name = "div"},
    [SLOT_FLOORDIV] = {.name = "floor_divide"},
    [SLOT_MOD] = {.name = "remainder"},
    [SLOT_POW] = {.name = "pow"},
    [SLOT_AND] = {.name = "bitwise_and", .logical = "logical_and"},
    [SLOT_OR] = {.name = "bitwise_or", .logical = "logical_or"},
    [SLOT_XOR] = {.name = "bitwise_xor", .logical = "ne"},
    [SLOT_LSHIFT] = {.name = "bitwise_left_shift"},
    [SLOT_RSHIFT] = {.name = "bitwise_right_shift"},
    [SLOT_EQ] = {.name = "eq"},
    [SLOT_NE] = {.name = "ne"},
    [SLOT_LT] = {.name = "lt"},
    [SLOT_LE] = {.name = "le"},
    [SLOT_GT] = {.name = "gt"},
    [SLOT_GE] = {.name = "ge"},
};

static ctpy_unary_fn invert_fn, neg_fn, abs_fn, logical_not_fn;

int ctpy_operators_init(PyObject *module) {
    for (int i = 0; i < SLOT_COUNT; i++) {
        ctpy_find_binary(slots[i].name, &slots[i].op);
        if (slots[i].logical) ctpy_find_binary(slots[i].logical, &slots[i].logical_op);
    }
    invert_fn = ctpy_find_unary("bitwise_invert");
    neg_fn = ctpy_find_unary("neg");
    abs_fn = ctpy_find_unary("abs");
    logical_not_fn = ctpy_find_unary("logical_not");
    return 0;
}

static bool is_bool_operand(PyObject *o) {
    return ctpy_is_tensor(o) ? ct_dtype_of(ctpy_tensor_of(o)) == CT_BOOL : PyBool_Check(o);
}

/* Whether o can be an operand of an operator: a Tensor or a Python scalar. */
static bool operand_ok(PyObject *o) {
    return ctpy_is_tensor(o) || ctpy_is_scalar(o) || PyComplex_Check(o);
}

static PyObject *apply(slot which, PyObject *a, PyObject *b) {
    if (!operand_ok(a) || !operand_ok(b)) Py_RETURN_NOTIMPLEMENTED;
    const op_slot *s = &slots[which];
    if (s->logical_op.fn && is_bool_operand(a) && is_bool_operand(b))
        return ctpy_binary(a, b, &s->logical_op);
    if (!s->op.fn)
        return ctpy_raise_status(CT_ERR_UNSUPPORTED,
                                 "this operator needs ct_%s, which ctensor's core does not have "
                                 "(yet)",
                                 s->name);
    return ctpy_binary(a, b, &s->op);
}

/* x op= y: the result written into x, which keeps its dtype and shape. */
static PyObject *apply_inplace(slot which, PyObject *x, PyObject *y) {
    PyObject *result = apply(which, x, y);
    if (!result || result == Py_NotImplemented) return result;
    ct_tensor *dst = ctpy_tensor_of(x), *src = ctpy_tensor_of(result);
    bool same_shape = ct_ndim(src) == ct_ndim(dst) &&
                      !memcmp(ct_shape(src), ct_shape(dst), sizeof(int64_t) * ct_ndim(dst));
    if (ct_dtype_of(src) != ct_dtype_of(dst) || !same_shape) {
        ctpy_raise_status(ct_dtype_of(src) != ct_dtype_of(dst) ? CT_ERR_DTYPE : CT_ERR_SHAPE,
                          "in-place operator: the result (%s, %d axes) does not fit the array "
                          "(%s, %d axes); write x = x op y instead",
                          ct_dtype_name(ct_dtype_of(src)), ct_ndim(src),
                          ct_dtype_name(ct_dtype_of(dst)), ct_ndim(dst));
        Py_DECREF(result);
        return NULL;
    }
    ct_status status;
    CTPY_NOGIL(status = ct_copy(dst, src));
    Py_DECREF(result);
    if (ctpy_check(status) < 0) return NULL;
    return Py_NewRef(x);
}

#define CTPY_OPERATOR_(pyname, which)                                                              \
    static PyObject *op_##pyname(PyObject *a, PyObject *b) { return apply(which, a, b); }          \
    static PyObject *op_i##pyname(PyObject *a, PyObject *b) { return apply_inplace(which, a, b); }
CTPY_OPERATOR_(add, SLOT_ADD)
CTPY_OPERATOR_(sub, SLOT_SUB)
CTPY_OPERATOR_(mul, SLOT_MUL)
CTPY_OPERATOR_(div, SLOT_DIV)
CTPY_OPERATOR_(floordiv, SLOT_FLOORDIV)
CTPY_OPERATOR_(mod, SLOT_MOD)
CTPY_OPERATOR_(and, SLOT_AND)
CTPY_OPERATOR_(or, SLOT_OR)
CTPY_OPERATOR_(xor, SLOT_XOR)
CTPY_OPERATOR_(lshift, SLOT_LSHIFT)
CTPY_OPERATOR_(rshift, SLOT_RSHIFT)
#undef CTPY_OPERATOR_

static PyObject *op_pow(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return apply(SLOT_POW, a, b);
}

static PyObject *op_ipow(PyObject *a, PyObject *b, PyObject *mod) {
    if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return apply_inplace(SLOT_POW, a, b);
}

static PyObject *op_matmul(PyObject *a, PyObject *b) {
    if (!ctpy_is_tensor(a) || !ctpy_is_tensor(b)) Py_RETURN_NOTIMPLEMENTED;
    static const ctpy_binary_op matmul = {"@", ct_matmul, NULL, NULL, false};
    return ctpy_binary(a, b, &matmul);
}

static PyObject *op_imatmul(PyObject *a, PyObject *b) {
    PyObject *result = op_matmul(a, b);
    if (!result || result == Py_NotImplemented) return result;
    /* The standard allows x @= y only when the result keeps x's shape. */
    ct_tensor *dst = ctpy_tensor_of(a), *src = ctpy_tensor_of(result);
    ct_status status = CT_ERR_SHAPE;
    if (ct_ndim(src) == ct_ndim(dst) &&
        !memcmp(ct_shape(src), ct_shape(dst), sizeof(int64_t) * ct_ndim(dst)))
        CTPY_NOGIL(status = ct_copy(dst, src));
    else
        ctpy_raise_status(CT_ERR_SHAPE, "x @= y: the product's shape differs from x's");
    Py_DECREF(result);
    if (status != CT_OK) return PyErr_Occurred() ? NULL : ctpy_raise();
    return Py_NewRef(a);
}

static PyObject *op_neg(PyObject *x) { return ctpy_unary(x, "-", neg_fn); }
static PyObject *op_pos(PyObject *x) { return Py_NewRef(x); }
static PyObject *op_abs(PyObject *x) { return ctpy_unary(x, "abs", abs_fn); }

static PyObject *op_invert(PyObject *x) {
    if (ct_dtype_of(ctpy_tensor_of(x)) == CT_BOOL) return ctpy_unary(x, "~", logical_not_fn);
    if (!invert_fn)
        return ctpy_raise_status(CT_ERR_UNSUPPORTED,
                                 "~ on an integer array needs ct_bitwise_invert, which ctensor's "
                                 "core does not have (yet)");
    return ctpy_unary(x, "~", invert_fn);
}

/* ---- conversions to Python numbers: one-element arrays only ---- */

static PyObject *one_value(PyObject *x, const char *what) {
    ct_tensor *t = ctpy_tensor_of(x);
    if (ct_numel(t) != 1)
        return ctpy_raise_status(CT_ERR_SHAPE,
                                 "%s of an array of %lld elements: only a one-element array has "
                                 "one value",
                                 what, (long long)ct_numel(t));
    return PyObject_CallMethod(x, "item", NULL);
}

static int op_bool(PyObject *x) {
    PyObject *value = one_value(x, "bool()");
    if (!value) return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

static PyObject *op_int(PyObject *x) {
    PyObject *value = one_value(x, "int()");
    if (!value) return NULL;
    PyObject *out = PyNumber_Long(value);
    Py_DECREF(value);
    return out;
}

static PyObject *op_float(PyObject *x) {
    PyObject *value = one_value(x, "float()");
    if (!value) return NULL;
    PyObject *out = PyNumber_Float(value);
    Py_DECREF(value);
    return out;
}

static PyObject *op_index(PyObject *x) {
    ct_dtype dtype = ct_dtype_of(ctpy_tensor_of(x));
    if (!ct_dtype_is_integer(dtype))
        return PyErr_Format(PyExc_TypeError, "only integer arrays can be indices, not %s",
                            ct_dtype_name(dtype));
    return one_value(x, "operator.index()");
}

PyObject *ctpy_tensor_richcompare(PyObject *a, PyObject *b, int op) {
    static const slot by_op[] = {[Py_LT] = SLOT_LT, [Py_LE] = SLOT_LE, [Py_EQ] = SLOT_EQ,
                                 [Py_NE] = SLOT_NE, [Py_GT] = SLOT_GT, [Py_GE] = SLOT_GE};
    return apply(by_op[op], a, b);
}

PyNumberMethods ctpy_tensor_number = {
    .nb_add = op_add,
    .nb_subtract = op_sub,
    .nb_multiply = op_mul,
    .nb_true_divide = op_div,
    .nb_floor_divide = op_floordiv,
    .nb_remainder = op_mod,
    .nb_power = op_pow,
    .nb_and = op_and,
    .nb_or = op_or,
    .nb_xor = op_xor,
    .nb_lshift = op_lshift,
    .nb_rshift = op_rshift,
    .nb_matrix_multiply = op_matmul,
    .nb_inplace_add = op_iadd,
    .nb_inplace_subtract = op_isub,
    .nb_inplace_multiply = op_imul,
    .nb_inplace_true_divide = op_idiv,
    .nb_inplace_floor_divide = op_ifloordiv,
    .nb_inplace_remainder = op_imod,
    .nb_inplace_power = op_ipow,
    .nb_inplace_and = op_iand,
    .nb_inplace_or = op_ior,
    .nb_inplace_xor = op_ixor,
    .nb_inplace_lshift = op_ilshift,
    .nb_inplace_rshift = op_irshift,
    .nb_inplace_matrix_multiply = op_imatmul,
    .nb_negative = op_neg,
    .nb_positive = op_pos,
    .nb_absolute = op_abs,
    .nb_invert = op_invert,
    .nb_bool = op_bool,
    .nb_int = op_int,
    .nb_float = op_float,
    .nb_index = op_index,
};
