"""ctensor: arrays on devices (the CPU, and CUDA GPUs when present) from Python.

A thin binding over the C library libctensor (the extension ctensor._ctensor, written in C
against the CPython API): every computation is one call into the C API, run with the GIL
released. The namespace follows the Python array API standard (2023.12) for what the C
library has; python/README.md lists what it does not have yet. ct.fft and ct.linalg are the
standard's extensions (ct.linalg for real floating dtypes so far).

    import ctensor as ct
    x = ct.asarray([1.0, 4.0, 9.0], device="auto")   # cuda:0 when usable, else the CPU
    print(ct.sqrt(x))
    with ct.device("cpu"):
        y = ct.zeros((2, 3))
"""

from ctensor._ctensor import *  # noqa: F401,F403  (the namespace is the extension's)
from ctensor._ctensor import __array_api_version__  # noqa: F401
from ctensor._ctensor import cuda  # noqa: F401
from ctensor._ctensor import library_version as _library_version

__version__ = _library_version()  # the C library's, from include/ctensor/ctensor.h

pi = 3.141592653589793
e = 2.718281828459045
inf = float("inf")
nan = float("nan")
newaxis = None


class _Info:
    """What __array_namespace_info__() reports: capabilities, devices and dtypes."""

    def capabilities(self):
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 8}

    def default_device(self):
        return default_device()  # noqa: F405

    def devices(self):
        return devices()  # noqa: F405

    def default_dtypes(self, *, device=None):
        return {"real floating": float32, "complex floating": complex64,  # noqa: F405
                "integral": int64, "indexing": int64}  # noqa: F405

    def dtypes(self, *, device=None, kind=None):
        every = {d.name: d for d in (bool, float32, float64, float16, bfloat16,  # noqa: F405
                                     int8, int16, int32, int64,  # noqa: F405
                                     uint8, uint16, uint32, uint64,  # noqa: F405
                                     complex64, complex128)}  # noqa: F405
        if kind is None:
            return every
        return {n: d for n, d in every.items() if isdtype(d, kind)}  # noqa: F405


def __array_namespace_info__():
    """The array API's inspection object for this namespace."""
    return _Info()

# Training (python/ctensor/{autograd,nn,optim,data,checkpoint}.py over the C library).
from ctensor.autograd import enable_grad, no_grad  # noqa: E402,F401
from ctensor.checkpoint import load, save  # noqa: E402,F401
from ctensor import amp, data, distributed, nn, optim  # noqa: E402,F401
from ctensor.amp import autocast  # noqa: E402,F401
from ctensor import utils  # noqa: E402,F401  (ct.utils.data: torch.utils.data's names)
from ctensor import linalg  # noqa: E402,F401  (the array API's linalg extension)
from ctensor import fft  # noqa: E402,F401  (the standard's fft extension, python/ctensor/fft.py)

# PyTorch's everyday surface (python/ctensor/{tensor_methods,torch_functions}.py): Tensor
# methods, module functions and dtype aliases. Last, as ct.float / ct.int shadow the builtins.
from ctensor import tensor_methods  # noqa: E402,F401  (installs the Tensor methods)
from ctensor.tensor_methods import return_types  # noqa: E402,F401
from ctensor.torch_functions import (  # noqa: E402,F401
    allclose, as_tensor, bmm, cat, chunk, clamp, concatenate, cumprod, cumsum, double, flatten,
    float, from_numpy, gather, get_default_dtype, half, index_select, int, is_floating_point,
    is_tensor, isclose, log_softmax, long, masked_fill, max, median, min, mm, nanmedian, norm,
    numel, permute, randint, randperm, short, softmax, split, tensor, topk, transpose, unsqueeze)
