"""ct.data: datasets and the DataLoader, as torch.utils.data's, on the C data loader.

One implementation decides what a DataLoader delivers: the C loader (loader.h). It orders
each epoch (a seeded shuffle: Philox keyed by the seed and the epoch), cuts the order into
batches (batch_size, drop_last), and gives each rank of a DistributedSampler its slice of
every global batch. It also checks the arguments (batch_size, the dataset's length), so
that the messages are the C loader's. Who reads the samples depends on the dataset:

- A TensorDataset of (inputs, integer labels) on the CPU whose batches the C loader can
  make as they are (float32 (N, F) or (N, C, H, W) inputs, or a dataset with a transform
  such as ct.data.fashion_mnist(split) or ct.data.cifar10(root, split)): C reads them too.
  Worker threads in C gather, convert to float32 (scaled and normalised by the transform),
  crop and flip (the dataset's augment: RandomCropFlip) and copy each batch to the device
  while the Python loop runs; no Python runs per sample or per batch.
- Any other dataset (a Python Dataset with __getitem__ and __len__, a Subset, a
  TensorDataset of other tensors): the C loader gives each batch's sample indices (a loader
  of sample numbers), and Python reads those samples. dataset[i] is Python code, which
  holds the GIL, so Python threads run it (threads in C would only queue for the GIL): the
  calling thread with num_workers=0, else num_workers threads that read and collate the
  batches C cut, ahead of the loop (prefetch_factor batches each). ctensor's ops release
  the GIL, and so does the loop's wait for the next batch, which has a deadline: timeout
  seconds. A TensorDataset (or a Subset of one) is read a batch at a time, by indexing each
  tensor with the batch's indices.

Batches are collated as torch.utils.data's default_collate does: a sample (x, y) gives a
batch (X, Y) of stacked tensors, numbers become tensors, dicts and lists are collated per
field.
"""

import operator
import os as _os
import queue
import threading
import time

import ctensor as _ct
from ctensor import _ctensor

read_idx = _ctensor._read_idx
read_npy = _ctensor._read_npy
read_csv = _ctensor._read_csv


def read_cifar10(root, train=True):
    """CIFAR-10's binary version unpacked in root (cifar-10-batches-bin): (images, labels) of
    the training split (data_batch_1.bin to data_batch_5.bin) or the test split
    (test_batch.bin), images (N, 3, 32, 32) uint8 and labels (N) int64 on the CPU. A missing
    file is a FileError, a truncated or corrupt one (a size that is not a whole number of
    3073-byte records, a label above 9) a FormatError naming the file and the byte."""
    return _ctensor._read_cifar10(root, bool(train))

_INT64_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1


