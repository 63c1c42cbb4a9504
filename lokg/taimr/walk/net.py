"""The question-aware walk model (beyond the paper; docs/design/taimr.md, "Learned walk").

**The default** (``graph_context=False``, ``normalization="vocabulary"``) builds no GAT layer
and reads no entity: a stopping random walk from the topic entity whose step probabilities
come from a per-hop attention over the question's tokens (step 2 below) matched against each
relation's features ``W_r e_r`` (TransE's e_r, the relation's name, its direction), plus a
learned-scale cosine between the hop's question context and the relation's name, each hop
soft-maxed over the whole relation vocabulary and stop.  In effect a question -> relation
chain model, run on the graph.

**The option** ``graph_context=True`` adds TAIMR's relation-aware GAT (Eq. (13)-(15), step 1
below) with the question in its attention logits.  With ``normalization="node"`` its node
states enter the step and stop logits (about 4x the training time; it did not improve PQ-3H
validation, docs/design/taimr.md).  With ``normalization="vocabulary"`` (the *GAT split*) the
relation and stop distributions stay the question's alone and the node states only decide how
a relation's probability is shared among a node's steps that carry it, in place of the
uniform ``1 / deg_r(u)``:

   ``log P_t(u --r--> v | q) = log P_t(r | q) + log softmax_{v' in N_r(u)} s_t(v')``,
   ``s_t(v) = <W_p^(t) c_t, W h_v> / sqrt(d')``

so every node still hands out exactly ``P_t(r | q)`` for each relation and stops with
``P_t(stop | q)``: a proper walk distribution, whose answer probabilities the anchors' join
multiplies (:mod:`lokg.taimr.walk.anchors`).  ``W_p^(t)`` starts at zero, so an untrained split
is the uniform one.

Layers:

1. (``graph_context=True`` only) :class:`~lokg.nn.RelGAT` over
   the question's walk graph
   (both step directions, :mod:`lokg.taimr.walk.graph`), each layer's logit carrying
   ``<W_q q, W_r e_r + W h_v> / sqrt(d')`` (``question_in_attention=True``), giving node
   states ``h`` ``[n, d']``.
2. Hop attention, Eq. (13)'s form once more with a hop-specific question projection:

   ``logit_t(u -> v | r, q) = LeakyReLU(a^T [W h_u || W h_v || W_r e_r])
   + <W_q^(t) q, W_r e_r> / sqrt(d')``

   (the graph context enters through the question-independent first term; matching the
   question against ``W_r e_r + W h_v`` instead is ``question_key="relation_node"``)

   With ``question_tokens=True`` the hop query is not one projection of the pooled question
   vector but of a per-hop *token attention* over the question's contextual token
   embeddings ``H [T, d_q]`` (a learned mention pointer, in the manner of TransferNet's
   step-wise question attention):

   ``beta_t = softmax_j(<W_k H_j, u_t + W_c c_{t-1}> / sqrt(d'))``,  ``c_t = sum_j beta_tj H_j``

   with ``c_{-1} = q`` (the pooled question), ``u_t`` a learned vector per hop; then
   ``W_q^(t) c_t`` and ``W_s^(t) c_t`` replace ``W_q^(t) q`` and ``W_s^(t) q``.  One pooled
   vector cannot say which relation the question names *first*; a pointer per hop can.

   and a stop option per node, ``logit_t(stop at u | q) = <W_s^(t) q, W h_u> / sqrt(d') + b_t``,
   soft-maxed together over u's steps (:func:`walk_log_probs`, ``normalization="node"``), or,
   without node states, soft-maxed per question and hop over the whole step-relation
   vocabulary and stop, a relation's share split among u's steps that carry it
   (:func:`hop_distribution`, :func:`vocabulary_log_probs`, ``normalization="vocabulary"``,
   the default walk).  Without the question
   (``question_in_attention=False``, an ablation) ``W_q^(t) q`` and ``W_s^(t) q`` become
   learned vectors per hop: the walk still knows its hop, not the question.

With ``name_match=True`` every hop logit also carries a learned-scale cosine between the
hop's question context and the relation's *name* (the sentence encoder's embedding of its
label, the name part of ``e_r`` below):

   ``logit_t(r | q) += tau_t * cos(c_t, name(r))``

(``c_t`` the token attention's context, or the pooled question without ``question_tokens``).
The bilinear ``<W_q^(t) c_t, W_r e_r>`` must learn each relation from training questions that
use it; the cosine reads a relation never seen in training from the same text space the
question is in (a dual-encoder prior, as in SR's question-relation matching), so a KG the
model was not trained on starts from its relations' names.  ``tau_t`` starts at 5.

Relation features ``e_r`` are rows of ``[2R, d_r]`` built by :func:`relation_features`: a
forward relation ``r`` is ``[e_r^TransE || name(r) || 0]`` and its inverse ``r^-1`` is
``[-e_r^TransE || name(r) || 1]`` (TransE's ``h + r ~ t`` read backwards is ``t - r ~ h``).
The name part (the sentence encoder over the relation's label) is what carries the model
to a KG it was not trained on; the TransE part is zero there.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lokg.embed import SentenceEncoder
from lokg.kg.graph import KnowledgeGraph
from lokg.nn.grouped import group_logsumexp
from lokg.nn.rel_gat import RelGAT

QUESTION_KEYS = ("relation", "relation_node")
NORMALIZATIONS = ("node", "vocabulary")
#: tau_t at initialisation (``name_match``): a cosine gap of 0.2 is one nat
NAME_SCALE_INIT = 5.0
#: gamma_t's pre-softplus value at initialisation (``token_coverage``): softplus(1) = 1.31
COVERAGE_INIT = 1.0

__all__ = [
    "NORMALIZATIONS",
    "WalkNet",
    "hop_distribution",
    "relation_features",
    "relation_name",
    "relation_names",
    "step_log_degree",
    "vocabulary_log_probs",
    "walk_log_probs",
    "widen_to_step_relations",
]


def relation_name(label: str) -> str:
    """A relation label as words: separators (``_ . / :``) become spaces, runs collapse."""
    for sep in "_./:":
        label = label.replace(sep, " ")
    return " ".join(label.split())


def relation_names(kg: KnowledgeGraph, embedder: SentenceEncoder) -> np.ndarray:
    """``[R, d]`` sentence embeddings of ``kg``'s relation labels as words (the name part of
    :func:`relation_features`)."""
    names = [relation_name(kg.relations.label(r)) for r in range(kg.num_relations)]
    return np.asarray(embedder.encode(names, kind="passage"), dtype=np.float32)


def relation_features(
    transe: Tensor | np.ndarray | None,
    names: Tensor | np.ndarray | None,
    num_relations: int,
    transe_dim: int,
) -> Tensor:
    """``[2R, transe_dim + d_n + 1]`` step-relation features (module doc).

    ``transe`` ``[R, transe_dim]`` (``None``: zeros, e.g. a KG without TransE) and ``names``
    ``[R, d_n]`` (``None``: no name part).  Tensors keep their autograd graph (a learned
    relation table trains through this).
    """
    if transe is None:
        e = torch.zeros(num_relations, transe_dim)
    else:
        e = torch.as_tensor(transe, dtype=torch.float32)
    if tuple(e.shape) != (num_relations, transe_dim):
        raise ValueError(
            f"TransE relation embeddings must be [{num_relations}, {transe_dim}], "
            f"got {list(e.shape)}"
        )
    parts_f, parts_b = [e], [-e]
    if names is not None:
        n = torch.as_tensor(names, dtype=torch.float32, device=e.device)
        if n.shape[0] != num_relations:
            raise ValueError(f"relation name features must have {num_relations} rows")
        parts_f.append(n)
        parts_b.append(n)
    zeros = torch.zeros(num_relations, 1, device=e.device)
    parts_f.append(zeros)
    parts_b.append(zeros + 1)
    return torch.cat([torch.cat(parts_f, 1), torch.cat(parts_b, 1)], 0)


def walk_log_probs(
    step_logits: Tensor, stop_logits: Tensor, src: Tensor, num_nodes: int
) -> tuple[Tensor, Tensor]:
    """Normalise per hop over each node's steps and its stop option.

    Hop 0 has no stop (a path has at least one step); a node without steps stops with
    probability 1.

    Shapes:
        - ``step_logits [m, L]``, ``stop_logits [n, L]``, ``src [m]`` (local node ids)
        - **output:** ``step_logp [m, L]``, ``stop_logp [n, L]`` (column 0 is -inf)
    """
    num_hops = step_logits.size(1)
    nodes = torch.arange(num_nodes, device=src.device)
    step_out, stop_out = [], []
    for t in range(num_hops):
        if t == 0:
            lse = group_logsumexp(step_logits[:, 0], src, num_nodes)
            stop_out.append(torch.full_like(stop_logits[:, 0], float("-inf")))
        else:
            lse = group_logsumexp(
                torch.cat([step_logits[:, t], stop_logits[:, t]]),
                torch.cat([src, nodes]),
                num_nodes,
            )
            stop_out.append(stop_logits[:, t] - lse)
        step_out.append(step_logits[:, t] - lse[src])
    return torch.stack(step_out, 1), torch.stack(stop_out, 1)


def hop_distribution(
    all_logits: Tensor, all_stop: Tensor, gate: bool = False
) -> tuple[Tensor, Tensor]:
    """Each question's and hop's distribution over the step-relation vocabulary and stop
    (``normalization="vocabulary"``):

        log P_t(r | q)    = logit_t(r | q) - log Z_t(q)
        log P_t(stop | q) = logit_t(stop | q) - log Z_t(q)
        Z_t(q) = sum_{r' in vocabulary} exp logit_t(r' | q) + exp logit_t(stop | q)

    or, with ``gate`` (the *stop gate*, ``stop_gate=True``), stop as a yes/no decision of its
    own and the relation soft-maxed among the relations only:

        log P_t(stop | q) = log sigmoid(logit_t(stop | q))
        log P_t(r | q)    = log sigmoid(-logit_t(stop | q)) + log softmax_r logit_t(r | q)

    so that stopping does not depend on how many relations the vocabulary holds: under the
    softmax a hop whose context names no relation spreads ``|V|`` equal shares that outweigh
    stop on a KG of many relations (docs/design/taimr.md item 33).
    (hop 0 has no stop term: a path has at least one step).

    Shapes:
        - ``all_logits [B, L, V]`` (every vocabulary relation's logit), ``all_stop [B, L]``
        - **output:** ``log P_t(r | q) [B, L, V]``, ``log P_t(stop | q) [B, L]`` (column 0
          is -inf)
    """
    if gate:
        go = F.logsigmoid(-all_stop)  # [B, L] log P(continue); hop 0 always continues
        go = torch.cat([torch.zeros_like(go[:, :1]), go[:, 1:]], 1)
        stop = torch.cat(
            [torch.full_like(go[:, :1], float("-inf")), F.logsigmoid(all_stop[:, 1:])], 1
        )
        return all_logits.log_softmax(-1) + go.unsqueeze(-1), stop
    z = torch.logsumexp(torch.cat([all_logits, all_stop.unsqueeze(-1)], -1), -1)  # [B, L]
    z = torch.cat([torch.logsumexp(all_logits[:, :1], -1), z[:, 1:]], 1)  # hop 0: no stop
    stop = all_stop - z
    no_stop = torch.full_like(stop[:, :1], float("-inf"))
    return all_logits - z.unsqueeze(-1), torch.cat([no_stop, stop[:, 1:]], 1)


def step_groups(src: Tensor, step_relation: Tensor) -> tuple[Tensor, Tensor]:
    """``(group [m], size [g])``: each step ``u -r-> v``'s group, the steps leaving ``u`` with
    relation ``r`` (numbered ``0..g-1``), and each group's number of steps, ``deg_r(u)``."""
    if not src.numel():
        empty = torch.zeros(0, dtype=torch.long, device=src.device)
        return empty, empty
    key = src * (int(step_relation.max()) + 1) + step_relation
    _, group, size = torch.unique(key, return_inverse=True, return_counts=True)
    return group, size


def step_log_degree(src: Tensor, step_relation: Tensor) -> Tensor:
    """``[m]`` log deg_r(u): how many of ``u``'s steps share step ``e = u -r-> v``'s relation."""
    group, size = step_groups(src, step_relation)
    return size[group].float().log()


def vocabulary_log_probs(
    hop_logp: Tensor,
    hop_stop: Tensor,
    src: Tensor,
    step_relation: Tensor,
    edge_owner: Tensor,
    node_owner: Tensor,
    split_logp: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """The walk's step and stop log-probabilities from :func:`hop_distribution`'s: a
    relation's probability is shared among the node's steps with that relation,

        log P_t(u --r--> v | q) = log P_t(r | q) - log deg_r(u)

    (uniformly; ``split_logp [m, L]``, the GAT split's log-shares, replaces ``-log deg_r(u)``)

    and stopping costs log P_t(stop | q) wherever the walk is.  Unlike
    :func:`walk_log_probs`, a node that lacks the relation the question asks for does not
    hand that relation's probability to its other steps or to stopping: the walk's mass
    there is lost (a dead end), so a path that stops early at an entity without the asked
    relation is not preferred to the full path.  The relation's log-probability depends on
    the relation and the question only.

    Shapes:
        - ``hop_logp [B, L, V]``, ``hop_stop [B, L]``, ``src [m]``, ``step_relation [m]``,
          ``edge_owner [m]``, ``node_owner [n]`` (each step's and node's question); the
          columns of ``hop_logp`` are the step relations (:func:`widen_to_step_relations`)
        - **output:** ``step_logp [m, L]``, ``stop_logp [n, L]`` (column 0 is -inf)
    """
    step_lp = hop_logp[edge_owner, :, step_relation]
    if split_logp is None:
        split_logp = -step_log_degree(src, step_relation).unsqueeze(1)
    return step_lp + split_logp, hop_stop[node_owner]


def widen_to_step_relations(hop_logp: Tensor, vocabulary: Tensor | None, width: int) -> Tensor:
    """``[B, L, V]`` over the vocabulary ``vocabulary`` (``None``: all ``width`` step
    relations) -> ``[B, L, width]`` indexed by step relation, -inf (probability 0) for a
    relation outside the vocabulary (an inverse step under a model trained forward only)."""
    if vocabulary is None:
        return hop_logp
    full = hop_logp.new_full((*hop_logp.shape[:2], width), float("-inf"))
    full[:, :, vocabulary] = hop_logp
    return full


class WalkNet(nn.Module):
    """Relation-aware GAT with the question in its attention, and the hop attention.

    Args:
        node_dim: d_v of node features (384 MiniLM, 768 E5).
        rel_dim: size of the step-relation features (:func:`relation_features`).
        query_dim: size of question embeddings.
        hidden: d' (128).  heads: M (4).  dropout: 0.3 (Table 3).
        max_hops: L (3): one hop attention per hop.
        question_in_attention: the question enters the GAT and hop logits (default);
            ``False`` is the "no question in attention" ablation.
        negative_slope: LeakyReLU slope (0.2).
        question_key: what the hop query is matched against: ``"relation"`` (``W_r e_r``,
            default) or ``"relation_node"`` (``W_r e_r + W h_v``, Eq. (13)'s key; measured to
            memorise entity-specific chains on PathQuestion: docs/design/taimr.md).
        question_tokens: hop queries from a per-hop attention over the question's token
            embeddings (module doc) instead of the pooled question vector.
        graph_context: run the RelGAT: under ``normalization="node"`` its node states enter
            the step and stop logits; under ``"vocabulary"`` they share each relation's
            probability among a node's steps (the GAT split, module doc).  ``False`` (the
            default walk) scores a step by its relation and the question alone (the first
            logit term keeps only ``a_rel^T W_r e_r``; stop has a learned key).
        normalization: how :meth:`log_probs` turns logits into the walk's probabilities:
            ``"node"`` (each node's steps and stop, :func:`walk_log_probs`) or
            ``"vocabulary"`` (each hop's relation vocabulary and stop, shared among a node's
            steps of one relation, :func:`vocabulary_log_probs`: uniformly, or with
            ``graph_context=True`` by the GAT's node states, the *GAT split* of the module doc).
        name_match: add ``tau_t * cos(c_t, name(r))`` to every hop logit (module doc);
            needs the question and ``name_span``.
        name_in_key: whether ``W_r e_r`` (the bilinear key and the relation prior) reads the
            name columns too (default).  ``False``: the name enters the hop logit only through
            the cosine of ``name_match``, so a relation scores on a KG never seen in training
            on the same scale as on the training KGs (the pretrained walk; docs/design/taimr.md
            item 27).
        token_coverage: the token attention subtracts ``softplus(gamma_t)`` times the attention
            each token already had at earlier hops (a coverage term, as in pointer-generator
            summarisers): hop t's pointer moves on to a mention not read yet.
        stop_match: the stop logit also carries ``w_t * max_r cos(c_t, name(r))`` over the
            vocabulary (``w_t`` learned, from 0): whether the hop's context names a relation of
            *this* KG, so stopping is decided relative to the graph walked.
        stop_context: the stop logit reads the hop's context through ``W_s^(t)`` (default).
            ``False`` (needs ``stop_match``): ``b_t + w_t max_r cos(c_t, name(r))`` only, a stop
            decision with nothing to memorise of the training KGs' wording.
        stop_gate: stop is a yes/no gate ``sigmoid(logit_t(stop))`` and the relations share
            the rest by their own softmax (:func:`hop_distribution`), instead of stop being one
            more entry of the vocabulary's softmax: the stop probability no longer falls as
            the KG's relation count grows (``normalization="vocabulary"`` only; measured
            and not adopted, docs/design/taimr.md item 33).
        stop_size: the stop logit also carries ``kappa_t log |V_q|`` (``kappa_t`` learned, from
            0), ``|V_q|`` the relations of the question's vocabulary (its component's under
            ``vocabulary_scope="component"``, the only scope where it varies in training): a
            stop that can read how many relations the KG offers (measured and not adopted,
            docs/design/taimr.md item 33).
        name_span: ``(start, stop)``, the columns of ``rel_feats`` that hold the relation's
            name embedding (:func:`relation_features` puts them after TransE's ``d_r``).

    Shapes:
        - **input:** ``x [n, d_v]``, ``edge_index [2, m]`` (step start -> end),
          ``step_relation [m]`` (rows of ``rel_feats``), ``rel_feats [2R, rel_dim]``,
          ``query [B, d_q]`` (``None`` without question) with ``edge_owner [m]`` and
          ``node_owner [n]``, each step's and node's question in a batch of B (not needed
          for ``B = 1``); with ``question_tokens``: ``tokens [B, T, d_q]`` and
          ``token_mask [B, T]`` (True = a token; ``None`` = all)
        - **output:** ``step_logits [m, L]``, ``stop_logits [n, L]``
    """

    def __init__(
        self,
        node_dim: int,
        rel_dim: int,
        query_dim: int,
        hidden: int = 128,
        heads: int = 4,
        dropout: float = 0.3,
        max_hops: int = 3,
        question_in_attention: bool = True,
        negative_slope: float = 0.2,
        question_key: str = "relation",
        question_tokens: bool = False,
        graph_context: bool = True,
        normalization: str = "node",
        name_match: bool = False,
        name_span: tuple[int, int] | None = None,
        name_in_key: bool = True,
        token_coverage: bool = False,
        stop_match: bool = False,
        stop_context: bool = True,
        stop_gate: bool = False,
        stop_size: bool = False,
    ):
        super().__init__()
        if normalization not in NORMALIZATIONS:
            raise ValueError(
                f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}"
            )
        self.normalization = normalization
        if question_key not in QUESTION_KEYS:
            raise ValueError(f"question_key must be one of {QUESTION_KEYS}, got {question_key!r}")
        self.question_key = question_key
        self.hidden = hidden
        self.max_hops = max_hops
        self.question_in_attention = question_in_attention
        if question_tokens and not question_in_attention:
            raise ValueError("question_tokens=True needs question_in_attention=True")
        self.question_tokens = question_tokens
        self.negative_slope = negative_slope
        if not graph_context and question_key != "relation":
            raise ValueError("graph_context=False needs question_key='relation' (no node states)")
        self.graph_context = graph_context
        if graph_context:
            self.gat = RelGAT(
                node_dim,
                rel_dim,
                hidden,
                heads,
                dropout,
                query_dim=query_dim if question_in_attention else None,
            )
        #: the GAT split (module doc): node states share a relation's probability
        self.gat_split = graph_context and normalization == "vocabulary"
        if not graph_context or self.gat_split:  # stop is one more "relation"
            self.stop_key = nn.Parameter(torch.empty(hidden))
        self.lin = nn.Linear(hidden, hidden, bias=False) if graph_context else None  # W
        self.lin_rel = nn.Linear(rel_dim, hidden, bias=False)  # W_r
        self.att = nn.Parameter(torch.empty(3, hidden))  # a = [a_src || a_dst || a_rel]
        if question_in_attention:
            self.hop_query = nn.Linear(query_dim, max_hops * hidden, bias=False)  # W_q^(t)
            self.stop_query = nn.Linear(query_dim, max_hops * hidden, bias=False)  # W_s^(t)
        else:
            self.hop_query_vec = nn.Parameter(torch.empty(max_hops, hidden))
            self.stop_query_vec = nn.Parameter(torch.empty(max_hops, hidden))
        if self.gat_split:  # W_p^(t) (zero at the start: the uniform split)
            split_in = query_dim if question_in_attention else 1
            self.split_query = nn.Linear(split_in, max_hops * hidden, bias=False)
        if question_tokens:
            self.token_key = nn.Linear(query_dim, hidden, bias=False)  # W_k
            self.token_recur = nn.Linear(query_dim, hidden, bias=False)  # W_c
            self.token_hop = nn.Parameter(torch.empty(max_hops, hidden))  # u_t
        self.stop_bias = nn.Parameter(torch.zeros(max_hops))
        self._add_name_match(name_match, name_span, query_dim)
        self._add_transfer_switches(
            rel_dim, question_tokens, normalization, name_in_key, token_coverage, stop_match,
            stop_context, stop_gate, stop_size,
        )  # fmt: skip
        self.reset_parameters()

    def _add_name_match(
        self, name_match: bool, name_span: tuple[int, int] | None, query_dim: int
    ) -> None:
        """``name_match`` (class doc): checked, and ``tau_t`` added."""
        self.name_match = name_match
        self.name_span = tuple(name_span) if name_span is not None else None
        if name_match:
            if not self.question_in_attention:
                raise ValueError("name_match=True needs question_in_attention=True")
            if self.name_span is None or self.name_span[1] - self.name_span[0] != query_dim:
                raise ValueError(
                    f"name_match=True needs name_span (start, stop) of {query_dim} name columns "
                    f"(the question encoder's size), got {name_span!r}"
                )
            self.name_scale = nn.Parameter(torch.empty(self.max_hops))  # tau_t

    def _add_transfer_switches(
        self,
        rel_dim: int,
        question_tokens: bool,
        normalization: str,
        name_in_key: bool,
        token_coverage: bool,
        stop_match: bool,
        stop_context: bool,
        stop_gate: bool,
        stop_size: bool,
    ) -> None:
        """The pretrained walk's transfer switches (class doc; docs/design/taimr.md item 27):
        checked, and their parameters and buffers added."""
        name_match, max_hops = self.name_match, self.max_hops
        self.name_in_key = name_in_key
        if not name_in_key:
            if not name_match:
                raise ValueError("name_in_key=False needs name_match=True (else no name is read)")
            # W_r e_r reads e_r with its name columns zeroed: the name enters by the cosine only
            mask = torch.ones(rel_dim)
            mask[self.name_span[0] : self.name_span[1]] = 0.0
            self.register_buffer("key_mask", mask, persistent=False)
        self.token_coverage = token_coverage
        if token_coverage:
            if not question_tokens:
                raise ValueError("token_coverage=True needs question_tokens=True")
            self.coverage_weight = nn.Parameter(torch.empty(max_hops))  # gamma_t (softplus)
        self.stop_match = stop_match
        if stop_match:
            if not name_match or normalization != "vocabulary":
                raise ValueError(
                    "stop_match=True needs name_match=True and normalization='vocabulary'"
                )
            self.stop_match_weight = nn.Parameter(torch.empty(max_hops))  # w_t
        self.stop_context = stop_context
        if not stop_context and not stop_match:
            raise ValueError("stop_context=False needs stop_match=True (else stop is a constant)")
        self.stop_gate = stop_gate
        if stop_gate and normalization != "vocabulary":
            raise ValueError("stop_gate=True needs normalization='vocabulary'")
        self.stop_size = stop_size
        if stop_size:
            if normalization != "vocabulary":
                raise ValueError("stop_size=True needs normalization='vocabulary'")
            self.stop_size_weight = nn.Parameter(torch.empty(max_hops))  # kappa_t

    @property
    def steps_only(self) -> bool:
        """Whether a path's probability needs only its own steps' relations and degrees (the
        vocabulary-normalised walk with the uniform split): no walk graph is scored."""
        return self.normalization == "vocabulary" and not self.graph_context

    def reset_parameters(self) -> None:
        if self.graph_context:
            self.gat.reset_parameters()
        if not self.graph_context or self.gat_split:
            nn.init.normal_(self.stop_key, std=self.hidden**-0.5)
        if self.gat_split:
            nn.init.zeros_(self.split_query.weight)
        if self.lin is not None:
            nn.init.xavier_uniform_(self.lin.weight)
        nn.init.xavier_uniform_(self.lin_rel.weight)
        nn.init.xavier_uniform_(self.att)
        if self.question_in_attention:
            nn.init.xavier_uniform_(self.hop_query.weight)
            nn.init.xavier_uniform_(self.stop_query.weight)
        else:
            nn.init.normal_(self.hop_query_vec, std=self.hidden**-0.5)
            nn.init.normal_(self.stop_query_vec, std=self.hidden**-0.5)
        if self.question_tokens:
            nn.init.xavier_uniform_(self.token_key.weight)
            nn.init.xavier_uniform_(self.token_recur.weight)
            nn.init.normal_(self.token_hop, std=self.hidden**-0.5)
        nn.init.zeros_(self.stop_bias)
        if self.name_match:
            nn.init.constant_(self.name_scale, NAME_SCALE_INIT)
        if self.token_coverage:
            nn.init.constant_(self.coverage_weight, COVERAGE_INIT)
        if self.stop_match:
            nn.init.zeros_(self.stop_match_weight)
        if self.stop_size:
            nn.init.zeros_(self.stop_size_weight)

    def token_attention(
        self, query: Tensor, tokens: Tensor, token_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Per-hop question context ``c_t`` and the attention ``beta_t`` over tokens.

        Shapes:
            - **input:** ``query [B, d_q]``, ``tokens [B, T, d_q]``, ``token_mask [B, T]``
            - **output:** ``c [B, L, d_q]``, ``beta [B, L, T]``
        """
        tokens = F.normalize(tokens, dim=-1)  # unit rows, as pooled sentence vectors are
        keys = self.token_key(tokens)  # [B, T, d']
        prev, contexts, betas = query, [], []
        covered = tokens.new_zeros(tokens.shape[:2])  # sum_{s<t} beta_s [B, T]
        for t in range(self.max_hops):
            u = self.token_hop[t] + self.token_recur(prev)  # [B, d']
            logits = (keys * u.unsqueeze(1)).sum(-1) / math.sqrt(self.hidden)  # [B, T]
            if self.token_coverage:
                logits = logits - F.softplus(self.coverage_weight[t]) * covered
            if token_mask is not None:
                logits = logits.masked_fill(~token_mask, float("-inf"))
            beta = logits.softmax(-1)
            covered = covered + beta
            prev = (beta.unsqueeze(-1) * tokens).sum(1)  # c_t [B, d_q]
            contexts.append(prev)
            betas.append(beta)
        return torch.stack(contexts, 1), torch.stack(betas, 1)

    def _hop_queries(
        self, query: Tensor, tokens: Tensor | None, token_mask: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``(W_q^(t) ., W_s^(t) .)`` ``[B, L, d']`` each, of the pooled question or of
        ``c_t``, and the hop contexts themselves ``[B, L, d_q]`` (the pooled question
        repeated without ``question_tokens``)."""
        L, C = self.max_hops, self.hidden
        if not self.question_tokens:
            ctx = query.unsqueeze(1).expand(-1, L, -1)
            return self.hop_query(query).view(-1, L, C), self.stop_query(query).view(-1, L, C), ctx
        if tokens is None:
            raise ValueError("WalkNet(question_tokens=True) needs the question's tokens")
        ctx, _ = self.token_attention(query, tokens, token_mask)  # [B, L, d_q]
        w_hop = self.hop_query.weight.view(L, C, -1)  # [L, d', d_q]
        w_stop = self.stop_query.weight.view(L, C, -1)
        q_hop = torch.einsum("lcd,bld->blc", w_hop, ctx)
        return q_hop, torch.einsum("lcd,bld->blc", w_stop, ctx), ctx

    def name_match_logits(self, ctx: Tensor, rel_feats: Tensor) -> Tensor:
        """``tau_t * cos(c_t, name(r))`` ``[B, L, V]`` for contexts ``ctx [B, L, d_q]`` and the
        step relations ``rel_feats [V, rel_dim]`` (their name columns, ``name_span``)."""
        return self.name_scale.view(1, -1, 1) * self.name_cosines(ctx, rel_feats)

    def name_cosines(self, ctx: Tensor, rel_feats: Tensor) -> Tensor:
        """``cos(c_t, name(r))`` ``[B, L, V]`` (:meth:`name_match_logits` without ``tau_t``)."""
        start, stop = self.name_span
        names = F.normalize(rel_feats[:, start:stop], dim=-1)  # [V, d_q]
        return torch.einsum("bld,vd->blv", F.normalize(ctx, dim=-1), names)

    def log_probs(
        self,
        x: Tensor,
        edge_index: Tensor,
        step_relation: Tensor,
        rel_feats: Tensor,
        query: Tensor | None = None,
        edge_owner: Tensor | None = None,
        node_owner: Tensor | None = None,
        tokens: Tensor | None = None,
        token_mask: Tensor | None = None,
        vocabulary: Tensor | None = None,
        vocabulary_keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """The walk's ``(step_logp [m, L], stop_logp [n, L])`` under :attr:`normalization`.

        ``"node"``: :func:`walk_log_probs` (each node's steps and stop soft-maxed together).
        ``"vocabulary"``: :func:`vocabulary_log_probs` over the rows ``vocabulary`` of
        ``rel_feats`` (``None``: all), the step relations a walk can take;
        ``vocabulary_keys`` may hold their ``W_r e_r`` ``[V, d']`` already (inference
        computes it once per graph).  Other inputs as :meth:`forward`'s.
        """
        src = edge_index[0]
        if self.normalization == "node":
            step, stop = self(
                x, edge_index, step_relation, rel_feats, query, edge_owner, node_owner, tokens,
                token_mask,
            )  # fmt: skip
            return walk_log_probs(step, stop, src, x.size(0))
        asked = self._question_queries(query, tokens, token_mask)
        hop_logp, hop_stop = self._hop_log_probs(asked, rel_feats, vocabulary, vocabulary_keys)
        if edge_owner is None or hop_logp.size(0) == 1:  # one question (or none): broadcast
            edge_owner = torch.zeros_like(src)
            node_owner = torch.zeros(x.size(0), dtype=torch.long, device=src.device)
        hop_logp = widen_to_step_relations(hop_logp, vocabulary, rel_feats.size(0))
        split = None
        if self.gat_split:
            split = self.split_log_probs(x, edge_index, step_relation, rel_feats, asked, edge_owner)
        return vocabulary_log_probs(
            hop_logp, hop_stop, src, step_relation, edge_owner, node_owner, split
        )

    def split_log_probs(
        self,
        x: Tensor,
        edge_index: Tensor,
        step_relation: Tensor,
        rel_feats: Tensor,
        asked: tuple,
        edge_owner: Tensor,
    ) -> Tensor:
        """The GAT split (module doc): ``[m, L]`` log of each step's share of its relation's
        probability at its node, ``log softmax`` over the steps leaving the same node with the
        same relation of ``<W_p^(t) c_t, W h_v> / sqrt(d')`` (``h`` the RelGAT's node states,
        ``v`` the step's end).  ``asked``: :meth:`_question_queries`' output; ``edge_owner
        [m]`` each step's question.  Each group's shares sum to one, so a node hands out
        ``P_t(r | q)`` whole."""
        query, _, _, ctx = asked
        single = query is None or query.size(0) == 1
        h, _ = self.gat(
            x, edge_index, step_relation, rel_feats,
            query if self.question_in_attention else None,
            None if single else edge_owner,
        )  # fmt: skip  # [n, d']
        hp = self.lin(h)  # [n, d']
        L, C = self.max_hops, self.hidden
        if ctx is None:  # no question: one learned vector per hop
            q_split = self.split_query.weight.view(1, L, C)
        else:
            q_split = torch.einsum("lcd,bld->blc", self.split_query.weight.view(L, C, -1), ctx)
        src, dst = edge_index
        owner = torch.zeros_like(src) if single else edge_owner
        logits = (q_split[owner] * hp[dst].unsqueeze(1)).sum(-1) / math.sqrt(C)  # [m, L]
        group, size = step_groups(src, step_relation)
        n = size.numel()
        lse = torch.stack([group_logsumexp(logits[:, t], group, n)[group] for t in range(L)], 1)
        return logits - lse

    def hop_log_probs(
        self,
        rel_feats: Tensor,
        query: Tensor | None = None,
        tokens: Tensor | None = None,
        token_mask: Tensor | None = None,
        vocabulary: Tensor | None = None,
        vocabulary_keys: Tensor | None = None,
        allowed: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """``normalization="vocabulary"``: each question's per-hop log P_t(r | q) over the
        vocabulary (the rows ``vocabulary`` of ``rel_feats``, ``None``: all) and
        log P_t(stop | q) (:func:`hop_distribution`).  No graph is needed: the training loss
        of a path reads its steps' relations from here.

        Shapes:
            - **input:** ``rel_feats [2R, rel_dim]``, ``query [B, d_q]``, ``tokens [B, T, d_q]``,
              ``token_mask [B, T]``, ``vocabulary [V]``, ``vocabulary_keys [V, d']``,
              ``allowed [B, V]`` (bool: each question's own vocabulary; ``None``: all ``V``)
            - **output:** ``[B, L, V]``, ``[B, L]`` (``B = 1`` without the question)
        """
        if self.normalization != "vocabulary":
            raise ValueError("hop_log_probs needs normalization='vocabulary'")
        asked = self._question_queries(query, tokens, token_mask)
        return self._hop_log_probs(asked, rel_feats, vocabulary, vocabulary_keys, allowed)

    def _hop_log_probs(
        self,
        asked: tuple,
        rel_feats: Tensor,
        vocabulary: Tensor | None,
        vocabulary_keys: Tensor | None,
        allowed: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """:meth:`hop_log_probs` from :meth:`_question_queries`' output ``asked``; ``allowed``
        ``[B, V]`` (bool), each question's own vocabulary among the ``V`` columns (``None``:
        all; :class:`~lokg.taimr.walk.vocabulary.ComponentVocabulary`)."""
        _, q_hop, q_stop, ctx = asked  # [B|1, L, .]
        keys = vocabulary_keys
        if keys is None:
            keys = self.relation_keys(rel_feats, vocabulary)
        base = F.leaky_relu((keys * self.att[2]).sum(-1), self.negative_slope)  # [V]
        logits = base + torch.einsum("blc,vc->blv", q_hop, keys) / math.sqrt(self.hidden)
        stop = self._stop_logits(q_stop)  # [B, L]
        if not self.stop_context:  # b_t (+ the match term below) only; W_s^(t) stays in the
            # autograd graph with a zero gradient, so DDP (trainer=ddp) finds no unused parameter
            stop = self.stop_bias.expand_as(stop) + 0.0 * stop
        if self.name_match:
            feats = rel_feats if vocabulary is None else rel_feats[vocabulary]
            cos = self.name_cosines(ctx, feats)  # [B, L, V]
            logits = logits + self.name_scale.view(1, -1, 1) * cos
            if self.stop_match:  # w_t * max_r cos(c_t, name(r)), r in the question's vocabulary
                if allowed is not None:
                    cos = torch.where(allowed.unsqueeze(1), cos, float("-inf"))
                stop = stop + self.stop_match_weight.view(1, -1) * cos.amax(-1)
        if self.stop_size:  # kappa_t log |V_q|: how many relations the question's KG has
            size = logits.new_full(stop.shape[:1], float(logits.size(-1)))
            if allowed is not None:
                size = allowed.sum(-1).clamp(min=1).to(logits.dtype)
            stop = stop + self.stop_size_weight.view(1, -1) * size.log().view(-1, 1)
        if allowed is not None:  # outside a question's vocabulary: probability 0
            logits = torch.where(allowed.unsqueeze(1), logits, float("-inf"))
        return hop_distribution(logits, stop, self.stop_gate)  # [B, L, V], [B, L]

    def relation_keys(self, rel_feats: Tensor, vocabulary: Tensor | None = None) -> Tensor:
        """``W_r e_r`` ``[V, d']`` of the rows ``vocabulary`` of ``rel_feats`` (``None``: all)."""
        return self._project(rel_feats if vocabulary is None else rel_feats[vocabulary])

    def _project(self, rel_feats: Tensor) -> Tensor:
        """``W_r e_r`` ``[V, d']`` of ``rel_feats [V, rel_dim]``; with ``name_in_key=False`` the
        name columns are zeroed first (the key sees TransE's e_r and the direction only)."""
        if not self.name_in_key:
            rel_feats = rel_feats * self.key_mask
        return self.lin_rel(rel_feats)

    def _question_queries(
        self, query: Tensor | None, tokens: Tensor | None, token_mask: Tensor | None
    ) -> tuple[Tensor | None, Tensor, Tensor, Tensor | None]:
        """``(query [B, d_q], W_q^(t) . [B, L, d'], W_s^(t) . [B, L, d'], c [B, L, d_q])`` of a
        batch of questions (flattened to ``B`` rows), or the learned per-hop vectors
        ``[1, L, d']`` (and no context) without the question."""
        if self.question_in_attention and query is None:
            raise ValueError("WalkNet(question_in_attention=True) needs the question")
        if query is not None:
            query = query.reshape(-1, query.size(-1))  # [B, d_q]
            if tokens is not None:
                tokens = tokens.reshape(query.size(0), -1, tokens.size(-1))  # [B, T, d_q]
                if token_mask is not None:
                    token_mask = token_mask.reshape(query.size(0), -1)
        if not self.question_in_attention:
            return query, self.hop_query_vec.unsqueeze(0), self.stop_query_vec.unsqueeze(0), None
        return (query, *self._hop_queries(query, tokens, token_mask))

    def _stop_logits(self, q_stop: Tensor) -> Tensor:
        """``[B, L]`` stop logits with the learned stop key (``normalization="vocabulary"``,
        or ``graph_context=False``): stop is one more "relation"."""
        return (q_stop * self.stop_key).sum(-1) / math.sqrt(self.hidden) + self.stop_bias

    def forward(
        self,
        x: Tensor,
        edge_index: Tensor,
        step_relation: Tensor,
        rel_feats: Tensor,
        query: Tensor | None = None,
        edge_owner: Tensor | None = None,
        node_owner: Tensor | None = None,
        tokens: Tensor | None = None,
        token_mask: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Step and stop logits ``[m, L]``, ``[n, L]`` (class doc: Shapes)."""
        L, C = self.max_hops, self.hidden
        query, q_hop_b, q_stop_b, ctx_b = self._question_queries(query, tokens, token_mask)
        if query is not None and query.size(0) == 1:
            edge_owner = node_owner = None  # one question: broadcast
        used, where = torch.unique(step_relation, return_inverse=True)  # project each once
        rp = self._project(rel_feats[used])[where]  # [m, d']
        src, dst = edge_index
        hp = None
        if self.graph_context:
            h, _ = self.gat(
                x,
                edge_index,
                step_relation,
                rel_feats,
                query if self.question_in_attention else None,
                edge_owner,
            )  # [n, d']
            hp = self.lin(h)  # [n, d']
            base = F.leaky_relu(
                (hp * self.att[0]).sum(-1)[src] + (hp * self.att[1]).sum(-1)[dst]
                + (rp * self.att[2]).sum(-1),
                self.negative_slope,
            )  # [m]  # fmt: skip
        else:  # the relation's own prior only: no entity enters the score
            base = F.leaky_relu((rp * self.att[2]).sum(-1), self.negative_slope)  # [m]
        key = rp if self.question_key == "relation" else rp + hp[dst]  # [m, d']
        q_hop, q_stop = q_hop_b, q_stop_b  # [B | 1, L, d']
        if edge_owner is not None and self.question_in_attention:
            q_hop, q_stop = q_hop_b[edge_owner], q_stop_b[node_owner]  # [m | n, L, d']
        step = base.unsqueeze(1) + (q_hop * key.unsqueeze(1)).sum(-1) / math.sqrt(C)  # [m, L]
        if self.name_match:  # [B, L, |used|] -> each step's own question and relation
            match = self.name_match_logits(ctx_b, rel_feats[used])
            owner = edge_owner if edge_owner is not None else torch.zeros_like(where)
            step = step + match[owner, :, where]
        if hp is not None:
            stop = (q_stop * hp.unsqueeze(1)).sum(-1) / math.sqrt(C) + self.stop_bias  # [n, L]
            return step, stop
        stop_b = self._stop_logits(q_stop_b)  # [B, L]
        if edge_owner is not None and self.question_in_attention:
            stop = stop_b[node_owner]  # [n, L]
        else:
            stop = stop_b.expand(x.size(0), L)
        return step, stop
