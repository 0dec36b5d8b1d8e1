"""Write a small MNIST-layout dataset for test_cli_train.sh: the four IDX files (gzipped),
with images where the class shows as a bright band, so that a model can learn it.

Usage: make_idx_dataset.py DIR TRAIN TEST [BAD]
BAD: "labels" writes a label 12; "magic" a bad magic number; "truncated" cuts the train
images short; "huge" makes the header claim 2^31 images."""
import gzip
import struct
import sys

import numpy as np


def write(path, array, magic_type, claimed=None):
    shape = list(array.shape)
    if claimed is not None:
        shape[0] = claimed
    header = struct.pack(">HBB", 0, magic_type, array.ndim) + struct.pack(">" + "I" * array.ndim, *shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def split(n, rng):
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
    for i, label in enumerate(labels):
        images[i, 2 + 2 * label:4 + 2 * label, :] = 250
    return images, labels


def main():
    folder, train, test = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    bad = sys.argv[4] if len(sys.argv) > 4 else ""
    rng = np.random.default_rng(0)
    train_images, train_labels = split(train, rng)
    test_images, test_labels = split(test, rng)
    if bad == "labels":
        train_labels[3] = 12
    write(f"{folder}/train-images-idx3-ubyte.gz", train_images, 0x08,
          claimed=2**31 if bad == "huge" else None)
    write(f"{folder}/train-labels-idx1-ubyte.gz", train_labels, 0x08)
    write(f"{folder}/t10k-images-idx3-ubyte.gz", test_images, 0x08)
    write(f"{folder}/t10k-labels-idx1-ubyte.gz", test_labels, 0x08)
    if bad == "magic":
        write(f"{folder}/train-labels-idx1-ubyte.gz", train_labels, 0x07)
    if bad == "truncated":
        with gzip.open(f"{folder}/train-images-idx3-ubyte.gz", "rb") as f:
            data = f.read()
        with gzip.open(f"{folder}/train-images-idx3-ubyte.gz", "wb") as f:
            f.write(data[: len(data) // 2])


if __name__ == "__main__":
    main()
