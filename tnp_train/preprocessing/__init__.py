"""``tt.preprocessing``: TF 2.4's ``tf.keras.preprocessing`` (``sequence``, ``text``, ``image``
and the ``*_dataset_from_*`` functions). See docs/keras-preprocessing.md."""
from . import image, sequence, text
from ._datasets import (image_dataset_from_directory, text_dataset_from_directory,
                        timeseries_dataset_from_array)

__all__ = ["image", "sequence", "text", "image_dataset_from_directory",
           "text_dataset_from_directory", "timeseries_dataset_from_array"]
