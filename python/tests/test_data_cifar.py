"""ct.data's CIFAR-10: read_cifar10 on folders in the binary format written here (and hostile
ones: truncated, missing, a label above 9), the cifar10 dataset's per-channel normalisation,
and the augmentation (RandomCropFlip) done by the C loader: crops of -4..4 and flips of each
image with its own label, the same batches with 0 and 2 workers, on every device present."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy

RECORD = 3073


def records(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(1, 256, (n, 3, 32, 32)).astype(np.uint8)  # no 0: the padding's
    return images, labels


def write_folder(folder, per_file=3, test=4):
    """A CIFAR-10 folder; the images and labels of its training and test splits."""
    splits = {}
    names = [f"data_batch_{k}.bin" for k in range(1, 6)] + ["test_batch.bin"]
    for k, name in enumerate(names):
        images, labels = records(test if k == 5 else per_file, k)
        out = np.empty((len(labels), RECORD), np.uint8)
        out[:, 0], out[:, 1:] = labels, images.reshape(len(labels), -1)
        (folder / name).write_bytes(out.tobytes())
        split = "test" if k == 5 else "train"
        old = splits.get(split, (images[:0], labels[:0]))
        splits[split] = (np.concatenate([old[0], images]), np.concatenate([old[1], labels]))
    return splits


def test_read_cifar10_both_splits(tmp_path):
    splits = write_folder(tmp_path)
    for train, split in ((True, "train"), (False, "test")):
        images, labels = ct.data.read_cifar10(tmp_path, train=train)
        assert images.dtype == ct.uint8 and images.shape == (len(splits[split][1]), 3, 32, 32)
        assert labels.dtype == ct.int64
        np.testing.assert_array_equal(to_numpy(images), splits[split][0])
        np.testing.assert_array_equal(to_numpy(labels), splits[split][1])


def test_read_cifar10_hostile_folders(tmp_path):
    write_folder(tmp_path)
    whole = (tmp_path / "test_batch.bin").read_bytes()
    (tmp_path / "test_batch.bin").write_bytes(whole[:-100])
    with pytest.raises(ct.FormatError, match=r"test_batch\.bin: byte 9219: truncated"):
        ct.data.read_cifar10(tmp_path, train=False)
    (tmp_path / "test_batch.bin").write_bytes(b"\x0a" + whole[1:])
    with pytest.raises(ct.FormatError, match=r"test_batch\.bin: byte 0: label 10 of record 0"):
        ct.data.read_cifar10(tmp_path, train=False)
    (tmp_path / "data_batch_5.bin").unlink()
    with pytest.raises(ct.FileError, match=r"data_batch_5\.bin not found"):
        ct.data.read_cifar10(tmp_path)


def test_cifar10_dataset_normalised_per_channel(tmp_path, device):
    splits = write_folder(tmp_path)
    train = ct.data.cifar10(tmp_path, "train")
    pixels = splits["train"][0].astype(np.float64) / 255
    mean, std = pixels.mean(axis=(0, 2, 3)), pixels.std(axis=(0, 2, 3))
    _, tmean, tstd = train.transform
    np.testing.assert_allclose(tmean, mean, rtol=1e-12)
    np.testing.assert_allclose(tstd, std, rtol=1e-9)
    test = ct.data.cifar10(tmp_path, "test")  # the training split's statistics
    assert test.transform == train.transform and test.augment is None
    x, y = next(iter(ct.data.DataLoader(test, batch_size=4, device=device)))
    assert x.device == device and x.shape == (4, 3, 32, 32) and x.dtype == ct.float32
    expected = (splits["test"][0] / 255 - mean[:, None, None]) / std[:, None, None]
    np.testing.assert_allclose(to_numpy(x), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(to_numpy(y), splits["test"][1])
    with pytest.raises(ValueError, match="split"):
        ct.data.cifar10(tmp_path, "validation")


def crops_and_flips(x, source):
    """The (dy, dx, flip) that make each image of x (B, C, H, W) from its source image (a
    crop of it zero-padded by 4, maybe mirrored), or None where none does."""
    found = []
    for image, original in zip(x, source):
        match = None
        for flip in (False, True):
            src = original[:, :, ::-1] if flip else original
            padded = np.pad(src, ((0, 0), (4, 4), (4, 4)))
            for dy in range(-4, 5):
                for dx in range(-4, 5):
                    if np.array_equal(padded[:, 4 + dy:36 + dy, 4 + dx:36 + dx], image):
                        match = (dy, dx, flip)
        found.append(match)
    return found


def test_random_crop_flip_in_the_c_loader(device):
    images, labels = records(200, 9)
    ids = np.arange(200)
    dataset = ct.data.TensorDataset(ct.asarray(images, device="cpu"),
                                    ct.asarray(ids, dtype=ct.int64, device="cpu"),
                                    transform=(1.0, (0.0,) * 3, (1.0,) * 3),
                                    augment=ct.data.RandomCropFlip(4))
    runs = []
    for workers in (0, 2):
        loader = ct.data.DataLoader(dataset, batch_size=64, shuffle=True, num_workers=workers,
                                    seed=3, device=device)
        runs.append([(to_numpy(x), to_numpy(y)) for x, y in loader])
    for (xa, ya), (xb, yb) in zip(*runs):  # the same batches whatever the workers
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    x = np.concatenate([b[0] for b in runs[0]])
    y = np.concatenate([b[1] for b in runs[0]])
    assert sorted(y.tolist()) == list(range(200))  # the labels (ids) come with their images
    found = crops_and_flips(x, images[y].astype(np.float32))
    assert None not in found
    assert {f[0] for f in found} == set(range(-4, 5)) == {f[1] for f in found}
    assert 60 < sum(f[2] for f in found) < 140


def test_random_crop_flip_needs_the_c_loader():
    images, labels = records(4, 1)
    dataset = ct.data.TensorDataset(ct.asarray(images, device="cpu"),
                                    ct.asarray(labels, dtype=ct.int64, device="cpu"),
                                    transform=(1 / 255, (0.5,) * 3, (0.25,) * 3),
                                    augment=ct.data.RandomCropFlip(2, flip=False))
    with pytest.raises(TypeError, match="RandomCropFlip"):
        ct.data.DataLoader(dataset, batch_size=2, collate_fn=lambda s: s)
    with pytest.raises(TypeError, match="RandomCropFlip"):
        ct.data.TensorDataset(ct.asarray(images, device="cpu"), augment=(4, True))
    with pytest.raises(ValueError, match="padding"):
        ct.data.RandomCropFlip(-1)
    assert repr(ct.data.RandomCropFlip(2, flip=False)) == "RandomCropFlip(padding=2, flip=False)"
