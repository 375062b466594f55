"""``tt.applications``: the architectures of TF 2.4.4's ``tf.keras.applications``.

Built from tnp_train layers with TF's layer names, order and parameter counts. ``weights=None``
initializes at random; ``weights="/path/to/file.h5"`` loads a Keras HDF5 weights file (h5py,
the extra ``tnp[h5]``); ``weights="imagenet"`` raises ValueError asking for such a local path,
as nothing is downloaded here. See docs/applications.md.
"""
from . import (densenet, efficientnet, imagenet_utils, inception_resnet_v2, inception_v3,
               mobilenet, mobilenet_v2, mobilenet_v3, nasnet, resnet, resnet50, resnet_v2,
               vgg16, vgg19, xception)
from .densenet import DenseNet121, DenseNet169, DenseNet201
from .efficientnet import (EfficientNetB0, EfficientNetB1, EfficientNetB2, EfficientNetB3,
                           EfficientNetB4, EfficientNetB5, EfficientNetB6, EfficientNetB7)
from .inception_resnet_v2 import InceptionResNetV2
from .inception_v3 import InceptionV3
from .mobilenet import MobileNet
from .mobilenet_v2 import MobileNetV2
from .mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from .nasnet import NASNetLarge, NASNetMobile
from .resnet import ResNet50, ResNet101, ResNet152
from .resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from .vgg16 import VGG16
from .vgg19 import VGG19
from .xception import Xception

__all__ = ["DenseNet121", "DenseNet169", "DenseNet201", "EfficientNetB0", "EfficientNetB1",
           "EfficientNetB2", "EfficientNetB3", "EfficientNetB4", "EfficientNetB5",
           "EfficientNetB6", "EfficientNetB7", "InceptionResNetV2", "InceptionV3", "MobileNet",
           "MobileNetV2", "MobileNetV3Large", "MobileNetV3Small", "NASNetLarge", "NASNetMobile",
           "ResNet101", "ResNet101V2", "ResNet152", "ResNet152V2", "ResNet50", "ResNet50V2",
           "VGG16", "VGG19", "Xception",
           "densenet", "efficientnet", "imagenet_utils", "inception_resnet_v2", "inception_v3",
           "mobilenet", "mobilenet_v2", "mobilenet_v3", "nasnet", "resnet", "resnet50",
           "resnet_v2", "vgg16", "vgg19", "xception"]
