"""Update kernels of the optimizers: one pass over each variable, in place.

Every optimizer's update has three implementations with the same arithmetic, in the same order:

* **fused (Numba)** -- for a float32/float64, C-contiguous NumPy variable of at least
  :data:`FUSED_MIN_SIZE` elements: ONE ``@numba.njit(cache=True)`` loop that reads the gradient
  and writes the variable and its slots element by element (no temporaries). Scalars are passed
  in the variable's dtype, so each kernel has exactly two signatures (float32, float64) and a
  float32 update is computed in float32 as TF does.
* **NumPy** -- small variables (where a Numba call costs more than it saves) and other dtypes:
  in-place NumPy with as few temporaries as the formula allows.
* **CuPy** -- a variable living on a CuPy array: the fused loop body as a
  ``cupy.ElementwiseKernel`` (compiled once per variant and dtype by CuPy).

The entry points (:func:`sgd`, :func:`adam`, ...) take backend arrays (the variable's, the
gradient's -- already cast to the variable's dtype and of its shape -- and the slots') and Python
floats, pick the implementation and update in place. They are the ``fn`` an optimizer hands to
``Variable.update(fn, gradient, *slots, ...)``, which unwraps the arrays, calls the kernel once and
counts the writes (version bumps) of the variable and its slots; so a distributed variable that
overrides ``update`` runs the same fused kernel on each replica's copy. ``decay`` is the
decoupled weight decay factor ``learning_rate * weight_decay``: ``w -= decay * w`` happens
first, in the same pass.
"""
from __future__ import annotations

import math

import numpy as np

from tnp.extend import cupy as _cupy

try:  # Numba is a dependency of tnp_train, but the NumPy path must work without it
    import numba as _numba
except ImportError:  # pragma: no cover
    _numba = None

__all__ = ["FUSED_MIN_SIZE", "fused_available", "uses_fused", "sgd", "sgd_many", "adam", "rmsprop",
           "adagrad", "adadelta", "adamax", "nadam", "lion"]

#: Variables with at least this many elements are updated by the fused Numba kernel.
FUSED_MIN_SIZE = 4096

_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
FUSED_DTYPES = _FUSED_DTYPES     # the dtypes the fused kernels take


def fused_available():
    """Whether Numba could be imported (the fused CPU kernels exist)."""
    return _numba is not None


def uses_fused(w):
    """Whether backend array ``w`` (a variable's buffer) takes the fused Numba kernel."""
    return (_numba is not None and type(w) is np.ndarray and w.size >= FUSED_MIN_SIZE
            and w.dtype in _FUSED_DTYPES and w.flags.c_contiguous and w.flags.writeable)


def _flat(a):
    return a.reshape(-1)


def _is_cupy(w):
    """A float32/float64 CuPy array (other dtypes take the generic path, which CuPy runs too)."""
    cp = _cupy()
    return cp is not None and isinstance(w, cp.ndarray) and w.dtype in _FUSED_DTYPES


# ================================================================ Numba kernels
# Each loop reads every array once and writes the variable and its slots once. Flags that
# select a variant are loop-invariant booleans (LLVM unswitches them). Unused slot arguments
# receive the variable itself (same type, never touched), which keeps one signature per dtype.

