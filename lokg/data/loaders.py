"""Triple batches drawn as one gather per batch (TransE at real scale, issue 10)."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler

__all__ = ["triple_batches"]


class _Rows(Dataset):
    """``dataset[list_of_ids]`` -> ``[len, 3]`` rows in one gather."""

    def __init__(self, triples: torch.Tensor):
        self.triples = triples

    def __len__(self) -> int:
        return len(self.triples)

    def __getitem__(self, idx: torch.Tensor | list[int]) -> torch.Tensor:
        return self.triples.index_select(0, torch.as_tensor(idx, dtype=torch.long))


class _SlicedBatches(BatchSampler):
    """A ``BatchSampler`` whose batches are slices ``[b]`` of one index tensor per epoch.

    The stock one builds a Python list of ``batch_size`` ints per batch (17 ms at 65,536,
    a 3.7M triples/s ceiling); this one draws the sampler's order as one tensor and slices
    it. The order is the sampler's own: ``RandomSampler``'s permutation is drawn with its
    generator as it draws it (two ``randperm`` per epoch: the second is the empty tail it
    draws when exhausted), so the batches are the stock ones, bit for bit; any other
    sampler (Lightning's distributed one) is read once per epoch.
    """

    def _order(self) -> torch.Tensor:
        s = self.sampler
        if isinstance(s, SequentialSampler):
            return torch.arange(len(s.data_source))
        if (
            isinstance(s, RandomSampler)
            and not s.replacement
            and s.generator is not None
            and s.num_samples == (n := len(s.data_source)) > 0
        ):
            order = torch.randperm(n, generator=s.generator)
            torch.randperm(n, generator=s.generator)  # RandomSampler's empty tail draw
            return order
        return torch.as_tensor(list(s), dtype=torch.long)

    def __iter__(self) -> Iterator[torch.Tensor]:
        order = self._order()
        stop = len(order) - len(order) % self.batch_size if self.drop_last else len(order)
        for start in range(0, stop, self.batch_size):
            yield order[start : start + self.batch_size]


def triple_batches(
    triples: torch.Tensor, batch_size: int, shuffle: bool, seed: int | None = None
) -> DataLoader:
    """Batches ``[b, 3]`` of ``triples [T, 3]``, each one gather ``triples[idx]``.

    A ``BatchSampler`` hands the dataset whole index lists, so a batch costs one indexing
    instead of ``batch_size`` item reads and a collate (0.16 s instead of 0.86 s per epoch
    of 130k triples at batch 4,096): what makes PyKEEN-style batches of 2,048-8,192 triples
    cheap; the index lists are slices of one permutation (:class:`_SlicedBatches`), so a
    batch of 65,536 costs 0.3 ms, not 17.  ``seed`` fixes the shuffling order (default: drawn
    from torch's seed).
    """
    generator = None
    if shuffle:
        generator = torch.Generator()
        generator.manual_seed(int(torch.initial_seed() if seed is None else seed))
    sampler = RandomSampler(triples, generator=generator) if shuffle else SequentialSampler(triples)
    return DataLoader(
        _Rows(triples),
        sampler=_SlicedBatches(sampler, batch_size=batch_size, drop_last=False),
        batch_size=None,
        # pinned batches make the host-to-GPU copy asynchronous (a copy from pageable memory
        # waits for the stream, a host synchronisation every step); nothing to pin on a CPU
        pin_memory=torch.cuda.is_available(),
    )
