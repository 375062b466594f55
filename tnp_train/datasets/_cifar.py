"""CIFAR's python batches (``cifar.load_batch`` of TF 2.4), unpickled safely."""
from __future__ import annotations

from ._files import safe_pickle_load

__all__ = ["load_batch"]


def load_batch(fpath, label_key="labels"):
    """``(data, labels)`` of one batch file: data uint8 (N, 3, 32, 32), labels a list."""
    with open(fpath, "rb") as f:
        d = safe_pickle_load(f, encoding="bytes")
    # the files were written by Python 2: keys are bytes
    d = {(k.decode("utf8") if isinstance(k, bytes) else k): v for k, v in d.items()}
    data = d["data"]
    labels = d[label_key]
    return data.reshape(data.shape[0], 3, 32, 32), labels
