"""``tt.data.experimental`` (``tf.data.experimental``): the names TF 2.4 kept there."""
from ._rows import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from .dataset import Dataset
from ._options import (
    AutoShardPolicy, DistributeOptions, MapVectorizationOptions, OptimizationOptions,
    ThreadingOptions,
)
from ._csv import CsvDataset, make_csv_dataset
from ._experimental import (
    Reducer, assert_cardinality, bucket_by_sequence_length, choose_from_datasets,
    enumerate_dataset, get_single_element, get_structure, group_by_reducer, group_by_window,
    ignore_errors, map_and_batch, parallel_interleave, sample_from_datasets, scan, shuffle_and_repeat,
    take_while, unbatch, unique,
)
from ._devices import copy_to_device, prefetch_to_device
from ._optional import Optional, get_next_as_optional
from ._parsing import dense_to_sparse_batch, make_batched_features_dataset, parse_example_dataset
from ._random import Counter, RandomDataset, rejection_resample
from ._readers import SqlDataset
from ._saving import TFRecordWriter, load, save, snapshot

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "DistributeOptions", "ThreadingOptions", "Reducer",
           "assert_cardinality", "bucket_by_sequence_length", "choose_from_datasets",
           "enumerate_dataset", "get_single_element", "get_structure", "group_by_reducer",
           "group_by_window", "ignore_errors", "map_and_batch", "parallel_interleave", "sample_from_datasets",
           "scan", "shuffle_and_repeat", "take_while", "unbatch", "unique", "CsvDataset",
           "make_csv_dataset", "MapVectorizationOptions", "OptimizationOptions", "copy_to_device",
           "prefetch_to_device", "Optional", "get_next_as_optional", "dense_to_sparse_batch",
           "make_batched_features_dataset", "parse_example_dataset", "Counter", "RandomDataset",
           "rejection_resample", "SqlDataset", "TFRecordWriter", "load", "save", "snapshot"]


def cardinality(dataset):
    """``dataset.cardinality()`` (``tf.data.experimental.cardinality``)."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"cardinality: expected a Dataset, got {type(dataset).__name__}")
    return dataset.cardinality()
