"""ct.save / ct.load: state dicts in safetensors files, with torch.save / torch.load's arguments.

The file is written atomically by the C library (a complete new file or the old one, never
half of one) and loads with the safetensors package, in PyTorch through
safetensors.torch.load_file, whose result a torch model's load_state_dict takes; files the
package writes load here. The format is the same whatever the file's name: a script that
saves to "model.pt" writes safetensors there. A PyTorch pickle checkpoint (torch.save's zip
or its older pickle format) is recognised by its first bytes and refused with the one-line
conversion to run in PyTorch.

A flat mapping of names to tensors (a model's state_dict()) is saved as it is. Anything
nested (an optimiser's state_dict(): {"state": {0: {"exp_avg": tensor, ...}}, "param_groups":
[{"lr": 0.001, "betas": (0.9, 0.999), ...}]}) is saved as its tensors under dotted names
("state.0.exp_avg") plus the rest of the structure as JSON in the file's metadata (key
"ctensor.tree"), where each tensor stands as {"tensor": name}, each dict as its list of
[key, value] pairs (so that integer keys stay integers) and each tuple as {"tuple": [...]};
ct.load rebuilds the structure. Such a file is still a plain safetensors file for other
readers (they see the tensors under their dotted names).

Only what round-trips is written: dict keys are str or int, names hold no NUL character and
no two tensors get one dotted name; anything else is refused (TypeError or ValueError naming
the key) before the file is touched.
"""

import json
import os
import tempfile
from collections import OrderedDict

from ctensor import _ctensor

_TREE_KEY = "ctensor.tree"
_CONVERT = ("convert it once in PyTorch: `from safetensors.torch import save_file; "
            "save_file(torch.load(path, map_location='cpu'), 'model.safetensors')` (for a "
            "state dict of tensors), then ct.load('model.safetensors')")


def _is_flat(obj):
    return isinstance(obj, dict) and all(
        isinstance(k, str) and isinstance(v, _ctensor.Tensor) for k, v in obj.items())


def _check_key(key, where):
    if not isinstance(key, (str, int)):
        raise TypeError(f"ct.save: key {key!r} (at '{where}') is a {type(key).__name__}; only "
                        "str and int keys round-trip; nothing was written")
    if isinstance(key, str) and "\0" in key:
        raise ValueError(f"ct.save: key {key!r} (at '{where}') holds a NUL character, which a "
                         "safetensors name cannot hold; nothing was written")
    if isinstance(key, str) and not key.isascii():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"ct.save: key {key!r} (at '{where}') is not valid Unicode (a lone "
                             "surrogate); nothing was written") from None


def _encode(obj, name, tensors):
    """obj as JSON-able data, its tensors moved into tensors under dotted names."""
    if isinstance(obj, _ctensor.Tensor):
        if name in tensors:
            raise ValueError(f"ct.save: two tensors would be saved under the name '{name}' "
                             "(a key with a dot beside a nested one); nothing was written")
        tensors[name] = obj
        return {"tensor": name}
    prefix = name + "." if name else ""
    if isinstance(obj, dict):
        for k in obj:
            _check_key(k, name)
        return {"dict": [[k, _encode(v, prefix + str(k), tensors)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, prefix + str(i), tensors) for i, v in enumerate(obj)]
        return {"tuple": items} if isinstance(obj, tuple) else {"list": items}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    raise TypeError(f"ct.save: cannot save a {type(obj).__name__} (at '{name}'); tensors, "
                    "dicts, lists, tuples, numbers, strings and None can be saved")


class _BadTree(Exception):
    pass


def _decode(node, tensors):
    if not (isinstance(node, dict) and len(node) == 1):
        raise _BadTree(f"a node is {json.dumps(node)[:60]}, not one {{kind: body}} pair")
    kind, body = next(iter(node.items()))
    if kind == "tensor":
        if not isinstance(body, str) or body not in tensors:
            raise _BadTree(f"it names a tensor {body!r} that the file does not hold")
        return tensors[body]
    if kind == "dict":
        if not isinstance(body, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], (str, int))
                for p in body):
            raise _BadTree("a dict is not a list of [str or int key, value] pairs")
        return {k: _decode(v, tensors) for k, v in body}
    if kind in ("list", "tuple"):
        if not isinstance(body, list):
            raise _BadTree(f"a {kind} is not a JSON list")
        items = [_decode(v, tensors) for v in body]
        return tuple(items) if kind == "tuple" else items
    if kind == "value":
        return body
    raise _BadTree(f"unknown node kind {kind!r}")


