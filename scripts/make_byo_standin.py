"""Build the bring-your-own-KG stand-in: a PathQuestion KB as a TSV and its questions,
re-asked in another style, as plain questions JSONL without gold paths.

    python scripts/make_byo_standin.py --out DIR [--data pql2h] [--style reverse] [--seed 0]
        [--force]

The dataset (``configs/data/<data>.yaml``: pq2h, pq3h, pql2h or pql3h) is read by the package's
own source, as every entry point reads it: the whole KB and all of its questions, before any
split.  The questions are restyled by :func:`lokg.data.restyle.restyle` on the KB graph
(``reverse``: each gold path asked from its answer end; ``paraphrase``: the same path in
templates PathQuestion never uses); what it skips is counted by reason.  Written to ``DIR``:

- ``kg.tsv``: the KB's triples, one ``head<TAB>relation<TAB>tail`` row each, no header (what
  ``data=custom``'s :class:`~lokg.data.CustomSource` reads with its defaults);
- ``questions.jsonl``: one record per restyled question with only what a user would have:
  ``id``, ``question``, ``answers``, ``topic_entities`` (no ``gold_path``), so the package
  splits the file 8:1:1 itself and the walk model trains on shortest topic-to-answer paths.

Both files are written to temporary siblings, read back through ``CustomSource`` and only then
renamed in place, so a failed run leaves no half-written file.  A non-empty ``DIR`` is refused
unless ``--force`` (which replaces these two files and leaves anything else there alone).
The script prints the counts and the three commands a user runs on the files (TransE, the
walk model, a retriever-only evaluation on val).  This is the stand-in measured in docs/results.md
("The bring-your-own-KG stand-in").
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import hydra

from lokg.atomic_io import atomic_file
from lokg.cli import report
from lokg.config import compose_config
from lokg.data.restyle import STYLES, restyle
from lokg.data.sources import CustomSource
from lokg.errors import InputError
from lokg.kg.io import QUESTION_KEYS, write_triples

ROOT = Path(__file__).resolve().parent.parent
#: the PathQuestion dataset configs under configs/data/
DATASETS = ("pq2h", "pq3h", "pql2h", "pql3h")
#: the keys of a written question record: the reader's required ones (no gold_path)
RECORD_KEYS = QUESTION_KEYS[:4]
KG_FILE, QUESTIONS_FILE = "kg.tsv", "questions.jsonl"


def _check_out(out: Path, force: bool) -> None:
    """Refuse a path that is not a directory, or a non-empty directory without ``force``."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: is not a directory; expected a new or empty directory")
    if out.is_dir() and not force:
        entries = sorted(p.name for p in out.iterdir())
        if entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise InputError(
                f"--out {out}: not empty ({len(entries)} entries: {shown}); expected a new or "
                f"empty directory, or --force to replace {KG_FILE} and {QUESTIONS_FILE} there"
            )


def commands(kg_path: Path, questions_path: Path) -> list[str]:
    """The three commands a user runs on the written files, from the repository root."""
    data = (
        f"data=custom data.source.kg_path={shlex.quote(str(kg_path))} "
        f"data.source.questions_path={shlex.quote(str(questions_path))}"
    )
    return [
        f"python train.py experiment=train_transe {data}",
        f"python train.py experiment=train_walk {data}",
        f"python evaluate.py {data} llm=extractive budget=128 split=val",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="pql2h", choices=DATASETS, help="configs/data/ name")
    ap.add_argument("--out", required=True, type=Path, help="directory to write into")
    ap.add_argument("--style", default="reverse", choices=STYLES)
    ap.add_argument("--seed", type=int, default=0, help="seeds each question's template draw")
    ap.add_argument("--force", action="store_true", help="write into a non-empty --out")
    args = ap.parse_args(argv)
    out = args.out.expanduser().resolve()
    _check_out(out, args.force)

    cfg = compose_config("evaluate", [f"data={args.data}"], ROOT)
    source = hydra.utils.instantiate(cfg.data.source)
    raw = source.load()
    if raw.presplit or not isinstance(raw.questions, list):
        raise InputError(f"--data {args.data}: a presplit dataset; expected a PathQuestion set")
    kg, questions = raw.kg, raw.questions
    print(f"{args.data}: {kg.num_triples} triples, {len(questions)} questions (all splits)")
    for line in raw.reports:
        print(f"  read: {line}")
    styled, rep = restyle(questions, kg, args.style, seed=args.seed)
    print(f"restyle (seed {args.seed}) {rep}")
    if not styled:
        raise InputError(f"--data {args.data}: no question could be restyled ({rep})")

    triples = [kg.labeled(i) for i in range(kg.num_triples)]
    records = [{k: v for k, v in q.to_json().items() if k in RECORD_KEYS} for q in styled]
    out.mkdir(parents=True, exist_ok=True)
    kg_path, questions_path = out / KG_FILE, out / QUESTIONS_FILE
    with ExitStack() as stack:  # both renamed only after both are written and read back
        kg_tmp = stack.enter_context(atomic_file(kg_path, suffix=".tsv"))
        q_tmp = stack.enter_context(atomic_file(questions_path, suffix=".jsonl"))
        write_triples(kg_tmp, triples)
        with open(q_tmp, "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        back = CustomSource("custom", str(kg_tmp), str(q_tmp)).load()
        if back.kg.num_triples != len(triples) or len(back.questions) != len(records):
            raise RuntimeError(
                f"read back {back.kg.num_triples} triples and {len(back.questions)} questions; "
                f"wrote {len(triples)} and {len(records)}"
            )
    print(f"wrote {kg_path}: {len(triples)} triples")
    print(
        f"wrote {questions_path}: {len(records)} questions ({', '.join(RECORD_KEYS)}; no gold_path)"
    )
    print(f"then, from {ROOT}:")
    for command in commands(kg_path, questions_path):
        print(f"  {command}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as exc:  # an input error is one line, `error: ...` (exit 2); a bug a traceback
        report(exc)