if _numba is not None:
    # error_model="numpy": x / 0 gives inf/nan as NumPy does (the "python" model checks every
    # division and raises, which also stops LLVM from vectorizing the loop)
    _njit = _numba.njit(cache=True, nogil=True, error_model="numpy")

    @_numba.njit(inline="always")
    def _decayed(wi, decay):
        """The decoupled weight decay, applied first in every kernel: ``w - decay * w``."""
        return wi - decay * wi if decay != 0 else wi

    @_njit
    def _sgd_nb(w, g, m, lr, mu, decay, use_momentum, nesterov):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            if use_momentum:
                mi = mu * m[i] - lr * gi
                m[i] = mi
                if nesterov:
                    wi = wi + (mu * mi - lr * gi)
                else:
                    wi = wi + mi
            else:
                wi = wi - lr * gi
            w[i] = wi

    @_njit
    def _sgd_many_nb(ws, gs, ms, lr, mu, use_momentum, nesterov):
        # _sgd_nb on each (variable, gradient, momentum) of tuples of flat arrays: a compiled
        # step's update of several variables in one call (see sgd_many)
        zero = lr - lr
        for k in range(len(ws)):
            _sgd_nb(ws[k], gs[k], ms[k], lr, mu, zero, use_momentum, nesterov)

    @_njit
    def _adam_nb(w, g, m, v, vhat, alpha, b1, omb1, b2, omb2, eps, decay, amsgrad):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            mi = b1 * m[i] + omb1 * gi
            vi = b2 * v[i] + omb2 * (gi * gi)
            m[i] = mi
            v[i] = vi
            if amsgrad:
                vh = vhat[i]
                if vi > vh or vi != vi:  # np.maximum propagates NaN
                    vh = vi
                vhat[i] = vh
                w[i] = wi - alpha * mi / (math.sqrt(vh) + eps)
            else:
                w[i] = wi - alpha * mi / (math.sqrt(vi) + eps)

    @_njit
    def _rmsprop_nb(w, g, ms, mg, mom, lr, rho, omrho, momentum, eps, decay, centered,
                    use_momentum):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            msi = rho * ms[i] + omrho * (gi * gi)
            ms[i] = msi
            denom = msi
            if centered:
                mgi = rho * mg[i] + omrho * gi
                mg[i] = mgi
                denom = msi - mgi * mgi
            if use_momentum:
                mi = momentum * mom[i] + lr * gi / math.sqrt(denom + eps)
                mom[i] = mi
                w[i] = wi - mi
            else:
                w[i] = wi - lr * gi / (math.sqrt(denom) + eps)

    @_njit
    def _adagrad_nb(w, g, acc, lr, eps, decay):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            ai = acc[i] + gi * gi
            acc[i] = ai
            w[i] = wi - lr * gi / (math.sqrt(ai) + eps)

    @_njit
    def _adadelta_nb(w, g, acc, accu, lr, rho, omrho, eps, decay):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            ai = rho * acc[i] + omrho * (gi * gi)
            acc[i] = ai
            ui = accu[i]
            upd = math.sqrt(ui + eps) / math.sqrt(ai + eps) * gi
            accu[i] = rho * ui + omrho * (upd * upd)
            w[i] = wi - lr * upd

    @_njit
    def _adamax_nb(w, g, m, u, alpha, b1, omb1, b2, eps, decay):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            mi = b1 * m[i] + omb1 * gi
            m[i] = mi
            ui = b2 * u[i]
            ag = abs(gi)
            if ag > ui or ag != ag:  # max(b2 * u, |g|), NaN propagating as np.maximum
                ui = ag
            u[i] = ui
            w[i] = wi - alpha * mi / (ui + eps)

    @_njit
    def _nadam_nb(w, g, m, v, lr, b1, omb1, b2, omb2, eps, om_sched_new, om_sched_next,
                  v_den, om_mt, mt1, decay):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            g_prime = gi / om_sched_new
            mi = b1 * m[i] + omb1 * gi
            m[i] = mi
            m_prime = mi / om_sched_next
            vi = b2 * v[i] + omb2 * (gi * gi)
            v[i] = vi
            v_prime = vi / v_den
            m_bar = om_mt * g_prime + mt1 * m_prime
            w[i] = wi - lr * m_bar / (math.sqrt(v_prime) + eps)

    @_njit
    def _lion_nb(w, g, m, lr, b1, omb1, b2, omb2, decay):
        for i in range(w.size):
            wi = _decayed(w[i], decay)
            gi = g[i]
            mi = m[i]
            c = b1 * mi + omb1 * gi
            if c > 0:
                wi = wi - lr
            elif c < 0:
                wi = wi + lr
            else:  # 0 leaves w alone, NaN propagates (as np.sign)
                wi = wi - lr * c
            w[i] = wi
            m[i] = b2 * mi + omb2 * gi


# ================================================================ CuPy kernels
_cupy_kernels = {}


def _cupy_kernel(key, in_params, out_params, body):
    k = _cupy_kernels.get(key)
    if k is None:
        k = _cupy().ElementwiseKernel(in_params, out_params, body, f"tnp_opt_{key[0]}")
        _cupy_kernels[key] = k
    return k


