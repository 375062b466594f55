"""tt.utils against tf.keras.utils: to_categorical/normalize and the serialization helpers
against tf-keras outputs (tests/fixtures/keras_utils.npz/.json, written by
tests/fixtures/make_keras_utils_fixtures.py), Sequence and the enqueuers, get_file (local
only), get_source_inputs, pack/unpack_x_y_sample_weight, model_to_dot/plot_model."""
import hashlib
import json
import os
import sys
import tarfile
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

U = tt.utils
FIX = Path(__file__).resolve().parents[2] / "fixtures"
REF = np.load(FIX / "keras_utils.npz")
META = json.loads((FIX / "keras_utils.json").read_text())["utils"]


# ---------------------------------------------------------------- to_categorical, normalize
def test_to_categorical_matches_keras():
    y = REF["utils/labels"]
    for got, key in [(U.to_categorical(y), "to_categorical"),
                     (U.to_categorical(y, num_classes=6, dtype="int32"),
                      "to_categorical_n6_int"),
                     (U.to_categorical(y.reshape(-1, 1)), "to_categorical_col"),
                     (U.to_categorical(np.array([[0, 1], [2, 0]])), "to_categorical_2d")]:
        ref = REF[f"utils/{key}"]
        np.testing.assert_array_equal(np.asarray(got), ref)
        assert np.asarray(got).dtype == ref.dtype and got.shape == ref.shape, key


def test_normalize_matches_keras():
    x = REF["utils/normalize_x"]          # row 1 is all zeros: left as zeros
    np.testing.assert_allclose(np.asarray(U.normalize(x)), REF["utils/normalize"], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(U.normalize(x, axis=0, order=1)),
                               REF["utils/normalize_l1_axis0"], rtol=1e-12)


# ------------------------------------------------------------------------- serialization
def test_serialize_keras_object_matches_keras():
    for key, obj in [("serialize_max_norm", tt.constraints.MaxNorm(3, axis=1)),
                     ("serialize_l2", tt.regularizers.L2(0.5))]:
        keras = META[key]
        assert U.serialize_keras_object(obj) == {"class_name": keras["class_name"],
                                                 "config": keras["config"]}, key
    # TF 2.4 serializes a function as its registered name (tf-keras 2.21 wraps it in a dict)
    assert U.serialize_keras_object(tt.activations.relu) == "relu"
    assert U.serialize_keras_object(None) is None and META["serialize_none"] is None
    with pytest.raises(ValueError, match="Cannot serialize"):
        U.serialize_keras_object(3)


def test_registration_custom_objects_and_scopes():
    @U.register_keras_serializable(package="MyPkg")
    class Scale(tt.constraints.Constraint):
        def __init__(self, k=2.0, inner=None):
            self.k, self.inner = k, inner

        def __call__(self, w):
            return w * self.k

        def get_config(self):
            return {"k": self.k, "inner": self.inner}

    try:
        assert U.get_registered_name(Scale) == "MyPkg>Scale"
        assert U.get_custom_objects()["MyPkg>Scale"] is Scale
        assert U.get_registered_object("MyPkg>Scale") is Scale
        # a nested Keras object is serialized too, and marked so deserialize rebuilds it
        cfg = U.serialize_keras_object(Scale(3.0, inner=tt.constraints.NonNeg()))
        assert cfg == {"class_name": "MyPkg>Scale",
                       "config": {"k": 3.0, "inner": {"class_name": "NonNeg", "config": {},
                                                      "__passive_serialization__": True}}}
        back = U.deserialize_keras_object(cfg, module_objects={"NonNeg": tt.constraints.NonNeg})
        assert isinstance(back, Scale) and back.k == 3.0
        assert isinstance(back.inner, tt.constraints.NonNeg)
        # the name alone gives an instance with the defaults (a class is called)
        assert isinstance(U.deserialize_keras_object("MyPkg>Scale"), Scale)
        with pytest.raises(ValueError, match="already been registered"):
            U.register_keras_serializable(package="MyPkg")(type("Scale", (Scale,), {}))
    finally:
        U.get_custom_objects().pop("MyPkg>Scale", None)
    assert U.get_registered_object("MyPkg>Scale") is None

    # get_custom_objects() is the live dict: an entry without a package resolves by name
    def twice(x):
        return 2 * x

    U.get_custom_objects()["twice"] = twice
    try:
        assert U.deserialize_keras_object("twice") is twice
    finally:
        del U.get_custom_objects()["twice"]
    with pytest.raises(ValueError, match="Unknown object: twice"):
        U.deserialize_keras_object("twice")
    with U.custom_object_scope({"twice": twice}) as scope:
        assert isinstance(scope, U.CustomObjectScope)
        assert U.deserialize_keras_object("twice") is twice
    with U.CustomObjectScope({"twice": twice}):
        assert U.get_registered_object("twice") is twice
    assert U.get_registered_object("twice") is None
    with pytest.raises(ValueError, match="Improper config format"):
        U.deserialize_keras_object({"config": {}})
    with pytest.raises(ValueError, match="Unknown constraint: Nope"):
        U.deserialize_keras_object({"class_name": "Nope", "config": {}},
                                   printable_module_name="constraint")
    with pytest.raises(ValueError, match="Could not interpret serialized object: 3"):
        U.deserialize_keras_object(3)


