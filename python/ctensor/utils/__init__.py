"""ct.utils: torch.utils's names that ctensor has (ct.utils.data)."""

from ctensor.utils import data  # noqa: F401

__all__ = ["data"]
