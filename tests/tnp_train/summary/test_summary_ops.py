"""tt.summary's functions, written through tt.summary and read back with tensorboard's readers:
tags, steps, values, the plugins' layouts; TF's semantics of the default writer, the default
step and record_if."""
import io
import threading

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import tnp
import tnp_train as tt
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.plugins.histogram.summary_v2 import histogram_pb
from tensorboard.util import tensor_util
from tnp_train.summary import _writer

from summary_readback import event_files, read_file, summaries, values

summary = tt.summary


@pytest.fixture(autouse=True)
def clean_state():
    """Each test leaves no default writer, step, condition or scope in this thread."""
    yield
    _writer._state.__init__()


# ------------------------------------------------------------------ no writer, steps
def test_without_a_default_writer_every_summary_is_a_noop_returning_false(tmp_path):
    assert summary.scalar("a", 1.0, step=0) is False
    assert summary.scalar("a", 1.0) is False          # no step needed either, as TF
    assert summary.histogram("h", [1, 2], step=0) is False
    assert summary.image("i", np.zeros((1, 2, 2, 1)), step=0) is False
    assert summary.text("t", "x", step=0) is False
    assert summary.write("w", np.ones(2), step=0) is False
    assert summary.should_record_summaries() is False
    summary.flush()                                   # nothing to flush: no error
    with summary.create_noop_writer().as_default():
        assert summary.scalar("a", 1.0, step=0) is False


def test_a_missing_step_is_a_value_error_as_tf(tmp_path):
    w = summary.create_file_writer(tmp_path)
    with w.as_default():
        with pytest.raises(ValueError, match="No step set via 'step' argument"):
            summary.scalar("a", 1.0)
        with summary.record_if(False):     # TF checks the step before the condition
            with pytest.raises(ValueError, match="No step set"):
                summary.scalar("a", 1.0)
    w.close()


def test_default_steps_set_step_and_as_default_step(tmp_path):
    w = summary.create_file_writer(tmp_path)
    opt = tt.optimizers.SGD(0.1)
    with w.as_default():
        summary.experimental.set_step(3)
        assert summary.experimental.get_step() == 3
        assert summary.scalar("s", 1.0)
        with w.as_default(step=7):
            assert summary.experimental.get_step() == 7
            assert summary.scalar("s", 2.0)
        assert summary.experimental.get_step() == 3       # restored
        summary.experimental.set_step(opt.iterations)     # a Variable: read at each write
        opt.iterations.assign(11)
        assert summary.scalar("s", 3.0)
        assert summary.scalar("s", 4.0, step=tnp.asarray(12))
        assert summary.scalar("s", 5.0, step=np.int64(13))
        with pytest.raises(TypeError, match="integer"):
            summary.scalar("s", 1.0, step=1.5)
    w.close()
    assert values(tmp_path, "s") == [(3, 1.0), (7, 2.0), (11, 3.0), (12, 4.0), (13, 5.0)]


def test_set_as_default_and_the_state_is_per_thread(tmp_path):
    w = summary.create_file_writer(tmp_path)
    w.set_as_default(step=1)
    try:
        seen = {}

        def other():
            seen["other"] = summary.scalar("t", 1.0, step=0)   # no default in this thread
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == {"other": False}
        assert summary.scalar("t", 2.0) is True
    finally:
        _writer._state.writer = None
    w.close()
    assert values(tmp_path, "t") == [(1, 2.0)]


def test_record_if_bool_array_and_callable(tmp_path):
    w = summary.create_file_writer(tmp_path)
    calls = []

    def lazy():
        calls.append(1)
        return 5.0
    with w.as_default():
        with summary.record_if(False):
            assert summary.should_record_summaries() is False
            assert summary.scalar("r", 1.0, step=0) is False
            assert summary.write("lazy", lazy, step=0) is False    # never called
        with summary.record_if(tnp.asarray(True)):
            assert summary.scalar("r", 2.0, step=1)
        for step in range(6):
            with summary.record_if(lambda: step % 3 == 0):
                summary.scalar("r", float(step), step=step)
        assert summary.write("lazy", lazy, step=9) is True
    w.close()
    assert calls == [1]
    assert values(tmp_path, "r") == [(1, 2.0), (0, 0.0), (3, 3.0)]
    assert values(tmp_path, "lazy") == [(9, 5.0)]


