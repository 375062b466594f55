"""conformance/numpy_corpus.py: NumPy programs run under NumPy and under tnp print the same.

The committed programs (tests/programs/, ``def main(np)``) must all be "same"; a small corpus
written here checks the runner itself: that ``import numpy`` really reaches tnp, and that
skips, errors and nondeterministic programs are told apart.
"""
from __future__ import annotations

import importlib.util
import json
import pathlib
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("numpy_corpus",
                                              ROOT / "conformance" / "numpy_corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)


def test_committed_programs_all_same():
    records = corpus.run_corpus(ROOT / "tests" / "programs", timeout=60, jobs=2, call_main=True,
                                pattern="p[0-9]*.py")
    assert len(records) >= 30
    bad = [r for r in records if r["result"] != "same"]
    assert not bad, "\n".join(f"{r['program']}: {r['result']}: {r['detail']}" for r in bad)
    assert all(r["lines"] > 0 for r in records), "a program printed nothing"


_PROGRAMS = {
    # every import form, and a library (the stdlib here) left on the real NumPy
    "plain.py": """
        import numpy as np
        import numpy.linalg
        from numpy.fft import rfft
        from numpy import arange as ar
        a = ar(6).reshape(2, 3)
        print(a.sum(axis=0), a.T @ a)
        print(numpy.linalg.norm([3.0, 4.0]), np.linalg.det(np.eye(2) * 2))
        print(rfft(np.array([1.0, 0.0, 0.0, 0.0])))
    """,
    # prints the module its arrays come from: the one program that must differ
    "which.py": """
        import numpy as np
        print(type(np.zeros(2)).__module__.split(".")[0])
    """,
    "doctested.py": '''
        import numpy as np


        def double(x):
            """
            >>> double(np.array([1, 2]))
            array([2, 4])
            """
            return x * 2


        if __name__ == "__main__":
            import doctest
            doctest.testmod()
    ''',
    "keyboard.py": """
        import numpy as np
        n = int(input("n? "))
        print(np.arange(n))
    """,
    "missing.py": """
        import numpy as np
        import not_a_real_package_tnp_corpus
    """,
    "optional.py": """
        import numpy as np
        try:
            import not_a_real_package_tnp_corpus
        except ImportError:
            pass
        print(np.cumsum([1, 2, 3]))
    """,
    "fails.py": """
        import numpy as np
        raise ValueError("no data file " + str(np.int64(3)))
    """,
    "clock.py": """
        import time
        import numpy as np
        print(np.float64(time.perf_counter_ns()))
    """,
    # unseeded generators: the runner seeds both runs alike
    "unseeded.py": """
        import random
        import numpy as np
        from numpy.random import default_rng
        print(np.random.default_rng().random(2), default_rng().integers(0, 100, 3))
        print(np.random.rand(2), np.random.uniform(0, 1, (1, 2)), random.random())
    """,
    "no_numpy.py": """
        print("hello")
    """,
    "sub/local_helper.py": """
        import numpy as np
        def scale(x):
            return np.asarray(x) * 3
    """,
    "sub/uses_helper.py": """
        import numpy as np
        from local_helper import scale
        print(scale([1, 2]), np.mean(scale([1, 2])))
    """,
}


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    for name, src in _PROGRAMS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(src).lstrip())
    out = root.parent / "corpus.json"
    rc = corpus.main([str(root), "--timeout", "60", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    return data, {r["program"]: r for r in data["programs"]}


def test_import_forms_resolve_to_tnp(small_corpus):
    _, recs = small_corpus
    assert recs["plain.py"]["result"] == "same", recs["plain.py"]
    assert recs["plain.py"]["lines"] == 5   # the 3x3 product takes three lines
    which = recs["which.py"]
    assert which["result"] == "different"
    assert which["first_difference"] == {"line": 1, "numpy": "numpy", "tnp": "tnp"}
    assert not which.get("nondeterministic")


def test_doctests_counted(small_corpus):
    _, recs = small_corpus
    assert recs["doctested.py"]["result"] == "same", recs["doctested.py"]
    assert recs["doctested.py"]["lines"] == 1


def test_skips_errors_and_nondeterminism(small_corpus):
    data, recs = small_corpus
    assert recs["keyboard.py"] == {"program": "keyboard.py", "result": "skipped",
                                   "detail": "reads the keyboard (input())"}
    assert recs["missing.py"]["result"] == "skipped"
    assert recs["missing.py"]["detail"] == \
        "needs unavailable package(s): not_a_real_package_tnp_corpus"
    assert recs["optional.py"]["result"] == "same"
    assert recs["no_numpy.py"]["detail"] == "does not import numpy"
    assert recs["sub/local_helper.py"]["result"] == "same"   # prints nothing, runs
    assert recs["sub/uses_helper.py"]["result"] == "same", recs["sub/uses_helper.py"]
    assert recs["fails.py"]["result"] == "error"
    assert recs["fails.py"]["detail"] == "fails under NumPy: ValueError: no data file 3"
    assert recs["clock.py"]["result"] == "different" and recs["clock.py"]["nondeterministic"]
    assert recs["unseeded.py"]["result"] == "same", recs["unseeded.py"]
    assert data["summary"] == {"same": 6, "different": 2, "error": 1, "skipped": 3,
                               "nondeterministic": 1}


def test_seed_none_leaves_generators_unseeded(tmp_path):
    (tmp_path / "unseeded.py").write_text(textwrap.dedent(_PROGRAMS["unseeded.py"]).lstrip())
    rec, = corpus.run_corpus(tmp_path, timeout=60, jobs=1, seed=None)
    assert rec["result"] == "different" and rec["nondeterministic"], rec
