"""How the docs chunker's size was chosen: chunk sizes against gold evidence spans.

For each corpus of a docs-qa set (``questions.jsonl`` + ``corpus/<name>/``, the layout of
``docs-qa-dev``) and each ``docs_max_chars``, ingest the corpus into a fresh knowledge base
(default settings otherwise) and report, over the answerable questions:

* ``inside``: a gold evidence span lies wholly inside one chunk of its file;
* ``top5``: a bm25 top-5 hit of the same file overlaps a gold span.

Usage::

    python benchmarks/bench_docs_chunking.py DOCS_QA_DIR [--sizes 400,600,800,1000,1200,1500]
        [--chunker structure] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if (HERE.parent / "src" / "glassrag").is_dir():
    sys.path.insert(0, str(HERE.parent / "src"))  # run from a checkout without installing

from glassrag import KnowledgeBase  # noqa: E402


def _same_file(source: str, path: str) -> bool:
    return source == path or source.endswith("/" + path)


def measure(root: Path, corpus: str, questions: list[dict[str, Any]], size: int,
            chunker: str | None) -> dict[str, Any]:
    """``inside`` and ``top5`` counts for one corpus at one size."""
    with tempfile.TemporaryDirectory() as tmp:
        kb_dir = Path(tmp) / "kb"
        KnowledgeBase.init(kb_dir).close()
        config = kb_dir / "glassrag.toml"
        config.write_text(config.read_text(encoding="utf-8").replace(
            "docs_max_chars = 1000", f"docs_max_chars = {size}"), encoding="utf-8")
        with KnowledgeBase.open(kb_dir) as kb:
            report = kb.ingest([root / "corpus" / corpus], chunker=chunker)
            ranges: dict[str, list[tuple[int, int]]] = {}
            for doc in kb.documents():
                ranges[doc.source] = [(c.line_start, c.line_end) for c in kb.chunks(doc.doc_id)]
            inside = top5 = total = 0
            for q in questions:
                total += 1
                spans = q["evidence"]
                inside += any(a <= ev["line_start"] and ev["line_end"] <= b
                              for ev in spans for a, b in ranges.get(ev["path"], []))
                hits = kb.search(q["question"], top_k=5).hits
                top5 += any(_same_file(h.chunk.source, ev["path"])
                            and h.chunk.line_start <= ev["line_end"]
                            and h.chunk.line_end >= ev["line_start"]
                            for h in hits for ev in spans)
    return {"corpus": corpus, "size": size, "questions": total, "inside": inside,
            "top5": top5, "chunks": report.chunks, "failed": len(report.failed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a docs-qa folder (questions.jsonl, corpus/)")
    parser.add_argument("--sizes", default="400,600,800,1000,1200,1500")
    parser.add_argument("--chunker", default=None,
                        help="force one chunker (default: each input kind's own)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    questions = [json.loads(line) for line in
                 (args.root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    corpora = sorted({q["corpus"] for q in questions})
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        for corpus in corpora:
            answerable = [q for q in questions if q["corpus"] == corpus and q["answerable"]]
            rows.append(measure(args.root, corpus, answerable, size, args.chunker))
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| size | corpus | inside one chunk | gold in top 5 | chunks | failed files |")
    print("|---|---|---|---|---|---|")
    for size in sorted({r["size"] for r in rows}):
        group = [r for r in rows if r["size"] == size]
        for r in group:
            print(f"| {size} | {r['corpus']} | {r['inside']}/{r['questions']} | "
                  f"{r['top5']}/{r['questions']} | {r['chunks']} | {r['failed']} |")
        n = sum(r["questions"] for r in group)
        print(f"| {size} | all | {sum(r['inside'] for r in group) / n:.3f} | "
              f"{sum(r['top5'] for r in group) / n:.3f} | {sum(r['chunks'] for r in group)} | "
              f"{sum(r['failed'] for r in group)} |")


if __name__ == "__main__":
    main()
