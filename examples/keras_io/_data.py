"""Data shared by the example programs: the same arrays on both backends, nothing downloaded."""
import numpy as np


def digits(test_size=0.2, seed=0):
    """scikit-learn's bundled 8x8 digits as float32 images in [0, 1] with a channel axis,
    split with every class in the same proportion on both sides."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    images = (d.images / 16.0).astype("float32")[..., None]
    return train_test_split(images, d.target.astype("int32"), test_size=test_size,
                            stratify=d.target, random_state=seed)


def majority_rate(labels):
    """Accuracy of always answering the most common label: the floor a classifier must beat."""
    return np.bincount(np.asarray(labels).astype("int64").ravel()).max() / np.size(labels)


def r_squared(truth, guess):
    """1 - residual / total sum of squares: 0 for predicting the mean, 1 for a perfect fit."""
    truth, guess = np.asarray(truth, "float64"), np.asarray(guess, "float64")
    return 1.0 - np.sum((truth - guess) ** 2) / np.sum((truth - truth.mean(0)) ** 2)


def least_squares_r2(x_train, y_train, x_test, y_test):
    """Test R^2 of the best affine fit to the training data: what a network has to beat to
    have found anything nonlinear."""
    design = lambda x: np.c_[np.asarray(x, "float64"), np.ones(len(x))]  # noqa: E731
    coef = np.linalg.lstsq(design(x_train), np.asarray(y_train, "float64"), rcond=None)[0]
    return r_squared(y_test, design(x_test) @ coef)
