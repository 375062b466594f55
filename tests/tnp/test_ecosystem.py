"""tnp arrays handed to pandas and SciPy (issue 17, item 3): each case of the issue either works
(compared with the same call on NumPy arrays) or is pinned as the library's own refusal of a
non-``numpy.ndarray`` together with the one-line workaround docs/differences.md gives
(``x.numpy()``: a zero-copy NumPy view on the CPU). Pickling, deepcopy and multiprocessing keep
working."""
import copy
import multiprocessing
import pickle

import numpy as np
import pytest

import tnp

pd = pytest.importorskip("pandas")


@pytest.fixture
def frame():
    return pd.DataFrame({"a": np.arange(5.0), "b": list("abcde")})


# ---------------------------------------------------------------------------- pandas: works
def test_index_cut_and_constructors_take_tnp_arrays(frame):
    x = tnp.arange(5.0)
    pd.testing.assert_index_equal(pd.Index(x), pd.Index(np.arange(5.0)))
    pd.testing.assert_series_equal(pd.Series(pd.cut(x, 3)), pd.Series(pd.cut(np.arange(5.0), 3)))
    pd.testing.assert_frame_equal(pd.DataFrame(tnp.arange(6.0).reshape(3, 2)),
                                  pd.DataFrame(np.arange(6.0).reshape(3, 2)))
    pd.testing.assert_frame_equal(frame.assign(c=x), frame.assign(c=np.arange(5.0)))
    pd.testing.assert_frame_equal(frame.iloc[tnp.asarray([0, 2])], frame.iloc[np.array([0, 2])])


def test_tnp_reductions_of_pandas_objects_are_pandas_numbers(frame):
    # np.mean(series) is series.mean(): a NumPy float, so a float column stays float
    s = frame["a"]
    assert type(tnp.mean(s)) is type(np.mean(s)) and tnp.mean(s) == np.mean(s)
    assert tnp.std(s) == np.std(s) and tnp.max(s) == np.max(s)
    assert frame.assign(m=tnp.mean(s))["m"].dtype == np.float64
    assert frame[["a"]].apply(tnp.mean).dtype == frame[["a"]].apply(np.mean).dtype == np.float64
    g = frame.assign(k=[0, 0, 1, 1, 1]).groupby("k")["a"]
    pd.testing.assert_series_equal(g.agg(tnp.mean), g.agg(np.mean))


def test_element_wise_functions_applied_by_pandas_keep_float_columns(frame):
    # pandas hands each element (a Python or NumPy number) to the function: no tnp array in, so
    # tnp returns NumPy's number and the column is float, as with NumPy
    s = frame["a"] + 1.0
    for f in (lambda xp: s.apply(xp.sqrt), lambda xp: s.map(xp.log),
              lambda xp: s.apply(lambda v: xp.exp(v) + xp.square(v)),
              lambda xp: frame[["a"]].apply(lambda c: xp.sum(c) / xp.max(c), axis=0)):
        pd.testing.assert_series_equal(f(tnp), f(np))
    assert s.apply(tnp.sqrt).dtype == np.float64


