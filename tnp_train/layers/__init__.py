"""Keras-style layers (``tt.layers``)."""
from .base import Layer, InputSpec
from .core import (Activation, Dense, Dropout, Flatten, Input, InputLayer, Lambda, Masking,
                   Permute, RepeatVector, Reshape, TFOpLambda)
from .merge import (Add, Average, Concatenate, Dot, Maximum, Minimum, Multiply, Subtract, add,
                    average, concatenate, dot, maximum, minimum, multiply, subtract)
from .serialization import deserialize, serialize
from .recurrent import (GRU, GRUCell, LSTM, LSTMCell, RNN, Bidirectional, SimpleRNN,
                        SimpleRNNCell)
from .attention import Attention, MultiHeadAttention
from .normalization import BatchNormalization, LayerNormalization
from .embedding import Embedding
from .convolutional import *  # noqa: F401,F403
from .convolutional import __all__ as _conv_all
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pool_all
from . import experimental

__all__ = ["Layer", "InputSpec", "Input", "InputLayer", "Dense", "Activation", "Dropout",
           "Flatten", "Reshape", "Permute", "RepeatVector", "Lambda", "Masking", "TFOpLambda",
           "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot",
           "serialize", "deserialize", "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "SimpleRNN",
           "LSTM", "GRU", "Bidirectional", "MultiHeadAttention", "Attention",
           "BatchNormalization", "LayerNormalization", "Embedding", "experimental"]
__all__ += _conv_all + _pool_all
