"""Consistency checks between SQLite (the truth) and the search index derived from it
(Tantivy, or the Qdrant collection with ``[index] backend = "qdrant"``).

Used after crashes and concurrent writers (tests/ingest/test_crash.py, benchmarks/crash_trials.py):
an empty list means the knowledge base is whole: every stored chunk is indexed exactly once,
nothing else is indexed, every document has its chunks, its text and its version's record.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import tantivy

from glassrag.retrieval.lexical import STATE_NAME, LexicalIndex
from glassrag.store.database import DB_NAME, Store

if TYPE_CHECKING:
    from glassrag.retrieval.search import SearchIndex

__all__ = ["check", "on_disk"]


def _sample(values: set[int] | list[int]) -> str:
    return ", ".join(str(v) for v in sorted(values)[:5])


def _indexed_rowids(lexical: SearchIndex) -> list[int]:
    if not isinstance(lexical, LexicalIndex):  # the Qdrant index: its point ids
        return lexical.indexed_rowids()
    searcher = lexical.searcher
    total = int(searcher.num_docs)
    if not total:
        return []
    hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits
    values = searcher.fast_field_values("rowid", [address for _, address in hits])
    return [int(v or 0) for v in values]


def _index_problems(store: Store, lexical: SearchIndex) -> list[str]:
    problems = []
    if lexical.applied_seq != store.last_seq():
        problems.append(f"index applied change {lexical.applied_seq}, "
                        f"SQLite is at {store.last_seq()}")
    stored = {int(r[0]) for r in store.db.execute("SELECT id FROM chunks")}
    counts = Counter(_indexed_rowids(lexical))
    missing, extra = stored - counts.keys(), counts.keys() - stored
    twice = [rowid for rowid, n in counts.items() if n > 1]
    if missing:
        problems.append(f"{len(missing)} stored chunks are not indexed (rowids {_sample(missing)})")
    if extra:
        problems.append(f"{len(extra)} indexed chunks are not stored (rowids {_sample(extra)})")
    if twice:
        problems.append(f"{len(twice)} chunks are indexed more than once ({_sample(twice)})")
    return problems


# (what is wrong, SQL returning the doc_ids concerned)
_DOCUMENT_CHECKS = (
    ("chunk_count differs from its stored chunks",
     "SELECT d.doc_id FROM documents d WHERE d.chunk_count !="
     " (SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id)"),
    ("no stored text for its content_hash",
     "SELECT doc_id FROM documents WHERE content_hash NOT IN"
     " (SELECT content_hash FROM document_versions)"),
    ("no history record for its current version",
     "SELECT d.doc_id FROM documents d WHERE NOT EXISTS (SELECT 1 FROM document_history h"
     " WHERE h.doc_id = d.doc_id AND h.version = d.version)"),
    ("chunks without a document",
     "SELECT DISTINCT doc_id FROM chunks WHERE doc_id NOT IN (SELECT doc_id FROM documents)"),
)


def check(store: Store, lexical: SearchIndex) -> list[str]:
    """Every inconsistency found, as one sentence each; empty when there is none."""
    problems = _index_problems(store, lexical)
    for what, sql in _DOCUMENT_CHECKS:
        doc_ids = [row[0] for row in store.db.execute(sql)]
        if doc_ids:
            problems.append(f"{len(doc_ids)} documents: {what} (e.g. {doc_ids[0]!r})")
    return problems


def on_disk(kb_dir: Path, doc_id_prefix: str = "") -> tuple[int, int, int]:
    """``(documents whose doc_id starts with the prefix, last change, change the lexical index
    applied)`` read straight from the files, without opening the knowledge base (opening
    repairs it). Zeros for what does not exist yet. For watching an ingest from outside."""
    db_path = kb_dir / DB_NAME
    if not db_path.exists():
        return 0, 0, 0  # connecting would create it
    try:
        db = sqlite3.connect(db_path, timeout=30)
        try:
            stored = db.execute("SELECT COUNT(*) FROM documents WHERE substr(doc_id, 1, ?) = ?",
                                (len(doc_id_prefix), doc_id_prefix)).fetchone()[0]
            last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:  # the first writer has not created its tables yet
        return 0, 0, 0
    try:
        state = json.loads((kb_dir / "index" / "lexical" / STATE_NAME).read_text())
    except (OSError, ValueError):
        state = {}
    return int(stored), int(last), int(state.get("applied_seq", 0))
