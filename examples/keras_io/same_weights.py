"""The example programs' models trained from the same starting point on both backends.

compare.py runs whole programs, and each backend draws its own initial weights, so a single
seed's difference mixes framework behaviour with luck. Here each program's own model builder
is used, every weight is overwritten with the same NumPy draw on both sides, the batches come
in a fixed order and dropout or input noise is switched off. The two training histories
should then differ by rounding only:

    python examples/keras_io/same_weights.py [--floatx float64] [--tf-python PYTHON]
        [--only CASE ...]

prints, per case, the largest relative difference between the two histories. The VAE is not
a case: its codes are drawn from each framework's own generator at every step.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ["convnet", "functional", "class_weights", "rnn", "callbacks", "train_step", "text",
         "training_loop"]


def shared_start(model, seed=0):
    """Every weight from one NumPy generator: Glorot-uniform bounds from the shape, so the
    draw trains like a real initialisation."""
    import numpy as np
    from _backend import keras

    rng = np.random.RandomState(seed)
    weights = []
    for w in model.get_weights():
        if w.ndim >= 2:
            receptive = int(np.prod(w.shape[:-2])) if w.ndim > 2 else 1
            limit = np.sqrt(6.0 / (receptive * (w.shape[-2] + w.shape[-1])))
        else:
            limit = 0.05
        weights.append(rng.uniform(-limit, limit, size=w.shape).astype(keras.backend.floatx()))
    model.set_weights(weights)
    return model


def run_case(case):
    import numpy as np

    fit = dict(batch_size=64, shuffle=False, verbose=0)
    if case == "convnet":
        import _data
        import convnet_digits as prog
        x, _, y, _ = _data.digits()
        model = shared_start(prog.build_model(width=8, dropout=0.0))
        return model.fit(x[:1200], y[:1200], epochs=6, validation_data=(x[1200:], y[1200:]),
                         **fit).history
    if case == "functional":
        import functional_waveforms as prog
        x, y = prog.recordings(1200, seed=1)
        model = shared_start(prog.build_model(hidden=32))
        return model.fit(x, y, epochs=4, validation_split=0.2, **fit).history
    if case == "class_weights":
        import class_weights as prog
        x, y, _, _ = prog.transactions(6000, train_size=0.5, seed=0)
        model = shared_start(prog.build_model(hidden=16))
        return model.fit(x, y, epochs=4, class_weight=prog.balanced_weights(y),
                         validation_split=0.2, **fit).history
    if case == "rnn":
        import rnn_walks as prog
        x, y = prog.walks(800, seed=1)
        model = shared_start(prog.build_model(units=12))
        return model.fit(x, y, epochs=3, validation_split=0.2, **fit).history
    if case == "callbacks":
        import fit_callbacks as prog
        x, y = prog.friedman(1500, seed=1)
        model = shared_start(prog.build_model(hidden=32))
        return model.fit(x, y, epochs=5, validation_split=0.2, **fit).history
    if case == "train_step":
        import custom_train_step as prog
        x, y = prog.readings(1500, seed=1, outlier_rate=0.08)
        model = prog.build_model(hidden=32, jitter=0.0)
        model(x[:1])          # a subclassed model has no weights until its first call
        shared_start(model)
        return model.fit(x, y, epochs=4, **fit).history
    if case == "text":
        import text_tickets as prog
        texts, labels = prog.tickets(2000, seed=1)
        x = np.asarray(prog.make_vectorizer(texts)(texts))
        model = shared_start(prog.build_classifier(dropout=0.0))
        return model.fit(x, labels, epochs=3, validation_split=0.2, **fit).history
    if case == "training_loop":
        import training_loop as prog
        x, y = prog.blobs(3000, seed=0)
        model = shared_start(prog.build_model(hidden=32, dropout=0.0))
        from _backend import keras
        return prog.train(model, keras.optimizers.Adam(prog.LEARNING_RATE), x[:2000], y[:2000],
                          x[2000:], y[2000:], epochs=4)
    raise SystemExit(f"unknown case {case!r}; one of {CASES}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--floatx", default="float32")
    ap.add_argument("--tf-python",
                    default=os.environ.get("KERAS_IO_TF_PYTHON", "/tmp/tfvenv/bin/python"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--case", default=None, help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()
    if args.case:
        from _backend import keras
        keras.backend.set_floatx(args.floatx)
        history = run_case(args.case)
        print("HISTORY " + json.dumps({k: [float(v) for v in vs] for k, vs in history.items()}))
        return 0

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    # the repository last: a PYTHONPATH given by the caller (another build of tnp) wins
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(HERE.parents[1])]))
    print(f"{'case':14} {'largest relative difference, ' + args.floatx:>36}  (where)")
    for case in args.only or CASES:
        histories = {}
        for backend, python in (("tnp", sys.executable), ("tf", args.tf_python)):
            proc = subprocess.run([python, __file__, "--case", case, "--backend", backend,
                                   "--floatx", args.floatx],
                                  cwd=HERE, env=env, capture_output=True, text=True)
            line = [ln for ln in proc.stdout.splitlines() if ln.startswith("HISTORY ")]
            if not line:
                raise SystemExit(f"{case} ({backend}) failed:\n{proc.stderr[-3000:]}")
            histories[backend] = json.loads(line[0][len("HISTORY "):])
        worst, where = 0.0, ""
        for key, values in histories["tnp"].items():
            for i, (u, v) in enumerate(zip(values, histories["tf"][key])):
                rel = abs(u - v) / max(abs(v), 1e-12)
                if rel > worst:
                    worst, where = rel, f"{key}, epoch {i + 1}: tnp {u:.6g}, tf {v:.6g}"
        print(f"{case:14} {worst:36.2e}  ({where})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
