/* The Python module's private header: the object types (Tensor, Device, DType), the
 * conversions between Python values and ctensor's (devices, dtypes, scalars, arrays), the
 * exceptions that carry the C library's messages, and the functions each file adds to the
 * module. The module is a thin binding: every computation is a call into libctensor's
 * public API, made with the GIL released. */
#ifndef CTPY_IMPL_H
#define CTPY_IMPL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdbool.h>

#include <ctensor/ctensor.h>

/* A ctensor array: one reference to a ct_tensor, released when the object dies. */
typedef struct ctpy_tensor {
    PyObject_HEAD ct_tensor *t;
} ctpy_tensor;

/* A device value; as a context manager it pushes itself on the placement stack. */
typedef struct ctpy_device {
    PyObject_HEAD ct_device device;
} ctpy_device;

/* A dtype: one object per ct_dtype (ctensor.float32 ...). */
typedef struct ctpy_dtype {
    PyObject_HEAD ct_dtype dtype;
} ctpy_dtype;

extern PyTypeObject ctpy_tensor_type;
extern PyTypeObject ctpy_device_type;
extern PyTypeObject ctpy_dtype_type;

/* Run a statement with the GIL released: every kernel, copy and wait. */
#define CTPY_NOGIL(statement)                                                                      \
    do {                                                                                           \
        PyThreadState *ctpy_saved_ = PyEval_SaveThread();                                          \
        statement;                                                                                 \
        PyEval_RestoreThread(ctpy_saved_);                                                         \
    } while (0)

static inline bool ctpy_is_tensor(PyObject *o) { return PyObject_TypeCheck(o, &ctpy_tensor_type); }
/* The ct_tensor of a Tensor object (borrowed); o must be one (ctpy_is_tensor). */
static inline ct_tensor *ctpy_tensor_of(PyObject *o) { return ((ctpy_tensor *)o)->t; }

/* A PyMethodDef's function of another signature than PyCFunction (METH_KEYWORDS,
 * METH_FASTCALL): {"name", KW py_name, KWARGS, "doc"}. */
#define KW (PyCFunction)(void (*)(void))
#define KWARGS (METH_VARARGS | METH_KEYWORDS)

/* ---- errors (errors.c) ---- */

/* Raise the exception for the thread's last ctensor failure (its class from the status,
 * its text the C message) and clear it; returns NULL. */
PyObject *ctpy_raise(void);
/* Raise the exception class of a status with a message of the module's own. */
PyObject *ctpy_raise_status(ct_status status, const char *format, ...);
/* CT_OK, or raise for status and return -1. */
int ctpy_check(ct_status status);
int ctpy_errors_init(PyObject *module);

/* ---- objects (objects.c) ---- */

/* A new Tensor that takes the reference t (NULL: raise the last ctensor error). */
PyObject *ctpy_wrap(ct_tensor *t);
/* ctpy_wrap for a creation function's result, marked as requiring grad when requires_grad
 * (PyTorch's `requires_grad=` keyword); t is released on failure. */
PyObject *ctpy_wrap_leaf(ct_tensor *t, int requires_grad);
PyObject *ctpy_dtype_object(ct_dtype dtype); /* a new reference to ctensor.<dtype> */
PyObject *ctpy_device_object(ct_device device);
/* Converters for PyArg_Parse "O&": a DType, a dtype name, or a NumPy dtype (by name);
 * ctpy_opt_dtype also takes None (written as -1). */
int ctpy_to_dtype(PyObject *o, void *out);
int ctpy_opt_dtype(PyObject *o, void *out);
/* A Device, a string ct_device_parse reads, or None (CT_DEFAULT). */
int ctpy_opt_device(PyObject *o, void *out);
/* The module's default float and integer dtypes. */
#define CTPY_DEFAULT_FLOAT CT_F32
/* The default complex dtype: the one whose parts are the default float (the standard's rule). */
#define CTPY_DEFAULT_COMPLEX (CTPY_DEFAULT_FLOAT == CT_F64 ? CT_C128 : CT_C64)
#define CTPY_DEFAULT_INT CT_I64

/* ---- conversion of Python values to tensors (asarray.c) ---- */

/* obj as a tensor (a new reference): a Tensor as it is, else a copy of a Python scalar,
 * nested sequence, buffer (NumPy array) or DLPack producer on device (CT_DEFAULT: the
 * default placement), as dtype (-1: inferred). NULL with an exception set. */