_DECAY = "if (decay != (T)0) w = w - decay * w;\n"


def _cupy_sgd(w, g, m, t, lr, mu, decay, nesterov):
    if m is None:
        k = _cupy_kernel(("sgd",), "T g, T lr, T decay", "T w", _DECAY + "w = w - lr * g;")
        k(g, t(lr), t(decay), w)
        return
    body = _DECAY + "m = mu * m - lr * g;\n" + (
        "w = w + (mu * m - lr * g);" if nesterov else "w = w + m;")
    k = _cupy_kernel(("sgd_momentum", nesterov), "T g, T lr, T mu, T decay", "T w, T m", body)
    k(g, t(lr), t(mu), t(decay), w, m)


# ================================================================ entry points
def sgd(w, g, m, lr, momentum, nesterov, decay):
    """SGD (TF 2.4): ``m = momentum * m - lr * g; w += m`` (Nesterov: ``w += momentum * m -
    lr * g``); without momentum (``m`` None) ``w -= lr * g``."""
    if uses_fused(w):
        t = w.dtype.type
        _sgd_nb(_flat(w), _flat(g), _flat(w if m is None else m), t(lr), t(momentum), t(decay),
                m is not None, bool(nesterov))
    elif _is_cupy(w):
        _cupy_sgd(w, g, m, w.dtype.type, lr, momentum, decay, bool(nesterov))
    else:
        sgd_generic(w, g, m, lr, momentum, nesterov, decay)


_MANY = 8      # variables per call of the fused multi-variable kernels (one compilation each)


def sgd_many(ws, gs, ms, lr, momentum, nesterov, checked=False):
    """:func:`sgd` (without decay) of several variables, what a compiled step's SGD update
    runs (``tnp.extend.backend_update``): ``ms`` the momentum slots (None without momentum),
    ``lr`` the rate as a float64 value. Where every array is a NumPy array of one float dtype
    and the variables and slots are C-contiguous and writeable, the fused kernel updates them
    all, whatever their sizes, :data:`_MANY` variables a call (the fused kernel and the NumPy
    path compute the same bits, so this is each variable's eager update); otherwise
    :func:`sgd` per variable, with the eager step's errors. ``checked``: the caller knows the
    dtypes and shapes are those (a compiled program's values have their traced ones)."""
    lr = float(lr)
    n = len(ws)
    if _numba is not None and n and (checked or _one_float_dtype(ws, gs, ms)) and \
            _all_writable(ws) and (ms is None or _all_writable(ms)):
        t = ws[0].dtype.type
        lr_t, mu_t = t(lr), t(momentum)
        wf = [w.reshape(-1) for w in ws]
        gf = [g.reshape(-1) for g in gs]     # a copy where a gradient is not contiguous
        mf = wf if ms is None else [m.reshape(-1) for m in ms]
        use_m, nest = ms is not None, bool(nesterov)
        for i in range(0, n, _MANY):
            j = i + _MANY
            _sgd_many_nb(tuple(wf[i:j]), tuple(gf[i:j]), tuple(mf[i:j]), lr_t, mu_t, use_m,
                         nest)
        return
    for i in range(n):
        sgd(ws[i], gs[i], None if ms is None else ms[i], lr, momentum, nesterov, 0.0)


def _all_writable(arrays):
    """Whether every array can be written through a flat view (C-contiguous, writeable)."""
    for a in arrays:
        f = a.flags
        if not (f.c_contiguous and f.writeable):
            return False
    return True


def _one_float_dtype(ws, gs, ms):
    """Whether the variables, gradients and slots are NumPy arrays of one float dtype, each
    gradient and slot of its variable's shape."""
    dt = ws[0].dtype
    if dt not in _FUSED_DTYPES:
        return False
    for i, w in enumerate(ws):
        g = gs[i]
        if type(w) is not np.ndarray or type(g) is not np.ndarray or w.dtype != dt or \
                g.dtype != dt or g.shape != w.shape:
            return False
        if ms is not None:
            m = ms[i]
            if type(m) is not np.ndarray or m.dtype != dt or m.shape != w.shape:
                return False
    return True


