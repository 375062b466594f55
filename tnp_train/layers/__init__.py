"""Keras-style layers (``tt.layers``)."""
from .base import Layer, InputSpec
from .core import (Activation, ActivityRegularization, Dense, Dropout, Flatten, Input,
                   InputLayer, Lambda, Masking, Permute, RepeatVector, Reshape, SpatialDropout1D,
                   SpatialDropout2D, SpatialDropout3D, TFOpLambda, TnpOpLambda)
from .merge import (Add, Average, Concatenate, Dot, Maximum, Minimum, Multiply, Subtract, add,
                    average, concatenate, dot, maximum, minimum, multiply, subtract)
from .serialization import deserialize, serialize
from .recurrent import (GRU, GRUCell, LSTM, LSTMCell, RNN, AbstractRNNCell, Bidirectional,
                        SimpleRNN, SimpleRNNCell, StackedRNNCells)
from .attention import AdditiveAttention, Attention, MultiHeadAttention
from .local import LocallyConnected1D, LocallyConnected2D
from .convolutional_recurrent import ConvLSTM2D
from .separable_conv1d import SeparableConv1D, SeparableConvolution1D
from .normalization import BatchNormalization, LayerNormalization
from .embedding import Embedding
from .convolutional import *  # noqa: F401,F403
from .convolutional import __all__ as _conv_all
from .pooling import *  # noqa: F401,F403
from .pooling import __all__ as _pool_all
from .advanced_activations import ELU, LeakyReLU, PReLU, ReLU, Softmax, ThresholdedReLU
from .reshaping import (Cropping1D, Cropping2D, Cropping3D, UpSampling1D, UpSampling2D,
                        UpSampling3D, ZeroPadding1D, ZeroPadding2D, ZeroPadding3D)
from .noise import AlphaDropout, GaussianDropout, GaussianNoise
from .wrappers import TimeDistributed, Wrapper
from . import experimental
# TF 2.6+ (and tf_keras 2.x) locations of TF 2.4's experimental layers (tf_keras's defaults)
from .preprocessing import (CategoryEncoding, CenterCrop, Discretization, Hashing, IntegerLookup,
                            Normalization, RandomContrast, RandomCrop, RandomFlip, RandomHeight,
                            RandomRotation, RandomTranslation, RandomWidth, RandomZoom,
                            Rescaling, Resizing, StringLookup, TextVectorization)
from .einsum_dense import EinsumDense

# the names above that TF 2.4 has only under ``layers.experimental``
LATER_LOCATIONS = ("CategoryEncoding", "CenterCrop", "Discretization", "Hashing",
                   "IntegerLookup", "Normalization", "RandomContrast", "RandomCrop", "RandomFlip",
                   "RandomHeight", "RandomRotation", "RandomTranslation", "RandomWidth",
                   "RandomZoom", "Rescaling", "Resizing", "StringLookup", "TextVectorization",
                   "EinsumDense")

__all__ = ["Layer", "InputSpec", "Input", "InputLayer", "Dense", "Activation", "Dropout",
           "Flatten", "Reshape", "Permute", "RepeatVector", "Lambda", "Masking", "TFOpLambda", "TnpOpLambda",
           "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "Dot",
           "add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate", "dot",
           "serialize", "deserialize", "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN", "SimpleRNN",
           "LSTM", "GRU", "Bidirectional", "MultiHeadAttention", "Attention",
           "AdditiveAttention", "LocallyConnected1D", "LocallyConnected2D",
           "ConvLSTM2D", "AbstractRNNCell", "StackedRNNCells", "SeparableConv1D",
           "SeparableConvolution1D",
           "BatchNormalization", "LayerNormalization", "Embedding", "experimental",
           "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization",
           "LeakyReLU", "ReLU", "PReLU", "ELU", "Softmax", "ThresholdedReLU",
           "UpSampling1D", "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D",
           "ZeroPadding3D", "Cropping1D", "Cropping2D", "Cropping3D",
           "GaussianNoise", "GaussianDropout", "AlphaDropout", "Wrapper", "TimeDistributed"]
__all__ += _conv_all + _pool_all + list(LATER_LOCATIONS)
