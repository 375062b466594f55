"""TF 2.4's tf.data names that describe datasets rather than transform them: ``DatasetSpec``,
``Iterator``, the cardinality constants and ``ThreadingOptions``, with the values TF 2.21 gives
on the same pipelines (``tf.data.Dataset.range(5)``)."""
import tnp_train as tt


def test_dataset_spec_is_the_element_spec_of_a_dataset_of_datasets():
    ds = tt.data.Dataset.range(5)
    spec = ds.window(2).element_spec
    assert isinstance(spec, tt.data.DatasetSpec)
    assert spec == tt.data.DatasetSpec(ds.element_spec)           # TF: True
    assert spec != tt.data.DatasetSpec(tt.data.Dataset.from_tensor_slices([1.0]).element_spec)


def test_iterator_is_what_iter_returns():
    it = iter(tt.data.Dataset.range(3))
    assert isinstance(it, tt.data.Iterator)                       # TF: True
    assert it.element_spec == tt.data.Dataset.range(3).element_spec
    assert [int(v) for v in it] == [0, 1, 2]


def test_cardinality_constants():
    ds = tt.data.Dataset.range(5)
    assert tt.data.experimental.INFINITE_CARDINALITY == tt.data.INFINITE_CARDINALITY == -1
    assert tt.data.experimental.UNKNOWN_CARDINALITY == tt.data.UNKNOWN_CARDINALITY == -2
    assert int(ds.repeat().cardinality()) == tt.data.experimental.INFINITE_CARDINALITY
    assert int(ds.filter(lambda x: x > 1).cardinality()) == tt.data.experimental.UNKNOWN_CARDINALITY
    assert int(tt.data.experimental.cardinality(ds)) == 5


def test_threading_options_defaults_and_settings():
    opts = tt.data.experimental.ThreadingOptions()
    assert opts.private_threadpool_size is None                   # TF: None, None
    assert opts.max_intra_op_parallelism is None
    o = tt.data.Options()
    assert isinstance(o.experimental_threading, tt.data.experimental.ThreadingOptions)
    o.experimental_threading.private_threadpool_size = 2
    assert o.experimental_threading.private_threadpool_size == 2