ct_tensor *ctpy_as_tensor(PyObject *obj, ct_dtype dtype, ct_device device);
/* A tensor argument of the function fn (its name, for the message), as a new reference.
 * The rule of the array API namespace's functions, NumPy's: an argument the function reads
 * is a Tensor, taken as it is, or an array-like (a Python number, a nested sequence, a
 * buffer such as a NumPy array, a DLPack producer), converted as asarray converts it (its
 * own dtype) onto near's device (near NULL: the default placement), so that an array-like
 * beside a Tensor joins the Tensor's device. Anything else is a TypeError naming fn. NULL
 * with an exception. (An argument a function writes into or keeps, as PyTorch's training
 * API has them, takes a Tensor only.) */
ct_tensor *ctpy_tensor_arg(PyObject *o, const char *fn, const ct_tensor *near);
/* The ct_tensor of o when o is a Tensor, else NULL: the near of an argument beside o. */
static inline const ct_tensor *ctpy_tensor_or_null(PyObject *o) {
    return ctpy_is_tensor(o) ? ctpy_tensor_of(o) : NULL;
}
/* Whether o is a Python bool, int or float (a weakly typed scalar). */
bool ctpy_is_scalar(PyObject *o);
/* Whether o is a Python int that a double does not hold exactly (beyond 2**53), for an
 * array of dtype CT_I64 or CT_U64: the C scalar entries take doubles, so such an int must
 * join as an exact 0-d array (ctpy_as_tensor of it is exact). */
bool ctpy_needs_exact_int(PyObject *o, ct_dtype dtype);
/* ct_cast(t, dtype) (a new reference; NULL with an exception), NumPy's warning included: a
 * RuntimeWarning "invalid value encountered in cast" when a floating t has an element the
 * integer dtype cannot hold (NaN, an infinity, a value out of range); those elements hold
 * what ct_cast gives them, which NumPy leaves unspecified too. */
ct_tensor *ctpy_cast(const ct_tensor *t, ct_dtype dtype);
/* 0 when the Python scalar o (bool, int or float) converts to dtype, NumPy 2's rules: an
 * int outside an integer dtype's range is an OverflowError; a float into an integer dtype
 * is truncated toward zero, NaN being a ValueError and an infinity or a value outside the
 * range an OverflowError. -1 with the exception. */
int ctpy_check_scalar(PyObject *o, ct_dtype dtype);
/* A tensor from a DLPack producer, without a copy when the memory allows. */
PyObject *ctpy_from_dlpack(PyObject *self, PyObject *args, PyObject *kwargs);

/* ---- integer arguments (arguments.c) ----
 * Each takes what, the argument as a message names it ("sum: axis"), and fails with an
 * exception naming it: a TypeError for what is no int (a float included), never a value
 * truncated into another. */

/* An axis: an int (or __index__) within -CT_MAX_DIMS .. CT_MAX_DIMS-1, the axes any array
 * can have (InvalidArgumentError, a ValueError, beyond them); the C op checks it against
 * its array's own rank. 0, or -1 with an exception. */
int ctpy_axis_value(PyObject *o, const char *what, int *axis);
/* ctpy_axis_value as a PyArg "O&" converter into an int, its argument named "axis". */
int ctpy_axis_arg(PyObject *o, void *out);
/* An int (or __index__) that fits int64 (OverflowError beyond it). */
int ctpy_int64_value(PyObject *o, const char *what, int64_t *out);
/* None (all axes: *naxes = -1), an axis, or a tuple of at most CT_MAX_DIMS axes. */
int ctpy_parse_axes(PyObject *o, const char *what, int *axes, int *naxes);
/* The items of a sequence argument as a tuple (a new reference) that no Python code can change:
 * a tuple itself, a list's copy, or the first most + 1 items of any other iterable (its
 * __len__ never consulted), so that the caller can refuse one of more than most. NULL with
 * an exception (a TypeError naming what for a non-iterable). */
PyObject *ctpy_snapshot(PyObject *o, Py_ssize_t most, const char *what);
/* A shape (or any list of sizes: reps, a normalised shape): an int, or a sequence of at most
 * CT_MAX_DIMS ints each within int64, read from a snapshot of the sequence. The C op checks
 * the signs. */
int ctpy_parse_shape(PyObject *o, const char *what, int64_t *shape, int *ndim);

/* An object with attributes from dict (types.SimpleNamespace), as finfo and
 * get_device_properties give; steals dict (NULL passes through). dtypes.c. */
