"""Parameter-server training (TF 2.4's ``ParameterServerStrategy`` + ``ClusterCoordinator``) of
the reference MLP (784-512-512-10) on synthetic data, as docs/distributed.md describes it.

    mpiexec --with-ft ulfm -n 4 python examples/ps_training.py [--closures 200]

Rank 0 is the chief (it runs this script's training loop), rank 1 the parameter server, ranks
2-3 the workers (they only serve). Under ``--with-ft ulfm`` a worker may be killed at any moment
(``kill -9``): its closure runs again on the other worker and the job finishes. The chief prints
the first and last losses, the optimizer's step count and the attempt log's summary.
"""
import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tnp_train as tt  # noqa: E402

SIZES = (784, 512, 512, 10)


def make_model():
    return tt.Sequential([tt.Input((SIZES[0],))]
                         + [tt.layers.Dense(n, activation="relu") for n in SIZES[1:-1]]
                         + [tt.layers.Dense(SIZES[-1])])


def dataset_fn():
    # each worker makes its own pipeline: a teacher network labels Gaussian inputs
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2048, SIZES[0]), dtype=np.float32)
    teacher = rng.standard_normal((SIZES[0], SIZES[-1])).astype(np.float32)
    y = np.argmax(x @ teacher, axis=1).astype(np.int64)
    return tt.data.Dataset.from_tensor_slices((x, y)).shuffle(2048).batch(64).repeat()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--closures", type=int, default=200)
    parser.add_argument("--num-ps", type=int, default=1)
    args = parser.parse_args()

    resolver = tt.distribute.cluster_resolver.MPIClusterResolver(num_ps=args.num_ps)
    if resolver.task_type in ("worker", "ps"):
        tt.distribute.Server(resolver).join()      # returns when the chief is done
        return

    strategy = tt.distribute.experimental.ParameterServerStrategy(resolver)
    coordinator = tt.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    tt.utils.set_random_seed(0)
    with strategy.scope():
        model, optimizer = make_model(), tt.optimizers.SGD(0.05)
        loss_fn = tt.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def train_steps(iterator):
        def replica_fn(batch):
            x, y = batch
            with tt.GradientTape() as tape:
                loss = tt.nn.compute_average_loss(loss_fn(y, model(x, training=True)))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return strategy.run(replica_fn, args=(next(iterator),))

    it = iter(coordinator.create_per_worker_dataset(dataset_fn))
    t0 = time.perf_counter()
    results = [coordinator.schedule(train_steps, args=(it,)) for _ in range(args.closures)]
    coordinator.join()
    seconds = time.perf_counter() - t0
    losses = [float(r.fetch()) for r in results]
    outcomes = collections.Counter(a.outcome for a in coordinator.attempt_log())
    print(f"{args.closures} closures in {seconds:.1f} s ({args.closures / seconds:.1f}/s) on "
          f"{coordinator.num_workers} workers")
    print(f"loss: first 10 {np.mean(losses[:10]):.3f}, last 10 {np.mean(losses[-10:]):.3f}")
    print(f"optimizer.iterations = {int(optimizer.iterations.numpy())}")
    print(f"attempts: {dict(outcomes)}")


if __name__ == "__main__":
    main()
