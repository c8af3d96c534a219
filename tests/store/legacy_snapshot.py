"""Everything a knowledge base reads back, as JSON-able data, for comparing two versions of
glassrag on the same database (tests/store/test_legacy_kb.py).

``python tests/store/legacy_snapshot.py OUT_DIR``, run with the glassrag from before named
migrations on ``PYTHONPATH``, wrote ``tests/data/legacy_kb``: the database as SQL (with its
``user_version``) and this snapshot of it. Only APIs both versions have are used.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

QUERIES = ["How many days do learners have for refunds?", "退票手续费", "snapshot interval",
           "zebracanary salary"]
SECRET = [
    {"doc_id": "salaries", "title": "Salary bands", "source": "hr/salaries.md",
     "roles": ["hr"], "text": "Salary bands zebracanary are reviewed every March."},
    {"doc_id": "gone", "title": "Retired page", "source": "old.md", "roles": ["public"],
     "text": "This page is deleted after being ingested twice."},
]


def snapshot(kb: Any, token: str, trace_id: str) -> dict[str, Any]:
    from glassrag import Principal
    from glassrag.dense.embeddings import recorded_model
    from glassrag.store import traces
    from glassrag.store.bearer_tokens import list_tokens, principal_for

    store = kb.store
    hr = Principal("h", roles=["hr"])
    docs = store.documents()
    return {
        "documents": [dataclasses.asdict(d) for d in docs],
        "chunks": {d.doc_id: [dataclasses.asdict(c) for c in store.chunks_of(d.doc_id)]
                   for d in docs},
        "history": {d: store.history(d) for d in [*(d.doc_id for d in docs), "gone"]},
        "retired": store.retired_versions(),
        "texts": {d.content_hash: store.version_text(d.content_hash) for d in docs},
        "rolesets": sorted(list(r) for r in store.rolesets().values()),
        "fingerprints": {k: list(v) for k, v in store.fingerprints().items()},
        "counts": store.counts(),
        "last_seq": store.last_seq(),
        "search": {q: [[h.chunk.chunk_id, round(h.score, 4)]
                       for h in kb.search(q, principal=hr, top_k=5).hits] for q in QUERIES},
        "token": dataclasses.asdict(principal_for(store, token)),
        "tokens": [{k: v for k, v in t.items() if k != "created_at"} for t in list_tokens(store)],
        "trace": traces.load(store, trace_id, None)["question"],
        "model": list(recorded_model(store.db) or ()),
        "vectors": store.db.execute("SELECT COUNT(*), SUM(length(vector)) FROM embeddings"
                                    ).fetchone()[:],
    }


def build(out: Path) -> None:
    from glassrag import KnowledgeBase, Principal
    from glassrag.eval.examples import examples_dir
    from glassrag.store.bearer_tokens import create_token

    root = Path(tempfile.mkdtemp())
    secrets = root / "secrets.jsonl"
    secrets.write_text("".join(json.dumps(r) + "\n" for r in SECRET), encoding="utf-8")
    with KnowledgeBase.open(root / "kb") as kb:
        kb.ingest([examples_dir(), secrets], exclude=["**/*.yaml", "README.md"],
                  embedder="hash:32")
        secrets.write_text(json.dumps({**SECRET[1], "text": "Changed once."}) + "\n")
        kb.ingest([secrets])
        kb.delete("gone")
        with kb.lock:
            token = create_token(kb.store, "hr-reader", ["hr"])
        trace_id = kb.ask("How many days do learners have for refunds?",
                          principal=Principal("h", roles=["hr"])).trace_id
        kb.reindex()
        data = snapshot(kb, token, trace_id)
    db = sqlite3.connect(root / "kb" / "glassrag.db")
    version = db.execute("PRAGMA user_version").fetchone()[0]
    dump = "\n".join(db.iterdump())
    out.mkdir(parents=True, exist_ok=True)
    (out / "glassrag.sql").write_text(f"PRAGMA user_version={version};\n{dump}\n",
                                      encoding="utf-8")
    (out / "snapshot.json").write_text(
        json.dumps({"token": token, "trace_id": trace_id, "snapshot": data},
                   ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