def sgd_generic(w, g, m, lr, momentum, nesterov, decay):
    """:func:`sgd` with array operators only: on NumPy arrays, or on tnp arrays in a function
    being compiled (the same operations, in the same order, as the fused kernel)."""
    if decay:
        w -= decay * w
    if m is None:
        w -= lr * g
    else:
        m *= momentum
        m -= lr * g
        if nesterov:
            w += momentum * m - lr * g
        else:
            w += m


def adam(w, g, m, v, vhat, alpha, beta_1, beta_2, epsilon, decay):
    """Adam (TF 2.4): ``m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; w -= alpha m / (sqrt(v) +
    eps)`` with ``alpha = lr sqrt(1 - b2^t) / (1 - b1^t)``; AMSGrad (``vhat`` not None) divides
    by ``sqrt(vhat)``, ``vhat = max(vhat, v)``."""
    if uses_fused(w):
        t = w.dtype.type
        _adam_nb(_flat(w), _flat(g), _flat(m), _flat(v), _flat(w if vhat is None else vhat),
                 t(alpha), t(beta_1), t(1 - beta_1), t(beta_2), t(1 - beta_2), t(epsilon),
                 t(decay), vhat is not None)
    elif _is_cupy(w):
        t = w.dtype.type
        ams = vhat is not None
        body = _DECAY + ("m = b1 * m + omb1 * g;\nv = b2 * v + omb2 * (g * g);\n" + (
            "vhat = max(vhat, v);\nw = w - alpha * m / (sqrt(vhat) + eps);" if ams else
            "w = w - alpha * m / (sqrt(v) + eps);"))
        k = _cupy_kernel(("adam", ams), "T g, T alpha, T b1, T omb1, T b2, T omb2, T eps, T decay",
                         "T w, T m, T v" + (", T vhat" if ams else ""), body)
        args = (g, t(alpha), t(beta_1), t(1 - beta_1), t(beta_2), t(1 - beta_2), t(epsilon),
                t(decay), w, m, v)
        k(*(args + (vhat,) if ams else args))
    else:
        adam_generic(w, g, m, v, vhat, alpha, beta_1, beta_2, epsilon, decay)


def _decay_and_moments(w, g, m, v, beta_1, beta_2, decay):
    """Adam's and Nadam's first steps in array operations: decoupled decay, then the moments."""
    if decay:
        w -= decay * w
    m *= beta_1
    m += (1 - beta_1) * g
    v *= beta_2
    v += (1 - beta_2) * (g * g)


def adam_generic(w, g, m, v, vhat, alpha, beta_1, beta_2, epsilon, decay):
    """:func:`adam` with array operations only (NumPy arrays, or tnp arrays in a function being
    compiled, where NumPy's functions dispatch to tnp)."""
    _decay_and_moments(w, g, m, v, beta_1, beta_2, decay)
    if vhat is not None:
        np.maximum(vhat, v, out=vhat)
        den = np.sqrt(vhat)
    else:
        den = np.sqrt(v)
    den += epsilon
    w -= alpha * m / den


def rmsprop(w, g, ms, mg, mom, lr, rho, momentum, epsilon, decay):
    """RMSprop (TF 2.4): ``ms = rho ms + (1-rho) g^2``; centered (``mg`` not None): ``mg = rho
    mg + (1-rho) g``, ``d = ms - mg^2``, else ``d = ms``; with momentum (``mom`` not None)
    ``mom = momentum mom + lr g / sqrt(d + eps); w -= mom``, else ``w -= lr g / (sqrt(d) +
    eps)`` (TF 2.4 puts epsilon inside the root only on the momentum path)."""
    centered, use_mom = mg is not None, mom is not None
    if uses_fused(w):
        t = w.dtype.type
        _rmsprop_nb(_flat(w), _flat(g), _flat(ms), _flat(mg if centered else w),
                    _flat(mom if use_mom else w), t(lr), t(rho), t(1 - rho), t(momentum),
                    t(epsilon), t(decay), centered, use_mom)
    elif _is_cupy(w):
        t = w.dtype.type
        body = _DECAY + "ms = rho * ms + omrho * (g * g);\nT d = ms;\n"
        if centered:
            body += "mg = rho * mg + omrho * g;\nd = ms - mg * mg;\n"
        body += ("mom = momentum * mom + lr * g / sqrt(d + eps);\nw = w - mom;" if use_mom else
                 "w = w - lr * g / (sqrt(d) + eps);")
        outs = "T w, T ms" + (", T mg" if centered else "") + (", T mom" if use_mom else "")
        k = _cupy_kernel(("rmsprop", centered, use_mom),
                         "T g, T lr, T rho, T omrho, T momentum, T eps, T decay", outs, body)
        args = [g, t(lr), t(rho), t(1 - rho), t(momentum), t(epsilon), t(decay), w, ms]
        args += ([mg] if centered else []) + ([mom] if use_mom else [])
        k(*args)
    else:
        if decay:
            w -= decay * w
        ms *= rho
        ms += (1 - rho) * (g * g)
        if centered:
            mg *= rho
            mg += (1 - rho) * g
            d = ms - mg * mg
        else:
            d = ms
        if use_mom:
            step = lr * g / np.sqrt(d + epsilon)
            mom *= momentum
            mom += step
            w -= mom
        else:
            den = np.sqrt(d)
            den += epsilon
            w -= lr * g / den


