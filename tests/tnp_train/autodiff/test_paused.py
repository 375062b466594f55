"""``tnp_train.autodiff.paused()``: nothing run inside is recorded by this thread's tapes, and
each tape records again exactly as before on the way out (nesting, exceptions,
``stop_recording``); the functional API runs its shape probes under it."""
import threading

import numpy as np
import pytest

import tnp
import tnp_train as tt
from tnp_train.autodiff import paused


def test_operations_inside_are_not_recorded_by_any_active_tape():
    x = tnp.array([1.0, 2.0])
    with tt.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tt.GradientTape(persistent=True) as inner:
            inner.watch(x)
            with paused():
                z = tnp.sin(x)
            y = x * 3.0
    for tape in (outer, inner):
        assert tape.gradient(z, x) is None
        np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), [3.0, 3.0])


def test_nesting_and_exceptions_restore_the_state_before():
    x = tnp.array([1.0, 2.0])
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with paused():
            with paused():
                a = x * 2.0
            b = x * 2.0          # still paused: the inner block resumes only what it paused
        with pytest.raises(ValueError):
            with paused():
                raise ValueError("inside")
        c = x * 2.0              # recording again after the exception
    assert tape.gradient(a, x) is None and tape.gradient(b, x) is None
    np.testing.assert_allclose(np.asarray(tape.gradient(c, x)), [2.0, 2.0])


def test_a_tape_under_stop_recording_stays_paused():
    x = tnp.array([1.0, 2.0])
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            with paused():
                pass
            a = x * 2.0          # paused() must not resume what stop_recording paused
        b = x * 2.0
    assert tape.gradient(a, x) is None
    np.testing.assert_allclose(np.asarray(tape.gradient(b, x)), [2.0, 2.0])


def test_other_threads_keep_recording():
    x = tnp.array([1.0, 2.0])
    entered, release, got = threading.Event(), threading.Event(), {}

    def other():
        with tt.GradientTape() as tape:
            tape.watch(x)
            entered.set()
            release.wait(10)
            y = x * 5.0
        got["g"] = tape.gradient(y, x)

    t = threading.Thread(target=other)
    t.start()
    entered.wait(10)
    with paused():
        release.set()
        t.join(10)
    np.testing.assert_allclose(np.asarray(got["g"]), [5.0, 5.0])


def test_custom_gradient_body_is_not_recorded():
    @tt.custom_gradient
    def f(x):
        return x * 1.0, lambda dy: dy * 7.0

    x = tnp.array([1.0, 2.0])
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), [7.0, 7.0])


class _Scale(tt.layers.Layer):
    """No compute_output_shape: a functional call finds its output shape by running on zeros."""

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.w


def test_a_functional_model_defined_under_a_tape_is_not_recorded():
    x = tnp.array([[1.0, 2.0, 3.0]])
    with tt.GradientTape() as tape:
        inputs = tt.Input((3,))
        layer = _Scale()
        model = tt.Model(inputs, layer(inputs))     # the probes read layer.w
        assert tape.watched_variables() == ()
        loss = tnp.sum(model(x) * 2.0)
    assert [v.name for v in tape.watched_variables()] == [layer.w.name]
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, layer.w)), [2.0, 4.0, 6.0])


def test_a_custom_gradient_after_the_block_is_differentiated_once():
    # a tape that follows its arrays after its block recorded the body of a custom_gradient
    # as well as its custom node: the gradient came out doubled ([5, 9] for 2x + 1 = [3, 5])
    @tt.custom_gradient
    def square(x):
        return x * x, lambda g: g * 2.0 * x

    x = tnp.array([1.0, 2.0])
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x * 1.0
    z = square(y) + y        # after the block: the tape follows y
    np.testing.assert_allclose(np.asarray(tape.gradient(z, x)), [3.0, 5.0])


def test_paused_pauses_and_restores_a_following_tape():
    x = tnp.array([1.0, 2.0])
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
    with paused():
        w = y * 3.0          # not recorded: no gradient reaches x through w
    v = y * 5.0              # recorded again after the pause
    assert tape.gradient(w, x) is None
    with tt.GradientTape() as tape2:
        tape2.watch(x)
        y2 = x * 2.0
    with paused():
        pass
    np.testing.assert_allclose(np.asarray(tape2.gradient(y2 * 5.0, x)), [10.0, 10.0])
    del v
