"""The training example programs (examples/keras_io/) run under tnp_train and learn something.

Each program runs in this process in quick mode (less data, fewer epochs) and must lower its
training loss and beat a baseline computed from its own data (the majority class, a
least-squares fit, PCA of the same size, a rule that ignores the order...), by a margin
that is also derived from the data. The full-size runs are marked slow. The comparison with
tf-keras needs tensorflow and minutes per program: examples/keras_io/compare.py.
"""
import json
import math
import os
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

HERE = Path(__file__).resolve().parents[1] / "examples" / "keras_io"
EXAMPLES = runpy.run_path(str(HERE / "compare.py"))["EXAMPLES"]
HELPERS = ("_backend", "_data")


@pytest.fixture(scope="module")
def run_program():
    """Runs a program's main() and returns (its namespace, its result dict)."""
    saved = sys.argv, {k: os.environ.get(k) for k in ("KERAS_IO_BACKEND", "KERAS_IO_SEED")}
    sys.path.insert(0, str(HERE))
    for name in HELPERS:
        sys.modules.pop(name, None)
    # _backend reads its flags once, at import: make sure pytest's own argv or a stray
    # environment variable does not pick the tf side or another seed
    sys.argv = ["example"]
    os.environ["KERAS_IO_BACKEND"], os.environ["KERAS_IO_SEED"] = "tnp", "0"
    import _backend

    def run(name, quick=True):
        _backend.QUICK = quick
        _backend.seed_everything(0)
        namespace = runpy.run_path(str(HERE / f"{name}.py"), run_name=f"example_{name}")
        return namespace, namespace["main"]()

    yield run
    sys.path.remove(str(HERE))
    for name in HELPERS:
        sys.modules.pop(name, None)
    sys.argv = saved[0]
    for key, value in saved[1].items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def above_chance(rate, n, sds=4.0):
    """A bar `sds` binomial standard errors above a baseline rate measured on n samples."""
    return rate + sds * math.sqrt(rate * (1.0 - rate) / n)


def beats_fit(r2, baseline_r2):
    """The model leaves at most four fifths of the residual variance the baseline leaves."""
    return 1.0 - r2 < 0.8 * (1.0 - baseline_r2)


def check_common(result, printed):
    lines = [ln for ln in printed.splitlines() if ln.startswith("KERAS_IO_RESULT ")]
    assert len(lines) == 1, "the program must print exactly one result line for compare.py"
    assert json.loads(lines[0][len("KERAS_IO_RESULT "):]) == {
        k: v for k, v in result.items() if isinstance(v, (int, float, str))}
    assert result["backend"] == "tnp"
    assert np.isfinite(result["loss_end"]) and result["loss_end"] < result["loss_start"], result


def check_convnet_digits(r):
    assert r["metric"] > above_chance(r["chance"], r["n_eval"]), r
    assert r["prediction_shape"] == (5, 10)


def check_functional_waveforms(r):
    assert r["metric"] > above_chance(r["chance"], r["n_eval"]), r
    # the amplitude head must do better than guessing the training set's mean amplitude
    assert r["amplitude_mae"] < 0.8 * r["amplitude_mae_of_mean"], r
    assert r["reload_drift"] < 1e-6, "the reloaded model predicts differently"
    assert [tuple(s) for s in r["prediction_shapes"]] == [(8, 3), (8, 1)]


def check_vae_bumps(r, noise):
    assert beats_fit(r["metric"], r["pca_r2"]), r
    # a collapsed code (every curve encoded as the prior) would carry no information
    assert r["final_kl"] > 1.0, r
    # curves decoded from prior draws are bumps: a peak far above the data's noise level
    assert r["sampled_peak_median"] - r["sampled_floor_median"] > 10 * noise, r
    assert r["reconstruction_shape"] == (1000, 32) and r["sample_shape"] == (200, 32)


def check_custom_train_step(r):
    assert beats_fit(r["metric"], r["linear_r2"]), r
    assert r["test_mae"] < r["mae_of_mean"], r
    assert 0 < r["grad_norm_first"] < math.inf and 0 < r["grad_norm_last"] < math.inf, r
    assert r["prediction_shape"] == (2000, 1)


