"""A convnet reads the 8x8 digits.

Covers: a Sequential model of Conv2D, MaxPooling2D, GlobalAveragePooling2D and Dropout;
integer labels with a logits loss; fit with explicit validation data; evaluate; predict.
"""
import numpy as np

from _backend import QUICK, keras, layers, report
import _data


def build_model(width=16, dropout=0.25):
    model = keras.Sequential([
        keras.Input(shape=(8, 8, 1)),
        # "same" padding because a valid 3x3 on an 8x8 image would drop the border strokes
        # that tell a 1 from a 7
        layers.Conv2D(width, 3, padding="same", activation="relu"),
        layers.Conv2D(width, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(2),
        layers.Conv2D(2 * width, 3, padding="same", activation="relu"),
        # averaging instead of flattening keeps the head at 2*width*10 weights
        layers.GlobalAveragePooling2D(),
        layers.Dropout(dropout),
        layers.Dense(10),
    ])
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def main():
    x_train, x_test, y_train, y_test = _data.digits()
    # a fixed slice of the training split for validation, so the test split is touched once
    x_val, y_val = x_train[-200:], y_train[-200:]
    x_fit, y_fit = x_train[:-200], y_train[:-200]
    model = build_model(width=8 if QUICK else 16)
    history = model.fit(x_fit, y_fit, validation_data=(x_val, y_val), batch_size=32,
                        epochs=4 if QUICK else 15, verbose=0)
    test_loss, test_acc = model.evaluate(x_test, y_test, verbose=0)
    logits = np.asarray(model.predict(x_test[:5], verbose=0))
    losses = history.history["loss"]
    out = report(losses[0], losses[-1], "test accuracy", test_acc, test_loss=test_loss,
                 val_accuracy=history.history["val_accuracy"][-1],
                 chance=_data.majority_rate(y_test), n_eval=len(y_test))
    out["prediction_shape"] = logits.shape
    return out


if __name__ == "__main__":
    main()