def adagrad(w, g, acc, lr, epsilon, decay):
    """Adagrad (TF 2.4): ``acc += g^2; w -= lr g / (sqrt(acc) + eps)``."""
    if uses_fused(w):
        t = w.dtype.type
        _adagrad_nb(_flat(w), _flat(g), _flat(acc), t(lr), t(epsilon), t(decay))
    elif _is_cupy(w):
        t = w.dtype.type
        k = _cupy_kernel(("adagrad",), "T g, T lr, T eps, T decay", "T w, T acc",
                         _DECAY + "acc = acc + g * g;\nw = w - lr * g / (sqrt(acc) + eps);")
        k(g, t(lr), t(epsilon), t(decay), w, acc)
    else:
        if decay:
            w -= decay * w
        acc += g * g
        den = np.sqrt(acc)
        den += epsilon
        w -= lr * g / den


def adadelta(w, g, acc, accu, lr, rho, epsilon, decay):
    """Adadelta (TF 2.4): ``acc = rho acc + (1-rho) g^2; u = sqrt(accu + eps) / sqrt(acc +
    eps) g; accu = rho accu + (1-rho) u^2; w -= lr u``."""
    if uses_fused(w):
        t = w.dtype.type
        _adadelta_nb(_flat(w), _flat(g), _flat(acc), _flat(accu), t(lr), t(rho), t(1 - rho),
                     t(epsilon), t(decay))
    elif _is_cupy(w):
        t = w.dtype.type
        body = _DECAY + ("acc = rho * acc + omrho * (g * g);\n"
                         "T u = sqrt(accu + eps) / sqrt(acc + eps) * g;\n"
                         "accu = rho * accu + omrho * (u * u);\nw = w - lr * u;")
        k = _cupy_kernel(("adadelta",), "T g, T lr, T rho, T omrho, T eps, T decay",
                         "T w, T acc, T accu", body)
        k(g, t(lr), t(rho), t(1 - rho), t(epsilon), t(decay), w, acc, accu)
    else:
        if decay:
            w -= decay * w
        acc *= rho
        acc += (1 - rho) * (g * g)
        upd = np.sqrt(accu + epsilon)
        upd /= np.sqrt(acc + epsilon)
        upd *= g
        accu *= rho
        accu += (1 - rho) * (upd * upd)
        upd *= lr
        w -= upd


def adamax(w, g, m, u, alpha, beta_1, beta_2, epsilon, decay):
    """Adamax (TF 2.4): ``m = b1 m + (1-b1) g; u = max(b2 u, |g|); w -= alpha m / (u + eps)``
    with ``alpha = lr / (1 - b1^t)``."""
    if uses_fused(w):
        t = w.dtype.type
        _adamax_nb(_flat(w), _flat(g), _flat(m), _flat(u), t(alpha), t(beta_1), t(1 - beta_1),
                   t(beta_2), t(epsilon), t(decay))
    elif _is_cupy(w):
        t = w.dtype.type
        body = _DECAY + ("m = b1 * m + omb1 * g;\nu = max(b2 * u, fabs(g));\n"
                         "w = w - alpha * m / (u + eps);")
        k = _cupy_kernel(("adamax",), "T g, T alpha, T b1, T omb1, T b2, T eps, T decay",
                         "T w, T m, T u", body)
        k(g, t(alpha), t(beta_1), t(1 - beta_1), t(beta_2), t(epsilon), t(decay), w, m, u)
    else:
        if decay:
            w -= decay * w
        m *= beta_1
        m += (1 - beta_1) * g
        u *= beta_2
        np.maximum(u, np.abs(g), out=u)
        den = u + epsilon
        w -= alpha * m / den


