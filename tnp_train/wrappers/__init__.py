"""``tt.wrappers`` (TF 2.4's ``tf.keras.wrappers``): the scikit-learn wrappers."""
from . import scikit_learn

__all__ = ["scikit_learn"]
