"""ct.utils.data as torch.utils.data: the imports a PyTorch script makes, batches collated as
PyTorch's default collate does, random_split and Subset; one implementation of order,
batches and shards (the C loader's) whoever reads the samples; and the DataLoader's argument
checks (the C loader's messages, naming the argument), on every device present."""

import numpy as np
import pytest

import ctensor as ct
from conftest import to_numpy
from ctensor.utils.data import DataLoader, Dataset, Subset, TensorDataset, random_split


def features(n=10, f=3):
    xs = np.arange(n * f, dtype=np.float32).reshape(n, f)
    return xs, TensorDataset(ct.asarray(xs, device="cpu"),
                             ct.asarray(np.arange(n), dtype=ct.int64, device="cpu"))


class Rows(Dataset):
    """A Python dataset: sample i is (row i, label i)."""

    def __init__(self, n=10, f=3):
        self.xs = np.arange(n * f, dtype=np.float32).reshape(n, f)

    def __len__(self):
        return len(self.xs)

    def __getitem__(self, i):
        return ct.asarray(self.xs[i]), i


class Seeded:
    """A generator as torch.Generator: only its initial_seed() is read."""

    def __init__(self, seed):
        self.seed = seed

    def initial_seed(self):
        return self.seed


def labels_of(loader):
    return [to_numpy(y).tolist() for _, y in loader]


def test_the_names_pytorch_scripts_import():
    import ctensor.utils.data as data
    assert ct.utils.data is data
    for name in ("DataLoader", "Dataset", "Subset", "TensorDataset", "random_split",
                 "DistributedSampler"):
        assert getattr(data, name) is getattr(ct.data, name)


def test_tensor_dataset_batches_are_x_y_tuples_of_stacked_tensors(device):
    xs, ds = features()
    batches = list(DataLoader(ds, batch_size=4, device=device))
    assert [type(b) for b in batches] == [tuple] * 3
    x, y = batches[0]
    assert x.shape == (4, 3) and y.shape == (4,) and x.device == device
    assert x.dtype == ct.float32 and y.dtype == ct.int64
    np.testing.assert_array_equal(to_numpy(batches[2][0]), xs[8:])
    # Three tensors, and float targets: read by Python (a gather per batch), same collation.
    targets = ct.asarray(np.linspace(0, 1, 10, dtype=np.float32), device="cpu")
    three = TensorDataset(ds.tensors[0], targets, ds.tensors[1])
    loader = DataLoader(three, batch_size=4, shuffle=True, device=device)
    assert loader._c is None and len(loader) == 3
    for x, t, y in loader:
        rows = to_numpy(y)
        np.testing.assert_array_equal(to_numpy(x), xs[rows])
        np.testing.assert_allclose(to_numpy(t), np.linspace(0, 1, 10, dtype=np.float32)[rows])
        assert x.device == device and t.device == device and y.dtype == ct.int64


