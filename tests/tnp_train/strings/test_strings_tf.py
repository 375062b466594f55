"""``tt.strings`` against ``tf.strings`` on the same inputs (tests/fixtures/strings.json, made by
tests/fixtures/make_strings_fixture.py under TensorFlow 2.21).

Every case runs twice: on bytes (a ``|S`` array, as ``text_dataset_from_directory`` yields,
and as TF's strings are), where the answer must be TF's bytes; and on str (a ``<U`` array),
where it must be the same text as str. TF's InvalidArgumentError is our ValueError.
"""
import json
from pathlib import Path

import numpy as np
import pytest

import tnp
import tnp_train as tt

CASES = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "strings.json")
                   .read_text())["cases"]
# cases where TF logs an error and still answers (the string unchanged, or the match dropped):
# we raise instead of answering something the user did not ask for
RAISE_WHERE_TF_LOGS = {
    ("regex_replace", "(a)", "\\2"): "the rewrite names a group the pattern lacks",
    ("regex_replace", "b", "\\n"): "RE2 rewrites know only \\digit and \\\\",
}


def _encode(x):
    if isinstance(x, str):
        return x.encode("utf-8", "surrogateescape")
    return [_encode(v) for v in x]


def _valid_text(x):
    if isinstance(x, str):
        try:
            x.encode("utf-8")
            return True
        except UnicodeEncodeError:
            return False
    return all(_valid_text(v) for v in x)


def _argument(x, kind):
    """The fixture's argument as bytes ("S") or str ("U") inputs."""
    if isinstance(x, dict) and "strings" in x:
        return np.array(_encode(x["strings"]) if kind == "S" else x["strings"])
    if isinstance(x, dict) and "list" in x:
        return [_argument(v, kind) for v in x["list"]]
    if isinstance(x, dict) and "array" in x:
        return np.array(x["array"], dtype=x["dtype"])
    if isinstance(x, dict) and "ragged" in x:
        return _encode(x["ragged"]) if kind == "S" else x["ragged"]
    return x


def _text(x, kind, where):
    """Our strings as the fixture's text, checking each is of the kind asked for."""
    if isinstance(x, (list, np.ndarray)):
        return [_text(v, kind, where) for v in x]
    want = bytes if kind == "S" else str
    assert isinstance(x, want), f"{where}: {x!r} is not {want.__name__}"
    return x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else x


def _strings_in(args):
    return [a for a in args if isinstance(a, dict) and set(a) & {"strings", "list", "ragged"}]


def _has_str_form(args):
    return all(_valid_text(a["strings"]) if "strings" in a else
               _valid_text(a["ragged"]) if "ragged" in a else
               all(_valid_text(v["strings"]) for v in a["list"]) for a in _strings_in(args))


def check_case(fn, case, kind):
    """Our answer to one fixture case, on bytes ("S") or str ("U") inputs, is TF's."""
    name, args, kwargs, expected = case["fn"], case["args"], case["kwargs"], case["expected"]
    call_args = [_argument(a, kind) for a in args]
    if name == "ngrams" and isinstance(call_args[1], list):
        call_args[1] = tuple(call_args[1])
    key = (name, *(a for a in args[1:] if isinstance(a, str)))
    where = f"{name}{tuple(args[1:])} {kwargs} on {'bytes' if kind == 'S' else 'str'}"
    if "error" in expected or key in RAISE_WHERE_TF_LOGS:
        assert key in RAISE_WHERE_TF_LOGS or expected["error"] == "InvalidArgumentError", \
            expected
        with pytest.raises(ValueError):
            fn(*call_args, **kwargs)
        return
    got = fn(*call_args, **kwargs)
    if "ragged" in expected:
        assert isinstance(got, list), where
        out_kind = "S" if name == "bytes_split" else kind
        assert _text(got, out_kind, where) == expected["ragged"], where
    elif "strings" in expected:
        assert isinstance(got, np.ndarray), where
        assert list(got.shape) == expected["shape"], where
        out_kind = "U" if name == "as_string" else "S" if name == "bytes_split" else kind
        assert got.dtype.kind in (out_kind, "O"), (where, got.dtype)
        assert _text(got.tolist() if got.ndim else [got.item()], out_kind, where) == \
            (expected["strings"] if got.ndim else [expected["strings"]]), where
    else:
        assert got.dtype == np.dtype(expected["dtype"]), where
        np.testing.assert_array_equal(got, np.array(expected["array"], dtype=expected["dtype"]),
                                      err_msg=where)


