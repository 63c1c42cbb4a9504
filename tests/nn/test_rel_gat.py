"""RelGATConv (Eq. (13)-(15)) on tiny hand-written graphs, as PyG tests GATConv."""

from __future__ import annotations

import math

import pytest
import torch

from lokg.nn.rel_gat import RelGAT, RelGATConv

# 0 -r0-> 1, 0 -r1-> 2, 1 -r0-> 2, 2 -r1-> 0, 2 -r0-> 1, 2 -r1-> 3 (node 3 has no out-edge)
EDGE_INDEX = torch.tensor([[0, 0, 1, 2, 2, 2], [1, 2, 2, 0, 1, 3]])
EDGE_TYPE = torch.tensor([0, 1, 0, 1, 0, 1])


def _inputs(d_v=5, d_r=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, d_v, generator=g), torch.randn(2, d_r, generator=g)


def _per_source_sum(alpha, edge_index, num_nodes):
    return torch.zeros(num_nodes, alpha.size(1)).index_add_(0, edge_index[0], alpha)


@pytest.mark.parametrize("concat", [True, False])
@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("query_dim", [None, 6])
def test_shape_repr_and_attention_is_a_distribution_per_source(concat, heads, query_dim):
    conv = RelGATConv(5, 3, 4, heads=heads, concat=concat, query_dim=query_dim)
    x, rel = _inputs()
    query = None if query_dim is None else torch.randn(query_dim)
    out, alpha = conv(x, EDGE_INDEX, EDGE_TYPE, rel, query, return_attention_weights=True)
    assert out.shape == (4, heads * 4 if concat else 4)
    assert alpha.shape == (6, heads)
    assert ((alpha >= 0) & (alpha <= 1)).all()
    sums = _per_source_sum(alpha, EDGE_INDEX, 4)
    # nodes 0, 1, 2 have out-edges: their attention sums to 1; node 3 has none.
    assert torch.allclose(sums[:3], torch.ones(3, heads), atol=1e-6)
    assert torch.all(sums[3] == 0)
    assert repr(conv).startswith(f"RelGATConv(5, 4, rel=3, heads={heads}, concat={concat}")


def _scalar_conv(conv: RelGATConv, att_rel: float = 0.0) -> RelGATConv:
    """``conv`` (one head, scalar features) with W = W_r = 1 and a = [0 || 1 || att_rel]:
    logit(u->v|r) = h_v + att_rel * e_r."""
    with torch.no_grad():
        conv.lin.weight.fill_(1.0)
        conv.lin_rel.weight.fill_(1.0)
        conv.att_src.fill_(0.0)
        conv.att_dst.fill_(1.0)
        conv.att_rel.fill_(att_rel)
    return conv


def test_attention_and_aggregation_match_hand_computation():
    # One head, scalar features; W = W_r = 1, a = [0 || 1 || 1]: logit(u->v|r) = h_v + e_r.
    conv = _scalar_conv(RelGATConv(1, 1, 1, heads=1, concat=True, activation=False), att_rel=1.0)
    x = torch.tensor([[1.0], [2.0], [3.0]])
    rel = torch.tensor([[0.0], [-3.0]])
    edge_index = torch.tensor([[0, 0, 1], [1, 2, 2]])
    edge_type = torch.tensor([0, 1, 0])
    out, alpha = conv(x, edge_index, edge_type, rel, return_attention_weights=True)
    # logits: 0->1: 2 + 0 = 2; 0->2: 3 - 3 = 0; 1->2: 3 + 0 = 3 (alone in its group).
    a01 = math.exp(2) / (math.exp(2) + math.exp(0))
    a02 = 1.0 / (math.exp(2) + 1.0)
    assert torch.allclose(alpha.squeeze(1), torch.tensor([a01, a02, 1.0]))
    # Eq. (14): h'_v = sum_u alpha(u->v) W h_u; node 0 has no in-edge.
    assert torch.allclose(out.squeeze(1), torch.tensor([0.0, a01 * 1.0, a02 * 1.0 + 2.0]))


def test_leaky_relu_on_negative_logits():
    conv = _scalar_conv(RelGATConv(1, 1, 1, heads=1, activation=False, negative_slope=0.2))
    x = torch.tensor([[0.0], [-5.0], [1.0]])
    _, alpha = conv(
        x, torch.tensor([[0, 0], [1, 2]]), torch.tensor([0, 0]), torch.zeros(1, 1),
        return_attention_weights=True,
    )  # fmt: skip
    expected = torch.softmax(torch.tensor([0.2 * -5.0, 1.0]), 0)
    assert torch.allclose(alpha.squeeze(1), expected)