class Dataset:
    """Base of map-style datasets: define __getitem__(index) and __len__()."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class RandomCropFlip:
    """The standard augmentation of image datasets, done by the C loader's workers: a random
    crop of each image zero-padded by `padding` pixels on each side back to its size
    (torchvision's RandomCrop(size, padding=padding)) and, with flip, a horizontal flip with
    probability 1/2 (RandomHorizontalFlip), applied before the normalisation. Each sample's
    draw depends on (the DataLoader's seed, the epoch, its place in the epoch) only: the same
    batches whatever num_workers and the number of ranks. Given to a TensorDataset of images
    as augment=; the DataLoader must read that dataset itself (not through a Subset)."""

    def __init__(self, padding=4, flip=True):
        self.padding = _integer("padding", padding, 0, _INT_MAX, "RandomCropFlip")
        self.flip = bool(flip)

    def __repr__(self):
        return f"RandomCropFlip(padding={self.padding}, flip={self.flip})"


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor."""

    def __init__(self, *tensors, transform=None, augment=None):
        if not tensors or any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError("TensorDataset: tensors with the same first dimension")
        if augment is not None and not isinstance(augment, RandomCropFlip):
            raise TypeError("TensorDataset: augment must be a ct.data.RandomCropFlip or None")
        self.tensors = tensors
        self.transform = transform  # the C loader's (scale, mean, std), or None
        self.augment = augment  # the C loader's crops and flips, or None

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of dataset at indices, in that order."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def _seed_of(generator, seed, who="DataLoader"):
    """A generator's seed (anything with initial_seed(), as torch.Generator), else seed,
    else the global stream's (ct.manual_seed's), as an unsigned 64-bit integer."""
    if generator is not None:
        seed = generator.initial_seed()
    elif seed is None:
        seed = _ct.initial_seed()
    return _integer("seed", seed, -(2**63), 2**64 - 1, who) % 2**64


def random_split(dataset, lengths, generator=None):
    """Subsets of dataset, of the given lengths (integers summing to len(dataset), or
    fractions summing to 1, as torch's), over one shuffle of its indices: the C loader's,
    seeded by generator.initial_seed() (else by ct.manual_seed's seed, so that two calls
    split alike)."""
    n = _length(dataset, "random_split")
    lengths = list(lengths)
    if lengths and all(isinstance(f, float) for f in lengths) and abs(sum(lengths) - 1) < 1e-9:
        if any(not 0 <= f <= 1 for f in lengths):
            raise ValueError(f"random_split: fractions must be in [0, 1] (got {lengths})")
        counts = [int(f * n) for f in lengths]
        for i in range(n - sum(counts)):  # the remainder, one each, round-robin
            counts[i % len(counts)] += 1
        lengths = counts
    lengths = [_integer("lengths", k, 0, _INT64_MAX, "random_split") for k in lengths]
    if sum(lengths) != n:
        raise ValueError(f"random_split: the lengths sum to {sum(lengths)}, not to the "
                         f"dataset's length {n} (or give fractions summing to 1)")
    seed = _seed_of(generator, None, "random_split")
    plan = _ctensor._sample_loader(n, max(n, 1), shuffle=True, seed=seed, who="random_split")
    order = plan.epoch_samples(0)[0] if n else []
    parts, start = [], 0
    for k in lengths:
        parts.append(Subset(dataset, order[start:start + k]))
        start += k
    return parts


_FASHION_MNIST = None


def fashion_mnist(split="train"):
    """Fashion-MNIST (Debian's dataset-fashion-mnist) as a TensorDataset: images (N, 28, 28)
    uint8, labels (N) int64; its DataLoader gives float32 (B, 1, 28, 28) scaled to [0, 1] and
    normalised with the training set's mean 0.2860 and std 0.3530."""
    global _FASHION_MNIST
    if split not in ("train", "test"):
        raise ValueError("fashion_mnist: split is 'train' or 'test'")
    if _FASHION_MNIST is None:
        _FASHION_MNIST = _ctensor._fashion_mnist()
    images, labels = _FASHION_MNIST[:2] if split == "train" else _FASHION_MNIST[2:]
    return TensorDataset(images, labels, transform=(1.0 / 255, (0.2860,), (0.3530,)))


_CIFAR10_STATS = {}


def _channel_stats(images, chunk=1000):
    """The per-channel mean and standard deviation of uint8 images (N, C, H, W) scaled to
    [0, 1], summed in float64 a chunk of samples at a time."""
    channels = images.shape[1]
    total = [0.0] * channels
    squares = [0.0] * channels
    for first in range(0, images.shape[0], chunk):
        x = images[first:first + chunk].astype(_ct.float64) / 255.0
        sums = _ct.sum(x, axis=(0, 2, 3)).tolist()
        sq = _ct.sum(x * x, axis=(0, 2, 3)).tolist()
        for c in range(channels):
            total[c] += sums[c]
            squares[c] += sq[c]
    count = images.shape[0] * images.shape[2] * images.shape[3]
    mean = tuple(t / count for t in total)
    std = tuple(max(q / count - m * m, 0.0) ** 0.5 for q, m in zip(squares, mean))
    return mean, std


def cifar10(root, split="train", augment=False):
    """CIFAR-10 from root (see read_cifar10) as a TensorDataset: images (N, 3, 32, 32) uint8,
    labels (N) int64; its DataLoader gives float32 (B, 3, 32, 32) scaled to [0, 1] and
    normalised per channel with the training split's mean and standard deviation (for either
    split). augment=True adds the standard augmentation, RandomCropFlip(4, True), usually for
    the training split only; a RandomCropFlip gives another."""
    if split not in ("train", "test"):
        raise ValueError("cifar10: split is 'train' or 'test'")
    if augment is True:
        augment = RandomCropFlip(4, True)
    elif augment is False:
        augment = None
    key = _os.fspath(root)
    if key not in _CIFAR10_STATS:
        _CIFAR10_STATS[key] = _channel_stats(read_cifar10(root, train=True)[0])
    mean, std = _CIFAR10_STATS[key]
    images, labels = read_cifar10(root, train=split == "train")
    return TensorDataset(images, labels, transform=(1.0 / 255, mean, std), augment=augment)


class DistributedSampler:
    """Each of num_replicas ranks takes its slice of every global batch (the C loader's
    sharding: the same seed gives every rank the same shuffle)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0):
        from ctensor import distributed
        who = "DistributedSampler"
        self.dataset = dataset
        replicas = distributed.get_world_size() if num_replicas is None else num_replicas
        self.num_replicas = _integer("num_replicas", replicas, 1, _INT_MAX, who)
        rank = distributed.get_rank() if rank is None else rank
        self.rank = _integer("rank", rank, 0, self.num_replicas - 1, who)
        self.shuffle, self.seed, self.epoch = shuffle, _seed_of(None, seed, who), 0

    def set_epoch(self, epoch):
        self.epoch = _integer("epoch", epoch, -(2**63), _INT64_MAX, "DistributedSampler")


def _index(name, value, who):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{who}: {name} must be an integer (got {type(value).__name__})") from None


def _integer(name, value, low, high, who="DataLoader"):
    """value as an int in low..high, else an error naming the argument."""
    number = _index(name, value, who)
    if not low <= number <= high:
        raise ValueError(f"{who}: {name} must be in {low}..{high} (got {number})")
    return number


def _length(dataset, who):
    try:
        return len(dataset)
    except OverflowError:
        raise ValueError(f"{who}: the dataset's length does not fit in 64 bits "
                         "(its __len__ is too large)") from None


def _c_loadable(dataset):
    if not isinstance(dataset, TensorDataset) or len(dataset.tensors) != 2:
        return False
    x, y = dataset.tensors
    cpu = _ct.device("cpu")
    integer = y.dtype in (_ct.int32, _ct.int64, _ct.uint8) and y.ndim == 1
    shaped = dataset.transform is not None or (x.dtype == _ct.float32 and x.ndim in (2, 4))
    return x.device == cpu and y.device == cpu and integer and shaped


def _gather_source(dataset):
    """(tensors, indices) when dataset is a TensorDataset without transform, or a Subset of
    one (indices maps its positions to the tensors' rows; None: the identity); else None."""
    indices = None
    while isinstance(dataset, Subset):
        inner = [operator.index(i) for i in dataset.indices]
        indices = inner if indices is None else [inner[i] for i in indices]
        dataset = dataset.dataset
    if isinstance(dataset, TensorDataset) and dataset.transform is None:
        return dataset.tensors, indices
    return None


class DataLoader:
    """Batches of a dataset, shuffled per epoch, delivered on device (torch.utils.data's
    arguments, and device and seed).

    batch_size with a DistributedSampler is the per-rank batch (as PyTorch's). The shuffle is
    seeded by generator.initial_seed(), else by seed, else by ct.manual_seed's seed; each
    iteration over the loader is the next epoch (its own shuffle). timeout is the deadline of
    each wait for the workers (the C loader's and the worker threads'): a batch not ready by it
    raises (ct.BackendError from the C loader, TimeoutError from the threads) rather than
    hang; timeout=0 (PyTorch's "no deadline") means the default deadline, 300 s. persistent_workers changes nothing:
    the worker threads start with each epoch (the batches are the same either way)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=True, drop_last=False, timeout=300.0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, device=None, seed=None):
        if batch_sampler is not None or multiprocessing_context is not None:
            raise TypeError("DataLoader: batch_sampler and multiprocessing_context are not "
                            "supported (the C loader cuts the batches; workers are threads)")
        self.num_workers = _integer("num_workers", num_workers, 0, _INT_MAX)
        if prefetch_factor is not None:
            most = _INT_MAX // max(self.num_workers, 1)
            prefetch_factor = _integer("prefetch_factor", prefetch_factor, 0, most)
        if not timeout >= 0:
            raise ValueError(f"DataLoader: timeout must not be negative (got {timeout})")
        if sampler is not None and not isinstance(sampler, DistributedSampler):
            raise TypeError("DataLoader: sampler must be a ct.data.DistributedSampler (other "
                            "samplers are not supported; shuffle=True shuffles)")
        self.dataset, self.drop_last, self.collate_fn = dataset, drop_last, collate_fn
        self.batch_size = _batch_size(batch_size)
        self.prefetch_factor, self.timeout = prefetch_factor, timeout or 300.0
        self.worker_init_fn, self.persistent_workers = worker_init_fn, persistent_workers
        self.shuffle = sampler.shuffle if sampler is not None else bool(shuffle)
        self.sampler, self.epoch = sampler, 0
        self.seed = _seed_of(generator, sampler.seed if sampler is not None else seed)
        self.device = _ct.device(device) if device is not None else _ct.default_device()
        self._shards = (sampler.rank, sampler.num_replicas) if sampler is not None else (0, 1)
        self._c = None
        if _c_loadable(dataset) and collate_fn is None and worker_init_fn is None:
            x, y = dataset.tensors
            if y.dtype != _ct.int64:
                y = y.astype(_ct.int64)
            scale, mean, std = dataset.transform or (1.0, (0.0,), (1.0,))
            augment = dataset.augment or RandomCropFlip(0, False)
            self._c = _ctensor._loader(
                x, y, self._global_batch(), shuffle=self.shuffle, drop_last=drop_last,
                seed=self.seed, workers=self.num_workers,
                prefetch=(prefetch_factor or 0) * self.num_workers, device=self.device,
                pin_memory=pin_memory, scale=scale, mean=mean, std=std,
                shard_index=self._shards[0], shard_count=self._shards[1],
                crop_padding=augment.padding, horizontal_flip=augment.flip,
                timeout=self.timeout)
            self._plan = self._c
        elif getattr(dataset, "augment", None) is not None:
            raise TypeError("DataLoader: a dataset's augment (RandomCropFlip) is done by the C "
                            "loader, which needs a TensorDataset of (images, integer labels) on "
                            "the CPU, no collate_fn and no worker_init_fn")
        else:
            self._plan, self._planned = self._sample_loader(), len(dataset)

    def _global_batch(self):
        return min(self.batch_size * self._shards[1], _INT64_MAX)

    def _sample_loader(self):
        return _ctensor._sample_loader(
            _length(self.dataset, "DataLoader"), self._global_batch(), shuffle=self.shuffle,
            drop_last=self.drop_last, seed=self.seed, shard_index=self._shards[0],
            shard_count=self._shards[1])

    def __len__(self):
        return len(self._plan)

    def __iter__(self):
        epoch = self.sampler.epoch if self.sampler is not None else self.epoch
        self.epoch += 1
        if self._c is not None:
            return self._c_batches(epoch)
        if _length(self.dataset, "DataLoader") != self._planned:  # the dataset grew or shrank
            self._plan, self._planned = self._sample_loader(), len(self.dataset)
        chunks = self._plan.epoch_samples(epoch)
        self._source = _gather_source(self.dataset) if self.collate_fn is None else None
        if self.num_workers == 0:
            return (self._batch(chunk) for chunk in chunks)
        return _threaded_batches(self, chunks)

    def _c_batches(self, epoch):
        self._c.start_epoch(epoch)
        while True:
            batch = self._c.next()
            if batch is None:
                return
            yield batch

    def _batch(self, chunk):
        if self._source is not None:
            tensors, indices = self._source
            rows = _ct.asarray(chunk if indices is None else [indices[i] for i in chunk],
                               dtype=_ct.int64, device="cpu")
            return tuple(t[rows.to(t.device)].to(self.device) for t in tensors)
        if not chunk:  # this rank's empty slice of a short last batch: the fields, no rows
            return _no_rows(self._batch([0]))
        samples = [self.dataset[i] for i in chunk]
        if self.collate_fn is not None:
            return self.collate_fn(samples)
        return _collate(samples, self.device)


def _no_rows(batch):
    if isinstance(batch, _ct.Tensor):
        return batch[:0]
    if isinstance(batch, dict):
        return {key: _no_rows(value) for key, value in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_no_rows(value) for value in batch)
    return batch[:0]


def _batch_size(value):
    """batch_size for the C loader, whose check (and message) refuses what is not positive:
    one above the int64 range is the same batches as the largest."""
    number = _index("batch_size", value, "DataLoader")
    if number < -2**63:
        raise ValueError(f"DataLoader: batch_size must be positive (got {number})")
    return min(number, _INT64_MAX)


def _threaded_batches(loader, chunks):
    """Batches made by loader.num_workers threads, worker k making batches k, k + workers,
    ... into its own bounded queue, read back in order; a worker's exception is re-raised
    here, and a batch not ready within loader.timeout seconds is a TimeoutError."""
    workers = loader.num_workers
    queues = [queue.Queue(maxsize=loader.prefetch_factor or 2) for _ in range(workers)]
    stop = threading.Event()

    def put(q, item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def work(k):
        try:
            if loader.worker_init_fn is not None:
                loader.worker_init_fn(k)
            for b in range(k, len(chunks), workers):
                if stop.is_set():
                    return
                put(queues[k], (loader._batch(chunks[b]), None))
        except BaseException as error:  # handed to the loop, which raises it
            put(queues[k], (None, error))

    threads = [threading.Thread(target=work, args=(k,), daemon=True, name=f"ct-data-{k}")
               for k in range(workers)]
    for t in threads:
        t.start()
    try:
        for b in range(len(chunks)):
            try:
                batch, error = queues[b % workers].get(timeout=loader.timeout)
            except queue.Empty:
                raise TimeoutError(f"DataLoader: batch {b} of {len(chunks)} was not ready "
                                   f"after {loader.timeout} s (a slow or stuck __getitem__; "
                                   "raise DataLoader(timeout=...))") from None
            if error is not None:
                raise error
            yield batch
    finally:
        stop.set()  # the threads end after their __getitem__; one deadline for all of them
        deadline = time.monotonic() + loader.timeout
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))


def _collate(samples, device):
    """torch.utils.data.default_collate's batches, on device."""
    first = samples[0]
    if isinstance(first, _ct.Tensor):
        return _ct.stack([s.to(device) for s in samples])
    if isinstance(first, dict):
        return {key: _collate([s[key] for s in samples], device) for key in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise ValueError("DataLoader: every sample of a batch must have the same number of "
                             "fields")
        fields = [_collate([s[i] for s in samples], device) for i in range(len(first))]
        return fields if isinstance(first, list) else tuple(fields)
    if isinstance(first, (str, bytes)):
        return list(samples)
    if hasattr(first, "__array__") or hasattr(first, "__dlpack__"):
        return _ct.stack([_ct.asarray(s, device=device) for s in samples])
    return _ct.asarray(samples, device=device)
