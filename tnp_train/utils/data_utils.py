"""``Sequence``, the enqueuers that read one with workers, and ``get_file``
(``tf.keras.utils`` of TF 2.4).

An enqueuer runs a background thread that hands work to a pool (threads, or forked processes
with ``use_multiprocessing=True``) and keeps up to ``max_queue_size`` results queued in order;
``get()`` yields them. ``get_file`` never downloads: tnp_train runs where there is no network,
so it takes the file from the cache or from a local ``origin`` and otherwise says what to pass.
"""
from __future__ import annotations

import hashlib
import multiprocessing
import os
import queue
import random
import shutil
import tarfile
import threading
import urllib.parse
import zipfile
from multiprocessing.pool import ThreadPool

__all__ = ["Sequence", "SequenceEnqueuer", "OrderedEnqueuer", "GeneratorEnqueuer", "get_file",
           "pack_x_y_sample_weight", "unpack_x_y_sample_weight"]


def unpack_x_y_sample_weight(data):
    """``(x, y, sample_weight)`` from ``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``
    (a list is one ``x``); mirrors ``tf.keras.utils.unpack_x_y_sample_weight``."""
    if not isinstance(data, tuple):
        return (data, None, None)
    if len(data) == 1:
        return (data[0], None, None)
    if len(data) == 2:
        return (data[0], data[1], None)
    if len(data) == 3:
        return (data[0], data[1], data[2])
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     f"`(x, y, sample_weight)`, found: {data}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The tuple ``fit`` takes: ``x`` alone stays as it is unless it is a structure (list,
    tuple, dict), which is wrapped as ``(x,)``; mirrors
    ``tf.keras.utils.pack_x_y_sample_weight``."""
    if y is None:
        return (x,) if isinstance(x, (list, tuple, dict)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


class Sequence:
    """Base class of a dataset of batches (``tf.keras.utils.Sequence``): implement
    ``__getitem__(index)`` (batch ``index``) and ``__len__`` (batches per epoch);
    ``on_epoch_end`` runs after each epoch."""

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def on_epoch_end(self):
        """Called at the end of every epoch (a no-op here)."""

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


# what the worker processes read: forked after it is set, so no pickling of the sequence
_SHARED: dict = {}
_uid_lock = threading.Lock()
_next_uid = [0]


def _get_index(uid, i):
    return _SHARED[uid][i]


def _next_sample(uid):
    try:
        return next(_SHARED[uid])
    except StopIteration:
        return _END


class _End:
    """Marks a finite generator's end (StopIteration cannot cross a pool's result)."""

    def __reduce__(self):
        return (_end, ())


def _end():
    return _END


_END = _End()


class SequenceEnqueuer:
    """Base of the enqueuers (``tf.keras.utils.SequenceEnqueuer(sequence,
    use_multiprocessing=False)``): ``start(workers=1, max_queue_size=10)``, ``get()``,
    ``stop()``, ``is_running()``."""

    def __init__(self, sequence, use_multiprocessing=False):
        self.sequence = sequence
        self.use_multiprocessing = use_multiprocessing
        with _uid_lock:
            self.uid = _next_uid[0]
            _next_uid[0] += 1
        self.workers = 0
        self.queue = None
        self.run_thread = None
        self.stop_signal = None

    def is_running(self):
        return self.stop_signal is not None and not self.stop_signal.is_set()

    def start(self, workers=1, max_queue_size=10):
        """Start ``workers`` workers and the thread that keeps the queue filled."""
        if workers < 1:
            raise ValueError(f"{type(self).__name__}.start: workers must be >= 1, got {workers}")
        self.workers = workers
        self.queue = queue.Queue(max_queue_size)
        self.stop_signal = threading.Event()
        self.run_thread = threading.Thread(target=self._run, daemon=True)
        self.run_thread.start()

    def _pool(self):
        _SHARED[self.uid] = self.sequence
        if self.use_multiprocessing:
            return multiprocessing.get_context("fork").Pool(self.workers)
        return ThreadPool(self.workers)

    def _put(self, item):
        # a full queue blocks the producer; wake up now and then to see a stop
        while not self.stop_signal.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def stop(self, timeout=None):
        """Stop the workers and wait for the producing thread (at most ``timeout`` s)."""
        if self.stop_signal is None:
            return
        self.stop_signal.set()
        with self.queue.mutex:
            self.queue.queue.clear()
            self.queue.unfinished_tasks = 0
            self.queue.not_full.notify_all()
        self.run_thread.join(timeout)
        _SHARED.pop(self.uid, None)

    def __del__(self):
        try:
            if self.is_running():
                self.stop()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass

    def _run(self):
        raise NotImplementedError

    def get(self):
        raise NotImplementedError


class OrderedEnqueuer(SequenceEnqueuer):
    """Reads a :class:`Sequence` with workers, batches in order (shuffled per epoch with
    ``shuffle=True``), calling ``on_epoch_end`` between epochs, forever; mirrors
    ``tf.keras.utils.OrderedEnqueuer(sequence, use_multiprocessing=False, shuffle=False)``."""

    def __init__(self, sequence, use_multiprocessing=False, shuffle=False):
        super().__init__(sequence, use_multiprocessing)
        self.shuffle = shuffle

    def _run(self):
        order = list(range(len(self.sequence)))
        while not self.stop_signal.is_set():
            if self.shuffle:
                random.shuffle(order)
            pool = self._pool()
            try:
                for i in order:
                    if not self._put(pool.apply_async(_get_index, (self.uid, i))):
                        return
                self._drain_wait()
            finally:
                if self.stop_signal.is_set():
                    pool.terminate()
                else:
                    pool.close()
                    pool.join()
            if self.stop_signal.is_set():
                return
            self.sequence.on_epoch_end()

    def _drain_wait(self):
        # the epoch ends when its batches were taken: on_epoch_end must not race them
        while self.queue.unfinished_tasks and not self.stop_signal.is_set():
            self.stop_signal.wait(0.01)

    def get(self):
        """Yield the batches (``(inputs, targets)`` or with sample weights) as they come."""
        while self.is_running():
            try:
                future = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                item = future.get()
            except Exception:
                self.stop()
                raise
            if self.is_running():
                self.queue.task_done()
            if item is not None:
                yield item


class GeneratorEnqueuer(SequenceEnqueuer):
    """Reads a Python generator with workers (``next`` calls in parallel: with threads the
    generator must be thread-safe); a finite generator ends ``get()``. Mirrors
    ``tf.keras.utils.GeneratorEnqueuer(generator, use_multiprocessing=False,
    random_seed=None)``."""

    def __init__(self, generator, use_multiprocessing=False, random_seed=None):
        super().__init__(generator, use_multiprocessing)
        self.random_seed = random_seed

    def _run(self):
        pool = self._pool()
        try:
            while not self.stop_signal.is_set():
                if not self._put(pool.apply_async(_next_sample, (self.uid,))):
                    return
        finally:
            pool.terminate()

    def get(self):
        """Yield the generator's items until it ends (or ``stop()``)."""
        while self.is_running():
            try:
                future = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                item = future.get()
            except ValueError as e:
                self.stop()
                if "generator already executing" in str(e):
                    raise RuntimeError("Your generator is NOT thread-safe. Keras requires a "
                                       "thread-safe generator when `use_multiprocessing=False, "
                                       "workers > 1`. ") from e
                raise
            except Exception:
                self.stop()
                raise
            self.queue.task_done()
            if item is _END or isinstance(item, _End):
                self.stop()
                return
            if item is not None:
                yield item


