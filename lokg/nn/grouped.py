"""Reductions over the groups of a flat tensor (a node's steps, a question's candidates),
shared by the walk's normalisation (:func:`lokg.taimr.walk.net.walk_log_probs`) and the
answer GAT's (:func:`lokg.nn.answer_gat.candidate_log_softmax`)."""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["group_logsumexp"]


def group_logsumexp(values: Tensor, index: Tensor, num_groups: int) -> Tensor:
    """``[num_groups]`` log sum exp of ``values [k]`` per group ``index [k]`` (-inf if empty)."""
    mx = torch.full((num_groups,), float("-inf"), dtype=values.dtype, device=values.device)
    mx = mx.scatter_reduce(0, index, values, reduce="amax", include_self=True)
    safe = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
    total = torch.zeros_like(mx).index_add(0, index, (values - safe[index]).exp())
    return total.log() + safe
