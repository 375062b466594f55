"""NumPy's record/char modules and ``view(np.recarray)`` on tnp arrays, and NEP 13
``__array_ufunc__`` overrides defined by subclasses of ``tnp.ndarray``."""
import numpy
import pytest

import tnp


def _table(xp):
    return xp.array([(1, 2.0), (3, 4.5)], dtype=[("x", "i8"), ("y", "f8")])


def test_view_as_recarray_is_numpy_recarray_sharing_memory():
    a = _table(tnp)
    r = a.view(tnp.recarray)
    assert type(r) is numpy.recarray
    r.x[0] = 10
    assert a["x"][0] == 10
    n = _table(numpy)
    n["x"][0] = 10
    assert repr(r) == repr(n.view(numpy.recarray))
    assert type(a.view(dtype=numpy.recarray)) is numpy.recarray


def test_rec_and_char_functions_take_tnp_arrays():
    r = tnp.rec.array(_table(tnp))
    assert repr(r) == repr(numpy.rec.array(_table(numpy)))
    s = tnp.array(["ab", "cd"])
    assert repr(tnp.char.array(s)) == repr(numpy.char.array(numpy.array(["ab", "cd"])))
    assert tnp.rec.recarray is numpy.recarray


def _quantity(xp):
    class Q(xp.ndarray):
        calls = []

        def __new__(cls, v, unit):
            o = xp.asarray(v, dtype=float).view(cls)
            o.unit = unit
            return o

        def __array_finalize__(self, obj):
            self.unit = getattr(obj, "unit", "")

        def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kw):
            Q.calls.append((ufunc.__name__, method))
            args = [x.view(xp.ndarray) if isinstance(x, Q) else x for x in inputs]
            if out is not None:
                kw["out"] = tuple(o.view(xp.ndarray) if isinstance(o, Q) else o for o in out)
            r = super().__array_ufunc__(ufunc, method, *args, **kw)
            if out is not None:
                return out[0]
            if isinstance(r, xp.ndarray) and r.ndim:
                r = r.view(Q)
                r.unit = "+".join(getattr(x, "unit", "-") for x in inputs)
            return r
    return Q


@pytest.mark.parametrize("expr", ["q + 1", "2 * q", "q / q", "-q", "abs(q)", "q > 1",
                                  "xp.sqrt(q)", "xp.add(q, q)", "xp.arange(2.0) - q",
                                  "xp.add.reduce(q)", "xp.multiply.outer(q, q)"])
def test_subclass_array_ufunc_override_is_called(expr):
    res = {}
    for xp in (numpy, tnp):
        Q = _quantity(xp)
        q = Q([1.0, 4.0], "m")
        r = eval(expr)
        res[xp] = (Q.calls, repr(numpy.asarray(r)), getattr(r, "unit", None), type(r).__name__)
    assert res[numpy][:3] == res[tnp][:3]


def test_subclass_inplace_operator_and_out_go_through_override():
    for xp in (numpy, tnp):
        Q = _quantity(xp)
        q = Q([1.0, 2.0], "m")
        q += 1
        xp.multiply(q, 3, out=q)
        assert Q.calls == [("add", "__call__"), ("multiply", "__call__")]
        assert numpy.asarray(q).tolist() == [6.0, 9.0]


def test_super_array_ufunc_with_overriding_inputs_is_not_implemented():
    for xp in (numpy, tnp):
        class Bad(xp.ndarray):
            def __array_ufunc__(self, ufunc, method, *inputs, **kw):
                return super().__array_ufunc__(ufunc, method, *inputs, **kw)
        b = xp.arange(3.0).view(Bad)
        with pytest.raises(TypeError):
            xp.add(b, 1)
