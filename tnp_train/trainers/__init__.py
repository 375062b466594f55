"""The training loop behind ``Model.compile/fit/evaluate/predict``."""
from .trainer import Trainer
from .data_adapter import unpack_x_y_sample_weight, pack_x_y_sample_weight

__all__ = ["Trainer", "unpack_x_y_sample_weight", "pack_x_y_sample_weight"]