# ------------------------------------------------------------------- Sequence, enqueuers
class Squares(U.Sequence):
    def __init__(self, n=5):
        self.n, self.epochs = n, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.full((2, 1), float(i * i), "float32"), np.full((2, 1), float(i), "float32")

    def on_epoch_end(self):
        self.epochs += 1


def test_sequence_base():
    seq = Squares(3)
    assert [float(x[0, 0]) for x, _ in seq] == [0.0, 1.0, 4.0]
    with pytest.raises(NotImplementedError):
        len(U.Sequence())
    with pytest.raises(NotImplementedError):
        U.Sequence()[0]
    assert U.Sequence().on_epoch_end() is None


@pytest.mark.parametrize("use_multiprocessing", [False, True])
def test_ordered_enqueuer_in_order_then_next_epoch(use_multiprocessing):
    seq = Squares(5)
    enq = U.OrderedEnqueuer(seq, use_multiprocessing=use_multiprocessing)
    enq.start(workers=2, max_queue_size=3)
    assert enq.is_running()
    gen = enq.get()
    got = [float(next(gen)[1][0, 0]) for _ in range(7)]
    enq.stop()
    assert not enq.is_running()
    assert got == [0, 1, 2, 3, 4, 0, 1]          # order kept, then the next epoch
    if not use_multiprocessing:
        assert seq.epochs >= 1                   # on_epoch_end between epochs


def test_ordered_enqueuer_shuffles_each_epoch():
    enq = U.OrderedEnqueuer(Squares(6), shuffle=True)
    enq.start(workers=1)
    gen = enq.get()
    epoch = sorted(float(next(gen)[1][0, 0]) for _ in range(6))
    enq.stop()
    assert epoch == [0, 1, 2, 3, 4, 5]           # every batch once per epoch


def test_generator_enqueuer_reads_a_finite_generator():
    def gen():
        for i in range(4):
            yield np.array([i])

    enq = U.GeneratorEnqueuer(gen(), use_multiprocessing=False)
    enq.start(workers=1, max_queue_size=2)
    got = [int(x[0]) for x in enq.get()]
    assert got == [0, 1, 2, 3] and not enq.is_running()
    with pytest.raises(ValueError, match="workers"):
        U.GeneratorEnqueuer(gen()).start(workers=0)
    assert issubclass(U.OrderedEnqueuer, U.SequenceEnqueuer)


