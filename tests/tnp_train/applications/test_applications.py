"""``tt.applications`` against tf-keras 2.21 (the Keras 2 line; references made by
tests/fixtures/make_applications_fixtures.py in the TF venv and checked in).

Every architecture is built at its smallest input and compared with TF's layer names (in
``model.layers`` order), parameter count and output shape; four run a forward pass with the
same weights as TF; a small model loads TF's HDF5 weights file.
"""
from __future__ import annotations

import json
import os
import zlib

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train import applications as apps

FIX = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
with open(os.path.join(FIX, "applications.json")) as _f:
    REF = json.load(_f)["models"]
FORWARD = np.load(os.path.join(FIX, "applications_forward.npz"))
H5 = os.path.join(FIX, "applications_mobilenet025.h5")


def tf244_layers(name):
    """TF 2.4.4's layer names, from tf-keras 2.21's where the two differ (read in the 2.4.4
    wheel's tensorflow/python/keras/applications/): InceptionResNetV2's scaled residuals are
    Lambda layers named after their block (``block35_1``...), auto-named
    ``custom_scale_layer_N`` layers of a new class in 2.21; MobileNet closes with
    GlobalAveragePooling2D + ``Reshape(name="reshape_1")`` where 2.21 pools with keepdims."""
    ref = list(REF[name]["layers"])
    if name == "InceptionResNetV2":
        blocks = ([f"block35_{i}" for i in range(1, 11)] + [f"block17_{i}" for i in range(1, 21)]
                  + [f"block8_{i}" for i in range(1, 11)])

        def index(n):
            return 0 if n == "custom_scale_layer" else int(n.rsplit("_", 1)[1])
        ref = [blocks[index(n)] if n.startswith("custom_scale_layer") else n for n in ref]
    if name == "MobileNet":
        ref.insert(ref.index("global_average_pooling2d") + 1, "reshape_1")
    return ref


# at their smallest input these take the longest to build (1-8 s each): CI builds the other
# 22; the tests marked `all_sizes` (run with TNP_APPLICATIONS_ALL=1) build these, and every
# architecture at its default size and without the top
SLOW = {"EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "NASNetLarge", "ResNet152V2",
        "DenseNet201"}
ALL = sorted(REF)
all_sizes = pytest.mark.skipif(not os.environ.get("TNP_APPLICATIONS_ALL"),
                               reason="builds the largest models: set TNP_APPLICATIONS_ALL=1")


def build(name, size=None, **kw):
    tt.backend.clear_session()     # auto-named layers numbered from zero, as the fixture's
    size = size or REF[name]["min_size"]
    return getattr(apps, name)(weights=None, input_shape=(size, size, 3), **kw)


def check_against_tf(name):
    ref = REF[name]
    m = build(name)
    names = [l.name for l in m.layers]
    assert names == tf244_layers(name)
    assert m.count_params() == ref["count_params"]
    assert list(m.output_shape) == ref["output_shape"]
    assert m.name and names[0].startswith("input")


@pytest.mark.parametrize("name", [n for n in ALL if n not in SLOW])
def test_layers_params_and_output_equal_tf(name):
    check_against_tf(name)


@pytest.mark.slow
@all_sizes
@pytest.mark.parametrize("name", sorted(SLOW))
def test_layers_params_and_output_equal_tf_largest(name):
    check_against_tf(name)


@pytest.mark.parametrize("name", ["ResNet50", "VGG16", "MobileNetV3Small", "EfficientNetB0",
                                  "DenseNet121", "NASNetMobile", "Xception"])
def test_without_top_pooled(name):
    m = build(name, include_top=False, pooling="avg")
    assert m.count_params() == REF[name]["notop_avg_count_params"]
    assert list(m.output_shape) == REF[name]["notop_avg_output_shape"]


@pytest.mark.slow
@all_sizes
@pytest.mark.parametrize("name", ALL)
def test_default_size_params_equal_tf(name):
    m = build(name, REF[name]["default_size"])
    assert m.count_params() == REF[name]["default_count_params"]


