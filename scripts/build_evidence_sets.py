"""Build the offline WebQSP/CWQ evidence sets in the RoG schema (run once, by hand).

    python scripts/build_evidence_sets.py /path/to/shared/data

Reads the public files described in lokg/resources/data/evidence/SOURCE.txt and writes
lokg/resources/data/evidence/{webqsp,cwq}_evidence.jsonl.gz, one RoG-format row per test
question (id, question, answer, q_entity, a_entity, graph) whose graph is the question's
GPT-labelled evidence pool.  These are NOT the paper's Freebase subgraphs.  Questions
without a topic entity cannot be posed and are skipped, and null answer names (mids without
a name in the source) are removed; both counts are printed and recorded in SOURCE.txt.
"""

import gzip
import json
import sys
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parent.parent / "lokg" / "resources" / "data" / "evidence"


def _write(name: str, rows: list[dict]) -> None:
    with gzip.GzipFile(OUT / f"{name}_evidence.jsonl.gz", "wb", mtime=0) as raw:
        for row in rows:
            raw.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))


def _rows(items, pools):
    rows, skipped, nulls = [], 0, 0
    for qid, text, raw_answers, topics in items:
        if not topics:
            skipped += 1
            continue
        answers = [a for a in raw_answers if isinstance(a, str) and a]
        nulls += len(answers) != len(raw_answers)
        graph = [list(t) for t in pools.get(qid, [])]
        rows.append(
            {
                "id": qid,
                "question": text,
                "answer": answers,
                "q_entity": topics,
                "a_entity": answers,
                "graph": graph,
            }
        )
    print(f"  {nulls} questions had null answer names (removed; an empty answer list remains)")
    return rows, skipped


def main(shared: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    web = json.loads((shared / "webqsp/aog/WebQSP.json").read_text(encoding="utf-8"))
    web_pool = torch.load(shared / "webqsp/subgraphrag/gpt_triples.pth", weights_only=False)
    items = [
        (q["QuestionId"], q["RawQuestion"], list(q["answer"]), list(q["topic_entity"].values()))
        for q in web
    ]
    rows, skipped = _rows(items, web_pool)
    _write("webqsp", rows)
    print(
        f"webqsp_evidence: {len(rows)} questions, {skipped} skipped (no topic entity), "
        f"{sum(1 for r in rows if not r['graph'])} with an empty pool"
    )
    cwq = json.loads((shared / "cwq/tog/cwq.json").read_text(encoding="utf-8"))
    cwq_pool = torch.load(shared / "cwq/subgraphrag/gpt_triples.pth", weights_only=False)
    items = [
        (
            q["ID"],
            q["question"],
            [q["answer"]] if q["answer"] else [],
            list(q["topic_entity"].values()),
        )
        for q in cwq
    ]
    rows, skipped = _rows(items, cwq_pool)
    _write("cwq", rows)
    print(
        f"cwq_evidence: {len(rows)} questions, {skipped} skipped (no topic entity), "
        f"{sum(1 for r in rows if not r['graph'])} with an empty pool"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
