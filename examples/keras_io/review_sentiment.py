"""Telling glowing film reviews from scathing ones, from a folder of text files.

The reviews are generated and written as one .txt file each under ``train/{neg,pos}/`` and
``test/{neg,pos}/``, the layout ``text_dataset_from_directory`` reads: filler sentences, a few
opinion words for the true side and now and then one for the other side, HTML line breaks
(``<br />``) and punctuation glued to the words, capitals. Standardizing the text (lower case, no
markup, no punctuation) lets "Great!", "great," and "GREAT" count as one word.

Covers: ``utils.text_dataset_from_directory`` with a validation split, a custom
standardization made of ``strings.lower`` and ``strings.regex_replace``, ``TextVectorization``
under its TF 2.6+ name (``output_mode="int"``, ``output_sequence_length``, ``adapt`` on a
dataset), a Dataset pipeline that vectorizes in ``map``, Embedding + Conv1D +
GlobalMaxPooling1D + Dense trained with ``fit`` and scored with ``evaluate``, then an
end-to-end model taking raw strings, used on new reviews.
"""
import os
import tempfile

import numpy as np

from _backend import QUICK, keras, layers, report, tf
import _data

MAX_TOKENS = 2000
SEQUENCE_LENGTH = 80
GOOD = ("superb moving brilliant delightful gripping wonderful masterful charming stunning "
        "hilarious touching great").split()
BAD = ("dull clumsy tedious boring wooden dreadful lifeless awful incoherent bland forgettable "
       "pointless").split()
FILLER = ("the film story actor actress plot director scene camera music score ending it was "
          "is a an and of this that with his her their about in on at for really quite very "
          "rather seemed felt two hours cinema screen sequel book cast script").split()


def review(rng, positive):
    ours, theirs = (GOOD, BAD) if positive else (BAD, GOOD)
    sentences = []
    for _ in range(rng.randint(3, 7)):
        words = list(rng.choice(FILLER, size=rng.randint(4, 10)))
        if rng.rand() < 0.6:
            words.insert(rng.randint(len(words) + 1), rng.choice(ours))
        if rng.rand() < 0.12:
            words.insert(rng.randint(len(words) + 1), rng.choice(theirs))
        sentence = " ".join(words)
        sentences.append(sentence[0].upper() + sentence[1:] + rng.choice([".", "!", "...", "?"]))
    # some opinion words shouted, or followed by punctuation
    text = " ".join(sentences)
    for word in set(text.split()) & set(ours + theirs):
        if rng.rand() < 0.3:
            text = text.replace(word, rng.choice([word.upper(), word + ",", word + "!"]), 1)
    return (" <br /><br />" if rng.rand() < 0.5 else " ").join(text.split(". "))


def write_reviews(root, n, seed):
    """``n`` reviews, half of each side, as root/{neg,pos}/<i>.txt."""
    rng = np.random.RandomState(seed)
    for side in ("neg", "pos"):
        os.makedirs(os.path.join(root, side))
    for i in range(n):
        side = "pos" if i % 2 else "neg"
        with open(os.path.join(root, side, f"{i}.txt"), "w") as f:
            f.write(review(rng, side == "pos"))


def standardize(text):
    text = tf.strings.lower(text)
    text = tf.strings.regex_replace(text, "<br />", " ")
    return tf.strings.regex_replace(text, "[[:punct:]]", "")


def build_classifier(embedding=32, filters=64):
    tokens = keras.Input(shape=(None,), dtype="int64")
    x = layers.Embedding(MAX_TOKENS, embedding)(tokens)
    x = layers.Dropout(0.2)(x)
    x = layers.Conv1D(filters, 5, activation="relu")(x)
    x = layers.GlobalMaxPooling1D()(x)
    x = layers.Dense(32, activation="relu")(x)
    x = layers.Dropout(0.2)(x)
    score = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(tokens, score)
    model.compile(loss="binary_crossentropy", optimizer=keras.optimizers.Adam(3e-3),
                  metrics=["accuracy"])
    return model


def main():
    n_train, n_test = (800, 600) if QUICK else (4000, 2000)
    with tempfile.TemporaryDirectory() as root:
        write_reviews(os.path.join(root, "train"), n_train, seed=1)
        write_reviews(os.path.join(root, "test"), n_test, seed=2)
        split = dict(batch_size=32, validation_split=0.2, seed=7)
        train_raw = keras.utils.text_dataset_from_directory(
            os.path.join(root, "train"), subset="training", **split)
        val_raw = keras.utils.text_dataset_from_directory(
            os.path.join(root, "train"), subset="validation", **split)
        test_raw = keras.utils.text_dataset_from_directory(os.path.join(root, "test"),
                                                           batch_size=32)
        class_names = train_raw.class_names

        vectorize = layers.TextVectorization(max_tokens=MAX_TOKENS, standardize=standardize,
                                             output_mode="int",
                                             output_sequence_length=SEQUENCE_LENGTH)
        vectorize.adapt(train_raw.map(lambda text, label: text))

        # the classifier trains on token ids: the vectorizing happens in the input pipeline
        def to_ids(text, label):
            return vectorize(text), label

        train, val, test = (d.map(to_ids).cache() for d in (train_raw, val_raw, test_raw))
        classifier = build_classifier()
        history = classifier.fit(train, validation_data=val, epochs=4 if QUICK else 6,
                                 verbose=0)
        _, accuracy = classifier.evaluate(test, verbose=0)

        # the same vectorizer in front of the trained layers: a model that reads raw text
        text_in = keras.Input(shape=(1,), dtype="string")
        reader = keras.Model(text_in, classifier(vectorize(text_in)))
        reader.compile(loss="binary_crossentropy", metrics=["accuracy"])
        _, raw_accuracy = reader.evaluate(test_raw, verbose=0)
        labels = np.concatenate([np.asarray(y) for _, y in test_raw])

    new = np.array(["A superb, MOVING film!<br /><br />The cast was wonderful.",
                    "Two hours of tedious, wooden acting... the plot was pointless."])
    scores = np.asarray(reader.predict(new, verbose=0)).ravel()
    vocabulary = [str(w) for w in vectorize.get_vocabulary()]
    losses = history.history["loss"]
    out = report(losses[0], losses[-1], "test accuracy", accuracy,
                 raw_text_accuracy=raw_accuracy, vocabulary_size=len(vocabulary),
                 chance=_data.majority_rate(labels), n_eval=len(labels),
                 val_accuracy=history.history["val_accuracy"][-1])
    out["class_names"] = list(class_names)
    out["new_reviews"] = [class_names[int(s > 0.5)] for s in scores]
    out["vocabulary_head"] = vocabulary[:4]
    out["marked_up_tokens"] = [w for w in vocabulary if not w.isalpha() and w not in
                               ("", "[UNK]")]
    return out


if __name__ == "__main__":
    main()