@pytest.mark.slow
@all_sizes
@pytest.mark.parametrize("name", ALL)
def test_without_top_pooled_all(name):
    m = build(name, include_top=False, pooling="avg")
    assert m.count_params() == REF[name]["notop_avg_count_params"]
    assert list(m.output_shape) == REF[name]["notop_avg_output_shape"]


# ------------------------------------------------------------------ forward passes
def seeded_weights(weights):
    """The fixture script's rule (make_applications_fixtures.seeded_weights), repeated."""
    out = []
    for key, shape in weights:
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        short = key.rsplit("/", 1)[-1]
        shape = tuple(shape)
        if short == "count":
            out.append(np.zeros(shape, "int64"))
            continue
        if short in ("moving_variance", "variance", "gamma"):
            v = rng.uniform(0.5, 1.5, shape)
        elif short == "depthwise_kernel":
            v = rng.normal(0, np.sqrt(1.0 / np.prod(shape[:2])), shape)
        elif len(shape) >= 2:
            v = rng.normal(0, np.sqrt(1.0 / np.prod(shape[:-1])), shape)
        else:
            v = rng.normal(0, 0.1, shape)
        out.append(v.astype("float32"))
    return out


def seed(model):
    model.set_weights(seeded_weights([(w.name, w.shape) for w in model.weights]))


@pytest.mark.parametrize("name,kw,module,size", [
    ("ResNet50", dict(classes=10, classifier_activation=None), "resnet50", 32),
    ("MobileNetV3Small", dict(classes=10, classifier_activation=None), None, 32),
    ("EfficientNetB0", dict(classes=10, classifier_activation=None), None, 32),
    ("InceptionV3", dict(include_top=False, pooling="avg"), "inception_v3", 75)])
def test_forward_equals_tf(name, kw, module, size):
    m = build(name, size, **kw)
    seed(m)
    x = FORWARD[f"{name}_x"]
    if module is not None:
        xp = getattr(apps, module).preprocess_input(x.copy())
        np.testing.assert_allclose(xp, FORWARD[f"{name}_x_pre"], rtol=1e-6, atol=1e-4)
    else:
        xp = x
    y = np.asarray(m.predict(xp, verbose=0))
    ref = FORWARD[f"{name}_y"]
    assert y.shape == ref.shape
    scale = np.abs(ref).max()
    assert scale > 1e-2     # weights that keep the signal: the comparison can fail
    np.testing.assert_allclose(y / scale, ref / scale, atol=1e-4)


def test_forward_through_a_functional_input_tensor():
    inp = tt.Input((32, 32, 3))
    x = tt.layers.Activation("linear")(inp)
    tt.backend.clear_session()
    m = apps.ResNet50(weights=None, input_tensor=x, classes=10, classifier_activation=None)
    assert m.inputs[0] is inp          # the source of input_tensor, as TF
    assert m.count_params() == 23608202  # ResNet50(classes=10): 25636712 - 2049 * 990


# ------------------------------------------------------------------ weights files
h5py = pytest.importorskip("h5py")


def test_loads_tf_h5_weights_by_layer_name():
    tt.backend.clear_session()
    m = apps.MobileNet(weights=H5, input_shape=(32, 32, 3), alpha=0.25, include_top=False,
                       pooling="avg")
    y = np.asarray(m.predict(FORWARD["mobilenet025_x_pre"], verbose=0))
    np.testing.assert_allclose(y, FORWARD["mobilenet025_y"], rtol=1e-4, atol=1e-5)
    with h5py.File(H5, "r") as f:   # every stored array landed in the layer of its name
        g = f["conv_dw_1"]
        name = [n.decode() if isinstance(n, bytes) else n for n in g.attrs["weight_names"]][0]
        np.testing.assert_array_equal(m.get_layer("conv_dw_1").get_weights()[0], g[name][()])