PyObject *ctpy_namespace_of(PyObject *dict);

/* ---- the functions and methods each file adds ---- */

extern PyMethodDef ctpy_device_functions[];   /* devices.c */
extern PyMethodDef ctpy_stats_functions[];    /* stats.c */
extern PyMethodDef ctpy_creation_functions[]; /* creation.c */
extern PyMethodDef ctpy_math_functions[];     /* math.c */
extern PyMethodDef ctpy_manip_functions[];    /* manipulate.c */
extern PyMethodDef ctpy_dtype_functions[];    /* dtypes.c */
extern PyMethodDef ctpy_sorting_functions[];  /* sorting.c */
extern PyMethodDef ctpy_settings_functions[]; /* settings.c */
extern PyMethodDef ctpy_linalg_functions[];   /* linalg.c: ct.linalg's private calls */
extern PyMethodDef ctpy_fft_functions[];      /* fft.c: the private entries of ctensor.fft */
int ctpy_sorting_init(PyObject *module);
/* stats_ops.c: median, quantile, nansum, nanmean, nan_to_num, lerp */
extern PyMethodDef ctpy_stats_ops_functions[];
extern PyNumberMethods ctpy_tensor_number;   /* operators.c */
extern PyMappingMethods ctpy_tensor_mapping; /* indexing.c */
PyObject *ctpy_tensor_iter(PyObject *self);  /* indexing.c */
extern PyBufferProcs ctpy_tensor_buffer;     /* interop.c */
extern PyMethodDef ctpy_interop_methods[];   /* interop.c: Tensor methods */
/* The buffer protocol's format of dtype (ctensor/dtype.h's buffer column); NULL: none
 * (interop.c). */
const char *ctpy_buffer_format(ct_dtype dtype);
PyObject *ctpy_tensor_richcompare(PyObject *a, PyObject *b, int op);
/* Fill the operator tables from the op rows the core has (operators.c). */
int ctpy_operators_init(PyObject *module);
/* The cuda submodule and the Device type's module-level functions (devices.c). */
int ctpy_devices_init(PyObject *module);
/* The DType type and its objects ctensor.float32 ... (objects.c). */
int ctpy_dtypes_init(PyObject *module);
/* The TransferGuard type (stats.c). */
int ctpy_stats_init(PyObject *module);
/* Tensor.size's type (tensor_size.c): ready it, then make tensor's size object. */
int ctpy_size_init(void);
PyObject *ctpy_size_new(PyObject *tensor);

/* advanced_index.c: the advanced items of a key, applied to the view its basic items give. */
typedef struct {
    int n;
    int axis[CT_MAX_DIMS];         /* the view's axis each array indexes */
    ct_tensor *index[CT_MAX_DIMS]; /* CT_I64 arrays (new references) */
    bool in_range[CT_MAX_DIMS];    /* known to be in range (from a mask or a checked int) */
} ctpy_advanced;
void ctpy_advanced_clear(ctpy_advanced *adv);
/* -1 with an IndexError when an element of the integer array index is outside
 * -size .. size-1 (axis: the axis it indexes, for the message). */
int ctpy_check_index_range(const ct_tensor *index, int axis, int64_t size);
/* view[adv] as a new tensor, NULL with an exception; view[adv] = value (value has view's
 * dtype and device), 0 or -1 with an exception. */
ct_tensor *ctpy_advanced_get(const ct_tensor *view, const ctpy_advanced *adv);
int ctpy_advanced_set(ct_tensor *view, const ctpy_advanced *adv, const ct_tensor *value);

/* PyTorch's surface (issue 38). torch_style.c: ctpy_torch_style_functions (the hook that
 * installs python/ctensor/tensor_methods.py's methods) and ctpy_torch_kwargs: kwargs with
 * PyTorch's keywords renamed to the array API's (dim -> axis, keepdim -> keepdims, unbiased
 * -> correction), a new reference (NULL when kwargs is NULL, or with an exception when both
 * spellings are given); *torch_style tells whether one was renamed, for a function whose
 * PyTorch default differs (std's correction). tensor_torch.c: Tensor methods (view, ...). */
extern PyMethodDef ctpy_torch_style_functions[];
extern PyMethodDef ctpy_tensor_torch_methods[];
/* memory_format.c: ctensor.memory_format and its three objects, the Tensor methods contiguous
 * and is_contiguous, and the converter ("O&") of a memory_format argument to a
 * ct_memory_format or CTPY_PRESERVE_FORMAT. */
