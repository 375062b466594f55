"""tt.utils.Progbar prints what TF 2.4's tf.keras.utils.Progbar prints.

The expected strings are TF 2.4.4's own output: its ``Progbar`` class, read from
``tensorflow/python/keras/utils/generic_utils.py`` in the tensorflow-cpu 2.4.4 wheel, run with a
fake ``time.time`` (starting at 100.0; each update at 100.0 + the ``t`` given here) and
``sys.stdout`` a StringIO whose ``isatty()`` is True. ``B`` is a backspace: Keras goes back over
the previous line with as many backspaces as it was long, then a carriage return.
"""
import io
import sys

import pytest

import tnp_train as tt
from tnp_train.utils import progbar as progbar_mod

B = "\b"


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _run(monkeypatch, updates, terminal=True, **kwargs):
    """What a Progbar(**kwargs) writes for ``updates`` = [(t, current, values, finalize)]."""
    out = _Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    now = [100.0]
    monkeypatch.setattr(progbar_mod, "clock", lambda: now[0])
    bar = tt.utils.Progbar(**kwargs)
    for t, current, values, finalize in updates:
        now[0] = 100.0 + t
        bar.update(current, values, finalize=finalize)
    return out.getvalue()


# name -> (Progbar kwargs, updates, what TF 2.4.4 printed on a terminal)
CASES = {
    "readme": (
        dict(target=11),
        [(0.04 + 0.004 * k, k, [("loss", 0.2831), ("accuracy", 0.9172)], None)
         for k in range(1, 12)],
        "\r 1/11 [=>............................] - ETA: 0s - loss: 0.2831 - accuracy: 0.9172"
        + B * 82 + "\r11/11 [==============================] - 0s 4ms/step - loss: 0.2831 - "
        "accuracy: 0.9172\n"),
    "averaged over steps": (
        dict(target=4, width=10),
        [(1.0 * k, k, [("loss", float(k)), ("acc", 0.5)], None) for k in range(1, 5)],
        "\r1/4 [=>........] - ETA: 3s - loss: 1.0000 - acc: 0.5000" + B * 55
        + "\r2/4 [====>.....] - ETA: 2s - loss: 1.5000 - acc: 0.5000" + B * 55
        + "\r3/4 [======>...] - ETA: 1s - loss: 2.0000 - acc: 0.5000" + B * 55
        + "\r4/4 [==========] - 4s 1s/step - loss: 2.5000 - acc: 0.5000\n"),
    "stateful metric as it is": (
        dict(target=4, width=10, stateful_metrics=["acc"]),
        [(1.0 * k, k, [("acc", 0.25 * k)], None) for k in range(1, 5)],
        "\r1/4 [=>........] - ETA: 3s - acc: 0.2500" + B * 40
        + "\r2/4 [====>.....] - ETA: 2s - acc: 0.5000" + B * 40
        + "\r3/4 [======>...] - ETA: 1s - acc: 0.7500" + B * 40
        + "\r4/4 [==========] - 4s 1s/step - acc: 1.0000\n"),
    "tiny, zero and negative values": (
        dict(target=2, width=10),
        [(0.5, 1, [("a", 1e-5), ("b", 0.0), ("c", -0.5)], None),
         (1.0, 2, [("a", 1e-5), ("b", 0.0), ("c", -0.5)], None)],
        "\r1/2 [====>.....] - ETA: 0s - a: 1.0000e-05 - b: 0.0000e+00 - c: -0.5000" + B * 71
        + "\r2/2 [==========] - 1s 500ms/step - a: 1.0000e-05 - b: 0.0000e+00 - c: -0.5000\n"),
    "unknown target": (
        dict(target=None, width=10),
        [(0.5, 1, [("l", 1.0)], None), (1.5, 2, [("l", 1.0)], None)],
        "\r      1/Unknown - 0s 500ms/step - l: 1.0000" + B * 43
        + "\r      2/Unknown - 2s 1s/step - l: 1.0000   "),
    "ETA in h:mm:ss": (
        dict(target=5000, width=10, interval=0),
        [(2.0, 1, None, None), (4.0, 2, None, None), (6.0, 3, None, None),
         (5004.0, 2500, None, None), (9998.0, 5000, None, None)],
        "\r   1/5000 [..........] - ETA: 2:46:38" + B * 37
        + "\r   2/5000 [..........] - ETA: 2:46:36" + B * 37
        + "\r   3/5000 [..........] - ETA: 2:46:34" + B * 37
        + "\r2500/5000 [====>.....] - ETA: 1:23:24" + B * 37
        + "\r5000/5000 [==========] - 9998s 2s/step\n"),
    "ETA in m:ss": (dict(target=100, width=10), [(2.0, 1, None, None)],
                    "\r  1/100 [..........] - ETA: 3:18"),
    "samples in microseconds": (
        dict(target=64, width=10, unit_name="sample"),
        [(0.01, 32, None, None), (0.02, 64, None, None)],
        "\r32/64 [====>.....] - ETA: 0s" + B * 28 + "\r64/64 [==========] - 0s 312us/sample\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_terminal_output_is_keras(monkeypatch, case):
    kwargs, updates, keras = CASES[case]
    assert _run(monkeypatch, updates, **kwargs) == keras


@pytest.mark.parametrize("case", sorted(CASES))
def test_off_a_terminal_only_the_final_line(monkeypatch, case):
    # TF 2.4 redraws into files too (it counts any POSIX process as a terminal); here a file
    # gets the final line alone, without carriage returns or backspaces
    kwargs, updates, keras = CASES[case]
    got = _run(monkeypatch, updates, terminal=False, **kwargs)
    if keras.endswith("\n"):
        assert got == keras.split("\r")[-1]
        assert "\r" not in got and B not in got
    else:                                   # never finalized: nothing written
        assert got == ""


def test_verbose_2_one_line_at_the_end(monkeypatch):
    # TF 2.4.4's output; verbose=2 tests the signed value, so -0.5 prints as -5.0000e-01
    updates = [(0.5, 1, [("a", 1e-5), ("c", -0.5), ("d", 2.0)], None),
               (1.5, 2, [("a", 1e-5), ("c", -0.5), ("d", 2.0)], None)]
    keras = "2/2 - 2s - a: 1.0000e-05 - c: -5.0000e-01 - d: 2.0000\n"
    assert _run(monkeypatch, updates, target=2, verbose=2) == keras
    assert _run(monkeypatch, updates, terminal=False, target=2, verbose=2) == keras


def test_verbose_0_prints_nothing(monkeypatch):
    assert _run(monkeypatch, [(1.0, 1, [("l", 1.0)], None), (2.0, 2, None, None)],
                target=2, verbose=0) == ""


def test_add_counts_on_and_interval_throttles(monkeypatch):
    out = _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    now = [0.0]
    monkeypatch.setattr(progbar_mod, "clock", lambda: now[0])
    bar = tt.utils.Progbar(10, width=10, interval=1.0)
    for t in (0.1, 0.5, 1.2, 1.3):       # drawn at 0.1 (first), 1.2 (>= 1 s after it)
        now[0] = t
        bar.add(2, [("l", 1.0)])
    frames = [f.strip(B) for f in out.getvalue().split("\r") if f]
    assert [f.split()[0] for f in frames] == ["2/10", "6/10"]
    assert bar._seen_so_far == 8


def test_explicit_finalize_ends_the_line(monkeypatch):
    got = _run(monkeypatch, [(1.0, 3, [("l", 0.5)], True)], terminal=False, target=10, width=10)
    assert got == " 3/10 [==>.......] - 1s 333ms/step - l: 0.5000\n"   # padded as Keras does


def test_a_value_that_is_not_a_number_is_shown_as_it_is(monkeypatch):
    got = _run(monkeypatch, [(1.0, 2, [("loss", 0.5), ("note", "warm-up")], None)],
               terminal=False, target=2, width=10)
    assert got == "2/2 [==========] - 1s 500ms/step - loss: 0.5000 - note: warm-up\n"
