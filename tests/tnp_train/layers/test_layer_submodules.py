"""``Layer.submodules`` (``tf.Module.submodules``): every nested layer and metric, once. The
expected sets are what tf-keras (2.21, ``TF_USE_LEGACY_KERAS=1``) lists for the same models;
its order is tf.Module's walk over sorted attribute names, so sets are compared, and the
breadth-first order of this implementation is checked on its own."""
import numpy as np

import tnp_train as tt

L = tt.layers


class Block(L.Layer):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.a = L.Dense(3, name="a")
        self.parts = [L.Dense(2, name="p0"), L.Dense(2, name="p1")]
        self.m = tt.metrics.Mean(name="mm")

    def call(self, x):
        return self.parts[1](self.parts[0](self.a(x)))


class Net(tt.Model):
    def __init__(self):
        super().__init__(name="net")
        self.b = Block(name="blk")
        self.shared = L.Dense(2, name="sh")
        self.again = self.shared            # the same layer twice: listed once

    def call(self, x):
        return self.shared(self.b(x))


def _names(module):
    return [f"{type(s).__name__}:{s.name}" for s in module.submodules]


def test_submodules_match_tf_keras():
    seq = tt.Sequential([tt.Input((4,)), L.Dense(3, name="d1"), Block(name="blk2")], name="seq")
    inp = tt.Input((4,), name="in")
    fn = tt.Model(inp, L.Dense(1, name="f2")(seq(inp)), name="fn")
    net = Net()
    net(np.ones((1, 4), "float32"))
    inner = {"Dense:d1", "Block:blk2", "Mean:mm", "Dense:a", "Dense:p0", "Dense:p1"}
    # tf-keras also lists the Sequential's implicit InputLayer, which is no object here
    assert set(_names(seq)) == inner
    assert set(_names(fn)) == {"InputLayer:in", "Dense:f2", "Sequential:seq"} | inner
    assert set(_names(net)) == {"Block:blk", "Dense:sh", "Mean:mm", "Dense:a", "Dense:p0",
                                "Dense:p1"}
    for m in (seq, fn, net):
        assert len(_names(m)) == len(set(_names(m)))          # each once
    # breadth first: the children of a layer come after every layer of the level above
    assert _names(net)[:2] == ["Block:blk", "Dense:sh"]
    # a layer not built yet lists what its attributes hold
    assert sorted(s.name for s in Block(name="b").submodules) == ["a", "mm", "p0", "p1"]


def test_submodules_find_every_layer_of_a_kind():
    # the common use: every Dense anywhere in a model
    net = Net()
    net(np.ones((1, 4), "float32"))
    dense = [m.name for m in net.submodules if isinstance(m, L.Dense)]
    assert sorted(dense) == ["a", "p0", "p1", "sh"]
