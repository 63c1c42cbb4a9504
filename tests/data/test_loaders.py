"""Triple batches (lokg/data/loaders.py): slices of one permutation, the stock sampler's order."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import BatchSampler, RandomSampler, SequentialSampler

from lokg.data.loaders import _SlicedBatches, triple_batches


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_sliced_batches_are_the_stock_batch_samplers_bit_for_bit(shuffle, drop_last):
    data = torch.arange(23)

    def sampler():
        if not shuffle:
            return SequentialSampler(data)
        g = torch.Generator()
        g.manual_seed(7)
        return RandomSampler(data, generator=g)

    stock = BatchSampler(sampler(), batch_size=5, drop_last=drop_last)
    sliced = _SlicedBatches(sampler(), batch_size=5, drop_last=drop_last)
    assert len(sliced) == len(stock)
    for _ in range(3):  # the generator advances alike from epoch to epoch
        ours = list(sliced)
        assert all(isinstance(b, torch.Tensor) for b in ours)
        assert [b.tolist() for b in ours] == list(stock)


def test_another_sampler_is_read_in_its_own_order():
    order = [4, 0, 3, 1, 2]
    assert [b.tolist() for b in _SlicedBatches(order, batch_size=2, drop_last=False)] == [
        [4, 0], [3, 1], [2],
    ]  # fmt: skip


def test_triple_batches_gather_rows_of_the_triples():
    triples = torch.arange(30).reshape(10, 3)
    batches = list(triple_batches(triples, 4, shuffle=True, seed=0))
    assert [len(b) for b in batches] == [4, 4, 2]
    assert torch.equal(torch.cat(batches).sort(dim=0).values, triples)
