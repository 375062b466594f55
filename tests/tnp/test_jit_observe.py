"""tnp.extend.observe and set_replay_observer: observations of a compiled program run only
while an observer of their level records, the plain replay is unchanged, and level-3-style
timing reports every kernel and node; an observer operation listener keeps functions compiled."""
import numpy as np
import pytest

import tnp
from tnp import extend


class _Observer:
    def __init__(self, level, time_nodes=False):
        self.level = level
        self.time_nodes = time_nodes
        self.times = []

    def node_time(self, label, t0, t1):
        assert t1 >= t0
        self.times.append(label)


@pytest.fixture(autouse=True)
def no_observer_left():
    yield
    extend.set_replay_observer(None)


def _function(log):
    @tnp.jit
    def f(x):
        extend.observe(log.append, "outer", level=1)
        extend.observe(log.append, "begin", level=2)
        y = tnp.tanh(x * 2.0 + 1.0)
        extend.observe(log.append, "end", level=2)
        return y @ x + x.sum()
    return f


def test_observations_run_only_under_an_observer_of_their_level():
    log = []
    f = _function(log)
    x = tnp.linspace(-1.0, 1.0, 16)
    plain = f(x)                   # traces: nothing observed while tracing
    f(x)
    assert log == []
    extend.set_replay_observer(_Observer(1))
    observed1 = f(x)
    assert log == ["outer"]
    extend.set_replay_observer(_Observer(2))
    observed2 = f(x)
    assert log == ["outer", "outer", "begin", "end"]
    assert extend.set_replay_observer(None).level == 2
    f(x)
    assert log == ["outer", "outer", "begin", "end"]
    assert plain == observed1 == observed2 == f(x)
    assert f.trace_count == 1
    # the plain replay holds no observation; eagerly, observe calls at once
    assert "log.append" not in f.lower(x).replay_source()
    extend.observe(log.append, "now")
    assert log[-1] == "now"


def test_timing_reports_every_kernel_and_node():
    f = _function([])
    x = tnp.linspace(-1.0, 1.0, 16)
    f(x)
    obs = _Observer(0, time_nodes=True)
    extend.set_replay_observer(obs)
    f(x)
    prog = f.lower(x).program
    fused = {n.id for g in prog.groups for n in g.nodes}
    nodes = [n.name for n in prog.graph.nodes if n.id not in fused and n.observe_level is None]
    assert len(obs.times) == len(prog.groups) + len(nodes)
    assert sum(t.startswith("fused kernel k") for t in obs.times) == len(prog.groups) >= 1
    assert [t for t in obs.times if not t.startswith("fused")] == nodes


def test_an_observation_may_not_read_a_traced_array():
    @tnp.jit
    def g(x):
        extend.observe(print, x)
        return x + 1

    with pytest.warns(tnp.extend.JitFallbackWarning, match="observation"):
        np.testing.assert_array_equal(np.asarray(g(tnp.ones(2))), [2.0, 2.0])


def test_an_observer_listener_keeps_functions_compiled():
    f = tnp.jit(lambda x: x * 2.0 + 1.0)
    x = tnp.ones(4)
    seen = []
    with extend.add_op_listener(before=lambda n, a, k: seen.append(n), observer=True):
        f(x)
        f(x)
    assert f.trace_count == 1 and "multiply" in seen     # traced once, while it listened
    n = len(seen)
    with extend.add_op_listener(before=lambda n, a, k: seen.append(n)):
        f(x)                       # a plain listener: eagerly, every operation reported
    assert f.trace_count == 1 and len(seen) > n
