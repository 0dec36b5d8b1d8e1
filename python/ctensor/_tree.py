"""The structure of a nested checkpoint ("ctensor.tree" metadata, checkpoint.py's format) read
back from a file that may be corrupt: any fault, JSON that does not parse, nesting deeper
than the JSON reader's recursion, a node of the wrong form or a tensor the file lacks, is a
ValueError naming the file and the metadata key. The rebuild walks the tree with a stack of
its own, so that a deep tree (up to the JSON reader's limit) costs no Python recursion.

Format: each node is a one-key dict: {"tensor": name}, {"value": a JSON scalar},
{"dict": [[key, node], ...]} (a key a JSON scalar), {"list": [node, ...]} or
{"tuple": [node, ...]}.
"""

import json

TREE_KEY = "ctensor.tree"

_SCALARS = (str, int, float, bool, type(None))


def decode(text, tensors, path, key=TREE_KEY):
    """The structure text describes, its tensors taken from tensors (a dict of names to
    tensors); a ValueError naming path and key when text is no such structure."""

    def corrupt(why):
        return ValueError(f"ct.load: {path}: the metadata '{key}' is corrupt: {why}")

    try:
        root = json.loads(text)
    except RecursionError:
        raise corrupt("it is nested too deeply for the JSON reader") from None
    except (ValueError, TypeError) as e:
        raise corrupt(f"it is not JSON ({e})") from None
    return _rebuild(root, tensors, corrupt)


def _open(node, where, tensors, corrupt):
    """(value, None) for a leaf node, (None, frame) for a container still to fill."""
    if not isinstance(node, dict) or len(node) != 1:
        raise corrupt(f"at {where}: a node must be a one-key object, not {_short(node)}")
    ((kind, body),) = node.items()
    if kind == "tensor":
        if not isinstance(body, str) or body not in tensors:
            raise corrupt(f"at {where}: tensor {_short(body)} is not in the file")
        return tensors[body], None
    if kind == "value":
        if not isinstance(body, _SCALARS):
            raise corrupt(f"at {where}: a value must be a JSON scalar, not {_short(body)}")
        return body, None
    if not isinstance(body, list):
        raise corrupt(f"at {where}: '{_short(kind)}' needs a list, not {_short(body)}")
    if kind == "dict":
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], _SCALARS)):
                raise corrupt(f"at {where}: a dict entry must be [key, node], not {_short(pair)}")
        return None, ["dict", where, [p[0] for p in body], [p[1] for p in body], []]
    if kind in ("list", "tuple"):
        return None, [kind, where, None, body, []]
    raise corrupt(f"at {where}: unknown node kind {_short(kind)}")


def _rebuild(root, tensors, corrupt):
    value, frame = _open(root, "the root", tensors, corrupt)
    if frame is None:
        return value
    stack = [frame]
    while True:
        kind, where, keys, children, done = stack[-1]
        if len(done) < len(children):
            label = keys[len(done)] if keys is not None else len(done)
            value, child = _open(children[len(done)], f"{where}[{label!r}]", tensors, corrupt)
            if child is None:
                done.append(value)
            else:
                stack.append(child)
            continue
        stack.pop()
        built = (dict(zip(keys, done)) if kind == "dict" else
                 tuple(done) if kind == "tuple" else done)
        if not stack:
            return built
        stack[-1][4].append(built)


def _short(obj):
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."
