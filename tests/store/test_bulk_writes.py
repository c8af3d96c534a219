"""Ingest's bulk-write mode: rarer WAL checkpoints by the writer, restored afterwards, and
each commit checkpointed by a thread of its own; role sets numbered in the order documents
first name them, whatever the process's string hashing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from glassrag.store.database import _BULK_CACHE_KIB, _BULK_CHECKPOINT_PAGES, Store


def test_bulk_writes_raise_the_checkpoint_size_and_restore_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "glassrag.db")

    def sizes() -> tuple[int, int]:
        return (store.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0],
                store.db.execute("PRAGMA cache_size").fetchone()[0])

    try:
        before = sizes()
        with store.bulk_writes():
            inside = sizes()
        after = sizes()
    finally:
        store.close()
    assert (before, inside, after) == (
        (1000, -2000), (_BULK_CHECKPOINT_PAGES, -_BULK_CACHE_KIB), (1000, -2000))


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "glassrag-checkpoints"]


def test_a_bulk_commit_is_checkpointed_by_a_thread_that_stops_after(tmp_path: Path) -> None:
    store = Store(tmp_path / "glassrag.db")
    db_file = tmp_path / "glassrag.db"
    try:
        with store.bulk_writes():
            assert len(_checkpoint_threads()) == 1
            before = db_file.stat().st_size
            store.begin()
            store.db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                                 [(f"k{n}", "x" * 1000) for n in range(2000)])
            store.commit()  # below the writer's own checkpoint size: only the thread copies it
            deadline = time.monotonic() + 10
            while db_file.stat().st_size == before and time.monotonic() < deadline:
                time.sleep(0.01)
            assert db_file.stat().st_size > before
        assert _checkpoint_threads() == []
        assert store.db.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] \
            == 2000
    finally:
        store.close()


_NUMBERING = """
import json, sys
from glassrag import KnowledgeBase
with KnowledgeBase.open(sys.argv[1], create=True) as kb:
    report = kb.ingest([sys.argv[2]])
    assert not report.failed, report.failed
    rows = kb.store.db.execute("SELECT id, roles FROM rolesets ORDER BY id")
    print(json.dumps([json.loads(r["roles"]) for r in rows]))
"""


def test_role_sets_are_numbered_in_first_seen_order(tmp_path: Path) -> None:
    order = [["zeta"], ["alpha"], ["mid"], ["beta"], ["omega"], ["kappa"]]
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(
        json.dumps({"doc_id": f"d{n}", "roles": roles, "text": f"text number {n}"}) + "\n"
        for n, roles in enumerate(order)))
    for seed in range(4):  # set order follows string hashes, which vary with the seed
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        out = subprocess.run(
            [sys.executable, "-c", _NUMBERING, str(tmp_path / f"kb{seed}"), str(corpus)],
            env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == order, f"PYTHONHASHSEED={seed}"
