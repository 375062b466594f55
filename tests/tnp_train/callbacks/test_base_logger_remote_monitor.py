"""BaseLogger and RemoteMonitor (TF 2.4's tf.keras.callbacks): BaseLogger's epoch averages
against the batch logs written out, the model's own metrics left at their epoch values;
RemoteMonitor's POSTs received by a local HTTP server, in both of TF's encodings."""
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

import tnp_train as tt


def _model():
    tt.utils.set_random_seed(0)
    m = tt.Sequential([tt.Input((3,)), tt.layers.Dense(1)])
    m.compile("sgd", "mse", metrics=["mae"])
    return m


def test_base_logger_averages_extra_batch_values_and_keeps_metrics():
    x = np.random.default_rng(0).standard_normal((20, 3)).astype("float32")
    y = x.sum(1, keepdims=True)
    seen = []

    class Extra(tt.callbacks.Callback):          # adds a per-batch value to the batch logs
        def on_train_batch_end(self, batch, logs=None):
            logs["extra"] = float(batch + 1)
            logs["size"] = 5 if batch < 3 else 5
            seen.append(dict(logs))

    epoch_logs = []
    model = _model()
    hist = model.fit(x, y, batch_size=5, epochs=1, verbose=0,
                     callbacks=[Extra(), tt.callbacks.BaseLogger(),
                                tt.callbacks.LambdaCallback(
                                    on_epoch_end=lambda e, l: epoch_logs.append(dict(l)))])
    assert epoch_logs[0]["extra"] == pytest.approx(np.mean([1, 2, 3, 4]))
    # the compiled loss and metric keep the epoch's value (not a mean of running means)
    assert epoch_logs[0]["loss"] == pytest.approx(hist.history["loss"][0])
    assert epoch_logs[0]["mae"] == pytest.approx(float(seen[-1]["mae"]), rel=1e-6)


class _Handler(BaseHTTPRequestHandler):
    received = []

    def do_POST(self):  # noqa: N802 - the http.server hook
        n = int(self.headers["Content-Length"])
        self.received.append((self.path, self.headers["Content-Type"], self.rfile.read(n)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    _Handler.received = []
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Handler.received
    httpd.shutdown()


@pytest.mark.parametrize("as_json", [False, True])
def test_remote_monitor_posts_each_epoch(server, as_json):
    root, received = server
    x = np.ones((8, 3), "float32")
    hist = _model().fit(x, np.ones((8, 1), "float32"), epochs=2, verbose=0,
                        callbacks=[tt.callbacks.RemoteMonitor(root=root, path="/p/",
                                                              send_as_json=as_json)])
    assert len(received) == 2
    for epoch, (path, ctype, body) in enumerate(received):
        assert path == "/p/"
        if as_json:
            assert ctype == "application/json"
            payload = json.loads(body)
        else:
            assert ctype == "application/x-www-form-urlencoded"
            payload = json.loads(urllib.parse.parse_qs(body.decode())["data"][0])
        assert payload["epoch"] == epoch
        assert payload["loss"] == pytest.approx(hist.history["loss"][epoch])


def test_remote_monitor_unreachable_is_a_warning():
    cb = tt.callbacks.RemoteMonitor(root="http://127.0.0.1:9")   # the discard port: refused
    with pytest.warns(RuntimeWarning, match="could not reach RemoteMonitor"):
        cb.on_epoch_end(0, {"loss": 1.0})
