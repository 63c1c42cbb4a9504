"""Time SCOS for |R| = 100, 400, 1600, 6400 relations on synthetic graphs; measure quality.

Usage:
    ``python bench/bench_scos.py timing [--sizes 100 400 1600 6400] [--triples-per-relation 50]``
    ``python bench/bench_scos.py quality [--kb FILE ...] [--synthetic] [--epochs 100]``
    ``python bench/bench_scos.py planted [override ...] [--data pql2h pql3h webqsp_evidence
    cwq_evidence] [--synthetic-triples N] [--seed 0] [--theta-grid T ...] [--variant K=V,...]``
    ``python bench/bench_scos.py jaccard [--data pql2h pql3h] [--seed 1]``
    ``python bench/bench_scos.py weights [--data pql2h pql3h] [--seed 1] [--step 0.1]``
    ``python bench/bench_scos.py falsemerge [--quick] [--data ...] [--naming paraphrase|alias]
    [--synthetic-triples N] [--seed 0] [--variant K=V,...] [override ...]``

``falsemerge`` (issue 30): on every bundled KG (PQ-2H's, PQ-3H's, PQL-2H's and PQL-3H's KBs,
the WebQSP and CWQ evidence pools) and a synthetic graph (20k triples, 100 relations, given
types), plant two kinds of relations at once: split synonyms (up to k = 30 relations with >= 20
triples, a random 30-70 % of each one's triples moved to a new name; what SCOS should merge)
and correlated-but-distinct relations (up to 12 other relations each get a companion over all
their heads that holds the same tails on p of them and other tails elsewhere, p = 30, 50, 70,
90 % in turn: what it must not merge, like ``directed_by`` beside ``written_by``; half of each
when a KB has too few relations). A planted synonym is named by ``--naming``: ``paraphrase``
(default) keeps the domain and writes the property in other words
(``people.person.nationality`` -> ``people.person.citizenship``;
:func:`lokg.data.synthetic.paraphrase_label`, seeded), ``alias`` appends ``_alias`` (the plant
before the name guard; the triples are the same whatever the naming, so every configuration
that does not read names gives the same numbers under both). TransE
(``experiment=train_transe``'s settings) is trained once per planted graph, then SCOS runs with
each configuration: ``default`` (the scos keys ``evaluate.py`` composes, ``experiment=lokg``)
and ``paper`` (``experiment=paper``, i.e. ``scos=default``), plus each ``--variant`` (the
default's keys changed, e.g. ``max_contradiction=null`` for the guards before issue 30,
``min_name_cosine=null`` for the default before the name guard). Relation names are embedded
with the default's encoder (MiniLM offline) for every configuration; only those with
``min_name_cosine`` use them. Per graph it prints the planted synonyms' name cosines, and per
configuration the merged pairs, how many are not planted synonyms (of them planted correlated
ones, and graph-agreeing ones: pairs of original relations whose every shared head holds the
same tails, a duplicate or a sub-relation the graph cannot tell apart, e.g.
``first_level_division_of`` beside ``administrative_parent``; still counted as false, and
listed on their own lines at the end), the recall on the synonyms and the false pairs with
their signals, contradiction and name cosine; then totals, ``falsemerge_graph_agreeing
default=<n> paper=<n>``, and last ``falsemerge default=<n> paper=<n>`` (non-synonym pairs
merged over all graphs).
``--quick``: TransE 25 epochs and a 10k-triple synthetic graph.

``weights`` (issue 10): on the same plant, every pair of relations scored by Eq. (3) with
each weight triple of a grid (step 0.1 by default, the paper's included); for each, the one
theta_base with precision >= 0.95 on every KB and the highest minimum recall over the KBs
(pairwise, as ``jaccard``: an upper bound on the greedy loop), best triples first.  Last
line ``weights_best w=... theta_base=... min_recall=... paper_w_min_recall=...``.

``jaccard`` (issue 10, a variant not adopted): on the same plant, every pair of relations
with NMI > 0.3 scored by Eq. (3) with the paper's Jaccard over head ∪ tail and with
role-aware variants (max and mean of the head-set and tail-set Jaccards, the tail set alone),
and for each the best recall at precision >= 0.95 over theta_base (pairwise, before the
greedy loop: an upper bound on what the variant could add).

``planted`` (issue 10): on each KB (the package's datasets: PathQuestion's PQL KBs and the
WebQSP / CWQ Freebase evidence pools, whose relations are many and sparse; and a synthetic
graph) pick k = 30 relations with >= 20 triples, move a random 30-70 % share of each one's
triples to a new synonym relation (:func:`lokg.data.synthetic.plant_synonyms`), train TransE
on the modified KB with ``experiment=train_transe``'s settings, run SCOS with the scos
config ``train.py`` composes (``scos=lokg`` since issue 30, ``scos=default`` for the paper's;
overrides such as ``scos.theta_base=0.6`` apply to both KBs), and print
precision and recall of the recovered pairs (also at each ``--theta-grid`` value and each
``--variant`` of scos keys, on the same TransE), each missed or wrong pair with its three
signals and its tied share, and the merges SCOS makes on the unmodified KB.  The last line is
``planted_min precision=<p> recall=<r>``.
Settings are chosen with ``--seed 1`` (the validation plant) and reported with ``--seed 0``.

``quality`` trains TransE (the Lightning module, CPU) on each whole KB file, runs SCOS with the
paper's settings and prints |R0| -> |R*|, L_info and rho-hat; with ``--synthetic`` also the
precision / recall of the planted synonym pairs.

Each graph has ``triples_per_relation * |R|`` triples, ``|R| / 10`` planted synonyms and
random relation embeddings whose planted synonyms are noisy copies of their base (timing
only: the embeddings stand in for a trained TransE).  Prints the time per size and the
growth ratio between consecutive sizes next to the ratio |R|^2 log |R| predicts.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_data as in the other benches

from lokg.data.synthetic import make_synthetic_kg
from lokg.kg.graph import KnowledgeGraph
from lokg.scos import SCOSResult, compress


def run(
    num_relations: int, triples_per_relation: int, seed: int, overrides: dict | None = None
) -> tuple[float, int, int]:
    syn = make_synthetic_kg(
        num_entities=max(1000, 20 * num_relations),
        num_triples=triples_per_relation * num_relations,
        num_relations=num_relations,
        num_synonyms=num_relations // 10,
        num_types=20,
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(num_relations, 64))
    base, planted = syn.synonym_pairs[:, 0], syn.synonym_pairs[:, 1]
    emb[planted] = emb[base] + 0.3 * rng.normal(size=(len(planted), 64))
    start = time.perf_counter()
    result = compress(syn.kg, emb, **(overrides or {}))
    return time.perf_counter() - start, len(result.report), syn.kg.num_triples


def train_transe(kg: KnowledgeGraph, epochs: int, seed: int) -> np.ndarray:
    """``[R, 64]`` relation embeddings of a TransE (the module's defaults) on all of ``kg``."""
    from lokg.models.transe_module import fit_transe

    return fit_transe(
        kg.triples, kg.num_entities, kg.num_relations, epochs, seed=seed
    ).relation_embeddings()


def merged_pairs(result: SCOSResult) -> set[tuple[int, int]]:
    """Unordered pairs of original relation ids that SCOS put in one cluster."""
    pairs = set()
    for c in np.unique(result.mapping):
        members = np.flatnonzero(result.mapping == c).tolist()
        pairs |= {(a, b) for i, a in enumerate(members) for b in members[i + 1 :]}
    return pairs


def describe(name: str, result: SCOSResult, seconds: float) -> None:
    print(
        f"{name}: |R0| = {result.num_original} -> |R*| = {result.num_compressed}, "
        f"merges {len(result.report)}, L_info = {result.info_loss:.4f}, "
        f"rho_hat = {result.rho_hat:.4f}  (SCOS {seconds:.2f} s)"
    )
    for m in result.report[:15]:
        print(
            f"    {'+'.join(m.left)} <- {'+'.join(m.right)}: sim {m.similarity:.3f} "
            f">= {m.threshold:.3f} (NMI {m.nmi:.2f} J {m.jaccard:.2f} cos {m.cosine:.2f})"
        )


def quality(args: argparse.Namespace) -> None:
    from lokg.kg.io import read_kg

    for path in args.kb:
        kg, _ = read_kg(path)
        emb = train_transe(kg, args.epochs, args.seed)
        for source in ("signature",):
            start = time.perf_counter()
            result = compress(kg, emb, entity_types=source)
            describe(
                f"{kg.name} [{kg.num_triples} triples, types={source}]",
                result,
                time.perf_counter() - start,
            )
    if args.synthetic:
        syn = make_synthetic_kg(
            num_entities=5000,
            num_triples=50_000,
            num_relations=100,
            num_synonyms=10,
            num_types=10,
            seed=args.seed,
        )
        emb = train_transe(syn.kg, args.epochs, args.seed)
        planted = syn.synonym_pair_set()
        for source in ("attributes", "signature"):
            start = time.perf_counter()
            result = compress(syn.kg, emb, entity_types=source)
            seconds = time.perf_counter() - start
            found = merged_pairs(result)
            hit = len(found & planted)
            precision = hit / len(found) if found else 1.0
            describe(f"synthetic [{syn.kg.num_triples} triples, types={source}]", result, seconds)
            print(
                f"    planted pairs {len(planted)}, merged pairs {len(found)}, "
                f"precision {precision:.3f}, recall {hit / len(planted):.3f}"
            )


def _train_config(data: str, overrides: list[str]):
    from lokg.config import compose_config

    return compose_config("train", [f"data={data}", "experiment=train_transe", *overrides], ".")


def _fit(kg: KnowledgeGraph, cfg, seed: int, epochs: int | None) -> tuple[object, float]:
    """TransE with the config's model, batch size and epochs on every triple of ``kg``."""
    import hydra

    from lokg.models.transe_module import fit_transe

    kwargs = hydra.utils.instantiate(cfg.model, _partial_=True).keywords
    start = time.perf_counter()
    module = fit_transe(
        kg.triples,
        kg.num_entities,
        kg.num_relations,
        epochs=epochs if epochs is not None else int(cfg.trainer.max_epochs),
        batch_size=int(cfg.data.batch_size),
        seed=seed,
        **kwargs,
    )
    return module, time.perf_counter() - start


def _scos(kg: KnowledgeGraph, module, cfg, **overrides) -> tuple[SCOSResult, float]:
    from omegaconf import OmegaConf

    keys = {**OmegaConf.to_container(cfg.scos, resolve=True), **overrides}
    names = _names(kg) if keys.get("min_name_cosine") is not None else None
    start = time.perf_counter()
    result = compress(
        kg,
        module.relation_embeddings(),
        keys,
        entity_embeddings=module.entity_embeddings(),
        relation_names=names,
    )
    return result, time.perf_counter() - start


_EMBEDDER: list = []


def _names(kg: KnowledgeGraph) -> np.ndarray:
    """``[R, d]`` sentence embeddings of ``kg``'s relation names
    (:func:`lokg.scos.names.name_embeddings`) with the default's encoder (``embedder`` of
    ``experiment=lokg``: the bundled MiniLM offline), loaded once."""
    import hydra

    from lokg.config import compose_config
    from lokg.scos.names import name_embeddings

    if not _EMBEDDER:
        cfg = compose_config("evaluate", ["experiment=lokg"], ".")
        _EMBEDDER.append(hydra.utils.instantiate(cfg.embedder))
    return name_embeddings(kg.relations.labels, _EMBEDDER[0])


def _signals_line(
    kg: KnowledgeGraph, a: int, b: int, module, result: SCOSResult, names: np.ndarray | None = None
) -> str:
    from lokg.scos.entity_types import entity_types
    from lokg.scos.merge import pair_signals

    c = result.config
    types = entity_types(
        kg,
        c["entity_types"],
        c["type_relation"],
        module.entity_embeddings(),
        c["num_entity_types"],
    )
    s = pair_signals(
        kg,
        a,
        b,
        module.relation_embeddings(),
        types,
        weights=tuple(c["weights"]),
        theta_base=c["theta_base"],
        epsilon=c["epsilon"],
    )
    named = ""
    if names is not None:
        from lokg.scos.names import name_words

        la, lb = kg.relations.label(a), kg.relations.label(b)
        named = (
            f"; names {name_words(la)!r} / {name_words(lb)!r} cos {float(names[a] @ names[b]):.2f}"
        )
    return (
        f"{kg.relations.label(a)} ~ {kg.relations.label(b)}: sim {s.similarity:.3f} vs "
        f"theta {s.threshold:.3f} (NMI {s.nmi:.2f} J {s.jaccard:.2f} cos {s.cosine:.2f}; "
        f"tied {_tied_share(kg, a, b):.2f}; contradiction {s.contradiction.describe()}{named})"
    )


def _variant(text: str) -> dict:
    """``"min_support=3,theta_base=0.7"`` -> ``{"min_support": 3, "theta_base": 0.7}``;
    ``"scos=lokg"`` -> the keys of ``configs/scos/lokg.yaml`` (as composed), and
    ``"scos=lokg,max_contradiction=0.2"`` those with one changed."""
    import yaml

    out = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--variant {text!r}: expected key=value[,key=value...]")
        if key.strip() == "scos":
            from omegaconf import OmegaConf

            node = OmegaConf.to_container(_train_config("pq2h", [item.strip()]).scos)
            out.update({k: v for k, v in node.items() if not k.startswith("_")})
        else:
            out[key.strip()] = yaml.safe_load(value)
    return out


def _tied_share(kg: KnowledgeGraph, a: int, b: int) -> float:
    """Share of the entities of relations ``a`` and ``b`` that some other relation also uses:
    how much of the pair's placement in TransE comes from triples outside the pair (measured
    on PQL: missed pairs have more of it than recovered ones, docs/design/scos.md)."""
    t = kg.triples_np
    own = np.isin(t[:, 1], (a, b))
    ents = np.unique(t[own][:, [0, 2]])
    return float(np.isin(ents, t[~own][:, [0, 2]]).mean()) if len(ents) else 0.0


def planted(args: argparse.Namespace) -> None:
    from _data import compose, load_datamodule

    from lokg.data.synthetic import plant_synonyms
    from lokg.scos.entity_types import resolve_entity_types

    kbs: list[tuple[str, KnowledgeGraph, str]] = []
    for data in args.data:
        kbs.append((data, load_datamodule(compose(data)).kg, data))
    if args.synthetic_triples:
        syn = make_synthetic_kg(
            num_entities=max(1000, args.synthetic_triples // 3),
            num_triples=args.synthetic_triples,
            num_relations=200,
            num_synonyms=0,
            num_types=20,
            seed=args.seed,
        )
        # the data config only names a dataset; TransE settings come from model=transe
        kbs.append((f"synthetic-{args.synthetic_triples}", syn.kg, "pq2h"))
    worst_p, worst_r = 1.0, 1.0
    for name, kg, cfg_data in kbs:
        cfg = _train_config(cfg_data, args.overrides)
        pk = plant_synonyms(kg, args.k, args.min_triples, seed=args.seed)
        module, t_fit = _fit(pk.kg, cfg, args.seed, args.epochs)
        result, t_scos = _scos(pk.kg, module, cfg)
        truth = pk.synonym_pair_set()
        found = merged_pairs(result)
        hit = found & truth
        precision = len(hit) / len(found) if found else 1.0
        recall = len(hit) / len(truth)
        worst_p, worst_r = min(worst_p, precision), min(worst_r, recall)
        types = result.config["entity_types"]
        if types == "auto":
            types = f"auto->{resolve_entity_types(pk.kg, result.config['type_relation'], True)}"
        print(
            f"== {name}: {kg.num_triples} triples, |R0| {kg.num_relations} + {args.k} planted "
            f"(seed {args.seed}); TransE {t_fit:.1f} s, SCOS {t_scos:.2f} s, types={types}"
        )
        print(
            f"   |R0| {result.num_original} -> |R*| {result.num_compressed}; merged pairs "
            f"{len(found)}, planted recovered {len(hit)}/{len(truth)}: "
            f"precision {precision:.3f} recall {recall:.3f}"
        )
        grid = [(f"theta_base {t:.2f}", {"theta_base": t}) for t in args.theta_grid]
        grid += [(v, _variant(v)) for v in args.variant]
        for label, overrides in grid:
            res_t, _ = _scos(pk.kg, module, cfg, **overrides)
            f_t = merged_pairs(res_t)
            h_t = len(f_t & truth)
            print(
                f"   {label}: merged pairs {len(f_t)}, precision "
                f"{h_t / len(f_t) if f_t else 1.0:.3f} recall {h_t / len(truth):.3f}"
            )
        tied = {pair: _tied_share(pk.kg, *pair) for pair in truth}
        if hit and truth - found:
            print(
                "   tied share (entities another relation also uses), median: recovered "
                f"{np.median([tied[p] for p in hit]):.2f}, missed "
                f"{np.median([tied[p] for p in truth - found]):.2f}"
            )
        for a, b in sorted(truth - found):
            print("   missed  " + _signals_line(pk.kg, a, b, module, result))
        for a, b in sorted(found - truth):
            print("   wrong   " + _signals_line(pk.kg, a, b, module, result))
        if not args.skip_unmodified:
            base, _ = _fit(kg, cfg, args.seed, args.epochs)
            res0, _ = _scos(kg, base, cfg)
            print(
                f"   unmodified {name}: |R0| {res0.num_original} -> |R*| "
                f"{res0.num_compressed}, {len(res0.report)} merges"
            )
            for m in res0.report:
                print(
                    f"      {'+'.join(m.left)} <- {'+'.join(m.right)}: sim {m.similarity:.3f} "
                    f">= {m.threshold:.3f} (NMI {m.nmi:.2f} J {m.jaccard:.2f} "
                    f"cos {m.cosine:.2f})"
                )
        sys.stdout.flush()
    print(f"planted_min precision={worst_p:.3f} recall={worst_r:.3f}")


#: every bundled KG (``configs/data/``; the WebQSP and CWQ evidence pools are bundled too)
FALSEMERGE_DATA = ("pq2h", "pq3h", "pql2h", "pql3h", "webqsp_evidence", "cwq_evidence")
#: the configurations ``falsemerge`` compares: the default's SCOS and the paper's
FALSEMERGE_CONFIGS = (("default", "experiment=lokg"), ("paper", "experiment=paper"))


@dataclass
class FalseMergeCount:
    """What one SCOS configuration merged on one planted graph (``falsemerge``)."""

    merged: int  # unordered pairs of original relations put in one cluster
    false: int  # of them, not a planted synonym pair
    false_correlated: int  # of the false, a planted correlated pair
    recovered: int  # planted synonym pairs merged
    synonyms: int  # planted synonym pairs
    false_agreeing: int = 0  # of the false, pairs whose every shared head agrees (graph-agreeing)

    @property
    def recall(self) -> float:
        return self.recovered / self.synonyms if self.synonyms else 1.0


def graph_agreeing(kg: KnowledgeGraph, a: int, b: int) -> bool:
    """True when relations ``a`` and ``b`` share a head and hold the same tails on every head
    they share (so they state facts in common and contradict none): what a duplicate of one
    relation shows, and also a sub-relation beside its parent
    (``first_level_division_of`` beside ``administrative_parent``), which the graph cannot
    tell apart.  ``falsemerge`` counts such pairs among the false merges and prints them apart.
    """
    from lokg.scos.contradiction import contradiction

    tr = kg.unique_triples()
    E = kg.num_entities
    keys = [np.sort(tr[tr[:, 1] == r][:, 0] * E + tr[tr[:, 1] == r][:, 2]) for r in (a, b)]
    c = contradiction(keys[0], keys[1], E)
    return c.shared_heads > 0 and c.differing_heads == 0


def count_false_merges(
    result: SCOSResult,
    synonyms: set[tuple[int, int]],
    correlated: set[tuple[int, int]],
    kg: KnowledgeGraph | None = None,
) -> tuple[FalseMergeCount, list[tuple[int, int]]]:
    """Count the merged pairs of ``result`` that are not planted synonyms (``falsemerge``).

    Every pair of original relations in one cluster counts once: a cluster {r, r', c} where
    (r, r') is a planted synonym and c is not counts (r, c) and (r', c) as two false merges.
    With ``kg`` (the planted graph), the false pairs that are :func:`graph_agreeing` (and not
    planted correlated) are counted too (``false_agreeing``; still false merges).
    Returns the counts and the false pairs (sorted).
    """
    found = merged_pairs(result)
    false = sorted(found - synonyms)
    agreeing = 0
    if kg is not None:
        agreeing = sum(graph_agreeing(kg, a, b) for a, b in false if (a, b) not in correlated)
    return (
        FalseMergeCount(
            merged=len(found),
            false=len(false),
            false_correlated=len(set(false) & correlated),
            recovered=len(found & synonyms),
            synonyms=len(synonyms),
            false_agreeing=agreeing,
        ),
        false,
    )


def falsemerge_configs(variants: list[str]) -> list[tuple[str, dict]]:
    """``[(label, scos keys)]``: the default's and the paper's SCOS as ``evaluate.py``
    composes them (:data:`FALSEMERGE_CONFIGS`), then each ``--variant`` (compared, not
    counted in the last line)."""
    from omegaconf import OmegaConf

    from lokg.config import compose_config

    out = []
    for label, experiment in FALSEMERGE_CONFIGS:
        node = compose_config("evaluate", [experiment], ".").scos
        keys = OmegaConf.to_container(node, resolve=True)
        out.append((label, {k: v for k, v in keys.items() if not k.startswith("_")}))
    for text in variants:
        out.append((text, {**out[0][1], **_variant(text)}))
    return out


def plant_falsemerge(
    kg: KnowledgeGraph, k_synonyms: int, k_correlated: int, min_triples: int, seed: int,
    agreement: tuple[float, ...], naming: str = "alias",
):  # fmt: skip
    """``kg`` with ``k_synonyms`` split synonyms (:func:`lokg.data.synthetic.plant_synonyms`,
    named by ``naming``) and ``k_correlated`` correlated-but-distinct relations on other bases
    (:func:`lokg.data.synthetic.plant_correlated`), each at most what the graph's eligible
    relations allow (half each when there are too few).  The naming changes the planted
    synonyms' names alone: the triples, ids and entity types are the same whatever it is.

    Returns ``(graph, synonym pairs, correlated pairs, {correlated pair: agreement})``.
    """
    from lokg.data.synthetic import plant_correlated, plant_synonyms

    eligible = int((kg.relation_counts >= min_triples).sum())
    k_syn = min(k_synonyms, eligible // 2)
    k_cor = min(k_correlated, eligible - k_syn)
    pk = plant_synonyms(kg, k_syn, min_triples, seed=seed, naming=naming)
    ck = plant_correlated(
        pk.kg, k_cor, agreement, min_triples, seed=seed, exclude=pk.synonym_pairs.ravel()
    )
    share = {
        (int(min(a, b)), int(max(a, b))): float(p)
        for (a, b), p in zip(ck.pairs.tolist(), ck.agreement.tolist(), strict=True)
    }
    return ck.kg, pk.synonym_pair_set(), ck.pair_set(), share


def falsemerge(args: argparse.Namespace) -> None:
    """On every bundled KG and a synthetic one, with planted split synonyms and planted
    correlated-but-distinct relations: how many non-synonym pairs each configuration merges,
    and its recall on the synonyms (module doc)."""
    from _data import compose, load_datamodule

    if args.quick:
        args.epochs = args.epochs or 25
        args.synthetic_triples = min(args.synthetic_triples, 10_000)
    configs = falsemerge_configs(args.variant)
    graphs: list[tuple[str, KnowledgeGraph, str]] = []
    seen: set[str] = set()
    for data in args.data:
        kg = load_datamodule(compose(data)).kg
        if kg.fingerprint() in seen:  # two datasets over one KG: measured once
            continue
        seen.add(kg.fingerprint())
        graphs.append((data, kg, data))
    if args.synthetic_triples:
        syn = make_synthetic_kg(
            num_entities=max(1000, args.synthetic_triples // 3),
            num_triples=args.synthetic_triples,
            num_relations=args.synthetic_relations,
            num_synonyms=0,
            num_types=20,
            seed=args.seed,
        )
        graphs.append((f"synthetic-{args.synthetic_triples}", syn.kg, "pq2h"))
    totals = {label: FalseMergeCount(0, 0, 0, 0, 0) for label, _ in configs}
    worst_recall = {label: 1.0 for label, _ in configs}
    agreeing_pairs: dict[str, list[str]] = {label: [] for label, _ in configs}
    for name, kg, cfg_data in graphs:
        planted_kg, synonyms, correlated, agreement = plant_falsemerge(
            kg, args.k, args.correlated, args.min_triples, args.seed, tuple(args.agreement),
            naming=args.naming,
        )  # fmt: skip
        cfg = _train_config(cfg_data, args.overrides)
        module, t_fit = _fit(planted_kg, cfg, args.seed, args.epochs)
        names = _names(planted_kg)
        syn_cos = np.array([float(names[a] @ names[b]) for a, b in sorted(synonyms)])
        print(
            f"== {name}: {kg.num_triples} triples, |R0| {kg.num_relations} + {len(synonyms)} "
            f"split synonyms ({args.naming} names) + {len(correlated)} correlated (agreement "
            f"{', '.join(f'{p:.0%}' for p in sorted(set(agreement.values())))}; seed "
            f"{args.seed}); TransE {t_fit:.1f} s",
            flush=True,
        )
        if len(syn_cos):
            print(
                f"   planted synonyms' name cosine: min {syn_cos.min():.3f}, median "
                f"{np.median(syn_cos):.3f}; below 0.2 / 0.3 / 0.4: {(syn_cos < 0.2).sum()} / "
                f"{(syn_cos < 0.3).sum()} / {(syn_cos < 0.4).sum()} of {len(syn_cos)}"
            )
        for label, keys in configs:
            start = time.perf_counter()  # the configuration's keys alone, not cfg.scos's
            result = compress(
                planted_kg,
                module.relation_embeddings(),
                keys,
                entity_embeddings=module.entity_embeddings(),
                relation_names=names,
            )
            t_scos = time.perf_counter() - start
            count, false = count_false_merges(result, synonyms, correlated, planted_kg)
            t = totals[label]
            t.merged += count.merged
            t.false += count.false
            t.false_correlated += count.false_correlated
            t.false_agreeing += count.false_agreeing
            t.recovered += count.recovered
            t.synonyms += count.synonyms
            worst_recall[label] = min(worst_recall[label], count.recall)
            found = merged_pairs(result)
            hit = np.array([pair in found for pair in sorted(synonyms)], dtype=bool)
            hit_cos = f", their min name cosine {syn_cos[hit].min():.3f}" if hit.any() else ""
            print(
                f"   {label}: merged pairs {count.merged}, non-synonym {count.false} "
                f"(correlated {count.false_correlated}, graph-agreeing {count.false_agreeing}, "
                f"other {count.false - count.false_correlated - count.false_agreeing}), synonyms "
                f"recovered {count.recovered}/{count.synonyms} (recall {count.recall:.3f}"
                f"{hit_cos}); refused {len(result.refused_report)} (by name "
                f"{sum(r.reason == 'name' for r in result.refused_report)}); SCOS {t_scos:.2f} s"
            )
            agreeing = {p for p in false if p not in correlated and graph_agreeing(planted_kg, *p)}
            label_of = planted_kg.relations.label
            agreeing_pairs[label] += [f"{name}: {label_of(a)} + {label_of(b)}" for a, b in agreeing]
            for a, b in false[: args.show]:
                if (a, b) in correlated:
                    what = f"correlated {agreement[(a, b)]:.0%}"
                else:
                    what = "graph-agreeing" if (a, b) in agreeing else "other"
                line = _signals_line(planted_kg, a, b, module, result, names)
                print(f"      false ({what}) " + line)
        sys.stdout.flush()
    for label, t in totals.items():
        print(
            f"total {label}: non-synonym merges {t.false} (correlated {t.false_correlated}, "
            f"graph-agreeing {t.false_agreeing}), synonym recall {t.recall:.3f} "
            f"({t.recovered}/{t.synonyms}), worst graph {worst_recall[label]:.3f}"
        )
    for label in ("default", "paper"):
        for pair in agreeing_pairs[label]:
            print(f"graph-agreeing false merge ({label}): {pair}")
    print(
        f"falsemerge_graph_agreeing default={totals['default'].false_agreeing} "
        f"paper={totals['paper'].false_agreeing} (counted in the next line too)"
    )
    print(f"falsemerge default={totals['default'].false} paper={totals['paper'].false}")


@dataclass(frozen=True)
class End2EndRow:
    """One end2end configuration measured on one split."""

    label: str
    metrics: dict  # evaluate's metrics
    relations: int  # |R| ITTC and the walk see
    merged: int | None  # planted pairs SCOS merged (None where SCOS cannot merge one)
    wrong: int  # merged pairs that were not planted
    train_s: float  # TransE + SCOS (+ the walk model with --retriever learned), seconds


#: end2end retrievers: --retriever name -> (the evaluate override, whether a walk model is trained)
END2END_RETRIEVERS = {
    "learned": ((), True),  # the default retriever, trained on the KB's own questions
    "rules": (("retriever=taimr_linked",), False),  # relation linking by name, nothing trained
}

#: end2end configurations: (row label, KB, scos config group, evaluate overrides)
END2END_ROWS = (
    ("unmodified", "unmodified", "lokg", []),
    ("planted, w/o SCOS", "planted", "off", ["ablation=no_scos"]),
    ("planted, SCOS (paper theta 0.75)", "planted", "default", ["scos=default"]),
    ("planted, SCOS (ours, theta 0.64)", "planted", "lokg", []),
)


def end2end(args: argparse.Namespace) -> None:
    """The planted KB as a user's KG through the whole pipeline, with and without SCOS."""
    import shutil

    from _data import compose, load_datamodule

    from lokg.config import compose_config
    from lokg.data.synthetic import plant_synonyms
    from lokg.evaluate import run as evaluate
    from lokg.kg.io import write_triples
    from lokg.train import run as train

    quiet = ["trainer.enable_progress_bar=false", "~logger", f"seed={args.seed}", *args.overrides]
    retriever_over, train_walk = END2END_RETRIEVERS[args.retriever]
    worst = {"with": 1.0, "without": 1.0}
    for data in args.data:
        dm = load_datamodule(compose(data))
        protect = _train_path_mask(dm) if args.protect_train_paths else None
        pk = plant_synonyms(
            dm.kg, args.k, args.min_triples, seed=args.seed, naming=args.naming, protect=protect
        )
        variant = f"{args.naming}{'-unseen' if args.protect_train_paths else ''}"
        root = Path(args.root).resolve() / f"{data}-seed{args.seed}-{variant}"
        root.mkdir(parents=True, exist_ok=True)
        splits = {}
        for split in ("train", "val", "test"):  # the package's split, unchanged
            splits[split] = root / f"questions_{split}.jsonl"
            shutil.copy(dm.artifact_dir / f"questions_{split}.jsonl", splits[split])
        for name, kg in (("unmodified", dm.kg), ("planted", pk.kg)):  # artifacts: by content
            write_triples(root / f"{name}.tsv", [kg.labeled(i) for i in range(kg.num_triples)])
        name_of = pk.kg.relations.label
        truth = {tuple(sorted((name_of(a), name_of(b)))) for a, b in pk.synonym_pairs.tolist()}
        print(
            f"== {data} + {args.k} planted ({variant} names, seed {args.seed}), "
            f"B={args.budget}, experiment=lokg, retriever: {args.retriever}, llm=extractive",
            flush=True,
        )
        rows: dict[str, list] = {split: [] for split in args.split}
        for label, kb, scos, eval_over in END2END_ROWS:
            data_over = [
                "data=custom",
                f"data.source.kg_path={root / f'{kb}.tsv'}",
                f"data.source.name={data}_{kb}",
                *(f"+data.source.split_paths.{s}={p}" for s, p in splits.items()),
            ]
            # TransE is trained once per KB (keyed by the KG); scos=off reads its unmerged e_r
            transe_scos = "lokg" if scos == "off" else scos
            t0 = time.perf_counter()
            out = train(
                compose_config(
                    "train",
                    ["experiment=train_transe", *data_over, f"scos={transe_scos}", *quiet],
                    root,
                )
            )
            result = SCOSResult.load(out["scos_dir"] / "scos")
            if train_walk:
                train(
                    compose_config(
                        "train", ["experiment=train_walk", *data_over, f"scos={scos}", *quiet], root
                    )
                )
            t_train = time.perf_counter() - t0
            # the exported artifacts hold what evaluate reads; Lightning's checkpoints (~0.5
            # GB a run) are not kept
            shutil.rmtree(root / "outputs" / "checkpoints", ignore_errors=True)
            # label pairs: the KB read back from its file numbers relations anew
            found = set() if scos == "off" else _label_pairs(result)
            rel = result.num_original if scos == "off" else result.num_compressed
            merged = len(found & truth) if kb == "planted" and scos != "off" else None
            for split in args.split:
                ev = evaluate(
                    compose_config(
                        "evaluate",
                        [
                            *data_over,
                            "experiment=lokg",
                            *retriever_over,
                            *eval_over,
                            "llm=extractive",
                            f"split={split}",
                            f"budget={args.budget}",
                            "~logger",
                        ],
                        root,
                    )
                )
                rows[split].append(
                    End2EndRow(label, ev["metrics"], rel, merged, len(found - truth), t_train)
                )
        for split in args.split:
            _end2end_table(data, split, rows[split])
        base, without, with_scos = (rows[args.split[-1]][i].metrics for i in (0, 1, 3))
        for key, m in (("with", with_scos), ("without", without)):
            worst[key] = min(
                worst[key],
                _share(m["hits@1"], base["hits@1"]),
                _share(m["coverage"], base["coverage"]),
            )
        sys.stdout.flush()
    print(
        f"planted_end2end recovered_with_scos={worst['with']:.3f} "
        f"recovered_without={worst['without']:.3f}"
    )


def _train_path_mask(dm) -> np.ndarray:
    """``[T]`` True for the triples on the training questions' gold paths."""
    kg = dm.kg
    index = {kg.labeled(i): i for i in range(kg.num_triples)}
    mask = np.zeros(kg.num_triples, dtype=bool)
    for q in dm.questions["train"]:
        for triple in q.gold_path:
            if (i := index.get(tuple(triple))) is not None:
                mask[i] = True
    return mask


def _end2end_table(data: str, split: str, rows: list[End2EndRow]) -> None:
    base = rows[0].metrics
    print(f"-- {data}, split={split} ({int(base['n'])} questions)")
    print(
        "| configuration | |R| ITTC sees | planted merged | wrong merges | Hits@1 | coverage "
        "| evidence tok/q | Hits@1 / unmodified | coverage / unmodified | train s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m = r.metrics
        print(
            f"| {r.label} | {r.relations} | {'-' if r.merged is None else r.merged} | "
            f"{r.wrong} | {m['hits@1']:.3f} | {m['coverage']:.3f} | {m['evidence_tok/q']:.1f} | "
            f"{_ratio(m['hits@1'], base['hits@1'])} | "
            f"{_ratio(m['coverage'], base['coverage'])} | {r.train_s:.0f} |"
        )


def _label_pairs(result: SCOSResult) -> set[tuple[str, str]]:
    """:func:`merged_pairs` as sorted pairs of original relation labels."""
    label = result.original_relations.label
    return {tuple(sorted((label(a), label(b)))) for a, b in merged_pairs(result)}


def _share(value: float, base: float) -> float:
    return value / base if base > 0 else 1.0


def _ratio(value: float, base: float) -> str:
    return f"{_share(value, base):.3f}"


@dataclass(frozen=True)
class PairTable:
    """Every candidate pair of one planted KB, scored pairwise (before the greedy loop).

    Arrays are ``[P]`` over the pairs ``(ii[p], jj[p])``, ``ii < jj`` original relation ids.
    """

    data: str
    ii: np.ndarray
    jj: np.ndarray
    nmi: np.ndarray  # Eq. (3)'s NMI term
    cos: np.ndarray  # cosine of the TransE relation vectors
    j_union: np.ndarray  # the paper's Jaccard, head ∪ tail
    j_head: np.ndarray
    j_tail: np.ndarray
    factor: np.ndarray  # Eq. (5)'s min(1 + eps delta, 1 / theta_base) factor at theta_base 1
    planted: np.ndarray  # [P] bool
    num_truth: int

    def precision_recall(self, sim: np.ndarray, theta_base: float) -> tuple[float, float]:
        """Precision and recall of the pairs whose ``sim`` reaches Eq. (5) at ``theta_base``."""
        merged = sim / self.factor >= theta_base  # sim >= theta_base * factor
        tp, fp = int(merged[self.planted].sum()), int(merged[~self.planted].sum())
        return tp / max(tp + fp, 1), tp / self.num_truth

    def best_recall(self, sim: np.ndarray, grid: np.ndarray) -> tuple[float, float, float]:
        """``(theta_base, precision, recall)``: the best recall at precision >= 0.95."""
        best = (float("nan"), 1.0, 0.0)
        for b in grid:
            prec, rec = self.precision_recall(sim, float(b))
            if prec >= 0.95 and rec > best[2]:
                best = (float(b), prec, rec)
        return best


def _pair_table(data: str, k: int, seed: int, min_nmi: float) -> PairTable:
    """Plant ``k`` synonyms in ``data``'s KB, train TransE, score pairs with NMI > ``min_nmi``."""
    from _data import compose, load_datamodule

    from lokg.data.synthetic import plant_synonyms
    from lokg.scos.entity_types import entity_types
    from lokg.scos.merge import _Clusters, _nmi_pairs
    from lokg.scos.similarity import adaptive_threshold, cosine_similarity

    cfg = _train_config(data, [])
    pk = plant_synonyms(load_datamodule(compose(data)).kg, k, 20, seed=seed)
    kg, truth = pk.kg, pk.synonym_pair_set()
    module, _ = _fit(kg, cfg, seed, None)
    c = cfg.scos
    types = entity_types(
        kg, c.entity_types, c.type_relation, module.entity_embeddings(), c.num_entity_types
    )
    st = _Clusters(kg, module.relation_embeddings(), types)
    heads: list[set[int]] = [set() for _ in range(st.R)]
    tails: list[set[int]] = [set() for _ in range(st.R)]
    for h, r, t in kg.unique_triples().tolist():
        heads[r].add(h)
        tails[r].add(t)
    ii, jj = np.triu_indices(st.R, 1)
    nmi = _nmi_pairs(*st.dist_csr(), ii, jj)
    keep = nmi > min_nmi
    ii, jj, nmi = ii[keep], jj[keep], nmi[keep]

    def jac(x: set, y: set) -> float:
        return len(x & y) / len(x | y) if x or y else 0.0

    pairs = list(zip(ii.tolist(), jj.tolist(), strict=True))
    return PairTable(
        data=data,
        ii=ii,
        jj=jj,
        nmi=nmi,
        cos=cosine_similarity(st.emb, st.emb)[ii, jj],
        j_union=np.array([jac(heads[a] | tails[a], heads[b] | tails[b]) for a, b in pairs]),
        j_head=np.array([jac(heads[a], heads[b]) for a, b in pairs]),
        j_tail=np.array([jac(tails[a], tails[b]) for a, b in pairs]),
        factor=adaptive_threshold(st.entropy[ii], st.entropy[jj], 1.0, float(c.epsilon)),
        planted=np.array([pair in truth for pair in pairs], dtype=bool),
        num_truth=len(truth),
    )


def jaccard_variants(args: argparse.Namespace) -> None:
    """Module doc, ``jaccard``."""
    grid = np.round(np.arange(0.40, 0.80, 0.01), 2)
    for data in args.data:
        tab = _pair_table(data, args.k, args.seed, min_nmi=0.3)
        print(f"== {data} (seed {args.seed}): {len(tab.ii)} pairs with NMI > 0.3, "
              f"{tab.planted.sum()} of {tab.num_truth} planted among them")  # fmt: skip
        w1, w2, w3 = (float(w) for w in _train_config(data, []).scos.weights)
        variants = {
            "union (paper)": tab.j_union,
            "max(head, tail)": np.maximum(tab.j_head, tab.j_tail),
            "mean(head, tail)": (tab.j_head + tab.j_tail) / 2,
            "tail only": tab.j_tail,
        }
        for name, j in variants.items():
            best = tab.best_recall(w1 * tab.nmi + w2 * j + w3 * tab.cos, grid)
            print(f"   Jaccard {name:17s} best recall at precision >= 0.95: {best[2]:.3f} "
                  f"(theta_base {best[0]:.2f}, precision {best[1]:.3f})")  # fmt: skip


def weights_sweep(args: argparse.Namespace) -> None:
    """Module doc, ``weights``."""
    grid = np.round(np.arange(0.30, 0.95, 0.01), 2)
    n = round(1 / args.step)
    triples = [
        (a * args.step, b * args.step, (n - a - b) * args.step)
        for a in range(n + 1)
        for b in range(n + 1 - a)
    ]
    paper = tuple(float(w) for w in _train_config(args.data[0], []).scos.weights)
    if not any(np.allclose(w, paper) for w in triples):
        triples.append(paper)
    paper = next(w for w in triples if np.allclose(w, paper))  # the grid's float spelling
    tables = [_pair_table(data, args.k, args.seed, min_nmi=-1.0) for data in args.data]
    for tab in tables:
        print(f"== {tab.data} (seed {args.seed}): {len(tab.ii)} pairs, {tab.num_truth} planted")
    # per weight triple: the one theta_base with precision >= 0.95 on every KB and the best
    # minimum recall over the KBs (what a config default must do)
    best: dict[tuple, tuple[float, list[tuple[float, float]]]] = {}
    for w in triples:
        sims = [w[0] * t.nmi + w[1] * t.j_union + w[2] * t.cos for t in tables]
        best[w] = (float("nan"), [(1.0, 0.0)] * len(tables))
        for b in grid:
            pr = [t.precision_recall(sim, float(b)) for t, sim in zip(tables, sims, strict=True)]
            if min(p for p, _ in pr) >= 0.95 and min(r for _, r in pr) > min(
                r for _, r in best[w][1]
            ):
                best[w] = (float(b), pr)

    def min_recall(w: tuple) -> float:
        return min(r for _, r in best[w][1])

    ranked = sorted(triples, key=lambda w: -min_recall(w))
    for w in [*ranked[: args.top], paper]:
        theta, pr = best[w]
        cells = "  ".join(
            f"{t.data} P {p:.3f} R {r:.3f}" for t, (p, r) in zip(tables, pr, strict=True)
        )
        tag = "  <- paper" if w == paper else ""
        print(f"   w = ({w[0]:.2f}, {w[1]:.2f}, {w[2]:.2f}) theta_base {theta:.2f}: {cells}{tag}")
    top = ranked[0]
    print(
        f"weights_best w=({top[0]:.2f},{top[1]:.2f},{top[2]:.2f}) theta_base={best[top][0]:.2f} "
        f"min_recall={min_recall(top):.3f} paper_w_min_recall={min_recall(paper):.3f}"
    )


def timing(args: argparse.Namespace) -> None:
    rows = []
    for r in args.sizes:
        seconds, merges, triples = run(
            r,
            args.triples_per_relation,
            args.seed,
            _variant(args.variant) if args.variant else None,
        )
        rows.append((r, seconds))
        print(f"|R| = {r:5d}  triples = {triples:8d}  merges = {merges:4d}  SCOS {seconds:8.3f} s")
    print("growth between consecutive sizes (measured vs |R|^2 log|R| model):")
    for (r0, t0), (r1, t1) in itertools.pairwise(rows):
        model = (r1**2 * math.log(r1)) / (r0**2 * math.log(r0))
        print(f"  {r0:5d} -> {r1:5d}: x{t1 / t0:7.2f}   (model x{model:7.2f})")


def _dataset(name: str) -> str:
    """argparse type of ``--data``: a dataset config name (``configs/data/<name>.yaml``)."""
    configs = Path(__file__).resolve().parents[1] / "configs" / "data"
    if not (configs / f"{name}.yaml").is_file() or name.startswith("_"):
        known = sorted(p.stem for p in configs.glob("*.yaml") if not p.stem.startswith("_"))
        hint = " (Hydra overrides go before --data)" if "=" in name else ""
        raise argparse.ArgumentTypeError(
            f"{name!r} is not a dataset of configs/data/{hint}; expected one of {known}"
        )
    return name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("timing")
    t.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1600, 6400])
    t.add_argument("--triples-per-relation", type=int, default=50)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--variant", default="", help="scos keys, e.g. theta_base=0.64,min_support=5")
    q = sub.add_parser("quality")
    q.add_argument("--kb", nargs="*", default=[])
    q.add_argument("--synthetic", action="store_true")
    q.add_argument("--epochs", type=int, default=100)
    q.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("planted")
    p.add_argument(
        "--data",
        nargs="*",
        type=_dataset,
        default=["pql2h", "pql3h", "webqsp_evidence", "cwq_evidence"],
    )
    p.add_argument("--synthetic-triples", type=int, default=130_000, help="0: no synthetic graph")
    p.add_argument("--k", type=int, default=30, help="planted synonyms per KB")
    p.add_argument("--min-triples", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="1 to choose settings, 0 to report")
    p.add_argument("--epochs", type=int, default=None, help="default: the config's")
    p.add_argument("--skip-unmodified", action="store_true")
    p.add_argument(
        "--theta-grid", type=float, nargs="*", default=[], help="also print P/R at these theta_base"
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        help="also print P/R with these scos keys on the same TransE, e.g. min_support=3,"
        "max_split_z=3, or a whole scos config: scos=lokg (repeatable)",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. scos.theta_base=0.6")
    j = sub.add_parser("jaccard")
    j.add_argument("--data", nargs="*", type=_dataset, default=["pql2h", "pql3h"])
    j.add_argument("--k", type=int, default=30, help="planted synonyms per KB")
    j.add_argument("--seed", type=int, default=1, help="1: the validation plant")
    w = sub.add_parser("weights")
    w.add_argument("--data", nargs="*", type=_dataset, default=["pql2h", "pql3h"])
    w.add_argument("--k", type=int, default=30, help="planted synonyms per KB")
    w.add_argument("--seed", type=int, default=1, help="1: the validation plant")
    w.add_argument("--step", type=float, default=0.1, help="grid step of (w1, w2, w3)")
    w.add_argument("--top", type=int, default=8, help="weight triples printed per KB")
    f = sub.add_parser("falsemerge")
    f.add_argument("--data", nargs="*", type=_dataset, default=list(FALSEMERGE_DATA))
    f.add_argument("--synthetic-triples", type=int, default=20_000, help="0: no synthetic graph")
    f.add_argument("--synthetic-relations", type=int, default=100)
    f.add_argument("--k", type=int, default=30, help="split synonyms planted per graph (at most)")
    f.add_argument(
        "--correlated", type=int, default=12, help="correlated pairs planted per graph (at most)"
    )
    f.add_argument(
        "--agreement",
        type=float,
        nargs="+",
        default=[0.3, 0.5, 0.7, 0.9],
        help="shares of heads on which a correlated relation agrees, taken in turn",
    )
    f.add_argument("--min-triples", type=int, default=20)
    f.add_argument("--seed", type=int, default=0, help="1 to choose settings, 0 to report")
    f.add_argument("--epochs", type=int, default=None, help="TransE epochs (default: config's)")
    f.add_argument(
        "--quick", action="store_true", help="TransE 25 epochs, synthetic graph of 10k triples"
    )
    f.add_argument("--show", type=int, default=5, help="false merges printed per config")
    f.add_argument(
        "--naming",
        choices=("paraphrase", "alias", "opaque"),
        default="paraphrase",
        help="names of the planted synonyms: paraphrase (the property in other words, "
        "lokg.data.synthetic.paraphrase_label), alias (<label>_alias, the plant before the "
        "name guard), opaque (a code); the triples are the same whatever it is",
    )
    f.add_argument(
        "--variant",
        action="append",
        default=[],
        help="also count the default's scos keys changed, e.g. max_contradiction=null",
    )
    f.add_argument("overrides", nargs="*", help="Hydra overrides for TransE's training config")
    e = sub.add_parser("end2end")
    e.add_argument("--data", nargs="*", type=_dataset, default=["pql2h"])
    e.add_argument("--k", type=int, default=30, help="planted synonyms per KB")
    e.add_argument("--min-triples", type=int, default=20)
    e.add_argument("--seed", type=int, default=0, help="1 to choose settings, 0 to report")
    e.add_argument("--naming", choices=("alias", "opaque"), default="opaque")
    e.add_argument(
        "--protect-train-paths",
        action="store_true",
        help="the training questions' gold-path triples keep their name: the walk model is "
        "never trained on a planted name, as when a second import adds names after training",
    )
    e.add_argument(
        "--split", nargs="+", choices=("val", "test"), default=["val"], help="the last: last line"
    )
    e.add_argument(
        "--retriever",
        choices=tuple(END2END_RETRIEVERS),
        default="learned",
        help="learned: the default walk, trained per row; rules: retriever=taimr_linked",
    )
    e.add_argument("--budget", type=int, default=128)
    e.add_argument("--root", default="logs/bench_scos_end2end", help="artifacts and results")
    e.add_argument("overrides", nargs="*", help="Hydra overrides for training, e.g. debug=limit")
    args = parser.parse_args()
    if args.command == "timing":
        timing(args)
    elif args.command == "planted":
        planted(args)
    elif args.command == "falsemerge":
        falsemerge(args)
    elif args.command == "end2end":
        end2end(args)
    elif args.command == "jaccard":
        jaccard_variants(args)
    elif args.command == "weights":
        weights_sweep(args)
    else:
        quality(args)


if __name__ == "__main__":
    main()