def check_class_weights(r):
    positives, negatives = r["positives"], r["negatives"]
    # the weights must buy recall: by more than four standard errors of a recall measured
    # on this many positives (0.5 is the binomial worst case)
    assert r["metric"] - r["recall_plain"] > 4 * math.sqrt(0.25 / positives), r
    # the ranking is better than a coin by four standard errors of a null AUC
    null_sd = math.sqrt((positives + negatives + 1) / (12.0 * positives * negatives))
    assert r["auc_weighted"] > 0.5 + 4 * null_sd, r


def check_text_tickets(r):
    assert r["metric"] > above_chance(r["chance"], r["n_eval"]), r
    assert r["routed"] == ["billing", "delivery", "login"]
    assert r["vocabulary_size"] == 1500 and r["vocabulary_head"][0] == "[UNK]"


def check_review_sentiment(r):
    assert r["metric"] > above_chance(r["chance"], r["n_eval"]), r
    # the end-to-end model reads the raw files' text: the same vectorizer, the same weights
    assert r["raw_text_accuracy"] == pytest.approx(r["metric"], abs=1e-6), r
    assert r["class_names"] == ["neg", "pos"] and r["new_reviews"] == ["pos", "neg"]
    # the standardization took out the markup and the punctuation: only words are tokens
    assert r["vocabulary_head"][:2] == ["", "[UNK]"] and r["marked_up_tokens"] == [], r
    assert "br" not in r["vocabulary_head"]


def check_rnn_walks(r):
    assert r["metric"] > above_chance(max(r["chance"], r["final_total_rule"]), r["n_eval"]), r
    assert r["prediction_shape"] == (4, 1)


def check_training_loop(r):
    assert r["metric"] > above_chance(r["chance"], r["n_eval"]), r
    assert r["best_val_loss"] < math.log(4), r    # below the uniform guess's cross-entropy


def check_fit_callbacks(r):
    assert beats_fit(r["metric"], r["linear_r2"]), r
    # ModelCheckpoint kept the best epoch: reloaded, it scores that epoch's val_loss
    assert r["checkpoint_val_loss"] == pytest.approx(r["min_val_loss"], rel=1e-4), r
    assert r["csv_rows"] == r["epochs_run"] == len(r["lr_by_epoch"]), r
    rates = r["lr_by_epoch"]
    assert rates[0] == pytest.approx(3e-3) and all(b <= a for a, b in zip(rates, rates[1:]))


CHECKS = {
    "convnet_digits": check_convnet_digits,
    "functional_waveforms": check_functional_waveforms,
    "vae_bumps": lambda r, ns: check_vae_bumps(r, ns["NOISE"]),
    "custom_train_step": check_custom_train_step,
    "class_weights": check_class_weights,
    "text_tickets": check_text_tickets,
    "review_sentiment": check_review_sentiment,
    "rnn_walks": check_rnn_walks,
    "training_loop": check_training_loop,
    "fit_callbacks": check_fit_callbacks,
}


def _check(name, namespace, result, printed):
    check_common(result, printed)
    if name == "vae_bumps":
        CHECKS[name](result, namespace)
    else:
        CHECKS[name](result)


@pytest.mark.parametrize("name", EXAMPLES)
def test_quick_run_learns(name, run_program, capsys):
    namespace, result = run_program(name, quick=True)
    _check(name, namespace, result, capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_full_run_learns(name, run_program, capsys):
    namespace, result = run_program(name, quick=False)
    _check(name, namespace, result, capsys.readouterr().out)


@pytest.mark.slow
@pytest.mark.usefixtures("run_program")     # for the examples' folder on sys.path
def test_same_weights_cases_build_and_train():
    """same_weights.py's tnp half: every case still finds the builders it relies on."""
    harness = runpy.run_path(str(HERE / "same_weights.py"), run_name="same_weights")
    for case in harness["CASES"]:
        history = harness["run_case"](case)
        assert all(np.isfinite(v).all() for v in history.values()), case
        assert history["loss"][-1] < history["loss"][0], case


def test_every_program_is_listed_and_checked():
    tools = {"compare", "same_weights"}
    on_disk = {p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_")} - tools
    assert sorted(on_disk) == sorted(EXAMPLES) == sorted(CHECKS)