def test_fit_runs_a_sequence_as_keras_does():
    # Keras shuffles a Sequence's batch order per epoch in fit and calls on_epoch_end
    order = []

    class Recording(Squares):
        def __getitem__(self, i):
            order.append(i)
            return super().__getitem__(i)

    model = tt.Sequential([tt.Input((1,)), tt.layers.Dense(1)])
    model.compile("sgd", "mse")
    seq = Recording(4)
    tt.utils.set_random_seed(0)
    model.fit(seq, epochs=3, verbose=0)
    assert seq.epochs == 3
    epochs = [order[i:i + 4] for i in (0, 4, 8)]
    assert all(sorted(e) == [0, 1, 2, 3] for e in epochs)
    assert any(e != [0, 1, 2, 3] for e in epochs)          # shuffled (seeded)
    order.clear()
    model.fit(seq, epochs=1, verbose=0, shuffle=False)
    assert order == [0, 1, 2, 3]
    order.clear()
    model.evaluate(seq, verbose=0)
    assert order == [0, 1, 2, 3]


# ------------------------------------------------------------------------------ get_file
def test_get_file_from_a_local_origin_and_the_cache(tmp_path):
    src = tmp_path / "data.txt"
    src.write_bytes(b"hello keras")
    cache = tmp_path / "cache"
    sha = hashlib.sha256(b"hello keras").hexdigest()
    md5 = hashlib.md5(b"hello keras").hexdigest()
    path = U.get_file("data.txt", origin=src.as_uri(), file_hash=sha, cache_dir=cache)
    assert path == str(cache / "datasets" / "data.txt") and Path(path).read_bytes() == \
        b"hello keras"
    # in the cache now: no origin needed, and the md5 checks out too
    assert U.get_file("data.txt", origin="https://example.invalid/data.txt", md5_hash=md5,
                      cache_dir=cache) == path
    with pytest.raises(FileNotFoundError, match="does not download.*origin="):
        U.get_file("other.txt", origin="https://example.invalid/other.txt", cache_dir=cache)
    with pytest.raises(FileNotFoundError, match="does not match its md5 hash"):
        U.get_file("data.txt", origin="https://example.invalid/x", md5_hash="0" * 32,
                   cache_dir=cache)
    with pytest.raises(ValueError, match="does not match the sha256 hash"):
        U.get_file("fresh.txt", origin=str(src), file_hash="1" * 64, cache_dir=cache)
    assert not (cache / "datasets" / "fresh.txt").exists()


def test_get_file_untar_and_extract(tmp_path):
    inner = tmp_path / "inner.txt"
    inner.write_text("x")
    tgz = tmp_path / "pack.tar.gz"
    with tarfile.open(tgz, "w:gz") as t:
        t.add(inner, arcname="pack/inner.txt")
    got = U.get_file("pack", origin=str(tgz), untar=True, cache_dir=tmp_path / "c")
    assert got == str(tmp_path / "c" / "datasets" / "pack")
    assert (Path(got) / "inner.txt").read_text() == "x"
    zp = tmp_path / "z.zip"
    with zipfile.ZipFile(zp, "w") as z:
        z.writestr("zdir/a.txt", "zz")
    got = U.get_file("z.zip", origin=str(zp), extract=True, cache_dir=tmp_path / "c",
                     cache_subdir="sub")
    assert got.endswith(os.path.join("sub", "z.zip"))
    assert (tmp_path / "c" / "sub" / "zdir" / "a.txt").read_text() == "zz"


# ----------------------------------------------------------- graph helpers, pack/unpack
def test_get_source_inputs():
    a, b = tt.Input((3,), name="a"), tt.Input((2,), name="b")
    h = tt.layers.Dense(2)(a)
    c = tt.layers.Concatenate()([h, b, a])
    assert U.get_source_inputs(c) == [a, b]
    assert U.get_source_inputs(a) == [a]
    x = tnp.ones(2)
    assert U.get_source_inputs(x) is x