# ------------------------------------------------------------------ scalars
def test_scalars_are_float32_exactly_from_tnp_numpy_and_python(tmp_path):
    w = summary.create_file_writer(tmp_path)
    data = [0.1, 1, True, np.float64(1 / 3), tnp.asarray(2.5, dtype="float16"),
            tnp.asarray(-7), tt.Variable(np.float32(1e-8)), np.uint8(200)]
    with w.as_default():
        for step, x in enumerate(data):
            assert summary.scalar("loss", x, step=step, description="the *loss*") is True
    w.close()
    got = summaries(tmp_path)["loss"]
    assert [s for s, _, _ in got] == list(range(len(data)))
    for (_, a, plugin), x in zip(got, data):
        assert plugin == "scalars" and a.dtype == np.float32 and a.shape == ()
        assert a == np.float32(np.asarray(x))
    meta = read_file(event_files(tmp_path)[0])[1].summary.value[0].metadata
    assert meta.summary_description == "the *loss*"


def test_scalar_rejects_what_tf_rejects(tmp_path):
    w = summary.create_file_writer(tmp_path)
    with w.as_default():
        with pytest.raises(ValueError, match="Expected scalar shape"):
            summary.scalar("x", [1.0, 2.0], step=0)
        with pytest.raises(TypeError):
            summary.scalar("x", "a string", step=0)
    w.close()


# ------------------------------------------------------------------ histograms
def test_histograms_match_tensorboards_own_bucketing(tmp_path):
    rng = np.random.default_rng(0)
    data = {"normal": rng.normal(size=1000), "ints": tnp.asarray(rng.integers(0, 7, 333)),
            "const": np.full(17, 2.5), "empty": np.zeros(0), "matrix": rng.random((8, 9))}
    w = summary.create_file_writer(tmp_path)
    with w.as_default(step=4):
        for name, x in data.items():
            assert summary.histogram(name, x) is True
        summary.histogram("few", data["normal"], buckets=5)
    w.close()
    got = summaries(tmp_path)
    for name, x in data.items():
        (step, a, plugin), = got[name]
        assert step == 4 and plugin == "histograms" and a.dtype == np.float64
        want = tensor_util.make_ndarray(histogram_pb(name, np.asarray(x)).value[0].tensor)
        np.testing.assert_array_equal(a, want)
        assert a[:, 2].sum() == np.asarray(x).size
    (_, few, _), = got["few"]
    assert few.shape == (5, 3) and few[:, 2].sum() == 1000
    assert few[0, 0] == data["normal"].min() and few[-1, 1] == data["normal"].max()


def test_histogram_leaves_out_non_finite_values(tmp_path):
    w = summary.create_file_writer(tmp_path)
    with w.as_default(step=0):
        summary.histogram("h", [1.0, np.nan, 2.0, np.inf, 3.0], buckets=2)
    w.close()
    (_, a, _), = summaries(tmp_path)["h"]
    np.testing.assert_array_equal(a, [[1.0, 2.0, 1.0], [2.0, 3.0, 2.0]])


# ------------------------------------------------------------------ images
def _decode(png):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)))


def test_images_are_pngs_of_the_right_size_and_pixels(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (4, 5, 7, 3), dtype=np.uint8)
    grey = rng.random((2, 3, 6, 1))
    rgba = tnp.asarray(rng.integers(0, 256, (1, 9, 2, 4), dtype=np.uint8))
    w = summary.create_file_writer(tmp_path)
    with w.as_default(step=2):
        assert summary.image("rgb", rgb) is True          # max_outputs=3 of 4
        assert summary.image("grey", grey, max_outputs=5)
        assert summary.image("rgba", rgba, description="alpha")
    w.close()
    got = summaries(tmp_path)
    (step, a, plugin), = got["rgb"]
    assert step == 2 and plugin == "images" and a.shape == (2 + 3,)
    assert a[0] == b"7" and a[1] == b"5"                   # width, height
    for k in range(3):
        np.testing.assert_array_equal(_decode(a[2 + k]), rgb[k])
    (_, a, _), = got["grey"]
    assert a.shape == (4,) and a[0] == b"6" and a[1] == b"3"
    want = np.clip(grey * 255.5, 0, 255).astype(np.uint8)[..., 0]   # convert_image_dtype
    for k in range(2):
        np.testing.assert_array_equal(_decode(a[2 + k]), want[k])
    (_, a, _), = got["rgba"]
    assert a[0] == b"2" and a[1] == b"9"
    np.testing.assert_array_equal(_decode(a[2]), np.asarray(rgba)[0])


