"""Run under `mpirun -np 2` by test_training.py: DistributedDataParallel (the C ct_ddp,
gradients all-reduced in buckets during backward) over 2 ranks, each taking half of every
batch, must train the same model as one process taking whole batches. Small buckets
(bucket_cap_mb) make several buckets per step, so that some start while backward still
runs. Rank 0 prints one line "ddp: ..." with what it compared; any difference fails."""

import sys

import numpy as np

import ctensor as ct
import ctensor.nn as nn
import ctensor.nn.functional as F


class Net(nn.Module):
    """A Python module of C layers and a Python parameter, as a user's model is."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh())
        self.scale = nn.Parameter(ct.ones((32,)))
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.body(x) * self.scale)


def make(device):
    ct.manual_seed(1)
    model = Net().to(device)
    return model, ct.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)


def train(model, opt, batches, part=None):
    for x, y in batches:
        if part is not None:
            half = x.shape[0] // 2
            x, y = x[part * half:(part + 1) * half], y[part * half:(part + 1) * half]
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


def main():
    ct.distributed.init(timeout=60)
    rank, world = ct.distributed.rank(), ct.distributed.world_size()
    if world != 2:
        sys.exit(f"run me under mpirun -np 2 (world size {world})")
    device = ct.default_device()  # cuda:0 when there is one (the fake GPU in the suite)
    ct.manual_seed(7)
    batches = [(ct.randn(16, 12, device=device),
                ct.asarray([(i * 7 + s) % 4 for i in range(16)], device=device))
               for s in range(6)]
    model, opt = make(device)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
    train(ddp, opt, batches, part=rank)
    stats = ddp.ddp_stats()
    assert stats["steps"] == len(batches) and stats["buckets"] >= 3, stats
    mine = {k: v.cpu().numpy().copy() for k, v in model.state_dict().items()}
    # Every rank ends with the same model ...
    for name, value in mine.items():
        gathered = ct.distributed.all_gather(ct.asarray(value, device="cpu")).numpy()
        np.testing.assert_array_equal(gathered[0], gathered[1], err_msg=name)
    # ... the one a single process trains on the whole batches (the sums' order differs).
    alone, alone_opt = make(device)
    train(alone, alone_opt, batches)
    worst = 0.0
    for name, value in alone.state_dict().items():
        value = value.cpu().numpy()
        np.testing.assert_allclose(mine[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
        worst = max(worst, float(np.abs(mine[name] - value).max()))
    # An eval forward disarms: a backward after it is an ordinary one, with no collective.
    ddp.eval()
    F.cross_entropy(ddp(batches[0][0]), batches[0][1]).backward()
    assert ddp.ddp_stats()["steps"] == len(batches)
    ct.distributed.barrier()
    if rank == 0:
        print(f"ddp: {len(batches)} steps x {world} ranks on {device}, {stats['buckets']} "
              f"buckets a step, same as one rank within {worst:.2e}")


if __name__ == "__main__":
    main()