def test_mean_heads_then_elu_eq15():
    conv = RelGATConv(2, 2, 3, heads=2, concat=False, activation=False)
    x, rel = torch.randn(4, 2), torch.randn(2, 2)
    out = conv(x, EDGE_INDEX, EDGE_TYPE, rel)
    conv_cat = RelGATConv(2, 2, 3, heads=2, concat=True, activation=False)
    conv_cat.load_state_dict(conv.state_dict())
    cat = conv_cat(x, EDGE_INDEX, EDGE_TYPE, rel).view(4, 2, 3)
    assert torch.allclose(out, cat.mean(1), atol=1e-6)
    conv.activation = True
    assert torch.allclose(conv(x, EDGE_INDEX, EDGE_TYPE, rel), torch.nn.functional.elu(out))


def test_relation_embedding_enters_only_the_attention():
    # every source has one out-edge, so alpha = 1 whatever e_r is: outputs cannot change.
    conv = RelGATConv(5, 3, 4, heads=2)
    x, rel = _inputs()
    edge_index = torch.tensor([[0, 1, 2], [1, 2, 3]])
    edge_type = torch.tensor([0, 1, 0])
    a = conv(x, edge_index, edge_type, rel)
    b = conv(x, edge_index, edge_type, rel * 10 + 1)
    assert torch.allclose(a, b)
    _, al1 = conv(x, EDGE_INDEX, EDGE_TYPE, rel, return_attention_weights=True)
    _, al2 = conv(x, EDGE_INDEX, EDGE_TYPE, rel * 10 + 1, return_attention_weights=True)
    assert not torch.allclose(al1, al2)


@pytest.mark.parametrize("query_dim", [None, 4])
def test_edge_order_invariance(query_dim):
    conv = RelGATConv(5, 3, 4, heads=2, query_dim=query_dim)
    x, rel = _inputs()
    q = None if query_dim is None else torch.randn(1, query_dim)
    perm = torch.tensor([5, 2, 0, 4, 1, 3])
    out1, a1 = conv(x, EDGE_INDEX, EDGE_TYPE, rel, q, return_attention_weights=True)
    out2, a2 = conv(x, EDGE_INDEX[:, perm], EDGE_TYPE[perm], rel, q, return_attention_weights=True)
    assert torch.allclose(out1, out2, atol=1e-6)
    assert torch.allclose(a1[perm], a2, atol=1e-6)


def test_empty_graph():
    conv = RelGATConv(5, 3, 4, heads=2)
    x, rel = _inputs()
    out, alpha = conv(
        x, torch.empty(2, 0, dtype=torch.long), torch.empty(0, dtype=torch.long), rel,
        return_attention_weights=True,
    )  # fmt: skip
    assert out.shape == (4, 8) and alpha.shape == (0, 2)
    assert torch.all(out == 0)  # no in-edges: ELU(0) = 0


def test_gradients_finite_and_reset_parameters():
    model = RelGAT(5, 3, hidden=4, heads=2, dropout=0.3, query_dim=6)
    x, rel = _inputs()
    rel.requires_grad_(True)
    h, alpha = model(x, EDGE_INDEX, EDGE_TYPE, rel, torch.randn(6))
    assert h.shape == (4, 4) and alpha.shape == (6, 2)
    (h.sum() + alpha.log().sum()).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert torch.isfinite(rel.grad).all()
    model.reset_parameters()
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_query_conditioning_changes_attention():
    torch.manual_seed(0)
    conv = RelGATConv(5, 3, 4, heads=1, query_dim=2)
    x, rel = _inputs()
    _, a1 = conv(x, EDGE_INDEX, EDGE_TYPE, rel, torch.tensor([1.0, 0.0]), True)
    _, a2 = conv(x, EDGE_INDEX, EDGE_TYPE, rel, torch.tensor([-3.0, 2.0]), True)
    assert not torch.allclose(a1, a2)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="heads must be >= 1"):
        RelGATConv(5, 3, 4, heads=0)
    with pytest.raises(ValueError, match="dropout must be in"):
        RelGATConv(5, 3, 4, dropout=1.0)
    conv = RelGATConv(5, 3, 4)
    x, rel = _inputs()
    with pytest.raises(ValueError, match=r"x must be \[N, 5\]"):
        conv(torch.zeros(4, 2), EDGE_INDEX, EDGE_TYPE, rel)
    with pytest.raises(ValueError, match="query must be given exactly when"):
        conv(x, EDGE_INDEX, EDGE_TYPE, rel, torch.zeros(3))
