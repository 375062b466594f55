"""Loads tests/fixtures/kpre.{json,npz} (made by tests/fixtures/make_kpre_fixtures.py with
tf-keras 2.21) for the tests in this folder."""
import functools
import json
import os

import numpy as np

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
FILES = os.path.join(FIXTURES, "kpre_files")


@functools.lru_cache(maxsize=None)
def meta():
    with open(os.path.join(FIXTURES, "kpre.json")) as f:
        return json.load(f)


@functools.lru_cache(maxsize=None)
def arrays():
    with np.load(os.path.join(FIXTURES, "kpre.npz")) as f:
        return {k: f[k] for k in f.files}