def test_pack_and_unpack_x_y_sample_weight():
    x, y, w = np.ones(2), np.zeros(2), np.full(2, 0.5)
    # TF 2.4: a single x stays itself, a structure is wrapped; a list unpacks as one x
    assert U.pack_x_y_sample_weight(x) is x
    assert U.pack_x_y_sample_weight([x, y]) == ([x, y],)
    assert U.unpack_x_y_sample_weight([x, y]) == ([x, y], None, None)
    assert U.pack_x_y_sample_weight(x, y) == (x, y)
    assert U.pack_x_y_sample_weight(x, y, w) == (x, y, w)
    assert U.unpack_x_y_sample_weight((x, y, w)) == (x, y, w)
    assert U.unpack_x_y_sample_weight((x, y)) == (x, y, None)
    assert U.unpack_x_y_sample_weight((x,)) == (x, None, None)
    assert U.unpack_x_y_sample_weight(x) == (x, None, None)
    with pytest.raises(ValueError):
        U.unpack_x_y_sample_weight((x, y, w, w))


class _FakePydot(types.ModuleType):
    """Just what model_to_dot calls, recorded (pydot itself is an optional dependency)."""

    def __init__(self):
        super().__init__("pydot")

        class Graph:
            def __init__(self, **kw):
                self.attrs, self.nodes, self.edges, self.subgraphs = dict(kw), [], [], []

            def set(self, k, v):
                self.attrs[k] = v

            def set_node_defaults(self, **kw):
                self.attrs["node_defaults"] = kw

            def add_node(self, node):
                self.nodes.append(node)

            def get_nodes(self):
                return self.nodes

            def add_edge(self, edge):
                self.edges.append((edge.src, edge.dst))

            def get_edge(self, src, dst):
                return [e for e in self.edges if e == (src, dst)]

            def add_subgraph(self, g):
                self.subgraphs.append(g)

            def write(self, path, format="png"):
                Path(path).write_text(f"{format}:{len(self.nodes)}")

        class Node:
            def __init__(self, name, label=None):
                self.name, self.label = name, label

            def get_name(self):
                return self.name

        class Edge:
            def __init__(self, src, dst):
                self.src, self.dst = src, dst

        self.Dot, self.Cluster, self.Node, self.Edge = Graph, Graph, Node, Edge


def test_model_to_dot_without_pydot_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydot", None)
    model = tt.Sequential([tt.Input((2,)), tt.layers.Dense(1)])
    with pytest.raises(ImportError, match="pip install pydot.*graphviz"):
        U.model_to_dot(model)
    with pytest.raises(ImportError, match="pip install pydot"):
        U.plot_model(model)


def test_model_to_dot_labels_and_edges_as_keras(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pydot", _FakePydot())
    a = tt.Input((3,), name="in_a")
    h = tt.layers.Dense(4, name="hidden")(a)
    out = tt.layers.Dense(1, name="out")(h)
    model = tt.Model(a, out)
    dot = U.model_to_dot(model, show_shapes=True, show_dtype=True)
    labels = [n.label for n in dot.nodes]
    # TF 2.4's label format (vis_utils.model_to_dot): "name: Class|dtype\n|{input:|output:}..."
    assert labels == [
        "in_a: InputLayer|float32\n|{input:|output:}|{{[(None, 3)]}|{(None, 3)}}",
        "hidden: Dense|float32\n|{input:|output:}|{{(None, 3)}|{(None, 4)}}",
        "out: Dense|float32\n|{input:|output:}|{{(None, 4)}|{(None, 1)}}"]
    ids = [n.name for n in dot.nodes]
    assert dot.edges == [(ids[0], ids[1]), (ids[1], ids[2])]
    assert dot.attrs["rankdir"] == "TB" and dot.attrs["dpi"] == 96
    plain = U.model_to_dot(model, show_layer_names=False, rankdir="LR")
    assert [n.label for n in plain.nodes] == ["InputLayer", "Dense", "Dense"]
    assert plain.attrs["rankdir"] == "LR"
    target = tmp_path / "m.svg"
    shown = U.plot_model(model, to_file=str(target))
    assert shown is None or type(shown).__name__ == "Image"     # an IPython image if there
    assert target.read_text() == "svg:3"
