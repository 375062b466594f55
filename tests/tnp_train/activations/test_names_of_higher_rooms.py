"""Names that a lower room looks up in a higher one work in a fresh process, before anything
imported the higher room: ``activations.get("LeakyReLU")`` is a layer (TF 2.4), and
``layers.deserialize`` of a model config a model. The package module names the providers; the
lower rooms never import them (tests/tnp_train/test_import_layers.py)."""
import subprocess
import sys

CODE = """
import sys
import tnp_train as tt
assert "tnp_train.layers" not in sys.modules
act = tt.activations.get("LeakyReLU")
assert type(act).__name__ == "LeakyReLU", act
import tnp_train.layers as L
m = L.deserialize({"class_name": "Sequential", "config": {"name": "s", "layers": []}})
assert type(m).__name__ == "Sequential", m
print("ok")
"""


def test_lookups_in_a_fresh_process():
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
