"""Damage a safetensors checkpoint the way a user's edits or a diverged run would, for
test_cli_files.sh: read the header and buffer with the standard library only, change them, and
write a valid safetensors file again.

Usage: edit_checkpoint.py IN OUT ACTION NAME
ACTION: "drop" removes tensor NAME; "add" adds a one-element f32 tensor NAME; "nan" sets the
first value of f32 tensor NAME to NaN; "narrow" drops the last column of 2-D f32 tensor NAME
(a model one input narrower); "epoch" sets the metadata "epoch" to NAME."""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    buffer = data[8 + size:]
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        tensors[name] = (entry["dtype"], entry["shape"], bytearray(buffer[begin:end]))
    return meta, tensors


def write(path, meta, tensors):
    header = {"__metadata__": meta}
    buffer = bytearray()
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(buffer), len(buffer) + len(data)]}
        buffer += data
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(buffer))


def main():
    source, target, action, name = sys.argv[1:5]
    meta, tensors = read(source)
    if action == "drop":
        del tensors[name]
    elif action == "add":
        tensors[name] = ("F32", [1], bytearray(struct.pack("<f", 1.0)))
    elif action == "nan":
        tensors[name][2][0:4] = struct.pack("<f", float("nan"))
    elif action == "narrow":
        dtype, (rows, cols), data = tensors[name]
        row = 4 * cols
        narrowed = b"".join(data[r * row:(r + 1) * row - 4] for r in range(rows))
        tensors[name] = (dtype, [rows, cols - 1], bytearray(narrowed))
    elif action == "epoch":
        meta["epoch"] = name
    write(target, meta, tensors)


main()
