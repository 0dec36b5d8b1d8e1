"""ct.utils.data: torch.utils.data's names, so that `from ctensor.utils.data import DataLoader,
TensorDataset` works as `from torch.utils.data import ...` does. They are ct.data's (the
DataLoader on the C loader: see ctensor.data's docstring)."""

from ctensor.data import (  # noqa: F401
    DataLoader,
    Dataset,
    DistributedSampler,
    Subset,
    TensorDataset,
    random_split,
)

__all__ = ["DataLoader", "Dataset", "DistributedSampler", "Subset", "TensorDataset",
           "random_split"]