def _tree(path, text, tensors):
    """The structure that metadata text describes; ct.FormatError naming path and the key."""
    try:
        return _decode(json.loads(text), tensors)
    except RecursionError:
        why = "it is nested more deeply than Python's recursion limit"
    except (ValueError, _BadTree) as e:  # json.JSONDecodeError is a ValueError
        why = str(e)
    raise _ctensor.FormatError(f"ct.load: {path}: the metadata key '{_TREE_KEY}' is corrupt "
                               f"({why}); the file's tensors load with the safetensors package")


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write a state dict (a model's or an optimiser's: tensors, nested as above) to f, a path
    (str or os.PathLike; any name, "model.pt" included) or a binary file object. As
    torch.save's; pickle_module, pickle_protocol and _use_new_zipfile_serialization are
    accepted for its signature and change nothing (the format is safetensors, not pickle)."""
    if not isinstance(obj, dict):
        raise TypeError("ct.save takes a state dict (a dict of names to tensors, or an "
                        "optimizer.state_dict())")
    metadata = None
    if _is_flat(obj):
        for k in obj:
            _check_key(k, "")
        tensors = dict(obj)
    else:
        tensors = {}
        try:
            metadata = {_TREE_KEY: json.dumps(_encode(obj, "", tensors))}
        except RecursionError:
            raise ValueError("ct.save: the state dict is nested more deeply than Python's "
                             "recursion limit; nothing was written") from None
    if hasattr(f, "write"):
        with tempfile.TemporaryDirectory() as folder:
            temporary = os.path.join(folder, "state.safetensors")
            _ctensor._save(tensors, temporary, *([metadata] if metadata else []))
            with open(temporary, "rb") as written:
                f.write(written.read())
        return
    _ctensor._save(tensors, os.fspath(f), *([metadata] if metadata else []))


def _pickle_kind(path):
    """'zip' or 'pickle' when the file at path is a PyTorch pickle checkpoint, else None.

    Safetensors begins with an 8-byte header size and then '{'; torch.save's zip format
    begins with the zip signature PK\\x03\\x04, its legacy format with the pickle protocol
    opcode 0x80 (and neither has '{' at byte 8)."""
    try:
        with open(path, "rb") as file:
            head = file.read(9)
    except OSError:
        return None  # the C loader names the file and the error
    if len(head) == 9 and head[8:9] == b"{":
        return None
    if head[:4] == b"PK\x03\x04":
        return "zip"
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "pickle"
    return None


def _device_of(map_location):
    if map_location is None or isinstance(map_location, (str, _ctensor.device)):
        return map_location
    if callable(map_location):
        # torch.load(..., map_location=lambda storage, loc: storage): where it was saved,
        # which for a safetensors file (read into host memory) is the CPU.
        return "cpu"
    raise TypeError(f"ct.load: map_location {map_location!r}: a safetensors file records no "
                    "device to map from; pass the device to load onto (map_location='cpu', "
                    "'cuda:0' or a ct.device)")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, device=None):
    """The state dict saved in f (a path or a binary file object), its tensors on
    map_location (a ct.device or a string such as 'cpu' or 'cuda:0'; device= is the same;
    None: the default placement). A flat file gives an OrderedDict in the file's order (the
    format lays tensors out by element size, then by name); a nested one (an optimiser's)
    its structure as saved. As torch.load's: weights_only is accepted with any value (a
    safetensors file holds only tensors and plain data, never code), pickle_module must be
    None. A PyTorch pickle checkpoint is refused with how to convert it."""
    if pickle_module is not None:
        raise TypeError("ct.load: pickle_module: ctensor's files are safetensors, read "
                        "without pickle; leave it out")
    if device is not None and map_location is not None:
        raise TypeError("ct.load: pass map_location or device, not both")
    target = _device_of(map_location if map_location is not None else device)
    if hasattr(f, "read"):
        with tempfile.TemporaryDirectory() as folder:
            temporary = os.path.join(folder, "state.safetensors")
            with open(temporary, "wb") as copy:
                copy.write(f.read())
            return _load_path(temporary, target, getattr(f, "name", "the file object"))
    return _load_path(os.fspath(f), target, os.fspath(f))


def _load_path(path, device, shown):
    kind = _pickle_kind(path)
    if kind is not None:
        what = "zip (data.pkl)" if kind == "zip" else "legacy pickle"
        raise _ctensor.FormatError(f"ct.load: {shown} is a PyTorch checkpoint in torch.save's "
                                   f"{what} format, not safetensors, which ctensor reads; "
                                   + _CONVERT)
    tensors, metadata = _ctensor._load(path, device)
    if _TREE_KEY in metadata:
        return _tree(shown, metadata[_TREE_KEY], tensors)
    return OrderedDict(tensors)
