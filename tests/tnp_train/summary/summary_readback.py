"""Reading event files back with the ``tensorboard`` package's own readers: the strict record
reader (a bad CRC or a cut record raises) and ``EventAccumulator`` (what TensorBoard loads)."""
import glob
import os

import numpy as np
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
from tensorboard.util import tensor_util


def event_files(logdir):
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def read_file(path):
    """Every Event of one file, in order; DataLossError on a damaged or cut record."""
    reader = pywrap_tensorflow.PyRecordReader_New(str(path).encode(), 0, b"", None)
    out = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return out
        out.append(event_pb2.Event.FromString(reader.record()))


def summaries(logdir):
    """``{tag: [(step, value as a NumPy array, plugin name)]}`` over every file of ``logdir``,
    each file read strictly, then checked against EventAccumulator's view of the run."""
    out = {}
    for path in event_files(logdir):
        events = read_file(path)
        assert events[0].file_version == "brain.Event:2", path
        for e in events[1:]:
            for v in e.summary.value:
                out.setdefault(v.tag, []).append(
                    (e.step, tensor_util.make_ndarray(v.tensor), v.metadata.plugin_data.plugin_name))
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    assert sorted(acc.Tags()["tensors"]) == sorted(out)
    for tag, items in out.items():
        got = [(t.step, tensor_util.make_ndarray(t.tensor_proto)) for t in acc.Tensors(tag)]
        assert len(got) == len(items)
        for (s1, a1), (s2, a2, _) in zip(got, items):
            assert s1 == s2 and a1.dtype == a2.dtype and np.array_equal(a1, a2)
    return out


def values(logdir, tag):
    """``[(step, value)]`` of a scalar tag (values as Python floats)."""
    return [(s, float(a)) for s, a, _ in summaries(logdir)[tag]]
