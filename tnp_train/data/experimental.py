"""``tt.data.experimental`` (``tf.data.experimental``): the names TF 2.4 kept there."""
from ._rows import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from .dataset import Dataset
from ._options import AutoShardPolicy, DistributeOptions, ThreadingOptions
from ._csv import CsvDataset, make_csv_dataset
from ._experimental import (
    Reducer, assert_cardinality, bucket_by_sequence_length, choose_from_datasets,
    enumerate_dataset, get_single_element, get_structure, group_by_reducer, group_by_window,
    ignore_errors, map_and_batch, parallel_interleave, sample_from_datasets, scan, shuffle_and_repeat,
    take_while, unbatch, unique,
)

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "cardinality",
           "AutoShardPolicy", "DistributeOptions", "ThreadingOptions", "Reducer",
           "assert_cardinality", "bucket_by_sequence_length", "choose_from_datasets",
           "enumerate_dataset", "get_single_element", "get_structure", "group_by_reducer",
           "group_by_window", "ignore_errors", "map_and_batch", "parallel_interleave", "sample_from_datasets",
           "scan", "shuffle_and_repeat", "take_while", "unbatch", "unique", "CsvDataset",
           "make_csv_dataset"]


def cardinality(dataset):
    """``dataset.cardinality()`` (``tf.data.experimental.cardinality``)."""
    if not isinstance(dataset, Dataset):
        raise TypeError(f"cardinality: expected a Dataset, got {type(dataset).__name__}")
    return dataset.cardinality()