def test_h5_of_another_architecture_is_refused():
    tt.backend.clear_session()
    with pytest.raises(ValueError, match="do not match.*conv_preds"):
        apps.MobileNet(weights=H5, input_shape=(32, 32, 3), alpha=0.25)   # with the top


def test_h5_with_other_shapes_is_refused():
    tt.backend.clear_session()
    with pytest.raises(ValueError, match=r"conv1.*\(3, 3, 3, 16\).*\(3, 3, 3, 8\)"):
        apps.MobileNet(weights=H5, input_shape=(32, 32, 3), alpha=0.5, include_top=False,
                       pooling="avg")


def test_imagenet_asks_for_a_local_file():
    with pytest.raises(ValueError, match="cannot be downloaded here.*local weights file"):
        apps.ResNet50(weights="imagenet")


def test_missing_weights_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="should be either `None`.*not an existing file"):
        apps.VGG16(weights=str(tmp_path / "nope.h5"))


# ------------------------------------------------------------------ input checks, as TF
def test_input_size_below_minimum():
    with pytest.raises(ValueError, match=r"at least 32x32.*\(31, 31, 3\)"):
        apps.ResNet50(weights=None, input_shape=(31, 31, 3))
    with pytest.raises(ValueError, match="at least 75x75"):
        apps.InceptionV3(weights=None, input_shape=(74, 74, 3))
    with pytest.raises(ValueError, match="at least 32x32"):
        apps.MobileNetV3Small(weights=None, input_shape=(16, 16, 3))


def test_top_needs_a_static_shape():
    with pytest.raises(ValueError, match="static `input_shape`"):
        apps.ResNet50(weights=None, input_shape=(None, None, 3))


def test_without_top_any_size_and_channels():
    tt.backend.clear_session()
    m = apps.ResNet50(weights=None, include_top=False)
    assert m.input_shape == (None, None, None, 3) and m.output_shape == (None, None, None, 2048)
    y = m.predict(np.zeros((1, 40, 48, 3), "float32"), verbose=0)
    assert y.shape == (1, 2, 2, 2048)
    m = apps.VGG16(weights=None, include_top=False, input_shape=(32, 32, 1), pooling="max")
    assert m.output_shape == (None, 512) and m.layers[-1].name == "global_max_pooling2d"


def test_default_shape_with_top():
    tt.backend.clear_session()
    assert apps.MobileNetV2(weights=None).input_shape == (None, 224, 224, 3)
    assert apps.MobileNetV2(weights=None, input_shape=(96, 96, 3)).name == "mobilenetv2_1.00_96"
    assert apps.NASNetMobile(weights=None).input_shape == (None, 224, 224, 3)


def test_unknown_keyword_is_refused():
    with pytest.raises(TypeError):
        apps.VGG16(weights=None, alpha=2)


# ------------------------------------------------------------------ preprocess / decode
def _reference_preprocess(x, mode, channels_first=False):
    """imagenet_utils.preprocess_input written out (TF 2.4.4's _preprocess_numpy_input)."""
    x = x.astype("float32")
    if channels_first:
        x = np.moveaxis(x, -3, -1)
    if mode == "tf":
        out = x / 127.5 - 1.0
    elif mode == "torch":
        out = (x / 255.0 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]
    else:
        out = x[..., ::-1] - [103.939, 116.779, 123.68]
    out = out.astype("float32")
    return np.moveaxis(out, -1, -3) if channels_first else out


@pytest.mark.parametrize("module,mode", [("resnet50", "caffe"), ("vgg19", "caffe"),
                                         ("xception", "tf"), ("densenet", "torch"),
                                         ("mobilenet_v2", "tf"), ("resnet_v2", "tf")])
def test_family_preprocess_input(module, mode):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (2, 5, 4, 3)).astype("uint8")
    ref = _reference_preprocess(x, mode)
    fn = getattr(apps, module).preprocess_input
    got = fn(x)
    assert got.dtype == np.float32 and x.dtype == np.uint8
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-5)
    t = tnp.asarray(x.astype("float32"))
    got_t = fn(t)       # a tnp array: a new array, the input untouched
    assert isinstance(got_t, tnp.ndarray)
    np.testing.assert_allclose(np.asarray(got_t), ref, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(t), x.astype("float32"))


