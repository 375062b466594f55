"""``tt.summary``: TensorBoard summaries from any code, as ``tf.summary`` (TF 2.x).

.. code-block:: python

    writer = tt.summary.create_file_writer("logs/run1")
    with writer.as_default():
        for step in range(100):
            loss = train_step()
            tt.summary.scalar("loss", loss, step=step)

``create_file_writer`` makes a writer of one new event file (TF's name, never an existing
file); ``writer.as_default(step=None)`` (or ``set_as_default``) makes it the default of the
current thread, where ``scalar``, ``histogram``, ``image``, ``text`` and ``write`` send their
summaries. Without a default writer they write nothing and return False, as TF's; with one and
no ``step`` (nor ``experimental.set_step``) they raise ValueError. ``record_if`` turns
recording on and off. The data may be tnp arrays on any device, Variables, NumPy arrays or
Python numbers; they are converted only when a summary is recorded.

Writing needs the ``tensorboard`` package (``pip install tnp[tensorboard]``), whose protocol
buffers and record framing the event files use; this package imports it on first use.
See docs/callbacks.md.
"""
from . import experimental
from ._ops import histogram, image, scalar, text
from ._writer import (SummaryWriter, create_file_writer, create_noop_writer, flush, record_if,
                      should_record_summaries, write)

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "experimental", "flush",
           "histogram", "image", "record_if", "scalar", "should_record_summaries", "text",
           "write"]