def test_functions_of_pandas_objects_return_what_numpy_returns(frame):
    # given another library's array-like and no tnp array, tnp returns NumPy's result (a NumPy
    # array for np.nan_to_num(series)), so code composing calls inside a pandas aggregation
    # keeps float columns (TheAlgorithms' k_means_clust.py report)
    s = pd.Series([1.0, np.nan, 3.0, 0.0])
    for f in (lambda xp: xp.nan_to_num(s), lambda xp: xp.sort(s), lambda xp: xp.cumsum(s),
              lambda xp: xp.mean(xp.nan_to_num(s))):
        r, e = f(tnp), f(np)
        assert type(r) is type(e)
        np.testing.assert_array_equal(r, e)
    g = frame.assign(k=[0, 0, 1, 1, 1]).groupby("k")["a"]

    def report(xp):
        return g.agg([("mean_with_zeros", lambda x: xp.mean(xp.nan_to_num(x)))])
    pd.testing.assert_frame_equal(report(tnp), report(np))
    assert tnp.asarray(s).__class__ is tnp.ndarray      # asking for a tnp array still gives one
    # a Python list is tnp's input like any other: np.nan_to_num(list) is a tnp array, its mean
    # a tnp scalar, which pandas' is_float_object does not take (object column); float(...)
    # is the workaround docs/differences.md gives
    mid = g.agg(lambda x: tnp.mean(tnp.nan_to_num(sorted(x)[1:])))
    assert mid.dtype == object
    mid = g.agg(lambda x: float(tnp.mean(tnp.nan_to_num(sorted(x)[1:]))))
    pd.testing.assert_series_equal(mid, g.agg(lambda x: np.mean(np.nan_to_num(sorted(x)[1:]))))


def test_setting_a_tnp_scalar_into_a_float_cell_keeps_the_column_float(frame):
    x = tnp.arange(5.0)
    f = frame.copy()
    f.loc[0, "a"] = x.sum()           # pandas reads the value's .dtype: float64, no upcast
    assert f["a"].dtype == np.float64 and f.loc[0, "a"] == 10.0


def test_tnp_scalars_in_new_columns_are_objects_unless_converted(frame):
    # pandas asks isinstance(v, (float, np.floating)) (pandas/_libs/lib.pyx, maybe_convert_objects;
    # pandas/core/dtypes/cast.py, infer_dtype_from_scalar): a tnp scalar is neither
    x = tnp.arange(5.0)
    assert pd.Series([x.sum(), x.mean()]).dtype == object
    assert frame.assign(z=x.sum())["z"].dtype == object
    # the workaround: float(s) (or s.item())
    assert pd.Series([float(x.sum()), x.mean().item()]).dtype == np.float64
    assert frame.assign(z=float(x.sum()))["z"].dtype == np.float64


# ---------------------------------------------------------------------------- pandas: refused
def test_boolean_masks_are_read_as_labels_use_numpy(frame):
    # pandas/core/common.py, is_bool_indexer: only (Series, np.ndarray, Index, ExtensionArray)
    # are boolean indexers; a tnp array is taken for a list of labels
    mask = tnp.arange(5.0) > 1.5
    s = frame["a"]
    for index in (lambda k: frame[k], lambda k: frame.loc[k], lambda k: s[k], lambda k: s.loc[k]):
        with pytest.raises(KeyError):
            index(mask)
    ref = np.arange(5.0) > 1.5
    pd.testing.assert_frame_equal(frame[mask.numpy()], frame[ref])
    pd.testing.assert_frame_equal(frame.loc[mask.numpy()], frame.loc[ref])
    pd.testing.assert_series_equal(s[mask.numpy()], s[ref])


def test_groupby_by_a_tnp_array_use_numpy(frame):
    # pandas/core/groupby/grouper.py, Grouping: what is not (Series, Index, ExtensionArray,
    # np.ndarray) is a mapping function: ``grouping_vector = index.map(grouping_vector)``
    keys = tnp.asarray([0, 0, 1, 1, 1])
    with pytest.raises(TypeError, match="not callable"):
        frame["a"].groupby(keys).sum()
    pd.testing.assert_series_equal(frame["a"].groupby(keys.numpy()).sum(),
                                   frame["a"].groupby(np.array([0, 0, 1, 1, 1])).sum())


# ---------------------------------------------------------------------------- SciPy
so = pytest.importorskip("scipy.optimize")
sparse = pytest.importorskip("scipy.sparse")


def _fun(v):
    return tnp.sum((tnp.asarray(v) - 1.5) ** 2)


def _jac(v):
    return 2 * (tnp.asarray(v) - 1.5)


