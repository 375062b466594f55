"""Numba support: ``@numba.njit`` functions take tnp arrays on the CPU.

Numba loads this module through its ``numba_extensions`` entry point (pyproject.toml) when it
makes its first jitted function, so ``import tnp`` never imports Numba. (tnp also registers it
at import when Numba is already loaded, for a checkout used without being installed.)

A tnp array is typed as :class:`TnpArray`, NumPy's array type under another name: inside jitted
code it is the NumPy array it wraps (unboxed from ``x._a``, no copy), every operation on it is
Numba's NumPy support, and arrays that come back are NumPy arrays (also when the function
returns its argument: Numba hands back the NumPy array it unboxed). A tnp scalar is typed and
unboxed as its NumPy scalar.

Writes that jitted code makes into a tnp array's memory do not go through tnp, so they do not
bump its version counter: a gradient tape that saved the array before cannot see them. Call
``tnp.extend.bump_version(x)`` after such a call if a tape may use ``x``.
"""
from __future__ import annotations

import numpy as _np
from numba.core import cgutils, types
from numba.core.datamodel import models
from numba.core.typing.typeof import typeof as _typeof
from numba.extending import NativeValue, box, register_model, typeof_impl, unbox

from ._core.devices import CPU as _CPU
from ._core.ndarray import ndarray as _ndarray

__all__ = ["TnpArray"]


class TnpArray(types.Array):
    """The Numba type of a tnp array: NumPy's array type (``copy`` and every operation give
    plain ``types.Array``), boxed back as a NumPy array."""

    def __init__(self, dtype, ndim, layout, readonly=False, aligned=True):
        kind = "readonly " if readonly else ""
        super().__init__(dtype, ndim, layout, readonly=readonly, aligned=aligned,
                         name=f"tnp.{kind}array({dtype}, {ndim}d, {layout})")

    def as_numpy(self):
        return types.Array(self.dtype, self.ndim, self.layout, readonly=not self.mutable,
                           aligned=self.aligned)


register_model(TnpArray)(models.ArrayModel)


def _no_device(val):
    return TypeError(f"numba: a tnp array on {val.device} cannot be passed to a function "
                     f"compiled for the CPU; move it with x.to_device('cpu') first")


@typeof_impl.register(_ndarray)
def _typeof_tnp(val, c):
    a = val._a
    if val._dev is not _CPU:   # a GPU, or a fake cpu:N (which stands for memory elsewhere)
        raise _no_device(val)
    if isinstance(a, _np.generic):
        if isinstance(a, _np.complexfloating) and not _COMPLEX_SCALARS_OK:
            raise TypeError("numba: pass complex(s) for a complex tnp scalar (this Numba "
                            "version would read only its real part)")
        return _typeof(a, c.purpose)
    if not isinstance(a, _np.ndarray):
        raise _no_device(val)
    t = _typeof(a, c.purpose)
    return TnpArray(t.dtype, t.ndim, t.layout, readonly=not t.mutable, aligned=t.aligned)


def _backend_of(obj, c):
    """``obj._a`` (a new reference), or NULL with Python's error set."""
    return c.pyapi.object_getattr_string(obj, "_a")


def _unbox_made(c, typ, made, unbox_made):
    """Unbox ``made``, a new reference that Python made (NULL with Python's error set), with
    ``unbox_made(typ, made, c)``, and drop it: the value, or the error."""
    failed = cgutils.is_null(c.builder, made)
    out = cgutils.alloca_once(c.builder, c.context.get_value_type(typ))
    err = cgutils.alloca_once_value(c.builder, cgutils.true_bit)
    with c.builder.if_else(failed) as (then, otherwise):
        with then:
            c.builder.store(cgutils.get_null_value(out.type.pointee), out)
        with otherwise:
            nv = unbox_made(typ, made, c)
            c.pyapi.decref(made)
            c.builder.store(nv.value, out)
            c.builder.store(nv.is_error, err)
    return NativeValue(c.builder.load(out), is_error=c.builder.load(err))


@unbox(TnpArray)
def _unbox_tnp_array(typ, obj, c):
    # the NumPy array is dropped once unboxed: the tnp array (held by the caller for the whole
    # call) keeps it alive
    return _unbox_made(c, typ, _backend_of(obj, c), lambda t, a, c: c.unbox(t.as_numpy(), a))


@box(TnpArray)
def _box_tnp_array(typ, val, c):
    return c.box(typ.as_numpy(), val)


def init():
    """The ``numba_extensions`` entry point: importing this module registered everything."""


# A tnp scalar is typed as its NumPy scalar (``_typeof_tnp``), so Numba unboxes the tnp object
# with that scalar type's unboxer. Those read ``float(s)``, ``int(s)`` or ``bool(s)``, which a
# tnp scalar gives exactly; the complex one reads ``float(s)`` from anything that is not a Python
# or NumPy complex, dropping the imaginary part, so complex values are first made Python complex.
def _plain_complex(obj):
    return complex(obj) if isinstance(obj, _ndarray) else obj


def _install_complex_unboxer():
    """Put a complex unboxer that converts tnp scalars first in front of Numba's; False where
    this Numba's unboxer registry is not the one this was written against."""
    try:
        from numba.core import boxing  # noqa: F401  (registers Numba's own unboxers)
        from numba.core.pythonapi import _unboxers

        numba_unbox_complex = _unboxers.functions[types.Complex]
    except (ImportError, AttributeError, KeyError):
        return False

    def unbox_complex(typ, obj, c):
        fn = c.pyapi.unserialize(c.pyapi.serialize_object(_plain_complex))
        plain = c.pyapi.call_function_objargs(fn, [obj])
        c.pyapi.decref(fn)
        return _unbox_made(c, typ, plain, numba_unbox_complex)

    # Numba's registry takes one unboxer per type class and has no public way to wrap one
    _unboxers.functions[types.Complex] = unbox_complex
    return True


_COMPLEX_SCALARS_OK = _install_complex_unboxer()