#define CTPY_PRESERVE_FORMAT (-1)
extern PyMethodDef ctpy_memory_format_methods[];
int ctpy_memory_format(PyObject *o, void *out);
int ctpy_memory_format_init(PyObject *module);
PyObject *ctpy_torch_kwargs(PyObject *kwargs, bool *torch_style);
/* Wrap the namespace functions that parse the standard's keywords only (squeeze, flip ...)
 * so that they take PyTorch's too; after the functions are added. */
int ctpy_torch_style_init(PyObject *module);
/* The dtype of a binary op of arrays of dtypes a and b (math.c, and result_type): the C
 * library's promotion (NumPy's), but an integer or bool with a floating dtype gives that
 * floating dtype (PyTorch's rule; the standard leaves mixed kinds to the implementation). */
ct_dtype ctpy_promote_types(ct_dtype a, ct_dtype b);

/* Elementwise calls used by several files (math.c). */
typedef ct_tensor *(*ctpy_binary_fn)(const ct_tensor *, const ct_tensor *);
typedef ct_tensor *(*ctpy_scalar_fn)(const ct_tensor *, double);
typedef ct_tensor *(*ctpy_unary_fn)(const ct_tensor *);
/* A binary function: its name (for messages), its function, its *_scalar form and the
 * reflected *_rscalar form (the scalar first; both NULL: none), and whether it commutes
 * (x op y == y op x), so that a scalar first can use the *_scalar form. */
typedef struct ctpy_binary_op {
    const char *name;
    ctpy_binary_fn fn;
    ctpy_scalar_fn scalar_fn, rscalar_fn;
    bool commutes;
} ctpy_binary_op;
/* op(a, b) where either may be a Python scalar (weakly typed) or an array-like. */
PyObject *ctpy_binary(PyObject *a, PyObject *b, const ctpy_binary_op *op);
/* fn(x), x a Tensor or an array-like (name: the function's, for messages). */
PyObject *ctpy_unary(PyObject *x, const char *name, ctpy_unary_fn fn);
/* The core's binary row by its name into *op (false when the core has none), and its unary
 * function (NULL when absent). */
bool ctpy_find_binary(const char *name, ctpy_binary_op *op);
ctpy_unary_fn ctpy_find_unary(const char *name);

/* ---- training (issue 20): each adds its functions and types to the module ---- */
int ctpy_autograd_init(PyObject *module);      /* autograd.c: Tensor.grad, backward, no_grad */
int ctpy_nn_init(PyObject *module);            /* nn.c (calls ctpy_nn_functional_init) */
int ctpy_nn_functional_init(PyObject *module); /* nn_functional.c */
int ctpy_optim_init(PyObject *module);         /* optim.c */
int ctpy_data_init(PyObject *module);          /* data.c */
int ctpy_checkpoint_init(PyObject *module);    /* checkpoint.c */
int ctpy_amp_init(PyObject *module);           /* amp.c: autocast, the loss scaler */
int ctpy_dist_init(PyObject *module);          /* dist.c: the communicator */
int ctpy_ddp_init(PyObject *module);           /* ddp.c: DistributedDataParallel's ct_ddp */
int ctpy_data_parallel_init(PyObject *module); /* data_parallel.c: DataParallel's replicas */
/* Tensor.backward's call, after a backward that succeeded, of the callable that
 * DataParallel's forward armed (data_parallel.c): 0 when none was armed or it returned,
 * -1 with its exception. */
int ctpy_after_backward(void);
/* The world communicator; NULL with CT_ERR_STATE raised before ct.distributed.init(). */
ct_comm *ctpy_world(void);
/* Tensor.backward's hand-off to an armed DistributedDataParallel (ddp.c): 1 when one was
 * armed and ran the backward (its status in *status), 0 when none was armed, -1 with an
 * exception for a backward it cannot run (a gradient argument, retain_graph). */
int ctpy_ddp_backward(const ct_tensor *loss, bool has_gradient, bool retain, ct_status *status);
/* The tensors of a sequence into a new array (PyMem_Free it), their count in *n; NULL with
 * an exception (optim.c). */
ct_tensor **ctpy_tensor_array(PyObject *seq, int *n);
/* The C optimiser of an optim.c handle; NULL with TypeError for another object. */
ct_optimizer *ctpy_optimizer_of(PyObject *o);

#endif