def nadam(w, g, m, v, lr, beta_1, beta_2, epsilon, coef, decay):
    """Nadam (TF 2.4). ``coef`` = (1 - m_schedule_new, 1 - m_schedule_next, 1 - b2^t,
    1 - mu_t, mu_{t+1}), computed once per step by the optimizer. ``g' = g / (1 - msn);
    m = b1 m + (1-b1) g; m' = m / (1 - msnext); v = b2 v + (1-b2) g^2; v' = v / (1 - b2^t);
    w -= lr ((1 - mu_t) g' + mu_{t+1} m') / (sqrt(v') + eps)``."""
    om_new, om_next, v_den, om_mt, mt1 = coef
    if uses_fused(w):
        t = w.dtype.type
        _nadam_nb(_flat(w), _flat(g), _flat(m), _flat(v), t(lr), t(beta_1), t(1 - beta_1),
                  t(beta_2), t(1 - beta_2), t(epsilon), t(om_new), t(om_next), t(v_den),
                  t(om_mt), t(mt1), t(decay))
    elif _is_cupy(w):
        t = w.dtype.type
        body = _DECAY + ("T gp = g / om_new;\nm = b1 * m + omb1 * g;\nT mp = m / om_next;\n"
                         "v = b2 * v + omb2 * (g * g);\nT vp = v / v_den;\n"
                         "w = w - lr * (om_mt * gp + mt1 * mp) / (sqrt(vp) + eps);")
        k = _cupy_kernel(("nadam",), "T g, T lr, T b1, T omb1, T b2, T omb2, T eps, T om_new, "
                         "T om_next, T v_den, T om_mt, T mt1, T decay", "T w, T m, T v", body)
        k(g, t(lr), t(beta_1), t(1 - beta_1), t(beta_2), t(1 - beta_2), t(epsilon), t(om_new),
          t(om_next), t(v_den), t(om_mt), t(mt1), t(decay), w, m, v)
    else:
        _decay_and_moments(w, g, m, v, beta_1, beta_2, decay)
        m_bar = om_mt * (g / om_new)
        m_bar += mt1 * (m / om_next)
        den = np.sqrt(v / v_den)
        den += epsilon
        w -= lr * m_bar / den


def lion(w, g, m, lr, beta_1, beta_2, decay):
    """Lion (Keras): ``w -= lr sign(b1 m + (1-b1) g); m = b2 m + (1-b2) g``."""
    if uses_fused(w):
        t = w.dtype.type
        _lion_nb(_flat(w), _flat(g), _flat(m), t(lr), t(beta_1), t(1 - beta_1), t(beta_2),
                 t(1 - beta_2), t(decay))
    elif _is_cupy(w):
        t = w.dtype.type
        body = _DECAY + ("T c = b1 * m + omb1 * g;\n"
                         "w = w - lr * (c > (T)0 ? (T)1 : (c < (T)0 ? (T)-1 : c));\n"
                         "m = b2 * m + omb2 * g;")
        k = _cupy_kernel(("lion",), "T g, T lr, T b1, T omb1, T b2, T omb2, T decay", "T w, T m",
                         body)
        k(g, t(lr), t(beta_1), t(1 - beta_1), t(beta_2), t(1 - beta_2), t(decay), w, m)
    else:
        if decay:
            w -= decay * w
        c = beta_1 * m
        c += (1 - beta_1) * g
        c = np.sign(c)      # not out=c: NumPy's in-place sign is ~20x slower
        c *= lr
        w -= c
        m *= beta_2
        m += (1 - beta_2) * g
