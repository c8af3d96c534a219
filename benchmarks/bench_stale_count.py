"""The ingest's count of stale answers (``IngestReport.stale_answers``) with many traces.

An ingest counts the past answers whose citations it changed. This script builds a small
knowledge base, records real answered traces by asking, copies them (rows of ``traces``
and, when the code has it, of the ``trace_citations`` index) until ``--traces`` answered
traces exist, then edits one document and times the count after re-ingest, ``--runs``
times. Copies keep the real bodies (several KB each: evidence, candidates, timings), so
reading every trace costs what it would on a real knowledge base.

    python benchmarks/bench_stale_count.py --traces 100000
    PYTHONPATH=/other/checkout/src python benchmarks/bench_stale_count.py   # another code
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from glassrag.audit.stale import count_stale
from glassrag.kb import KnowledgeBase

DOCS = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        docs = root / "docs"
        docs.mkdir()
        for i in range(DOCS):
            (docs / f"part{i}.md").write_text(
                f"# Part {i}\n\nPart number {i} has a blue handle and weighs {i + 3} grams.\n")
        with KnowledgeBase.open(root / "kb") as kb:
            kb.ingest([docs])
            for i in range(300):
                assert kb.ask(f"How much does part number {i % DOCS} weigh?").status == "answered"
            indexed = _copy_traces(kb, args.traces)
            (docs / "part3.md").write_text("# Part 3\n\nPart number 3 is now green.\n")
            stale = kb.ingest([docs]).stale_answers
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                assert count_stale(kb.store, {"part3.md"}) == stale
                times.append((time.perf_counter() - started) * 1000)
    print(json.dumps({"traces": args.traces, "citation_index": indexed,
                      "stale_answers": stale, "count_ms_median": round(statistics.median(times), 1),
                      "count_ms": [round(t, 1) for t in times]}))


def _copy_traces(kb: KnowledgeBase, target: int) -> bool:
    db = kb.store.db
    indexed = db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'trace_citations'"
                         ).fetchone()[0] == 1
    rows = db.execute("SELECT trace_id, created_at, principal_id, status, question, body"
                      " FROM traces WHERE status = 'answered'").fetchall()
    cited = {}
    if indexed:
        for doc_id, trace_id in db.execute("SELECT doc_id, trace_id FROM trace_citations"):
            cited.setdefault(trace_id, []).append(doc_id)
    db.begin()
    n = len(rows)
    while n < target:
        for row in rows:
            copy = f"{row[0]}_{n}"
            db.execute("INSERT INTO traces VALUES (?, ?, ?, ?, ?, ?)", (copy, *row[1:]))
            for doc_id in cited.get(row[0], ()):
                db.execute("INSERT INTO trace_citations VALUES (?, ?)", (doc_id, copy))
            n += 1
    db.commit()
    return indexed


if __name__ == "__main__":
    main()