def test_image_dtype_conversion_is_tfs_convert_image_dtype():
    from tnp_train.summary._ops import to_uint8
    np.testing.assert_array_equal(to_uint8(np.array([-0.5, 0.0, 0.5, 1.0, 2.0, np.nan])),
                                  [0, 0, 127, 255, 255, 0])
    np.testing.assert_array_equal(to_uint8(np.array([0, 255, 65535], np.uint16)), [0, 0, 255])
    np.testing.assert_array_equal(to_uint8(np.array([-5, 0, 127], np.int8)), [0, 0, 254])
    np.testing.assert_array_equal(to_uint8(np.array([-1, 2 ** 31 - 1], np.int32)), [0, 255])
    with pytest.raises(TypeError):
        to_uint8(np.array([True]))


def test_image_errors(tmp_path):
    w = summary.create_file_writer(tmp_path)
    with w.as_default(step=0):
        with pytest.raises(ValueError, match="rank 4"):
            summary.image("i", np.zeros((2, 2, 3)))
        with pytest.raises(ValueError, match="channels"):
            summary.image("i", np.zeros((1, 2, 2, 5)))
        with pytest.raises(ValueError, match="max_outputs"):
            summary.image("i", np.zeros((1, 2, 2, 1)), max_outputs=-1)
    w.close()


# ------------------------------------------------------------------ text, write, raw, scopes
def test_text_write_raw_pb_and_summary_scope(tmp_path):
    from tensorboard.plugins.scalar.summary_v2 import scalar_pb
    w = summary.create_file_writer(tmp_path)
    with w.as_default(step=1):
        assert summary.text("notes", "# hello *tnp*")
        assert summary.text("table", [["a", "b"], ["ç", "d"]])
        assert summary.write("raw_tensor", tnp.arange(3))
        assert summary.experimental.write_raw_pb(scalar_pb("from_pb", 4.5).SerializeToString())
        with summary.experimental.summary_scope("outer") as (tag, scope):
            assert (tag, scope) == ("outer", "outer/")
            with summary.experimental.summary_scope("in ner!") as (tag, scope):
                assert (tag, scope) == ("outer/in ner!", "outer/inner/")
            summary.scalar("x", 1.0)
        with pytest.raises(TypeError, match="strings"):
            summary.text("bad", 3)
    w.close()
    got = summaries(tmp_path)
    (_, a, plugin), = got["notes"]
    assert plugin == "text" and a == b"# hello *tnp*"
    (_, a, _), = got["table"]
    assert a.tolist() == [[b"a", b"b"], ["ç".encode(), b"d"]]
    (_, a, plugin), = got["raw_tensor"]
    assert plugin == "" and a.tolist() == [0, 1, 2]
    assert values(tmp_path, "from_pb") == [(1, 4.5)]
    assert values(tmp_path, "outer/x") == [(1, 1.0)]


def test_tensorboards_accumulator_sees_the_plugins(tmp_path):
    w = summary.create_file_writer(tmp_path)
    with w.as_default(step=0):
        summary.scalar("s", 1.0)
        summary.histogram("h", [1.0, 2.0])
        summary.image("i", np.zeros((1, 2, 2, 3)))
        summary.text("t", "x")
    w.close()
    acc = ea.EventAccumulator(str(tmp_path), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    assert acc.PluginTagToContent("scalars").keys() == {"s"}
    assert acc.PluginTagToContent("histograms").keys() == {"h"}
    assert acc.PluginTagToContent("images").keys() == {"i"}
    assert acc.PluginTagToContent("text").keys() == {"t"}


# ------------------------------------------------------------------ writer lifecycle
def test_closed_writer_as_tf(tmp_path):
    w = summary.create_file_writer(tmp_path)
    assert isinstance(w, summary.SummaryWriter)
    w.init()
    w.close()
    w.close()                                    # twice: nothing
    w.flush()                                    # a closed writer: nothing
    with pytest.raises(RuntimeError, match="already closed"):
        with w.as_default():
            pass
    with pytest.raises(RuntimeError, match="already closed"):
        w.set_as_default()


def test_create_file_writer_arguments(tmp_path):
    with pytest.raises(ValueError, match="logdir cannot be None"):
        summary.create_file_writer(None)
    with pytest.raises(ValueError, match="max_queue"):
        summary.create_file_writer(tmp_path, max_queue=-1)
    with pytest.raises(ValueError, match="filename_suffix"):
        summary.create_file_writer(tmp_path, filename_suffix="a/b")
    w = summary.create_file_writer(str(tmp_path / "new" / "dir"), filename_suffix=".mine",
                                   name="ignored")
    w.close()
    assert w.path.endswith(".mine") and event_files(tmp_path / "new" / "dir") == [w.path]


def test_tt_summary_is_reached_from_tnp_train():
    import tnp_train
    assert tnp_train.summary is summary and "summary" in tnp_train.__all__
    assert summary.experimental.get_step is tnp_train.summary.experimental.get_step
