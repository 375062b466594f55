"""Gradients through in-place NumPy code (issue 17 item 6): every pattern is checked against
finite differences (``check_grads``) and against the same program written out of place; the
error cases are PyTorch's rule (a value a rule reads, overwritten afterwards, makes
``gradient`` raise naming the operation and the shape)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tnp
import tnp_train as tt
from tnp_train.autodiff import inplace as inp
from tnp_train.autodiff import registry
from tnp_train.autodiff.check import check_grads


def R(*shape, seed=0):
    return tnp.asarray(np.random.default_rng(seed).standard_normal(shape))


def grads(f, *args):
    with tt.GradientTape() as tape:
        tape.watch(list(args))
        y = f(*args)
    return tape.gradient(y, list(args))


def same(f_in, f_out, *args, order=1, fd=True):
    """``f_in`` (written in place) has the values and the tape gradients of ``f_out`` (written
    out of place), and its gradients agree with finite differences."""
    np.testing.assert_allclose(np.asarray(f_in(*args)), np.asarray(f_out(*args)), rtol=1e-12)
    for gi, go in zip(grads(lambda *a: tnp.sum(f_in(*a) ** 2), *args),
                      grads(lambda *a: tnp.sum(f_out(*a) ** 2), *args)):
        if go is None:
            assert gi is None or not np.any(np.asarray(gi))
        else:
            np.testing.assert_allclose(np.asarray(gi), np.asarray(go), rtol=1e-10, atol=1e-12)
    if fd:
        check_grads(f_in, order=order)(*args)


def onehot_mask(shape, idx):
    m = np.zeros(shape, bool)
    m[idx] = True
    return m


# ---------------------------------------------------------------------------- operators
X, W, B = R(4, 3), R(3, 3, seed=1), R(3, seed=2)


def test_bias_add_on_a_computed_array():
    def f_in(x, w, b):
        h = x @ w
        h += b
        return tnp.tanh(h)
    same(f_in, lambda x, w, b: tnp.tanh(x @ w + b), X, W, B, order=2)


@pytest.mark.parametrize("op", ["iadd", "isub", "imul", "itruediv", "ipow"])
def test_operators_with_a_constant(op):
    import operator
    c = 1.5 if op != "ipow" else 2

    def f_in(x):
        y = x * 1.0 + 3.0
        return getattr(operator, op)(y, c)
    f_out = {"iadd": lambda x: x * 1.0 + 3.0 + c, "isub": lambda x: x * 1.0 + 3.0 - c,
             "imul": lambda x: (x * 1.0 + 3.0) * c, "itruediv": lambda x: (x * 1.0 + 3.0) / c,
             "ipow": lambda x: (x * 1.0 + 3.0) ** c}[op]
    same(f_in, f_out, X, order=2)


@pytest.mark.parametrize("op", ["iadd", "isub", "imul", "itruediv"])
def test_operators_with_a_tracked_operand(op):
    import operator

    def f_in(x, b):
        y = x * 2.0
        y = getattr(operator, op)(y, b * b + 1.0)   # the old y is needed by *= and /=: copied
        return y * x
    f_out = {"iadd": operator.add, "isub": operator.sub, "imul": operator.mul,
             "itruediv": operator.truediv}[op]
    same(f_in, lambda x, b: f_out(x * 2.0, b * b + 1.0) * x, X, B, order=2)


def test_tracked_power_in_place():
    def f_in(x, b):
        y = x * x + 1.0
        y **= b
        return y
    same(f_in, lambda x, b: (x * x + 1.0) ** b, X, B * 0.5)


def test_matmul_in_place():
    def f_in(x, w):
        y = x * 1.0
        y @= w
        return y
    same(f_in, lambda x, w: x @ w, X, W)


def test_self_add_and_self_multiply():
    def f_in(x):
        y = x * 1.0
        y += y
        y *= y
        return y
    same(f_in, lambda x: (2 * x) * (2 * x), X, order=2)


def test_in_place_operators_through_numpy_functions():
    def f_in(x, b):
        y = x * 2.0
        np.add(y, b, out=y)          # NumPy's function on tnp arrays comes back to tnp
        np.multiply(y, b, out=y)
        return y
    same(f_in, lambda x, b: (x * 2.0 + b) * b, X, B)


# ---------------------------------------------------------------------------- item assignment
MASK = np.asarray(np.random.default_rng(5).random((4, 3)) > 0.5)


def test_masked_assignment_of_a_constant():
    def f_in(x):
        y = x * x
        y[tnp.asarray(MASK)] = 0.0
        return y
    same(f_in, lambda x: tnp.where(tnp.asarray(MASK), 0.0, x * x), X, order=2)


def test_masked_assignment_of_tracked_values():
    def f_in(x, w):
        y = x * 1.0
        z = tnp.sin(w[:1] + x)
        y[MASK] = z[MASK]
        return y
    same(f_in, lambda x, w: tnp.where(tnp.asarray(MASK), tnp.sin(w[:1] + x), x * 1.0), X, W, order=2)


def test_slice_assignment_of_tracked_values():
    def f_in(x, b):
        y = x * 1.0
        y[1:3] = tnp.exp(b)              # broadcast over the rows
        y[:, 0] = b[0] * 2.0             # a 0-d tracked value broadcast down a column
        return y
    def f_out(x, b):
        rows = tnp.concatenate([x[:1], tnp.broadcast_to(tnp.exp(b), (2, 3)), x[3:]])
        col = tnp.asarray(np.arange(3) == 0)
        return tnp.where(col, b[0] * 2.0, rows)
    same(f_in, f_out, X, B, order=2)


def test_repeated_advanced_index_last_write_wins():
    idx = [0, 2, 0]

    def f_in(x, b):
        y = x[0] * 1.0
        y[idx] = b                       # NumPy keeps the last write to y[0]: b[2]
        return y
    same(f_in, lambda x, b: tnp.stack([b[2], x[0, 1], b[1]]), X, B)


def test_fill_with_a_tracked_scalar():
    def f_in(x, b):
        y = x * 1.0
        y.fill(b[1])
        return y * x
    same(f_in, lambda x, b: tnp.broadcast_to(b[1], (4, 3)) * x, X, B)


def test_shift_with_overlapping_source_and_target():
    def f_in(x):
        y = x[:, 0] * 1.0
        y[1:] = y[:-1]                   # NumPy copies the overlapping source first
        return y
    same(f_in, lambda x: tnp.concatenate([x[:1, 0], x[:-1, 0]]), X)


# ---------------------------------------------------------------------------- out=
def test_out_into_a_preallocated_array():
    def f_in(x, w):
        o = tnp.empty((4, 3))
        tnp.matmul(x, w, out=o)
        tnp.tanh(o, out=o)               # tanh reads its output: the rule gets it unchanged
        return o
    same(f_in, lambda x, w: tnp.tanh(x @ w), X, W, order=2)


def test_out_of_a_reduction_and_exp_into_its_input():
    def f_in(x):
        s = tnp.zeros(3)
        tnp.sum(x, axis=0, out=s)
        y = x * 1.0
        tnp.exp(y, out=y)
        return y * s
    same(f_in, lambda x: tnp.exp(x) * tnp.sum(x, axis=0), X, order=2)


def test_relu_and_clip_written_into_their_input():
    def relu(x, w):
        h = x @ w
        tnp.maximum(h, 0.0, out=h)         # maximum reads its input: the old h is copied
        return h

    def clip(x, w):
        h = x @ w
        tnp.clip(h, -0.5, 0.5, h)          # the output given positionally
        return h
    same(relu, lambda x, w: tnp.maximum(x @ w, 0.0), X, W)
    same(clip, lambda x, w: tnp.clip(x @ w, -0.5, 0.5), X, W)
    # maximum's rule reads its output: writing into it again is PyTorch's error, here too
    with tt.GradientTape() as tape:
        tape.watch(X)
        h = X * 1.0
        tnp.maximum(h, 0.0, out=h)
        tnp.clip(h, -0.5, 0.5, h)
        loss = tnp.sum(h)
    with pytest.raises(RuntimeError, match=r"tnp\.maximum.*shape \(4, 3\)"):
        tape.gradient(loss, X)


def test_out_of_a_piecewise_constant_op_cuts_the_gradient():
    def f_in(x):
        y = x * 3.0
        tnp.floor(y, out=y)
        return y * x
    same(f_in, lambda x: tnp.floor(x * 3.0) * x, X)


# ---------------------------------------------------------------------------- in-place functions
IDX = np.asarray([0, 3, 3, 7, 11])


def test_add_at_and_subtract_at_accumulate_repeated_indices():
    def f_in(x, b):
        y = x.reshape(-1) * 1.0
        tnp.add.at(y, IDX, tnp.concatenate([b, b[:2]]))
        tnp.subtract.at(y, [1, 1], b[0])
        return y
    def f_out(x, b):
        v = tnp.concatenate([b, b[:2]])
        add = sum(tnp.where(tnp.arange(12) == i, v[k], 0.0) for k, i in enumerate(IDX))
        sub = tnp.where(tnp.arange(12) == 1, 2 * b[0], 0.0)
        return x.reshape(-1) + add - sub
    same(f_in, f_out, X, B, order=2)


def test_copyto_with_where():
    def f_in(x, w):
        y = x * 1.0
        tnp.copyto(y, w[0] * 2.0, where=MASK)
        return y
    same(f_in, lambda x, w: tnp.where(tnp.asarray(MASK), w[0] * 2.0, x), X, W)


def test_put_place_putmask():
    def f_in(x, b):
        y = x.reshape(-1) * 1.0
        tnp.put(y, [0, 5, 5, 9], b)                 # values cycle: b[0], b[1], b[2], b[0]
        tnp.place(y, tnp.asarray(np.arange(12) % 4 == 1), b[:2])
        tnp.putmask(y, tnp.asarray(np.arange(12) > 9), b * 3.0)
        return y
    def f_out(x, b):
        i = tnp.arange(12)
        y = x.reshape(-1)
        y = tnp.where(i == 0, b[0], y)
        y = tnp.where(i == 5, b[2], y)
        y = tnp.where(i == 9, b[0], y)
        y = tnp.where(i == 1, b[0], tnp.where(i == 5, b[1], tnp.where(i == 9, b[0], y)))
        p = tnp.tile(b * 3.0, 4)                  # putmask: values[n % len] at position n
        return tnp.where(i > 9, p, y)
    same(f_in, f_out, X, B)


def test_put_along_axis_fill_diagonal_and_the_put_method():
    def f_in(w, b):
        y = w * 1.0
        tnp.put_along_axis(y, tnp.asarray([[2], [0], [1]]), b[:, None], axis=1)
        tnp.fill_diagonal(y, b * b)
        y.put([1], b[0] * 5.0)
        return y
    def f_out(w, b):
        cols = tnp.asarray([[2], [0], [1]])
        j = tnp.arange(3)[None, :]
        y = tnp.where(j == cols, b[:, None], w)
        y = tnp.where(tnp.eye(3, dtype=bool), (b * b)[None, :], y)
        return tnp.where(tnp.arange(9).reshape(3, 3) == 1, b[0] * 5.0, y)
    same(f_in, f_out, W, B)


def test_sort_and_partition_in_place():
    def f_in(x):
        y = x * 2.0
        y.sort(axis=0)
        z = x[:, 1] * 1.0
        z.partition(2)
        return tnp.concatenate([y.reshape(-1), z[2:3]])
    same(f_in, lambda x: tnp.concatenate([tnp.sort(x * 2.0, axis=0).reshape(-1),
                                          tnp.sort(x[:, 1])[2:3]]), X)


# ---------------------------------------------------------------------------- loops
def test_cumulative_update_in_a_loop():
    def f_in(x, w):
        acc = tnp.zeros(3)
        for i in range(4):
            acc += x[i] @ w
            acc *= 0.5
        return acc
    def f_out(x, w):
        acc = tnp.zeros(3)
        for i in range(4):
            acc = (acc + x[i] @ w) * 0.5
        return acc
    same(f_in, f_out, X, W, order=2)


def test_rows_written_one_by_one_into_a_preallocated_array():
    def f_in(x, w):
        out = tnp.zeros((4, 3))
        h = tnp.zeros(3)
        for i in range(4):
            h = tnp.tanh(x[i] + h @ w)
            out[i] = h
        return out
    def f_out(x, w):
        rows, h = [], tnp.zeros(3)
        for i in range(4):
            h = tnp.tanh(x[i] + h @ w)
            rows.append(h)
        return tnp.stack(rows)
    same(f_in, f_out, X, W)


def test_recurrence_that_reads_the_previous_row_of_the_array_it_writes():
    def f_in(x, w):
        out = tnp.zeros((40, 3))
        out[0] = x[0]
        for i in range(1, 40):
            out[i] = tnp.tanh(out[i - 1] @ w + x[i % 4])   # out[i - 1] is a view of out
        return out[::13]
    def f_out(x, w):
        rows = [x[0]]
        for i in range(1, 40):
            rows.append(tnp.tanh(rows[-1] @ w + x[i % 4]))
        return tnp.stack(rows)[::13]
    same(f_in, f_out, X, W * 0.5)


# ---------------------------------------------------------------------------- views
def test_a_view_written_through_changes_its_base():
    def f_in(x, b):
        y = x * 1.0
        v = y[1:, ::2]                   # a strided view
        v *= b[:2]
        return y
    def f_out(x, b):
        sel = tnp.asarray(np.arange(4)[:, None] >= 1) & tnp.asarray(np.arange(3)[None, :] % 2 == 0)
        fac = tnp.stack([b[0], 1.0 + 0 * b[0], b[1]])
        return tnp.where(sel, x * fac, x)
    same(f_in, f_out, X, B, order=2)


def test_transpose_and_reshape_views_written_through():
    def f_in(x, b):
        y = x * 1.0
        y.T[0] = b[0] * 3.0               # column 0 through the transpose
        y.reshape(-1)[1::4] = b[1]        # a reshape view, every 4th element
        return y
    def f_out(x, b):
        flat = tnp.arange(12).reshape(4, 3)
        y = tnp.where(flat % 3 == 0, b[0] * 3.0, x)
        return tnp.where(flat % 4 == 1, b[1], y)
    same(f_in, f_out, X, B)


def test_a_view_read_after_its_base_was_written():
    def f_in(x, b):
        y = x * 1.0
        v = y[:2]                         # made before the write
        y[0] = b
        return v * 2.0
    same(f_in, lambda x, b: tnp.stack([b, x[1]]) * 2.0, X, B)


def test_untracked_view_of_a_buffer_that_receives_tracked_values():
    def f_in(x):
        buf = tnp.zeros(12)
        v = buf[2:6]                      # an untracked view, made before any write
        buf[:] = x.reshape(-1) * 2.0
        return v * v
    same(f_in, lambda x: (x.reshape(-1)[2:6] * 2.0) ** 2, X)


def test_untracked_views_read_inside_a_list_or_by_keyword():
    def f_in(x):
        buf = tnp.zeros(12)
        v, u = buf[:4], buf[4:8]
        buf[:] = x.reshape(-1) * 2.0
        return tnp.stack([v, u]) + tnp.sum(a=u)
    def f_out(x):
        y = x.reshape(-1) * 2.0
        return tnp.stack([y[:4], y[4:8]]) + tnp.sum(y[4:8])
    same(f_in, f_out, X)


def test_view_of_a_view_and_a_write_into_the_base_seen_by_both():
    def f_in(x):
        y = x.reshape(-1) * 1.0
        a = y[2:10]
        c = a[::2]
        y[4:6] = 0.0
        return c * a[:4].sum()
    def f_out(x):
        y = tnp.where((tnp.arange(12) >= 4) & (tnp.arange(12) < 6), 0.0, x.reshape(-1))
        return y[2:10][::2] * y[2:6].sum()
    same(f_in, f_out, X)


def test_values_written_into_an_integer_array_carry_no_gradient():
    def f_in(x):
        i = tnp.zeros(3, dtype=tnp.int64)
        i[:] = x[0] * 10.0                 # truncated to integers, as NumPy does
        return x[1] * i
    same(f_in, lambda x: x[1] * (x[0] * 10.0).astype(tnp.int64), X, fd=False)
    assert grads(lambda x: tnp.sum(f_in(x)), X)[0][0].tolist() == [0.0, 0.0, 0.0]


def test_write_into_a_watched_leaf_differentiates_its_value_when_watched():
    # PyTorch refuses in-place writes into a leaf that requires grad; we allow them: the
    # gradient is with respect to the value the leaf had when it was watched
    x0 = R(5, seed=9)
    x = x0.copy()
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = (x * 2.0) ** 2                 # x itself is not saved (x * x would be)
        x[1:3] = 7.0
        loss = tnp.sum(y) + tnp.sum(x * 3.0)
    g = tape.gradient(loss, x)
    X0 = np.asarray(x0)
    expected = 8 * X0 + np.where((np.arange(5) >= 1) & (np.arange(5) < 3), 0.0, 3.0)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-12)


def test_stop_gradient_alias_written_into_stays_detached():
    def f_in(x):
        y = x * 2.0
        s = tt.stop_gradient(y)           # the same memory, no history
        s[0] = 1.0                        # y's values change too, as in NumPy
        return y * s
    def f_out(x):
        y = tnp.where(tnp.arange(4)[:, None] == 0, 1.0, x * 2.0)
        return y * tt.stop_gradient(y)
    same(f_in, f_out, X, fd=False)   # finite differences see through stop_gradient


def test_write_after_the_block_and_jacobian_of_a_persistent_tape():
    x = R(3, seed=6)
    with tt.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
    y[1] = 0.0                             # after the block: the tape still follows y
    y *= x
    J = tape.jacobian(y, x)                # d(2 x_i x_i or 0)/dx_j, twice from one tape
    np.testing.assert_allclose(np.asarray(J), np.diag(np.where(np.arange(3) == 1, 0.0, 4 * np.asarray(x))),
                               rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tape.gradient(y, x)), np.diag(np.asarray(J)), rtol=1e-12)


# ---------------------------------------------------------------------------- Keras
def test_keras_custom_training_step_adds_the_regularization_losses_in_place():
    def run(in_place):
        tt.utils.set_random_seed(3)
        model = tt.Sequential([tt.Input((3,)), tt.layers.Dense(
            4, activation="relu", kernel_regularizer=tt.regularizers.l2(0.1)),
            tt.layers.Dense(2, bias_regularizer=tt.regularizers.l1(0.05))])
        loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True)
        x = tnp.asarray(np.asarray(X, dtype=np.float32))
        y = tnp.asarray([0, 1, 1, 0])
        with tt.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
            assert type(loss) is tnp.ndarray and loss.ndim == 0   # a 0-d array: += writes
            if in_place:
                loss += sum(model.losses)
            else:
                loss = loss + sum(model.losses)
        return float(loss), tape.gradient(loss, model.trainable_variables)
    (l1, g1), (l2, g2) = run(True), run(False)
    assert l1 == pytest.approx(l2, rel=1e-6)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------- errors
def test_overwritten_saved_value_raises_naming_the_op_and_shape():
    x = R(3, 2)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        z = y * y                          # multiply saves y
        y += 1.0
        loss = tnp.sum(z)
    with pytest.raises(RuntimeError, match=r"tnp\.multiply.*shape \(3, 2\).*modified in place"):
        tape.gradient(loss, x)


def test_a_saved_view_survives_writes_into_other_elements_of_its_buffer():
    # one version counter per buffer (PyTorch's) would refuse these; the elements tell
    def f_in(x):
        y = x.reshape(-1) * 1.0
        z = tnp.exp(y[::2])                # exp keeps its output, y[::2] is read by exp
        w = tnp.sin(y[::2])                # sin reads its input y[::2]
        y[1::2] = 0.0                      # interleaved with the saved elements, none of them
        return z + w + y[::2] + y[1::2]
    same(f_in, lambda x: tnp.exp(x.reshape(-1)[::2]) + tnp.sin(x.reshape(-1)[::2]) +
         x.reshape(-1)[::2], X)
    x = R(6)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x * 1.0
        w = tnp.sin(y[0:2])
        y[1:3] = 0.0                       # element 1 was saved by sin
        loss = tnp.sum(w)
    with pytest.raises(RuntimeError, match=r"tnp\.sin.*shape \(2,\).*modified in place"):
        tape.gradient(loss, x)


def test_overwritten_output_that_the_rule_reads_raises():
    x = R(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        h = tnp.exp(x)                     # exp's rule reads its output
        h[0] = 0.0
        loss = tnp.sum(h)
    with pytest.raises(RuntimeError, match=r"tnp\.exp.*shape \(4,\).*modified in place"):
        tape.gradient(loss, x)


def test_hand_written_backward_that_keeps_its_output_raises():
    x = R(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        h = tt.activations.sigmoid(x)      # its backward reads the output it keeps
        h *= 2.0
        loss = tnp.sum(h)
    with pytest.raises(RuntimeError, match=r"custom_gradient.*shape \(4,\)"):
        tape.gradient(loss, x)


def test_a_mask_passed_by_keyword_and_overwritten_raises():
    x = R(4)
    m = tnp.asarray([True, False, True, True])
    with tt.GradientTape() as tape:
        tape.watch(x)
        loss = tnp.sum(x * 2.0, where=m)
    m[0] = False                           # the rule of sum multiplies by this mask
    with pytest.raises(RuntimeError, match=r"tnp\.sum.*shape \(4,\).*dtype bool"):
        tape.gradient(loss, x)


def test_write_the_tape_did_not_record_raises():
    x = R(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        with tape.stop_recording():
            y[0] = 5.0                     # invisible to the tape
        loss = tnp.sum(y * 3.0)
    with pytest.raises(RuntimeError, match="did not record"):
        tape.gradient(loss, x)


def test_unsupported_in_place_function_is_refused_before_writing():
    x = R(4)
    with tt.GradientTape() as tape:
        tape.watch(x)
        y = x * 1.0
        before = np.asarray(y).copy()
        with pytest.raises(RuntimeError, match=r"multiply\.at.*shape \(4,\)"):
            tnp.multiply.at(y, [0], 2.0)
        np.testing.assert_array_equal(np.asarray(y), before)   # nothing written
        with pytest.raises(RuntimeError, match=r"out=, where="):
            tnp.add(x, 1.0, out=y, where=tnp.asarray([True, False, True, False]))


def test_writes_that_involve_no_tracked_array_record_nothing():
    x = R(3)
    with tt.GradientTape() as tape:
        tape.watch(x)
        c = tnp.zeros(3)
        c[0] = 1.0
        c += 2.0
        y = tnp.sum(x * c)
    assert [n.name for n in tape._nodes] == ["multiply", "sum"]
    np.testing.assert_array_equal(np.asarray(tape.gradient(y, x)), np.asarray(c))


# ---------------------------------------------------------------------------- second order
def test_second_order_through_in_place_code():
    x = R(3, seed=4)
    with tt.GradientTape() as outer:
        outer.watch(x)
        with tt.GradientTape() as inner:
            inner.watch(x)
            y = x * 1.0
            y *= x                         # the old y (x) is copied for x's gradient
            y[0] = 0.0
            loss = tnp.sum(y * x)          # sum(x**3) without element 0
        g = inner.gradient(loss, x)
    h = outer.gradient(g, x)
    X_ = np.asarray(x)
    np.testing.assert_allclose(np.asarray(g), np.where(np.arange(3) == 0, 0, 3 * X_ ** 2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(h), np.where(np.arange(3) == 0, 0, 6 * X_), rtol=1e-12)


# ---------------------------------------------------------------------------- generated
@settings(max_examples=25, deadline=None)
@given(st.data())
def test_random_slice_and_mask_writes(data):
    shape = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    rng = np.random.default_rng(data.draw(st.integers(0, 10 ** 6)))
    x = tnp.asarray(rng.standard_normal(shape))
    z = tnp.asarray(rng.standard_normal(shape))
    r0 = data.draw(st.integers(0, shape[0] - 1))
    r1 = data.draw(st.integers(r0 + 1, shape[0]))
    step = data.draw(st.integers(1, 2))
    mask = rng.random(shape) > 0.5

    def f_in(x, z):
        y = x * 1.0
        y[r0:r1:step] = tnp.sin(z[r0:r1:step])
        y[mask] *= 2.0                      # a read-modify-write through a boolean index
        return y
    def f_out(x, z):
        rows = np.zeros(shape, bool)
        rows[r0:r1:step] = True
        y = tnp.where(tnp.asarray(rows), tnp.sin(z), x)
        return tnp.where(tnp.asarray(mask), y * 2.0, y)
    same(f_in, f_out, x, z)


# ---------------------------------------------------------------------------- the READS table
def _perturbed(a, rng):
    return tnp.asarray(rng.standard_normal(a.shape) + 3.0)


_CALLS = {
    "add": (lambda a, b: a + b, 2), "subtract": (lambda a, b: a - b, 2),
    "negative": (lambda a: -a, 1), "positive": (lambda a: +a, 1),
    "conjugate": (tnp.conjugate, 1),
    "multiply": (lambda a, b: a * b, 2), "divide": (lambda a, b: a / (b + 3.0), 2),
    "matmul": (lambda a, b: a @ b, 2), "dot": (tnp.dot, 2),
    "square": (tnp.square, 1), "absolute": (tnp.absolute, 1), "log": (lambda a: tnp.log(a + 9.0), 1),
    "sin": (tnp.sin, 1), "cos": (tnp.cos, 1),
    "sum": (lambda a: tnp.sum(a, axis=0), 1), "mean": (lambda a: tnp.mean(a, axis=1), 1),
    "cumsum": (lambda a: tnp.cumsum(a, axis=0), 1),
    "reshape": (lambda a: a.reshape(-1), 1), "ravel": (tnp.ravel, 1),
    "squeeze": (lambda a: tnp.squeeze(a[None]), 1), "expand_dims": (lambda a: tnp.expand_dims(a, 0), 1),
    "transpose": (tnp.transpose, 1), "matrix_transpose": (lambda a: a.mT, 1),
    "swapaxes": (lambda a: tnp.swapaxes(a, 0, 1), 1), "moveaxis": (lambda a: tnp.moveaxis(a, 0, 1), 1),
    "broadcast_to": (lambda a: tnp.broadcast_to(a, (2, 3, 3)), 1), "copy": (tnp.copy, 1),
    "astype": (lambda a: a.astype(np.float32), 1),
    "concatenate": (lambda a: tnp.concatenate([a, a]), 1), "stack": (lambda a: tnp.stack([a, a]), 1),
    "getitem": (lambda a: a[1:, [0, 2]], 1), "where": (lambda a, b: tnp.where(a > 0, a, b), 2),
}


@pytest.mark.parametrize("name", sorted(inp.READS))
def test_reads_table_entries_do_not_read_what_they_say(name):
    """A rule given values it is declared not to read (and a different output) returns the
    same cotangents: the version check may skip them."""
    assert name in _CALLS, f"add a call for {name} to this test"
    fn, n = _CALLS[name]
    rng = np.random.default_rng(1)
    args = [R(3, 3, seed=11 + i) for i in range(n)]
    with tt.GradientTape() as tape:
        tape.watch(args)
        fn(*args)
    node = next(nd for nd in tape._nodes if nd.name == name)
    rule = registry.VJPS[name]
    g = tnp.asarray(rng.standard_normal(np.shape(node.result)))
    for pos, _, _ in node.inputs:
        reads = inp.READS[name].get(pos)
        assert reads is not None
        r = rule.for_position(pos)
        base = r(node.result, *node.args, **node.kwargs)(g)
        changed = [(_perturbed(a, rng) if isinstance(a, tnp.ndarray) and i not in reads else a)
                   for i, a in enumerate(node.args)]
        changed = [([_perturbed(e, rng) for e in a] if isinstance(a, list) and i not in reads else a)
                   for i, a in enumerate(changed)]
        ans = _perturbed(node.result, rng)
        other = r(ans, *changed, **node.kwargs)(g)
        np.testing.assert_array_equal(np.asarray(other), np.asarray(base))
