"""Routing support tickets to a team from their raw text.

The tickets are generated: a few words that belong to the true topic (billing, delivery,
login) hidden among common words, sometimes a word of another topic, with capitals and
punctuation. A bag of words and word pairs is enough to route most of them, not all.

Covers: TextVectorization (standardization, bigrams, multi-hot output, adapt,
get_vocabulary), a Dataset pipeline that vectorizes with map, and an end-to-end model whose
input is a string, used on new text.
"""
import numpy as np

from _backend import BACKEND, QUICK, keras, layers, report
import _data

if BACKEND == "tf":
    import tensorflow as tf
    Dataset = tf.data.Dataset
else:
    Dataset = keras.data.Dataset

TOPICS = ("billing", "delivery", "login")
VOCABULARY = 1500
TOPIC_WORDS = (
    "charged refund invoice payment card price bill subscription overcharged receipt twice",
    "package parcel courier shipping tracking arrived delayed address box delivered driver",
    "password login locked reset email username verification code sign app page",
)
COMMON = ("hi hello please help me i my the a was is it not still since yesterday week today "
          "can you thanks urgent again why this order account your team there been have "
          "just need now anyone").split()


def tickets(n, seed):
    rng = np.random.RandomState(seed)
    pools = [w.split() for w in TOPIC_WORDS]
    labels = rng.randint(len(TOPICS), size=n)
    texts = []
    for topic in labels:
        words = list(rng.choice(COMMON, size=rng.randint(6, 16)))
        clues = [rng.choice(pools[topic]) for _ in range(1 + rng.poisson(0.8))]
        # a misleading word from another team's pool, as in "my card was fine but the box..."
        clues += [rng.choice(pools[(topic + rng.randint(1, 3)) % 3])
                  for _ in range(rng.poisson(0.6))]
        for word in clues:
            words.insert(rng.randint(len(words) + 1), word)
        words[0] = words[0].capitalize()
        texts.append(" ".join(words) + rng.choice([".", "!", "?", "!!", " ..."]))
    return np.array(texts), labels.astype("int32")


def make_vectorizer(texts, max_tokens=VOCABULARY):
    vectorizer = keras.layers.experimental.preprocessing.TextVectorization(
        max_tokens=max_tokens, ngrams=2, output_mode="multi_hot",
        # explicit because the two backends' defaults differ; a fixed width also fixes the
        # classifier's weight shapes
        pad_to_max_tokens=True)
    vectorizer.adapt(texts)
    return vectorizer


def build_classifier(width=VOCABULARY, hidden=32, dropout=0.3):
    model = keras.Sequential([keras.Input(shape=(width,)),
                              layers.Dense(hidden, activation="relu"),
                              layers.Dropout(dropout),
                              layers.Dense(len(TOPICS))])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def main():
    train_texts, train_labels = tickets(2000 if QUICK else 8000, seed=1)
    test_texts, test_labels = tickets(2000, seed=2)
    vectorizer = make_vectorizer(train_texts)

    # the vectorizing happens in the input pipeline, so the classifier trains on numbers
    train = (Dataset.from_tensor_slices((train_texts, train_labels)).shuffle(len(train_texts))
             .batch(64).map(lambda text, label: (vectorizer(text), label)))
    classifier = build_classifier()
    history = classifier.fit(train, epochs=3 if QUICK else 8, verbose=0)

    # the same vectorizer in front of the trained layers: a model that reads raw strings
    text_in = keras.Input(shape=(1,), dtype="string")
    router = keras.Model(text_in, layers.Softmax()(classifier(vectorizer(text_in))))
    router.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    _, accuracy = router.evaluate(test_texts, test_labels, verbose=0)
    new = np.array(["I was charged twice for my subscription, please refund!",
                    "The courier left the parcel at the wrong address",
                    "Cannot login: my password reset email never came"])
    routed = np.asarray(router.predict(new, verbose=0)).argmax(axis=1)

    losses = history.history["loss"]
    out = report(losses[0], losses[-1], "test accuracy", accuracy,
                 vocabulary_size=len(vectorizer.get_vocabulary()),
                 chance=_data.majority_rate(test_labels), n_eval=len(test_labels))
    out["routed"] = [TOPICS[i] for i in routed]
    out["vocabulary_head"] = [str(w) for w in vectorizer.get_vocabulary()[:5]]
    return out


if __name__ == "__main__":
    main()