def test_default_collate_of_python_samples(device):
    class Mixed(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": ct.full((2,), float(i)), "id": i, "name": f"s{i}"}

    batch = next(iter(DataLoader(Mixed(), batch_size=3, device=device)))
    assert batch["x"].shape == (3, 2) and batch["x"].device == device
    assert batch["id"].tolist() == [0, 1, 2] and batch["name"] == ["s0", "s1", "s2"]
    joined = DataLoader(Mixed(), batch_size=2, collate_fn=lambda s: [d["id"] for d in s])
    assert list(joined) == [[0, 1], [2, 3], [4]]


def test_python_datasets_take_the_c_loaders_order_batches_and_shards(device):
    """The C loader decides for every dataset: a Python dataset's batches hold the samples
    that the C loader's own batches of the same tensors hold, shuffled, sharded or not."""
    _, ds = features(n=23)
    for shuffle in (False, True):
        c = DataLoader(ds, batch_size=4, shuffle=shuffle, seed=3, device=device)
        py = DataLoader(Rows(23), batch_size=4, shuffle=shuffle, seed=3, num_workers=2,
                        device=device)
        assert c._c is not None and py._c is None
        for _ in range(2):  # two epochs, each its own shuffle
            assert labels_of(c) == labels_of(py)
    for rank in range(3):
        c = DataLoader(ds, batch_size=2, sampler=ct.data.DistributedSampler(
            ds, num_replicas=3, rank=rank, seed=5), device=device)
        py = DataLoader(Rows(23), batch_size=2, sampler=ct.data.DistributedSampler(
            ds, num_replicas=3, rank=rank, seed=5), device=device)
        assert len(c) == len(py) == 4 and labels_of(c) == labels_of(py)


def test_a_ranks_empty_slice_of_the_last_batch_keeps_the_steps_aligned():
    # 10 samples, global batches of 3 over 3 ranks: the last (1 sample) leaves rank 0 none.
    steps = []
    for rank in range(3):
        sampler = ct.data.DistributedSampler(Rows(10), num_replicas=3, rank=rank, shuffle=False)
        batches = list(DataLoader(Rows(10), batch_size=1, sampler=sampler))
        steps.append([b[1].shape[0] for b in batches])
        assert all(b[0].shape[1:] == (3,) for b in batches)
    assert steps == [[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    floats = TensorDataset(ct.ones((10, 3)), ct.arange(10, dtype=ct.float32))  # a gather each
    for rank, rows in enumerate([0, 0, 1]):
        sampler = ct.data.DistributedSampler(floats, num_replicas=3, rank=rank, shuffle=False)
        x, y = list(DataLoader(floats, batch_size=1, sampler=sampler))[-1]
        assert x.shape == (rows, 3) and y.shape == (rows,) and y.dtype == ct.float32


def test_shuffle_follows_the_generator_or_the_seed():
    _, ds = features(n=50)
    first = labels_of(DataLoader(ds, batch_size=50, shuffle=True, generator=Seeded(1)))
    assert first == labels_of(DataLoader(ds, batch_size=50, shuffle=True, seed=1))
    assert first != labels_of(DataLoader(ds, batch_size=50, shuffle=True, generator=Seeded(2)))
    ct.manual_seed(1)
    try:
        assert first == labels_of(DataLoader(ds, batch_size=50, shuffle=True))
    finally:
        ct.manual_seed(0)
    assert sorted(first[0]) == list(range(50))


def test_random_split_lengths_and_fractions():
    _, ds = features(n=11)
    a, b = random_split(ds, [8, 3], generator=Seeded(4))
    assert isinstance(a, Subset) and (len(a), len(b)) == (8, 3)
    assert sorted(a.indices + b.indices) == list(range(11)) and a.indices != list(range(8))
    again, _ = random_split(ds, [8, 3], generator=Seeded(4))
    assert again.indices == a.indices
    other, _ = random_split(ds, [8, 3], generator=Seeded(5))
    assert other.indices != a.indices
    assert [len(p) for p in random_split(ds, [0.5, 0.5])] == [6, 5]  # the remainder: first
    assert [len(p) for p in random_split(ds, [0.7, 0.2, 0.1])] == [8, 2, 1]
    x, y = a[0]
    assert y.item() == a.indices[0] and x.shape == (3,)
    with pytest.raises(ValueError, match="sum to 10, not to the dataset's length 11"):
        random_split(ds, [7, 3])
    with pytest.raises(ValueError, match="lengths must be in 0"):
        random_split(ds, [12, -1])


def test_a_loader_over_a_split_reads_the_subsets_rows(device):
    xs, ds = features(n=11)
    train, test = random_split(ds, [8, 3], generator=Seeded(4))
    seen = []
    for x, y in DataLoader(train, batch_size=3, shuffle=True, device=device):
        np.testing.assert_array_equal(to_numpy(x), xs[to_numpy(y)])
        seen += to_numpy(y).tolist()
    assert sorted(seen) == sorted(train.indices)
    inner = Subset(train, [0, 1])  # a subset of a subset
    assert labels_of(DataLoader(inner, batch_size=2)) == [train.indices[:2]]


@pytest.mark.parametrize("dataset", ["tensors", "python"])
def test_batch_size_that_is_not_positive_is_a_value_error(dataset):
    ds = features()[1] if dataset == "tensors" else Rows()
    for size in (0, -1, -2**63, -2**64):
        with pytest.raises(ValueError, match=rf"DataLoader: batch_size must be positive "
                                             rf"\(got {size}\)") as error:
            DataLoader(ds, batch_size=size)
        assert "ct_" not in str(error.value)
    with pytest.raises(TypeError, match="batch_size must be an integer"):
        DataLoader(ds, batch_size=2.5)
    assert len(DataLoader(ds, batch_size=2**64)) == 1  # larger than the dataset: one batch


def test_a_dataset_too_long_for_an_epochs_order_is_a_value_error():
    class Huge(Dataset):
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

    with pytest.raises(ValueError, match="DataLoader: the dataset's length must be in 0..") as e:
        DataLoader(Huge(2**62), batch_size=4)
    assert "got 4611686018427387904" in str(e.value) and "ct_" not in str(e.value)
    with pytest.raises(ValueError, match="the dataset's length does not fit in 64 bits"):
        DataLoader(Huge(2**64), batch_size=4)
    with pytest.raises(ValueError, match="random_split: the dataset's length must be in 0.."):
        random_split(Huge(2**62), [2**61, 2**61])


def test_c_loader_worker_wait_has_the_timeout():
    """DataLoader(timeout=) is the C loader's deadline: a batch its workers have not made by
    then (here one far too large to be made within 0.1 ms) is a BackendError naming the batch,
    the workers and the timeout, in bounded time, not a hang; and the loader then frees."""
    import time
    n = 256
    images = ct.zeros((n, 3, 128, 128), dtype=ct.float32, device="cpu")
    labels = ct.zeros((n,), dtype=ct.int64, device="cpu")
    loader = DataLoader(TensorDataset(images, labels), batch_size=n, num_workers=2,
                        timeout=1e-4, pin_memory=False)
    assert loader._c is not None  # the C loader's path
    start = time.monotonic()
    with pytest.raises(ct.BackendError, match=r"batch 0 of epoch 0 \(of 1\) not ready after "
                                              r"0\.0001 s: a worker of the data loader \(2 "
                                              r"workers\) is stuck"):
        next(iter(loader))
    del loader
    assert time.monotonic() - start < 30


def test_other_arguments_are_checked_by_name():
    ds = Rows()
    for value in (-1, 2**31, 2**63, 2**64):
        with pytest.raises(ValueError, match=f"DataLoader: num_workers must be in 0..2147483647 "
                                             f"\\(got {value}\\)"):
            DataLoader(ds, num_workers=value)
    with pytest.raises(ValueError, match="prefetch_factor must be in 0..1073741823"):
        DataLoader(ds, num_workers=2, prefetch_factor=2**31)
    with pytest.raises(ValueError, match="timeout must not be negative"):
        DataLoader(ds, timeout=-1)
    with pytest.raises(ValueError, match="seed must be in"):
        DataLoader(ds, seed=2**64)
    with pytest.raises(TypeError, match="batch_sampler and multiprocessing_context"):
        DataLoader(ds, batch_sampler=[[0, 1]])
    assert len(DataLoader(ds, timeout=0, seed=-1)) == 10  # timeout=0: PyTorch's default
    for value in (0, -1, 2**31, 2**63, 2**64):
        with pytest.raises(ValueError, match="DistributedSampler: num_replicas must be in 1.."):
            ct.data.DistributedSampler(ds, num_replicas=value, rank=0)
    for value in (-1, 3, -2**31, 2**31, -2**63, 2**64):
        with pytest.raises(ValueError, match=r"DistributedSampler: rank must be in 0..2 "):
            ct.data.DistributedSampler(ds, num_replicas=3, rank=value)
    sampler = ct.data.DistributedSampler(ds, num_replicas=3, rank=2)
    with pytest.raises(ValueError, match="DistributedSampler: epoch must be in"):
        sampler.set_epoch(2**64)


def test_worker_init_fn_runs_in_each_worker():
    started = []
    loader = DataLoader(Rows(), batch_size=2, num_workers=3, worker_init_fn=started.append)
    assert len(list(loader)) == 5 and sorted(started) == [0, 1, 2]


def test_a_pytorch_style_training_loop(device):
    """The loop of PyTorch's quickstart, with only the imports changed."""
    import ctensor as torch
    from ctensor import nn
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) > 0).astype(np.int64)
    dataset = TensorDataset(torch.asarray(x, device="cpu"), torch.asarray(y, device="cpu"))
    train, test = random_split(dataset, [0.75, 0.25])
    loader = DataLoader(train, batch_size=32, shuffle=True, device=device)
    model = nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(5):
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
    hits = 0
    with torch.no_grad():
        for xb, yb in DataLoader(test, batch_size=64, device=device):
            hits += int(torch.sum(torch.argmax(model(xb), axis=1) == yb).item())
    assert hits / len(test) > 0.9
