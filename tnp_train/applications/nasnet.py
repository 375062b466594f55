"""NASNetLarge and NASNetMobile (``tf.keras.applications.nasnet``, TF 2.4.4): Zoph et al. 2018.

As in TF, the input shape must be static (``require_flatten`` is always on: 331 or 224 when
not given) and the model is built channels-last.
"""
from __future__ import annotations

from .. import layers
from . import imagenet_utils
from ._common import correct_pad, finish, pooled_top, setup

__all__ = ["NASNetLarge", "NASNetMobile", "preprocess_input", "decode_predictions"]

_CH = -1   # channels-last only, as TF builds NASNet


def _bn(name):
    return layers.BatchNormalization(axis=_CH, momentum=0.9997, epsilon=1e-3, name=name)


def _conv1x1(filters, name, strides=(1, 1)):
    return layers.Conv2D(filters, (1, 1), strides=strides, padding="same", use_bias=False,
                         name=name, kernel_initializer="he_normal")


def NASNet(input_shape=None, penultimate_filters=4032, num_blocks=6, stem_block_filters=96,  # noqa: N802
           skip_reduction=True, filter_multiplier=2, include_top=True, weights=None,
           input_tensor=None, pooling=None, classes=1000, default_size=None,
           classifier_activation="softmax"):
    """TF's ``nasnet.NASNet``: a NASNet-A network of ``num_blocks`` normal cells per stage."""
    if default_size is None:
        default_size = 331
    # NASNet needs a static shape even without the top: require_flatten=True, as TF passes
    img_input, _ = setup("NASNet", weights, True, classes, input_tensor, input_shape,
                         default_size, 32)
    if penultimate_filters % (24 * (filter_multiplier ** 2)) != 0:
        raise ValueError(f"For NASNet-A models, the `penultimate_filters` must be a multiple of "
                         f"24 * (`filter_multiplier` ** 2). Current value: {penultimate_filters}")
    filters = penultimate_filters // 24
    x = layers.Conv2D(stem_block_filters, (3, 3), strides=(2, 2), padding="valid",
                      use_bias=False, name="stem_conv1", kernel_initializer="he_normal")(img_input)
    x = _bn("stem_bn1")(x)
    p = None
    x, p = _reduction_a_cell(x, p, filters // (filter_multiplier ** 2), block_id="stem_1")
    x, p = _reduction_a_cell(x, p, filters // filter_multiplier, block_id="stem_2")
    for i in range(num_blocks):
        x, p = _normal_a_cell(x, p, filters, block_id=f"{i}")
    x, p0 = _reduction_a_cell(x, p, filters * filter_multiplier, block_id=f"reduce_{num_blocks}")
    p = p0 if not skip_reduction else p
    for i in range(num_blocks):
        x, p = _normal_a_cell(x, p, filters * filter_multiplier, block_id=f"{num_blocks + i + 1}")
    x, p0 = _reduction_a_cell(x, p, filters * filter_multiplier ** 2,
                              block_id=f"reduce_{2 * num_blocks}")
    p = p0 if not skip_reduction else p
    for i in range(num_blocks):
        x, p = _normal_a_cell(x, p, filters * filter_multiplier ** 2,
                              block_id=f"{2 * num_blocks + i + 1}")
    x = layers.Activation("relu")(x)
    x = pooled_top(x, include_top, pooling, classes, classifier_activation, weights,
                   named_pools=False, top_pool_name=None)
    return finish(img_input, input_tensor, x, "NASNet", weights)


def NASNetMobile(input_shape=None, include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                 pooling=None, classes=1000):
    """``tf.keras.applications.NASNetMobile`` (224x224); ``weights``: None or a local path."""
    return NASNet(penultimate_filters=1056, num_blocks=4, stem_block_filters=32,
                  skip_reduction=False, filter_multiplier=2, default_size=224, **locals())


def NASNetLarge(input_shape=None, include_top=True, weights="imagenet", input_tensor=None,  # noqa: N802
                pooling=None, classes=1000):
    """``tf.keras.applications.NASNetLarge`` (331x331); ``weights``: None or a local path."""
    return NASNet(penultimate_filters=4032, num_blocks=6, stem_block_filters=96,
                  skip_reduction=True, filter_multiplier=2, default_size=331, **locals())


def _separable_conv_block(ip, filters, kernel_size=(3, 3), strides=(1, 1), block_id=None):
    """Two [ReLU, SeparableConv2D, BN]; the first strided (padded as TF) when asked."""
    x = layers.Activation("relu")(ip)
    if strides == (2, 2):
        x = layers.ZeroPadding2D(padding=correct_pad(x, kernel_size),
                                 name=f"separable_conv_1_pad_{block_id}")(x)
        conv_pad = "valid"
    else:
        conv_pad = "same"
    x = layers.SeparableConv2D(filters, kernel_size, strides=strides,
                               name=f"separable_conv_1_{block_id}", padding=conv_pad,
                               use_bias=False, kernel_initializer="he_normal")(x)
    x = _bn(f"separable_conv_1_bn_{block_id}")(x)
    x = layers.Activation("relu")(x)
    x = layers.SeparableConv2D(filters, kernel_size, name=f"separable_conv_2_{block_id}",
                               padding="same", use_bias=False, kernel_initializer="he_normal")(x)
    return _bn(f"separable_conv_2_bn_{block_id}")(x)


def _adjust_block(p, ip, filters, block_id=None):
    """Bring the previous path ``p`` to the spatial size and width of ``ip``."""
    img_dim = -2
    ip_shape = tuple(ip.shape)
    if p is None:
        return ip
    p_shape = tuple(p.shape)
    if p_shape[img_dim] != ip_shape[img_dim]:
        p = layers.Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
        p1 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                     name=f"adjust_avg_pool_1_{block_id}")(p)
        p1 = _conv1x1(filters // 2, f"adjust_conv_1_{block_id}")(p1)
        p2 = layers.ZeroPadding2D(padding=((0, 1), (0, 1)))(p)
        p2 = layers.Cropping2D(cropping=((1, 0), (1, 0)))(p2)
        p2 = layers.AveragePooling2D((1, 1), strides=(2, 2), padding="valid",
                                     name=f"adjust_avg_pool_2_{block_id}")(p2)
        p2 = _conv1x1(filters // 2, f"adjust_conv_2_{block_id}")(p2)
        p = layers.concatenate([p1, p2], axis=_CH)
        p = _bn(f"adjust_bn_{block_id}")(p)
    elif p_shape[_CH] != filters:
        p = layers.Activation("relu")(p)
        p = _conv1x1(filters, f"adjust_conv_projection_{block_id}")(p)
        p = _bn(f"adjust_bn_{block_id}")(p)
    return p


def _normal_a_cell(ip, p, filters, block_id=None):
    """NASNet-A's normal cell (Fig. 4 of the paper)."""
    p = _adjust_block(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = _conv1x1(filters, f"normal_conv_1_{block_id}")(h)
    h = _bn(f"normal_bn_1_{block_id}")(h)
    x1_1 = _separable_conv_block(h, filters, kernel_size=(5, 5),
                                 block_id=f"normal_left1_{block_id}")
    x1_2 = _separable_conv_block(p, filters, block_id=f"normal_right1_{block_id}")
    x1 = layers.add([x1_1, x1_2], name=f"normal_add_1_{block_id}")
    x2_1 = _separable_conv_block(p, filters, (5, 5), block_id=f"normal_left2_{block_id}")
    x2_2 = _separable_conv_block(p, filters, (3, 3), block_id=f"normal_right2_{block_id}")
    x2 = layers.add([x2_1, x2_2], name=f"normal_add_2_{block_id}")
    x3 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                 name=f"normal_left3_{block_id}")(h)
    x3 = layers.add([x3, p], name=f"normal_add_3_{block_id}")
    x4_1 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                   name=f"normal_left4_{block_id}")(p)
    x4_2 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                   name=f"normal_right4_{block_id}")(p)
    x4 = layers.add([x4_1, x4_2], name=f"normal_add_4_{block_id}")
    x5 = _separable_conv_block(h, filters, block_id=f"normal_left5_{block_id}")
    x5 = layers.add([x5, h], name=f"normal_add_5_{block_id}")
    x = layers.concatenate([p, x1, x2, x3, x4, x5], axis=_CH, name=f"normal_concat_{block_id}")
    return x, ip


def _reduction_a_cell(ip, p, filters, block_id=None):
    """NASNet-A's reduction cell (Fig. 4 of the paper)."""
    p = _adjust_block(p, ip, filters, block_id)
    h = layers.Activation("relu")(ip)
    h = _conv1x1(filters, f"reduction_conv_1_{block_id}")(h)
    h = _bn(f"reduction_bn_1_{block_id}")(h)
    h3 = layers.ZeroPadding2D(padding=correct_pad(h, 3), name=f"reduction_pad_1_{block_id}")(h)
    x1_1 = _separable_conv_block(h, filters, (5, 5), strides=(2, 2),
                                 block_id=f"reduction_left1_{block_id}")
    x1_2 = _separable_conv_block(p, filters, (7, 7), strides=(2, 2),
                                 block_id=f"reduction_right1_{block_id}")
    x1 = layers.add([x1_1, x1_2], name=f"reduction_add_1_{block_id}")
    x2_1 = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid",
                               name=f"reduction_left2_{block_id}")(h3)
    x2_2 = _separable_conv_block(p, filters, (7, 7), strides=(2, 2),
                                 block_id=f"reduction_right2_{block_id}")
    x2 = layers.add([x2_1, x2_2], name=f"reduction_add_2_{block_id}")
    x3_1 = layers.AveragePooling2D((3, 3), strides=(2, 2), padding="valid",
                                   name=f"reduction_left3_{block_id}")(h3)
    x3_2 = _separable_conv_block(p, filters, (5, 5), strides=(2, 2),
                                 block_id=f"reduction_right3_{block_id}")
    x3 = layers.add([x3_1, x3_2], name=f"reduction_add3_{block_id}")
    x4 = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same",
                                 name=f"reduction_left4_{block_id}")(x1)
    x4 = layers.add([x2, x4])
    x5_1 = _separable_conv_block(x1, filters, (3, 3), block_id=f"reduction_left4_{block_id}")
    x5_2 = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="valid",
                               name=f"reduction_right5_{block_id}")(h3)
    x5 = layers.add([x5_1, x5_2], name=f"reduction_add4_{block_id}")
    x = layers.concatenate([x2, x3, x4, x5], axis=_CH, name=f"reduction_concat_{block_id}")
    return x, ip


def preprocess_input(x, data_format=None):
    """``nasnet.preprocess_input``: 'tf' mode (scaled to [-1, 1])."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5, class_index_path=None):
    """``nasnet.decode_predictions`` (``class_index_path``: see imagenet_utils)."""
    return imagenet_utils.decode_predictions(preds, top=top, class_index_path=class_index_path)