@pytest.mark.parametrize("mode", ["caffe", "tf", "torch"])
def test_preprocess_channels_first_and_in_place(mode):
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 255, (2, 3, 4, 5)).astype("float32")
    ref = _reference_preprocess(x, mode, channels_first=True)
    got = apps.imagenet_utils.preprocess_input(x.copy(), data_format="channels_first", mode=mode)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-5)
    one = x[0].copy()       # a single image, channels first
    np.testing.assert_allclose(
        apps.imagenet_utils.preprocess_input(one, data_format="channels_first", mode=mode),
        ref[0], rtol=1e-6, atol=1e-5)
    y = x.copy()            # float NumPy input is modified in place, as in TF
    apps.imagenet_utils.preprocess_input(y, mode="tf")
    np.testing.assert_allclose(y, x / 127.5 - 1, rtol=1e-6)


def test_preprocess_bad_arguments():
    with pytest.raises(ValueError, match="mode.*caffe.*Received: mode=bgr"):
        apps.imagenet_utils.preprocess_input(np.zeros((1, 2, 2, 3)), mode="bgr")
    with pytest.raises(ValueError, match="data_format=nhwc"):
        apps.imagenet_utils.preprocess_input(np.zeros((1, 2, 2, 3)), data_format="nhwc")


def test_preprocess_symbolic_in_a_model():
    inp = tt.Input((2, 2, 3))
    out = apps.resnet50.preprocess_input(inp)
    m = tt.Model(inp, out)
    x = np.arange(12, dtype="float32").reshape(1, 2, 2, 3)
    np.testing.assert_allclose(np.asarray(m.predict(x, verbose=0)),
                               _reference_preprocess(x, "caffe"), rtol=1e-6)


def test_passthrough_preprocess():
    x = np.ones((1, 2, 2, 3), "float32") * 7
    assert apps.efficientnet.preprocess_input(x) is x
    assert apps.mobilenet_v3.preprocess_input(x) is x


@pytest.fixture
def class_index(tmp_path):
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    path = tmp_path / "imagenet_class_index.json"
    path.write_text(json.dumps(index))
    return path


def test_decode_predictions(class_index):
    rng = np.random.default_rng(3)
    preds = rng.uniform(size=(2, 1000)).astype("float32")
    got = apps.resnet50.decode_predictions(preds, top=3, class_index_path=class_index)
    for row, p in zip(got, preds):
        best = np.argsort(p)[::-1][:3]
        assert [r[0] for r in row] == [f"n{i:08d}" for i in best]
        assert [r[1] for r in row] == [f"class_{i}" for i in best]
        np.testing.assert_array_equal([r[2] for r in row], p[best])
    got_t = apps.vgg16.decode_predictions(tnp.asarray(preds), class_index_path=class_index)
    assert len(got_t[0]) == 5 and got_t[0][:3] == got[0]


def test_decode_predictions_from_the_keras_cache(class_index, monkeypatch):
    cache = class_index.parent / "home"
    (cache / "models").mkdir(parents=True)
    os.replace(class_index, cache / "models" / "imagenet_class_index.json")
    monkeypatch.setenv("KERAS_HOME", str(cache))
    preds = np.eye(1000, dtype="float32")[[7]]
    assert apps.imagenet_utils.decode_predictions(preds, top=1) == [[("n00000007", "class_7", 1.0)]]


def test_decode_predictions_without_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="class_index_path=.*imagenet_class_index.json"):
        apps.imagenet_utils.decode_predictions(np.zeros((1, 1000)))


def test_decode_predictions_bad_shape(class_index):
    with pytest.raises(ValueError, match=r"\(samples, 1000\).*\(2, 10\)"):
        apps.imagenet_utils.decode_predictions(np.zeros((2, 10)), class_index_path=class_index)


