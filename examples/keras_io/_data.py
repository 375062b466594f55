"""Offline stand-ins for the keras-io examples' downloads (same arrays on both backends)."""
import numpy as np


def digits(side=8, test_size=0.2, seed=0):
    """scikit-learn's 8x8 digits, as MNIST-like uint8 images (n, side, side), split 80/20.

    ``side=16`` or ``28`` enlarges each pixel into a block (nearest neighbour), so models written
    for 28x28 MNIST keep valid shapes after their convolutions and poolings.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    images = np.round(d.images * (255.0 / 16.0)).astype("uint8")
    if side != 8:
        idx = (np.arange(side) * 8) // side
        images = images[:, idx][:, :, idx]
    x_train, x_test, y_train, y_test = train_test_split(
        images, d.target.astype("uint8"), test_size=test_size, stratify=d.target, random_state=seed)
    return (x_train, y_train), (x_test, y_test)


_NEUTRAL = ("the a an this that movie film story actor actress scene plot director time "
            "character characters music ending show one it was is be watch seen people "
            "watching two first way life work make real world thing little old new years "
            "script camera cast role series end part performance action comedy drama").split()
_POSITIVE = "great excellent wonderful loved best amazing brilliant superb enjoyable fun".split()
_NEGATIVE = "bad worst awful boring terrible waste poor horrible dull stupid".split()


def reviews(n, seed):
    """Generated movie reviews with IMDB's quirks (``<br />`` tags, punctuation, capitals):
    neutral words plus 3-10 sentiment words, 80% of them matching the label (1 = positive)."""
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 2, size=n)
    texts = []
    for label in labels:
        words = list(rng.choice(_NEUTRAL, size=rng.randint(30, 70)))
        for _ in range(3 + min(rng.poisson(3), 7)):
            agree = rng.random_sample() < 0.8
            pool = _POSITIVE if (label == 1) == agree else _NEGATIVE
            words.insert(rng.randint(len(words) + 1), rng.choice(pool))
        text = " ".join(words).capitalize()
        cut = rng.randint(len(text))
        cut = text.find(" ", cut)
        if cut > 0:
            text = text[:cut] + ".<br /><br />" + text[cut:].capitalize() + "!"
        texts.append(text)
    return np.array(texts), labels.astype("int32")