@pytest.mark.parametrize("method", ["BFGS", "CG", "TNC", "Newton-CG", "trust-constr"])
def test_minimize_with_tnp_objective_and_gradient(method):
    r = so.minimize(_fun, tnp.zeros(3), method=method, jac=_jac)
    ref = so.minimize(lambda v: np.sum((v - 1.5) ** 2), np.zeros(3), method=method,
                      jac=lambda v: 2 * (v - 1.5))
    np.testing.assert_allclose(np.asarray(r.x), ref.x, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("method", ["L-BFGS-B", "SLSQP"])
def test_compiled_minimizers_need_a_numpy_gradient(method):
    # scipy/optimize/_lbfgsb_py.py: ``_lbfgsb.setulb(m, x, low_bnd, upper_bnd, nbd, f, g, ...)``
    # and _slsqp_py.py ``slsqp(state_dict, fx, g, ...)`` are compiled and take numpy.ndarray only;
    # g is np.atleast_1d(jac(x)), which stays a tnp array (__array_function__)
    with pytest.raises(TypeError, match="must be numpy.ndarray"):
        so.minimize(_fun, np.zeros(3), method=method, jac=_jac)
    r = so.minimize(_fun, tnp.zeros(3), method=method, jac=lambda v: _jac(v).numpy())
    np.testing.assert_allclose(np.asarray(r.x), [1.5] * 3, rtol=1e-6)


def test_sparse_diags_of_a_tnp_array_use_numpy_or_a_list():
    # scipy/sparse/_construct.py, diags_array: one diagonal is recognised by
    # ``isscalarlike(diagonals[0])`` = np.isscalar(x) or isinstance(x, np.ndarray) and x.ndim == 0,
    # false for a tnp scalar
    x = tnp.arange(4.0)
    with pytest.raises(ValueError, match="Different number of diagonals and offsets"):
        sparse.diags(x)
    ref = sparse.diags(np.arange(4.0)).toarray()
    np.testing.assert_array_equal(sparse.diags(x.numpy()).toarray(), ref)
    np.testing.assert_array_equal(sparse.diags([x], [0]).toarray(), ref)
    np.testing.assert_array_equal(sparse.csr_matrix(tnp.eye(3)).toarray(), np.eye(3))
    np.testing.assert_array_equal(np.asarray(sparse.csr_matrix(np.eye(4)) @ x), np.arange(4.0))


# ---------------------------------------------------------------------------- pickle, copies, processes
def _values():
    return [tnp.arange(6.0).reshape(2, 3), tnp.arange(6.0)[::2], tnp.arange(3.0).sum(),
            tnp.asarray(np.array([(1, 2.0)], dtype=[("a", "i8"), ("b", "f8")])),
            tnp.asarray(np.array(["x", "yz"]))]


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_and_deepcopy_round_trip(protocol):
    for v in _values():
        for w in (pickle.loads(pickle.dumps(v, protocol=protocol)), copy.deepcopy(v), copy.copy(v)):
            assert type(w) is type(v) and w.dtype == v.dtype and w.shape == v.shape
            np.testing.assert_array_equal(np.asarray(w), np.asarray(v))
        assert not np.shares_memory(np.asarray(copy.deepcopy(v)), np.asarray(v)) or v.ndim == 0


def test_multiprocessing_workers_take_and_return_tnp_arrays():
    ctx = multiprocessing.get_context("spawn")   # a fresh interpreter: nothing inherited
    with ctx.Pool(1) as pool:
        sums = pool.map(tnp.sum, [tnp.arange(4.0), tnp.arange(5)])
        cums = pool.map(tnp.cumsum, [tnp.arange(4.0)])
    assert [type(s) for s in sums] == [tnp.Scalar, tnp.Scalar] and [float(s) for s in sums] == [6.0, 10.0]
    assert type(cums[0]) is tnp.ndarray and cums[0].tolist() == [0.0, 1.0, 3.0, 6.0]
