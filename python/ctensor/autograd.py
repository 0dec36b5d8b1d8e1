"""Autograd switches: ct.no_grad() and ct.enable_grad(), as context managers and decorators.

The tape itself is the C library's (autograd.h): Tensor.requires_grad, .grad, .backward()
and .detach() are methods of the extension's Tensor; these classes only push and pop the C
library's per-thread no-grad region.
"""

import functools

from ctensor import _ctensor


class _GradMode:
    """A context manager that is also a decorator, with or without parentheses: `@ct.no_grad()`
    and `@ct.no_grad` both run the function inside the region, as PyTorch's."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (or, as a decorator, a "
                            f"function), got {orig_func!r}")
        return cls()(orig_func)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Ops inside record nothing (torch.no_grad); nests; per thread."""

    def __enter__(self):
        _ctensor._no_grad_push()
        return self

    def __exit__(self, *exc):
        _ctensor._no_grad_pop()
        return False


class enable_grad(_GradMode):
    """Recording back on inside a no_grad region (torch.enable_grad)."""

    def __enter__(self):
        self._depth = 0
        while not _ctensor.is_grad_enabled():
            _ctensor._no_grad_pop()
            self._depth += 1
        return self

    def __exit__(self, *exc):
        for _ in range(self._depth):
            _ctensor._no_grad_push()
        return False
