"""TransE training throughput (issue 10): triples/s and seconds per epoch on a 130k-triple KG.

Usage:
    ``python bench/bench_transe.py [--triples 130000] [--entities 43000] [--epochs 3]
    [--batch-sizes 32 4096] [--sparse] [override ...]``

Builds the synthetic power-law KG (:func:`lokg.data.synthetic.make_synthetic_kg`) at the size
issue 10 names (130k triples, 43k entities: PQL-scale Freebase subsets are ~5k triples, a
user KG of this size took 10-13 min an epoch at batch 32), trains
``experiment=train_transe``'s TransE (model, loss, Bernoulli negatives, entity-norm
constraint) with each batch size for ``--epochs`` epochs (``--max-steps`` caps the small-batch
runs, whose epoch time is then extrapolated from their steps) and prints triples/s per batch
size and the speed-up over the first.  The last line is ``transe_epoch_s=<seconds>``, the
seconds per epoch at the config's batch size (``data.batch_size`` of ``model=transe``).

``--sparse`` also times ``model=transe_sparse`` (sparse embedding gradients, SparseAdam, the
norm constraint on the batch's entities) at the same batch size, in the same run, and prints
``transe_sparse_epoch_s=<seconds> sparse_speedup=<dense / sparse>`` last: a dense step costs
O(|E| d) (Adam and the norm constraint over the whole entity table), a sparse one O(batch d).
"""

from __future__ import annotations

import argparse
import time

import pytorch_lightning as pl
import torch

from lokg.config import compose_config
from lokg.data.loaders import triple_batches
from lokg.data.synthetic import make_synthetic_kg
from lokg.models.transe_module import TransEModule


class _EpochTimer(pl.Callback):
    """Wall time of every training epoch and the number of batches it ran."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.batches: list[int] = []

    def on_train_epoch_start(self, trainer, module) -> None:
        self._start = time.perf_counter()
        self._n = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        self._n += 1

    def on_train_epoch_end(self, trainer, module) -> None:
        self.seconds.append(time.perf_counter() - self._start)
        self.batches.append(self._n)


def measure(
    triples: torch.Tensor,
    sizes: tuple[int, int],
    model_kwargs: dict,
    batch_size: int,
    epochs: int,
    max_steps: int,
    seed: int,
) -> tuple[float, float]:
    """(triples per second, seconds per full epoch) of TransE training at ``batch_size``."""
    pl.seed_everything(seed, workers=True)
    module = TransEModule(*sizes, **model_kwargs)
    module.attach_triples(train_triples=triples)
    timer = _EpochTimer()
    steps_per_epoch = -(-len(triples) // batch_size)
    limit = min(steps_per_epoch, max_steps)
    trainer = pl.Trainer(
        max_epochs=epochs if limit == steps_per_epoch else 1,
        limit_train_batches=limit,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[timer],
    )
    trainer.fit(module, triple_batches(triples, batch_size, shuffle=True, seed=seed))
    # the first epoch carries the trainer's warm-up; use the later ones when there are any
    seconds = timer.seconds[1:] or timer.seconds
    batches = timer.batches[1:] or timer.batches
    per_step = sum(seconds) / sum(batches)
    rate = batch_size / per_step
    return rate, per_step * steps_per_epoch


def _transe_config(overrides: list[str]) -> tuple[object, dict]:
    """``experiment=train_transe`` composed with ``overrides``: the config and the
    TransEModule keyword arguments its ``model`` node gives."""
    import hydra

    cfg = compose_config("train", ["experiment=train_transe", *overrides], ".")
    return cfg, hydra.utils.instantiate(cfg.model, _partial_=True).keywords


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=int, default=130_000)
    parser.add_argument("--entities", type=int, default=43_000)
    parser.add_argument("--relations", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=400, help="cap per small-batch run")
    parser.add_argument("--batch-sizes", type=int, nargs="*", default=[32])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sparse", action="store_true", help="also time model=transe_sparse")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. data.batch_size=8192")
    args = parser.parse_args()

    cfg, model_kwargs = _transe_config(args.overrides)
    config_batch = int(cfg.data.batch_size)
    syn = make_synthetic_kg(
        num_entities=args.entities,
        num_triples=args.triples,
        num_relations=args.relations,
        num_synonyms=0,
        seed=args.seed,
    )
    kg = syn.kg
    print(
        f"synthetic KG: {kg.num_triples:,} triples, {kg.num_entities:,} entities, "
        f"{kg.num_relations} relations; TransE {model_kwargs} ; torch threads "
        f"{torch.get_num_threads()}"
    )
    sizes = (kg.num_entities, kg.num_relations)
    rows = []
    for batch in [*args.batch_sizes, config_batch]:
        rate, epoch_s = measure(
            kg.triples, sizes, model_kwargs, batch, args.epochs, args.max_steps, args.seed
        )
        rows.append((batch, rate, epoch_s))
        print(
            f"batch {batch:6d}: {rate:12,.0f} triples/s  {epoch_s:9.2f} s/epoch  "
            f"(x{rate / rows[0][1]:.1f} vs batch {rows[0][0]}); 100 epochs "
            f"{100 * epoch_s / 60:.1f} min",
            flush=True,
        )
    print(f"transe_epoch_s={rows[-1][2]:.3f}")
    if args.sparse:
        _, sparse_kwargs = _transe_config(["model=transe_sparse", *args.overrides])
        rate, epoch_s = measure(
            kg.triples, sizes, sparse_kwargs, config_batch, args.epochs, args.max_steps, args.seed
        )
        print(
            f"sparse batch {config_batch:6d}: {rate:12,.0f} triples/s  {epoch_s:9.2f} s/epoch; "
            f"100 epochs {100 * epoch_s / 60:.1f} min",
            flush=True,
        )
        print(f"transe_sparse_epoch_s={epoch_s:.3f} sparse_speedup={rows[-1][2] / epoch_s:.2f}")


if __name__ == "__main__":
    main()