# ------------------------------------------------------------------ the namespace, as TF 2.4.4
TF244_MODULES = {
    "densenet": ["DenseNet121", "DenseNet169", "DenseNet201", "decode_predictions",
                 "preprocess_input"],
    "efficientnet": [f"EfficientNetB{i}" for i in range(8)] + ["decode_predictions",
                                                               "preprocess_input"],
    "imagenet_utils": ["decode_predictions", "preprocess_input"],
    "inception_resnet_v2": ["InceptionResNetV2", "decode_predictions", "preprocess_input"],
    "inception_v3": ["InceptionV3", "decode_predictions", "preprocess_input"],
    "mobilenet": ["MobileNet", "decode_predictions", "preprocess_input"],
    "mobilenet_v2": ["MobileNetV2", "decode_predictions", "preprocess_input"],
    "mobilenet_v3": ["decode_predictions", "preprocess_input"],
    "nasnet": ["NASNetLarge", "NASNetMobile", "decode_predictions", "preprocess_input"],
    "resnet": ["ResNet101", "ResNet152", "ResNet50", "decode_predictions", "preprocess_input"],
    "resnet50": ["ResNet50", "decode_predictions", "preprocess_input"],
    "resnet_v2": ["ResNet101V2", "ResNet152V2", "ResNet50V2", "decode_predictions",
                  "preprocess_input"],
    "vgg16": ["VGG16", "decode_predictions", "preprocess_input"],
    "vgg19": ["VGG19", "decode_predictions", "preprocess_input"],
    "xception": ["Xception", "decode_predictions", "preprocess_input"],
}


def test_namespace_as_tf():
    assert sorted(n for n in apps.__all__ if n[0].isupper()) == ALL
    for module, names in TF244_MODULES.items():
        mod = getattr(tt.applications, module)
        for n in names:
            assert callable(getattr(mod, n)), f"tt.applications.{module}.{n}"
    assert tt.applications.resnet.ResNet101 is apps.ResNet101


def test_every_family_preprocess_input_and_decode_predictions(class_index):
    """Each family's own preprocess_input is its TF 2.4 mode (written out above) and its
    decode_predictions reads the same class index as imagenet_utils's."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (1, 3, 2, 3)).astype("float32")
    modes = [
        (apps.densenet.preprocess_input, "torch"),
        (apps.inception_resnet_v2.preprocess_input, "tf"),
        (apps.inception_v3.preprocess_input, "tf"),
        (apps.mobilenet.preprocess_input, "tf"),
        (apps.mobilenet_v2.preprocess_input, "tf"),
        (apps.nasnet.preprocess_input, "tf"),
        (apps.resnet.preprocess_input, "caffe"),
        (apps.resnet_v2.preprocess_input, "tf"),
        (apps.vgg16.preprocess_input, "caffe"),
        (apps.vgg19.preprocess_input, "caffe"),
        (apps.xception.preprocess_input, "tf"),
    ]
    for fn, mode in modes:
        np.testing.assert_allclose(fn(x.copy()), _reference_preprocess(x, mode), rtol=1e-6,
                                   atol=1e-5, err_msg=fn.__module__)
    preds = rng.uniform(size=(2, 1000)).astype("float32")
    want = apps.imagenet_utils.decode_predictions(preds, top=4, class_index_path=class_index)
    decoders = [apps.densenet.decode_predictions, apps.efficientnet.decode_predictions,
                apps.inception_resnet_v2.decode_predictions,
                apps.inception_v3.decode_predictions, apps.mobilenet.decode_predictions,
                apps.mobilenet_v2.decode_predictions, apps.mobilenet_v3.decode_predictions,
                apps.nasnet.decode_predictions, apps.resnet_v2.decode_predictions,
                apps.vgg19.decode_predictions, apps.xception.decode_predictions]
    for fn in decoders:
        assert fn(preds, top=4, class_index_path=class_index) == want, fn.__module__
