"""ct.data: datasets and the DataLoader, as torch.utils.data's, on the C data loader.

A TensorDataset of (inputs, integer labels) on the CPU, and ct.data.fashion_mnist(split),
are loaded by the C loader (loader.h): worker threads in C shuffle, gather, convert to
float32 (with fashion_mnist's scaling and normalisation), and copy each batch to the device
while the Python loop runs; no Python runs per sample or per batch beyond the loop's own
call. Any other dataset (a Python Dataset with __getitem__ and __len__) is batched here in
Python: in the calling thread with num_workers=0, else by num_workers threads that fetch
and collate batches ahead (prefetch_factor batches each; ctensor's ops release the GIL, and
so does the loop's wait for the next batch, which has a deadline: timeout seconds).
"""

import queue
import random
import threading

import ctensor as _ct
from ctensor import _ctensor

read_idx = _ctensor._read_idx
read_npy = _ctensor._read_npy
read_csv = _ctensor._read_csv


class Dataset:
    """Base of map-style datasets: define __getitem__(index) and __len__()."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor."""

    def __init__(self, *tensors, transform=None):
        if not tensors or any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise ValueError("TensorDataset: tensors with the same first dimension")
        self.tensors = tensors
        self.transform = transform  # the C loader's (scale, mean, std), or None

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


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


class DistributedSampler:
    """Each of num_replicas ranks takes its slice of every global batch (the C loader's
    sharding: the same seed gives every rank the same shuffle)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0):
        from ctensor import distributed
        self.dataset = dataset
        self.num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
        self.rank = distributed.get_rank() if rank is None else rank
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch


def _c_loadable(dataset):
    if not isinstance(dataset, TensorDataset) or len(dataset.tensors) != 2:
        return False
    x, y = dataset.tensors
    cpu = _ct.device("cpu")
    integer = y.dtype in (_ct.int32, _ct.int64, _ct.uint8) and y.ndim == 1
    shaped = dataset.transform is not None or (x.dtype == _ct.float32 and x.ndim in (2, 4))
    return x.device == cpu and y.device == cpu and integer and shaped


class DataLoader:
    """Batches of a dataset, shuffled per epoch, delivered on device.

    batch_size with a DistributedSampler is the per-rank batch (as PyTorch's)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, sampler=None, num_workers=0,
                 drop_last=False, device=None, pin_memory=True, prefetch_factor=None, seed=0,
                 timeout=300.0):
        if num_workers < 0 or timeout <= 0:
            raise ValueError("DataLoader: num_workers >= 0 and timeout > 0 (seconds)")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.shuffle = sampler.shuffle if sampler is not None else shuffle
        self.sampler, self.seed, self.epoch = sampler, seed, 0
        self.device = _ct.device(device) if device is not None else _ct.default_device()
        self._c = None
        if _c_loadable(dataset):
            x, y = dataset.tensors
            if y.dtype != _ct.int64:
                y = y.astype(_ct.int64)
            scale, mean, std = dataset.transform or (1.0, (0.0,), (1.0,))
            shards = (sampler.rank, sampler.num_replicas) if sampler is not None else (0, 1)
            if sampler is not None:
                self.seed = sampler.seed
            self._c = _ctensor._loader(
                x, y, batch_size * shards[1], shuffle=self.shuffle, drop_last=drop_last,
                seed=self.seed, workers=num_workers,
                prefetch=(prefetch_factor or 0) * num_workers, device=self.device,
                pin_memory=pin_memory, scale=scale, mean=mean, std=std,
                shard_index=shards[0], shard_count=shards[1])

    def __len__(self):
        if self._c is not None:
            return len(self._c)
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        epoch = self.sampler.epoch if self.sampler is not None else self.epoch
        self.epoch += 1
        if self._c is not None:
            return self._c_batches(epoch)
        return self._python_batches(epoch)

    def _c_batches(self, epoch):
        self._c.start_epoch(epoch)
        while True:
            batch = self._c.next()
            if batch is None:
                return
            yield batch

    def _python_batches(self, epoch):
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed * 1000003 + epoch).shuffle(order)
        if self.sampler is not None:
            order = order[self.sampler.rank::self.sampler.num_replicas]
        chunks = [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        if self.drop_last and chunks and len(chunks[-1]) < self.batch_size:
            chunks.pop()
        if self.num_workers == 0:
            return (self._batch(chunk) for chunk in chunks)
        return _threaded_batches(self, chunks)

    def _batch(self, chunk):
        return _collate([self.dataset[i] for i in chunk], self.device)


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
        for b in range(k, len(chunks), workers):
            if stop.is_set():
                return
            try:
                item = (loader._batch(chunks[b]), None)
            except BaseException as error:  # handed to the loop, which raises it
                put(queues[k], (None, error))
                return
            put(queues[k], item)

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
        stop.set()
        for t in threads:
            t.join(timeout=loader.timeout)


def _collate(samples, device):
    first = samples[0]
    if isinstance(first, (tuple, list)):
        return tuple(_collate([s[i] for s in samples], device) for i in range(len(first)))
    if isinstance(first, _ct.Tensor):
        return _ct.stack([s.to(device) for s in samples])
    return _ct.asarray(samples, device=device)
