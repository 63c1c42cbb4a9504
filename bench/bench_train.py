"""TransE training throughput through the real Lightning Trainer (CPU; GPU when present).

    python bench/bench_train.py [--data pq2h] [--batch-size 1024] [--steps 60] [--json F]

The model, the DataModule and the optimizer come from ``configs/train.yaml`` with
``experiment=train_transe data=<d>`` (the package's reader and split, bench/_data.py's root),
and the Trainer fits ``--steps`` optimizer steps; a callback times each training batch
(forward with negatives, backward, Adam, the entity-norm constraint). The first 10 batches
are warm-up and not counted. Prints positive triples per second (median batch) per device;
the GPU row is skipped with a note when ``torch.cuda.is_available()`` is false. The GAT's
throughput is bench/bench_taimr.py's ``train`` (questions per optimizer step).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import hydra
import numpy as np
import pytorch_lightning as pl
import torch
from _data import bench_root

from lokg.config import compose_config

WARMUP = 10


class BatchTimer(pl.Callback):
    """Wall time and size of each training batch."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.sizes: list[int] = []
        self._t0 = 0.0

    def on_train_batch_start(self, trainer, module, batch, batch_idx) -> None:
        if torch.cuda.is_available() and module.device.type == "cuda":
            torch.cuda.synchronize()
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if module.device.type == "cuda":
            torch.cuda.synchronize()
        self.times.append(time.perf_counter() - self._t0)
        self.sizes.append(len(batch))


def transe_throughput(data: str, batch_size: int, steps: int, accelerator: str) -> dict:
    cfg = compose_config(
        "train",
        ["experiment=train_transe", f"data={data}", f"data.batch_size={batch_size}"],
        bench_root(),
    )
    dm = hydra.utils.instantiate(cfg.data)
    dm.prepare_data()
    dm.setup("fit")
    model = hydra.utils.instantiate(cfg.model, _partial_=True)(**dm.model_kwargs())
    timer = BatchTimer()
    trainer = pl.Trainer(
        accelerator=accelerator, devices=1, max_steps=steps + WARMUP, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
        limit_val_batches=0, num_sanity_val_steps=0, callbacks=[timer],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(model, datamodule=dm)
    t = np.asarray(timer.times[WARMUP:])
    b = np.asarray(timer.sizes[WARMUP:])
    return {
        "device": accelerator,
        "dataset": dm.name,
        "triples": int(dm.kg.num_triples),
        "batch_size": batch_size,
        "negatives": int(model.hparams.num_negatives),
        "steps_timed": len(t),
        "batch_p50_ms": float(np.median(t) * 1e3),
        "triples_per_s": float(np.sum(b) / np.sum(t)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="pq2h")
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = [transe_throughput(args.data, args.batch_size, args.steps, "cpu")]
    if torch.cuda.is_available():
        rows.append(transe_throughput(args.data, args.batch_size, args.steps, "gpu"))
    for r in rows:
        print(
            f"TransE {r['device']} on {r['dataset']} ({r['triples']:,} triples; batch "
            f"{r['batch_size']}, {r['negatives']} negative each, {r['steps_timed']} steps "
            f"timed): {r['triples_per_s']:,.0f} triples/s (batch p50 {r['batch_p50_ms']:.1f} ms)",
            flush=True,
        )
    if not torch.cuda.is_available():
        print("TransE gpu: skipped (no GPU on this machine: torch.cuda.is_available() is False)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