NAMES = sorted({c["fn"] for c in CASES})


@pytest.mark.parametrize("kind", ["S", "U"])
@pytest.mark.parametrize("name", NAMES)
def test_matches_tf_strings(name, kind):
    """Each fixture case of ``tf.strings.<name>``: on bytes, and on str where the input has a
    str form (bytes that are not UTF-8 have none)."""
    fn = getattr(tt.strings, name)
    cases = [c for c in CASES if c["fn"] == name and (kind == "S" or _has_str_form(c["args"]))]
    assert cases or kind == "U"
    for case in cases:
        check_case(fn, case, kind)


def test_every_function_has_fixture_cases():
    assert NAMES == sorted(tt.strings.__all__)


def test_containers_follow_the_caller():
    a = tt.strings.lower(np.array([b"AB", b"Cd"]))
    assert isinstance(a, np.ndarray) and a.dtype == np.dtype("S2") and a.tolist() == [b"ab",
                                                                                      b"cd"]
    t = tt.strings.lower(tnp.asarray(["AB", "Cd"]))
    assert isinstance(t, tnp.ndarray) and t.dtype.kind == "U" and t.tolist() == ["ab", "cd"]
    s = tt.strings.upper("x")
    assert isinstance(s, tnp.ndarray) and s.shape == () and s.item() == "X"
    # a bytes value ending in NUL keeps it (an |S array would drop it)
    z = tt.strings.regex_replace(np.array([b"a\0", b"b"], dtype=object), "b", "c")
    assert z.dtype == object and z.tolist() == [b"a\0", b"c"]


def test_bad_input_names_the_operation():
    with pytest.raises(TypeError, match="strings.lower.*dtype int64"):
        tt.strings.lower(np.array([1, 2], dtype=np.int64))
    with pytest.raises(TypeError, match="strings.length.*element 3"):
        tt.strings.length(np.array(["a", 3], dtype=object))
    with pytest.raises(ValueError, match="unit"):
        tt.strings.length(np.array(["a"]), unit="CHAR")


@pytest.mark.parametrize("pattern, what", [
    (r"\p{Greek}", "Unicode classes"), (r"\pL", "Unicode classes"), ("(?U)a+", "ungreedy"),
    (r"(a)\1", "back references"), ("(?<=a)b", "look-around"), (r"[[:^alpha:]]", "POSIX"),
    (r"a\Z", "not RE2 syntax")])
def test_re2_syntax_python_cannot_honour_is_an_error(pattern, what):
    with pytest.raises(ValueError, match=what):
        tt.strings.regex_replace(np.array(["abc"]), pattern, "")


def test_in_a_data_pipeline_before_text_vectorization(tmp_path):
    """A custom standardization mapped over bytes batches gives TextVectorization the same
    tokens as the same function on str."""
    for label, texts in (("neg", ["Bad<br />movie.", "Awful, BAD!"]),
                         ("pos", ["Good<br />Movie!", "great; good."])):
        (tmp_path / label).mkdir()
        for i, t in enumerate(texts):
            (tmp_path / label / f"{i}.txt").write_text(t)

    def standardize(x):
        x = tt.strings.lower(x)
        x = tt.strings.regex_replace(x, "<br />", " ")
        return tt.strings.regex_replace(x, "[^a-z ]", "")

    ds = tt.utils.text_dataset_from_directory(str(tmp_path), batch_size=4, shuffle=False)
    texts = ds.map(lambda x, y: standardize(x)).unbatch()
    got = sorted(t.item() if hasattr(t, "item") else t for t in texts)
    assert got == [b"awful bad", b"bad movie", b"good movie", b"great good"]
    vec = tt.layers.TextVectorization(output_mode="int", standardize=standardize,
                                      split=tt.strings.split)
    vec.adapt(ds.map(lambda x, y: x))
    words = ["", "[UNK]", "bad", "good", "awful", "great", "movie"]
    assert sorted(vec.get_vocabulary()) == sorted(words)
    a = np.asarray(vec(np.array([b"Good<br />BAD movie"])))
    b = np.asarray(vec(np.array(["good bad movie"])))
    np.testing.assert_array_equal(a, b)
    assert [vec.get_vocabulary()[i] for i in a[0]] == ["good", "bad", "movie"]
