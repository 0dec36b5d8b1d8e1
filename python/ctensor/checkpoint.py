"""ct.save / ct.load: state dicts in safetensors files.

The file is written atomically by the C library (a complete new file or the old one, never
half of one) and loads with the safetensors package, in PyTorch through
safetensors.torch.load_file, whose result a torch model's load_state_dict takes; files the
package writes load here.

A flat mapping of names to tensors (a model's state_dict()) is saved as it is. Anything
nested (an optimiser's state_dict(): {"state": {0: {"exp_avg": tensor, ...}}, "param_groups":
[{"lr": 0.001, "betas": (0.9, 0.999), ...}]}) is saved as its tensors under dotted names
("state.0.exp_avg") plus the rest of the structure as JSON in the file's metadata (key
"ctensor.tree"), where each tensor stands as {"tensor": name}, each dict as its list of
[key, value] pairs (so that integer keys stay integers) and each tuple as {"tuple": [...]};
ct.load rebuilds the structure. Such a file is still a plain safetensors file for other
readers (they see the tensors under their dotted names).
"""

import json
import os
from collections import OrderedDict

from ctensor import _ctensor

_TREE_KEY = "ctensor.tree"


def _is_flat(obj):
    return isinstance(obj, dict) and all(
        isinstance(k, str) and isinstance(v, _ctensor.Tensor) for k, v in obj.items())


def _encode(obj, name, tensors):
    """obj as JSON-able data, its tensors moved into tensors under dotted names."""
    if isinstance(obj, _ctensor.Tensor):
        tensors[name] = obj
        return {"tensor": name}
    prefix = name + "." if name else ""
    if isinstance(obj, dict):
        return {"dict": [[k, _encode(v, prefix + str(k), tensors)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, prefix + str(i), tensors) for i, v in enumerate(obj)]
        return {"tuple": items} if isinstance(obj, tuple) else {"list": items}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    raise TypeError(f"ct.save: cannot save a {type(obj).__name__} (at '{name}'); tensors, "
                    "dicts, lists, tuples, numbers, strings and None can be saved")


def _decode(node, tensors):
    kind, body = next(iter(node.items()))
    if kind == "tensor":
        return tensors[body]
    if kind == "dict":
        return {k: _decode(v, tensors) for k, v in body}
    if kind in ("list", "tuple"):
        items = [_decode(v, tensors) for v in body]
        return tuple(items) if kind == "tuple" else items
    return body


def save(obj, path):
    """Write a state dict (a model's or an optimiser's: tensors, nested as above) to path."""
    if not isinstance(obj, dict):
        raise TypeError("ct.save takes a state dict (a dict of names to tensors, or an "
                        "optimizer.state_dict())")
    if _is_flat(obj):
        _ctensor._save(dict(obj), os.fspath(path))
        return
    tensors = {}
    tree = _encode(obj, "", tensors)
    _ctensor._save(tensors, os.fspath(path), {_TREE_KEY: json.dumps(tree)})


def load(path, device=None):
    """The state dict saved at path, its tensors on device (None: the default placement). A
    flat file gives an OrderedDict in the file's order (the format lays tensors out by
    element size, then by name); a nested one (an optimiser's) its structure as saved."""
    tensors, metadata = _ctensor._load(os.fspath(path), device)
    if _TREE_KEY in metadata:
        return _decode(json.loads(metadata[_TREE_KEY]), tensors)
    return OrderedDict(tensors)
