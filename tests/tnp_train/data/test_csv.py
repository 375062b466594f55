"""``tt.data.experimental.CsvDataset`` and ``make_csv_dataset`` (TF 2.4's), checked against
the files' contents read with Python's csv module."""
import csv
import gzip

import numpy as np
import pytest

import tnp_train as tt

E = tt.data.experimental
ROWS = [["age", "fare", "name", "survived", "big"],
        ["22", "7.25", "Braund, Mr. Owen", "0", "3000000000"],
        ["38", "", "Cumings", "1", "1"],
        ["", "8.05", "Heikkinen", "1", "2"],
        ["35", "53.1", "Futrelle", "1", "3"]]


def _write(path, rows, opener=open):
    with opener(path, "wt", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def _col(batches, name):
    return [v for f, _ in batches for v in np.asarray(f[name]).tolist()]


def test_make_csv_dataset_infers_types_and_fills_missing_values(tmp_path):
    _write(tmp_path / "a.csv", ROWS)
    _write(tmp_path / "b.csv", [ROWS[0], ["54", "51.86", "McCarthy", "0", "5"]])
    ds = E.make_csv_dataset(str(tmp_path / "*.csv"), batch_size=3, label_name="survived",
                            num_epochs=1, shuffle=False)
    batches = list(ds)
    assert [len(np.asarray(l)) for _, l in batches] == [3, 2]      # the short batch kept
    feats = batches[0][0]
    assert list(feats) == ["age", "fare", "name", "big"]
    kinds = {k: np.asarray(v).dtype for k, v in feats.items()}
    assert (kinds["age"], kinds["fare"], kinds["big"]) == (np.int32, np.float32, np.int64)
    assert kinds["name"].kind == "S"                                 # strings as bytes
    assert _col(batches, "age") == [22, 38, 0, 35, 54]              # missing: 0
    np.testing.assert_allclose(_col(batches, "fare"), [7.25, 0.0, 8.05, 53.1, 51.86],
                               rtol=1e-6)
    assert [n.decode() for n in _col(batches, "name")] == \
        ["Braund, Mr. Owen", "Cumings", "Heikkinen", "Futrelle", "McCarthy"]
    assert [int(v) for _, l in batches for v in np.asarray(l)] == [0, 1, 1, 1, 0]
    # num_epochs=None: for ever, whole batches only (TF's drop_remainder)
    endless = E.make_csv_dataset(str(tmp_path / "*.csv"), batch_size=2, num_epochs=None,
                                 shuffle=True, shuffle_seed=1, select_columns=["age", "big"])
    taken = list(endless.take(7))
    assert all(set(f) == {"age", "big"} and len(np.asarray(f["age"])) == 2 for f in taken)
    values = [v for f in taken for v in np.asarray(f["big"]).tolist()]
    assert set(values) == {3000000000, 1, 2, 3, 5} and len(values) == 14


def test_csv_dataset_defaults_required_fields_and_errors(tmp_path):
    path = _write(tmp_path / "a.csv", ROWS)
    ds = E.CsvDataset(str(path), [0, 0.5, "x"], header=True, select_cols=[0, 1, 2])
    got = [tuple(np.asarray(v).item() for v in e) for e in ds]
    assert [g[0] for g in got] == [22, 38, 0, 35]
    assert [round(g[1], 4) for g in got] == [7.25, 0.5, 8.05, 53.1]
    assert got[0][2] == b"Braund, Mr. Owen"
    assert [s.dtype.name for s in ds.element_spec][:2] == ["int32", "float32"]
    required = E.CsvDataset(str(path), ["int32", 0.5, str], header=True, select_cols=[0, 1, 2])
    with pytest.raises(ValueError, match="field 0 of record 2 .* is required but missing"):
        list(required)
    with pytest.raises(ValueError, match="field 0 of record 0 .*cannot parse '7.25' as int32"):
        list(E.CsvDataset(str(path), [0, 0, 0], header=True, select_cols=[1, 2, 3]))
    with pytest.raises(ValueError, match="expected 2 fields, got 5"):
        list(E.CsvDataset(str(path), [0, 0], header=True))
    with pytest.raises(ValueError, match="select_cols and record_defaults|2 select_cols"):
        E.CsvDataset(str(path), [0], select_cols=[0, 1])


def test_gzip_files_and_ignore_errors(tmp_path):
    _write(tmp_path / "c.csv.gz", [["a", "b"], ["1", "2"], ["x", "3"], ["4", "5"]],
           opener=gzip.open)
    ds = E.make_csv_dataset(str(tmp_path / "c.csv.gz"), batch_size=5, num_epochs=1,
                            shuffle=False, compression_type="GZIP",
                            column_defaults=[0, 0], ignore_errors=True)
    (batch,) = list(ds)
    assert np.asarray(batch["a"]).tolist() == [1, 4] and np.asarray(batch["b"]).tolist() == [2, 5]
    with pytest.raises(ValueError, match="no files match"):
        E.make_csv_dataset(str(tmp_path / "none*.csv"), batch_size=1)
    with pytest.raises(ValueError, match="label_name"):
        E.make_csv_dataset(str(tmp_path / "c.csv.gz"), batch_size=1, compression_type="GZIP",
                           label_name="z")
