"""Multinomial and binary logistic regression trained by full-batch gradient descent."""


def sigmoid(np, z):
    # numerically stable: exp of a non-positive number only
    return np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))


def softmax(np, z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def main(np):
    rng = np.random.default_rng(7)
    n_per, k, d = 40, 3, 2
    centres = np.array([[0.0, 0.0], [3.0, 1.0], [0.5, 3.5]])
    X = np.concatenate([rng.normal(c, 0.8, size=(n_per, d)) for c in centres])
    y = np.repeat(np.arange(k), n_per)
    perm = rng.permutation(len(y))
    X, y = X[perm], y[perm]
    mu, sd = X.mean(axis=0), X.std(axis=0)
    Xs = (X - mu) / sd
    Xb = np.hstack([np.ones((len(X), 1)), Xs])
    print("data:", X.shape, "class counts:", np.bincount(y))

    # --- binary: class 1 versus the rest
    t = (y == 1).astype(float)
    w = np.zeros(Xb.shape[1])
    losses = []
    for it in range(300):
        z = Xb @ w
        p = sigmoid(np, z)
        # log-loss written with log1p for accuracy: log(1+exp(-|z|)) + max(z,0) - t*z
        loss = np.mean(np.log1p(np.exp(-np.abs(z))) + np.maximum(z, 0) - t * z)
        losses.append(loss)
        grad = Xb.T @ (p - t) / len(t)
        w -= 0.5 * grad
    losses = np.array(losses)
    pred = (sigmoid(np, Xb @ w) > 0.5).astype(int)
    print("binary weights:", np.round(w, 4))
    print("loss first/last:", np.round(losses[[0, -1]], 6))
    print("loss monotone:", bool(np.all(np.diff(losses) <= 1e-12)))
    print("binary accuracy:", np.round(np.mean(pred == t), 4))

    # --- multinomial with L2 regularisation
    W = np.zeros((Xb.shape[1], k))
    Y = np.eye(k)[y]
    lam = 1e-2
    for it in range(400):
        P = softmax(np, Xb @ W)
        P = np.clip(P, 1e-12, 1.0)
        ce = -np.sum(Y * np.log(P)) / len(y) + 0.5 * lam * np.sum(W[1:] ** 2)
        G = Xb.T @ (P - Y) / len(y)
        G[1:] += lam * W[1:]
        W -= 0.8 * G
        if it % 100 == 0:
            print(f"  iter {it:3d}  cross-entropy {ce:.6f}")
    P = softmax(np, Xb @ W)
    yhat = np.argmax(P, axis=1)
    acc = np.mean(yhat == y)
    print("multinomial accuracy:", acc)
    conf = np.zeros((k, k), dtype=int)
    np.add.at(conf, (y, yhat), 1)
    print("confusion matrix:\n", conf)
    print("per-class recall:", np.round(np.diag(conf) / conf.sum(axis=1), 3))
    print("weights:\n", np.round(W, 3))

    # predictions on new points, and the least certain training points
    new = np.array([[0.0, 0.0], [3.0, 1.0], [0.5, 3.5], [1.5, 1.5]])
    Pn = softmax(np, np.hstack([np.ones((4, 1)), (new - mu) / sd]) @ W)
    print("new-point classes:", np.argmax(Pn, axis=1), "max prob:", np.round(Pn.max(axis=1), 3))
    entropy = -np.sum(P * np.log(np.clip(P, 1e-300, None)), axis=1)
    worst = np.argsort(entropy)[-3:][::-1]
    print("most uncertain samples:", worst, np.round(entropy[worst], 4))
    return {"w": w, "W": W, "losses": losses, "conf": conf, "acc": acc, "worst": worst}
