"""AdamW (Keras 3's ``keras.optimizers.AdamW``; TF 2.4 has it only in TF Addons)."""
from __future__ import annotations

from .adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Mirrors ``keras.optimizers.AdamW(learning_rate=0.001, weight_decay=0.004, beta_1=0.9,
    beta_2=0.999, epsilon=1e-07, amsgrad=False, name="AdamW", **kwargs)``: Adam with the
    decoupled weight decay ``w -= lr * weight_decay * w`` before each update."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, name="AdamW", **kwargs):
        if weight_decay is None:
            raise ValueError("AdamW: `weight_decay` must be a float, got None")
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad, name=name, weight_decay=weight_decay,
                         **kwargs)
