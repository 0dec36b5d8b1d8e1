/* The extension module ctensor._ctensor: gathers the functions of each file, the types and
 * the exceptions, and adds the array API's names for the op table's rows (subtract for
 * ct_sub, ...), for the rows that exist. */
#include "ctpy_impl.h"

/* The array API's names for rows the C library names otherwise. */
static const char *const aliases[][2] = {
    {"subtract", "sub"}, {"multiply", "mul"},     {"divide", "div"}, {"negative", "neg"},
    {"equal", "eq"},     {"not_equal", "ne"},     {"less", "lt"},    {"less_equal", "le"},
    {"greater", "gt"},   {"greater_equal", "ge"},
};

static int add_functions(PyObject *module, PyMethodDef *defs) {
    return PyModule_AddFunctions(module, defs);
}

static int add_aliases(PyObject *module) {
    PyObject *dict = PyModule_GetDict(module);
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        PyObject *fn = PyDict_GetItemString(dict, aliases[i][1]);
        if (fn && !PyDict_GetItemString(dict, aliases[i][0]) &&
            PyDict_SetItemString(dict, aliases[i][0], fn) < 0)
            return -1;
    }
    return 0;
}

/* Tensor's methods from interop.c and tensor_torch.c, added to the type after it is ready. */
static int add_tensor_methods(PyMethodDef *defs) {
    for (PyMethodDef *def = defs; def->ml_name; def++) {
        PyObject *descr = PyDescr_NewMethod(&ctpy_tensor_type, def);
        if (!descr || PyDict_SetItemString(ctpy_tensor_type.tp_dict, def->ml_name, descr) < 0) {
            Py_XDECREF(descr);
            return -1;
        }
        Py_DECREF(descr);
    }
    PyType_Modified(&ctpy_tensor_type);
    return 0;
}

static PyObject *py_version(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(ct_version());
}

static PyMethodDef module_functions[] = {
    {"from_dlpack", KW ctpy_from_dlpack, KWARGS,
     "from_dlpack(x, /, *, device=None, copy=None): an array sharing a DLPack producer's "
     "memory."},
    {"library_version", py_version, METH_NOARGS, "The C library's version."},
    {0}, /* sentinel */
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ctensor._ctensor",
    .m_doc = "ctensor's C extension: arrays on devices over libctensor (see the ctensor package).",
    .m_size = -1,
    .m_methods = module_functions,
};

PyMODINIT_FUNC PyInit__ctensor(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyMethodDef *tables[] = {ctpy_device_functions,   ctpy_stats_functions,
                             ctpy_creation_functions, ctpy_math_functions,
                             ctpy_manip_functions,    ctpy_dtype_functions,
                             ctpy_sorting_functions,  ctpy_settings_functions,
                             ctpy_linalg_functions,   ctpy_fft_functions};
    bool ok =
        ctpy_errors_init(m) == 0 && ctpy_dtypes_init(m) == 0 && ctpy_devices_init(m) == 0 &&
        ctpy_stats_init(m) == 0 && ctpy_sorting_init(m) == 0 && ctpy_size_init() == 0 &&
        PyType_Ready(&ctpy_tensor_type) == 0 && add_tensor_methods(ctpy_interop_methods) == 0 &&
        add_tensor_methods(ctpy_tensor_torch_methods) == 0 &&
        add_tensor_methods(ctpy_memory_format_methods) == 0 && ctpy_memory_format_init(m) == 0 &&
        PyModule_AddObjectRef(m, "Tensor", (PyObject *)&ctpy_tensor_type) == 0 &&
        ctpy_operators_init(m) == 0;
    for (size_t i = 0; ok && i < sizeof tables / sizeof tables[0]; i++)
        ok = add_functions(m, tables[i]) == 0;
    ok = ok && add_functions(m, ctpy_torch_style_functions) == 0 && ctpy_torch_style_init(m) == 0;
    ok = ok && add_functions(m, ctpy_stats_ops_functions) == 0;
    ok = ok && ctpy_autograd_init(m) == 0;
    ok = ok && ctpy_nn_init(m) == 0;
    ok = ok && ctpy_optim_init(m) == 0;
    ok = ok && ctpy_data_init(m) == 0;
    ok = ok && ctpy_checkpoint_init(m) == 0;
    ok = ok && ctpy_amp_init(m) == 0;
    ok = ok && ctpy_dist_init(m) == 0;
    ok = ok && ctpy_ddp_init(m) == 0;
    ok = ok && ctpy_data_parallel_init(m) == 0;
    ok = ok && add_aliases(m) == 0 &&
         PyModule_AddStringConstant(m, "__array_api_version__", "2023.12") == 0;
    if (!ok) Py_CLEAR(m);
    return m;
}
