"""Write a small CIFAR-10 folder in the binary version's format for test_cli_cifar.sh:
data_batch_1.bin to data_batch_5.bin (PER_FILE records each) and test_batch.bin (TEST
records); a record is a label byte, then the 32x32 R, G and B planes. The class shows as a
bright band in one channel, so that a model can learn it.

Usage: make_cifar_dataset.py DIR PER_FILE TEST"""
import os
import sys

import numpy as np


def records(n, rng):
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 3, 32, 32)).astype(np.uint8)
    for i, label in enumerate(labels):
        images[i, label % 3, 3 * label:3 * label + 3, :] = 250
    out = np.empty((n, 3073), np.uint8)
    out[:, 0] = labels
    out[:, 1:] = images.reshape(n, 3072)
    return out.tobytes()


def main():
    folder, per_file, test = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(7)
    for k in range(1, 6):
        with open(os.path.join(folder, f"data_batch_{k}.bin"), "wb") as f:
            f.write(records(per_file, rng))
    with open(os.path.join(folder, "test_batch.bin"), "wb") as f:
        f.write(records(test, rng))


main()
