"""Build tests/fixtures/rog_mini/{train,val,test}.jsonl: a tiny dataset in the RoG schema.

RoG (rmanluo/RoG-webqsp, rmanluo/RoG-cwq) rows have the fields id, question, answer,
q_entity, a_entity and graph (a list of [head, relation, tail] strings).  No RoG data is
available offline, so the fixture takes real PathQuestion-Large questions (PQL-2H, Zhou et
al. 2018, bundled in lokg/resources/data/pathquestion) and gives each one the 2-hop
out-neighbourhood of its topic entity in PQL2-KB as its subgraph, which is what a RoG row
holds.  Usage: python scripts/make_rog_fixture.py
"""

import json
from pathlib import Path

from lokg.data.sources import resource_path
from lokg.kg.io import read_pathquestion, read_triples

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "rog_mini"
SPLITS = {"train": range(0, 120, 20), "val": range(400, 440, 20), "test": range(800, 860, 20)}


def main() -> None:
    root = resource_path("data", "pathquestion")
    triples, _, _ = read_triples(root / "PQL2-KB.txt", fmt="tsv", header="none")
    out_edges: dict[str, list] = {}
    for t in triples:
        out_edges.setdefault(t[0], []).append(list(t))
    questions, _ = read_pathquestion(root / "PQL-2H.txt", prefix="pql2h")
    OUT.mkdir(parents=True, exist_ok=True)
    for split, lines in SPLITS.items():
        with open(OUT / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            for i in lines:
                q = questions[i]
                topic = q.topic_entities[0]
                graph, frontier = [], [topic]
                for _ in range(2):
                    nxt = []
                    for e in frontier:
                        for t in out_edges.get(e, [])[:8]:
                            if t not in graph:
                                graph.append(t)
                                nxt.append(t[2])
                    frontier = nxt
                row = {
                    "id": f"rogmini-{split}-{i}",
                    "question": q.text,
                    "answer": list(q.answers),
                    "q_entity": [topic],
                    "a_entity": list(q.answers),
                    "graph": graph,
                }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
