"""TransE training throughput through the real Lightning Trainer, CPU and GPU in one run.

    python bench/bench_train.py [--data pq2h | --synthetic N] [--batch-sizes 1024 ...]
        [--model transe transe_sparse] [--steps 60] [--json F]

The model and optimizer come from ``configs/train.yaml`` with ``experiment=train_transe
model=<model>``; the triples from ``--data`` (the package's DataModule: reader, split,
bench/_data.py's root) or, with ``--synthetic N``, the package's synthetic power-law KG of N
triples (:func:`lokg.data.synthetic.make_synthetic_kg`, |E| = N / 10, as bench/bench_scale.py
draws it), all of them training triples, batched by :func:`lokg.data.loaders.triple_batches`
as the DataModule batches them. The Trainer fits ``--steps`` optimizer steps after 10 warm-up
steps, for every model, batch size and device; the clock runs from the end of the last
warm-up step to the end of the last step, with the device synchronised at both ends only, so
it counts everything a training epoch does (loading batches, Lightning's loop, forward with
negatives, backward, the optimizer, the entity-norm constraint, epoch ends) and lets the GPU
run behind the host as in a real fit. Prints positive triples per second per row; the GPU
rows only where ``torch.cuda.is_available()``, with ``float32_matmul_precision=high`` as
``trainer=gpu`` sets it, else one line saying they were skipped. The GAT's throughput is
bench/bench_taimr.py's ``train`` (questions per optimizer step).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from dataclasses import asdict, dataclass

import hydra
import numpy as np
import pytorch_lightning as pl
import torch
from _data import bench_root

from lokg.config import compose_config
from lokg.data.loaders import triple_batches

WARMUP = 10


@dataclass
class Triples:
    """The training triples of one bench graph and its vocabulary sizes."""

    name: str
    train: torch.Tensor  # [T, 3]
    num_entities: int
    num_relations: int


def dataset_triples(data: str) -> Triples:
    """The package's ``data=<data>`` training triples (the DataModule's split)."""
    cfg = compose_config("train", ["experiment=train_transe", f"data={data}"], bench_root())
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    sizes = dm.model_kwargs()
    return Triples(dm.name, dm.train_triples, sizes["num_entities"], sizes["num_relations"])


def synthetic_triples(n: int) -> Triples:
    """The synthetic power-law KG of ``n`` triples (bench/bench_scale.py's settings)."""
    from lokg.data.synthetic import make_synthetic_kg

    syn = make_synthetic_kg(
        num_entities=max(1000, n // 10), num_triples=n, num_relations=50, num_synonyms=5,
        alpha=0.9, seed=0, name=f"synthetic-{n}",
    )  # fmt: skip
    kg = syn.kg
    train = torch.from_numpy(np.ascontiguousarray(kg.triples_np, dtype=np.int64))
    return Triples(kg.name, train, kg.num_entities, kg.num_relations)


class StepClock(pl.Callback):
    """The wall time at the end of the warm-up and of the last step (device synchronised
    there only) and the triples of the timed steps."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.start = self.end = 0.0
        self.steps = 0
        self.triples = 0

    @staticmethod
    def _now(module: pl.LightningModule) -> float:
        if module.device.type == "cuda":
            torch.cuda.synchronize(module.device)
        return time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if trainer.global_step == self.warmup:
            self.start = self._now(module)
        elif trainer.global_step > self.warmup:
            self.steps += 1
            self.triples += len(batch)

    def on_train_end(self, trainer, module) -> None:
        self.end = self._now(module)


@dataclass
class Row:
    """One measurement: ``model`` on ``device`` at ``batch_size``."""

    device: str
    model: str
    dataset: str
    triples: int
    entities: int
    batch_size: int
    negatives: int
    steps_timed: int
    step_ms: float  # mean wall time per timed step
    triples_per_s: float


def transe_throughput(
    data: Triples, model: str, batch_size: int, steps: int, accelerator: str
) -> Row:
    """Fit ``model`` on ``data`` for ``WARMUP + steps`` steps on ``accelerator``; time the
    last ``steps``."""
    cfg = compose_config("train", ["experiment=train_transe", f"model={model}"], bench_root())
    pl.seed_everything(0, workers=True)
    module = hydra.utils.instantiate(cfg.model, _partial_=True)(
        num_entities=data.num_entities, num_relations=data.num_relations
    )
    module.attach_triples(train_triples=data.train)
    clock = StepClock(WARMUP)
    trainer = pl.Trainer(
        accelerator=accelerator, devices=1, max_steps=steps + WARMUP, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        limit_val_batches=0, num_sanity_val_steps=0, callbacks=[clock],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, triple_batches(data.train, batch_size, shuffle=True, seed=0))
    seconds = clock.end - clock.start
    return Row(
        device=accelerator, model=model, dataset=data.name, triples=len(data.train),
        entities=data.num_entities, batch_size=batch_size,
        negatives=int(module.hparams.num_negatives), steps_timed=clock.steps,
        step_ms=seconds / max(clock.steps, 1) * 1e3,
        triples_per_s=clock.triples / seconds if seconds > 0 else float("nan"),
    )  # fmt: skip


def row_line(r: Row) -> str:
    label = "TransE" if r.model == "transe" else f"TransE ({r.model})"
    return (
        f"{label} {r.device} on {r.dataset} ({r.triples:,} triples, {r.entities:,} entities; "
        f"batch {r.batch_size}, {r.negatives} negative each, {r.steps_timed} steps timed): "
        f"{r.triples_per_s:,.0f} triples/s ({r.step_ms:.1f} ms a step)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--data", default="pq2h", help="a dataset config (default pq2h)")
    src.add_argument("--synthetic", type=int, default=None, metavar="N",
                     help="a synthetic KG of N triples instead of --data")  # fmt: skip
    ap.add_argument("--batch-sizes", "--batch-size", type=int, nargs="+", default=[1024])
    ap.add_argument("--model", nargs="+", default=["transe"], help="model configs to time")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.synthetic is not None and args.synthetic < 1000:
        ap.error(f"--synthetic {args.synthetic}: expected at least 1000 triples")
    t0 = time.perf_counter()
    data = synthetic_triples(args.synthetic) if args.synthetic else dataset_triples(args.data)
    print(f"{data.name}: {len(data.train):,} training triples ({time.perf_counter() - t0:.1f} s)")
    devices = ["cpu"] + (["gpu"] if torch.cuda.is_available() else [])
    rows = []
    for device in devices:
        if device == "gpu":
            torch.set_float32_matmul_precision("high")  # as trainer=gpu sets it
        for model in args.model:
            for b in args.batch_sizes:
                rows.append(transe_throughput(data, model, b, args.steps, device))
                print(row_line(rows[-1]), flush=True)
    if not torch.cuda.is_available():
        print("TransE gpu: skipped (no GPU on this machine: torch.cuda.is_available() is False)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) for r in rows], f, indent=1)


if __name__ == "__main__":
    main()
