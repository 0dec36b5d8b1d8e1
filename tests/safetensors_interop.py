"""safetensors interop between ctensor and the Python package, run by test_safetensors.

Usage: safetensors_interop.py DIR

Reads DIR/from_c.safetensors (every dtype numpy has, written by ctensor) with
safetensors.numpy.load_file and DIR/from_c_bf16.safetensors (numpy has no bfloat16) with
safetensors.deserialize, and checks every value against the formulas below, which the C test
uses too. Then writes DIR/from_python.safetensors with safetensors.numpy.save_file and
DIR/from_python_bf16.safetensors with safetensors.serialize_file, for the C side to check.
Exits non-zero with a message on the first mismatch.
"""
import sys

import numpy as np
import safetensors
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

# name -> (numpy dtype, shape); the C test's tables match these.
FROM_C = {
    "f64": (np.float64, (4,)),
    "f32": (np.float32, (2, 3)),
    "f16": (np.float16, (3, 2)),
    "i64": (np.int64, (5,)),
    "i32": (np.int32, (2, 2, 2)),
    "u8": (np.uint8, (7,)),
    "bool": (np.bool_, (3, 3)),
    "scalar": (np.float32, ()),
    "empty": (np.float32, (0, 4)),
    "rank8": (np.int32, (1, 2, 1, 2, 1, 2, 1, 2)),
    "i8": (np.int8, (6,)),
    "i16": (np.int16, (2, 3)),
    "u16": (np.uint16, (9,)),
    "u32": (np.uint32, (3, 2)),
    "u64": (np.uint64, (5,)),
}
FROM_PYTHON = {
    "py.f64": (np.float64, (3, 1)),
    "py.f32": (np.float32, (5,)),
    "py.f16": (np.float16, (2, 2)),
    "py.i64": (np.int64, (2, 3)),
    "py.i32": (np.int32, (4,)),
    "py.u8": (np.uint8, (2, 5)),
    "py.bool": (np.bool_, (6,)),
    "py.scalar": (np.int64, ()),
    "py.empty": (np.float64, (3, 0)),
    "py.i8": (np.int8, (5,)),
    "py.i16": (np.int16, (3,)),
    "py.u16": (np.uint16, (2, 2)),
    "py.u32": (np.uint32, (7,)),
    "py.u64": (np.uint64, (1, 3)),
}
METADATA_FROM_C = {"format": "ct", "note": 'h\u00e9llo "quoted" \\ \u20ac \U0001F600'}
METADATA_FROM_PYTHON = {"writer": "numpy", "unicode": "\u00fcber \U0001F680"}


def expected(dtype, shape):
    """Element i (C order) of every test tensor: exact in each dtype."""
    i = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    if dtype == np.bool_:
        values = i % 3 == 0
    elif np.issubdtype(dtype, np.unsignedinteger):
        values = (i * 37) % 256
    elif np.issubdtype(dtype, np.integer):
        values = i * 7 - 20
    else:
        values = i * 0.25 - 3.0
    return values.astype(dtype).reshape(shape)


def bf16_expected(shape):
    """The bf16 tensor's values as float32 (exact in bfloat16)."""
    return expected(np.float32, shape)


def check(name, got, dtype, shape):
    want = expected(dtype, shape)
    if got.dtype != want.dtype or got.shape != want.shape:
        sys.exit(f"{name}: got {got.dtype}{got.shape}, expected {want.dtype}{want.shape}")
    if not np.array_equal(got, want):
        sys.exit(f"{name}: values {got.ravel()[:8]} differ from {want.ravel()[:8]}")


def read_from_c(directory):
    path = f"{directory}/from_c.safetensors"
    tensors = load_file(path)
    if set(tensors) != set(FROM_C):
        sys.exit(f"{path}: names {sorted(tensors)}, expected {sorted(FROM_C)}")
    for name, (dtype, shape) in FROM_C.items():
        check(name, tensors[name], dtype, shape)
    with safe_open(path, framework="np") as f:
        if f.metadata() != METADATA_FROM_C:
            sys.exit(f"{path}: metadata {f.metadata()!r}, expected {METADATA_FROM_C!r}")
    with open(f"{directory}/from_c_bf16.safetensors", "rb") as f:
        entries = dict(safetensors.deserialize(f.read()))
    bf16 = entries["bf16"]
    if bf16["dtype"] != "BF16" or tuple(bf16["shape"]) != (3, 3):
        sys.exit(f"bf16: got {bf16['dtype']} {bf16['shape']}, expected BF16 [3, 3]")
    bits = np.frombuffer(bytes(bf16["data"]), dtype="<u2").astype(np.uint32) << 16
    if not np.array_equal(bits.view(np.float32).reshape(3, 3), bf16_expected((3, 3))):
        sys.exit(f"bf16: values {bits.view(np.float32)} differ")


def write_for_c(directory):
    tensors = {name: expected(dtype, shape) for name, (dtype, shape) in FROM_PYTHON.items()}
    save_file(tensors, f"{directory}/from_python.safetensors", metadata=METADATA_FROM_PYTHON)
    # bfloat16 bits: the top half of the float32 bits (the values are exact in bf16).
    bits = (bf16_expected((2, 3)).view(np.uint32) >> 16).astype("<u2")
    path = f"{directory}/from_python_bf16.safetensors"
    if hasattr(safetensors, "TensorSpec"):
        spec = safetensors.TensorSpec(
            dtype="bfloat16", shape=[2, 3], data_ptr=bits.ctypes.data, data_len=bits.nbytes
        )
    else:  # the older API takes the bytes themselves
        spec = {"dtype": "bfloat16", "shape": [2, 3], "data": bits.tobytes()}
    safetensors.serialize_file({"py.bf16": spec}, path)


def main():
    directory = sys.argv[1]
    read_from_c(directory)
    write_for_c(directory)
    print("safetensors interop: Python read ctensor's files and wrote its own")


if __name__ == "__main__":
    main()
