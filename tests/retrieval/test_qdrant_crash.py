"""Kill an ingest part-way on the Qdrant index; the next open repairs the collection."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.retrieval.integrity import check
from glassrag.retrieval.qdrant_index import QdrantIndex
from glassrag.settings import MAX_TOP_K
from qdrant_support import drop_collections, qdrant_kb_dir

pytest_plugins = ["qdrant_fixtures"]  # the qdrant_backend fixture

pytestmark = pytest.mark.slow

WORDS = ["heron", "otter", "lynx", "badger", "marten", "stoat", "weasel", "ferret", "mink", "sable"]


def _corpus(path: Path, n: int, tag: str) -> Path:
    return write_jsonl(path, [
        {"doc_id": f"{tag}-{i}", "roles": ["public"] if i % 3 else ["staff"],
         "text": f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]} record {tag} number {i}."}
        for i in range(n)
    ])


def _ingest(kb_dir: Path, corpus: Path, crash_at: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GLASSRAG_CRASH_AT": crash_at or ""}
    return subprocess.run(
        [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest", str(corpus), "--json"],
        env=env, capture_output=True, text=True, timeout=300,
    )


def _assert_consistent(kb_dir: Path) -> tuple[int, int]:
    with KnowledgeBase.open(kb_dir) as kb:
        index = kb.lexical
        assert isinstance(index, QdrantIndex)
        # Every stored chunk is a point exactly once, and nothing else is.
        assert check(kb.store, index) == []
        status = kb.status()
        assert status["indexed_chunks"] == status["chunks"] == status["index"]["points"]
        assert status["applied_seq"] == status["last_seq"]
        # One collection behind the alias: a rebuild killed before its switch left none.
        names = [c.name for c in index.call("get_collections").collections]
        assert [n for n in names if n.startswith(index.alias)] == [index.target()]
        staff = Principal("s", roles=["staff"])
        hits = kb.search("heron", principal=staff, top_k=MAX_TOP_K).hits
        ids = [h.chunk.chunk_id for h in hits]
        assert len(ids) == len(set(ids))
        expected = sum(1 for d in kb.documents() for c in kb.chunks(d.doc_id)
                       if "heron" in c.text)
        assert len(ids) == expected < MAX_TOP_K
        return status["documents"], status["chunks"]


@pytest.mark.parametrize("crash_at, first, second", [
    ("ingest.after_commit:1", 900, 600),  # the truth committed, Qdrant not yet told
    ("qdrant.after_upsert:2", 900, 600),  # part of the points written
    ("index.before_commit", 900, 600),  # every point written, the sequence not recorded
    # The corpus doubled: a rebuild into a new collection, killed before the switch.
    ("index.before_commit", 300, 900),
])
def test_killed_ingest_is_repaired_on_open(tmp_path: Path, qdrant_backend: str,
                                           crash_at: str, first: int, second: int) -> None:
    kb_dir = qdrant_kb_dir(tmp_path / "kb", qdrant_backend, "[ingest]\nbatch_size = 300\n",
                           batch_size=100)
    try:
        done = _ingest(kb_dir, _corpus(tmp_path / "first.jsonl", first, "a"), None)
        assert done.returncode == 0, done.stderr
        killed = _ingest(kb_dir, _corpus(tmp_path / "second.jsonl", second, "b"), crash_at)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        documents, _ = _assert_consistent(kb_dir)
        assert documents >= first  # nothing already stored is lost
        again = _ingest(kb_dir, tmp_path / "second.jsonl", None)
        assert again.returncode == 0, again.stderr
        assert _assert_consistent(kb_dir) == (first + second, first + second)
    finally:
        drop_collections(kb_dir)
