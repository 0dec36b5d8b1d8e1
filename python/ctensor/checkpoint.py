"""ct.save / ct.load: state dicts (str -> Tensor) in safetensors files.

The file is written atomically by the C library (a complete new file or the old one, never
half of one) and loads with the safetensors package, in PyTorch through
safetensors.torch.load_file, whose result a torch model's load_state_dict takes; files the
package writes load here.
"""

import os
from collections import OrderedDict

from ctensor import _ctensor


def save(obj, path):
    """Write a mapping of names to tensors (a model's state_dict()) to path."""
    if not hasattr(obj, "items"):
        raise TypeError("ct.save takes a mapping of names to tensors (a state_dict())")
    _ctensor._save(dict(obj.items()), os.fspath(path))


def load(path, device=None):
    """The tensors of a safetensors file on device (None: the default placement), in the
    file's order (the format lays tensors out by element size, then by name)."""
    return OrderedDict(_ctensor._load(os.fspath(path), device))