# ------------------------------------------------------------------------------ get_file
def _hash(path, algorithm):
    h = hashlib.sha256() if algorithm == "sha256" else hashlib.md5()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _algorithm(file_hash, hash_algorithm):
    if hash_algorithm == "auto":
        return "sha256" if len(file_hash) == 64 else "md5"
    if hash_algorithm not in ("sha256", "md5"):
        raise ValueError(f"get_file: unknown hash_algorithm {hash_algorithm!r} (expected "
                         f"'auto', 'sha256' or 'md5')")
    return hash_algorithm


def _extract(path, into, archive_format):
    formats = {"auto": ["tar", "zip"], "tar": ["tar"], "zip": ["zip"]}
    for kind in formats.get(archive_format, []) if archive_format else []:
        if kind == "tar" and tarfile.is_tarfile(path):
            with tarfile.open(path) as t:
                t.extractall(into, filter="data")
            return True
        if kind == "zip" and zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                z.extractall(into)
            return True
    return False


def _local_origin(origin):
    if origin is None:
        return None
    parsed = urllib.parse.urlparse(str(origin))
    if parsed.scheme == "file":
        return urllib.parse.unquote(parsed.path)
    if parsed.scheme in ("", ) and os.path.exists(str(origin)):
        return str(origin)
    return None


def get_file(fname, origin, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None):
    """The path of ``fname`` in the cache (``cache_dir``, default ``~/.keras``, then
    ``cache_subdir``), verified against ``file_hash`` and extracted as asked; mirrors
    ``tf.keras.utils.get_file``. Nothing is downloaded: a missing (or mismatching) file is
    copied from ``origin`` when that is a local path or ``file://`` URL, and otherwise
    FileNotFoundError says where to put the file."""
    if cache_dir is None:
        cache_dir = os.path.join(os.path.expanduser("~"), ".keras")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    base = os.path.expanduser(str(cache_dir))
    if not os.access(base, os.W_OK) and not os.path.isdir(base):
        try:
            os.makedirs(base, exist_ok=True)
        except OSError:
            base = os.path.join("/tmp", ".keras")
    datadir = cache_subdir if os.path.isabs(str(cache_subdir)) else os.path.join(base,
                                                                                 cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    fname = os.fspath(fname)
    untar_path = os.path.join(datadir, fname)
    fpath = untar_path + ".tar.gz" if untar else untar_path
    algorithm = _algorithm(file_hash, hash_algorithm) if file_hash is not None else None

    def ok(path):
        return os.path.exists(path) and (file_hash is None or _hash(path, algorithm) == file_hash)

    if not ok(fpath):
        src = _local_origin(origin)
        if src is None or not os.path.exists(src):
            why = "is not in the cache" if not os.path.exists(fpath) else \
                f"in the cache does not match its {algorithm} hash {file_hash}"
            raise FileNotFoundError(
                f"get_file: {fpath} {why}, and tnp_train does not download ({origin!r} is not "
                f"a local file). Put the file there, or pass origin= a local path or a "
                f"file:// URL, or cache_dir= the folder that holds "
                f"{os.path.join(cache_subdir, os.path.basename(fpath))}.")
        if os.path.abspath(src) != os.path.abspath(fpath):
            tmp = fpath + ".part"
            shutil.copyfile(src, tmp)
            os.replace(tmp, fpath)
        if file_hash is not None and not ok(fpath):
            os.remove(fpath)
            raise ValueError(f"get_file: {src} does not match the {algorithm} hash "
                             f"{file_hash} asked for")
    if untar:
        if not os.path.exists(untar_path):
            _extract(fpath, datadir, "tar")
        return untar_path
    if extract:
        _extract(fpath, datadir, archive_format)
    return fpath
