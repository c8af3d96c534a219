"""Kill an ingest part-way and check that the next open repairs the knowledge base itself."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.retrieval.integrity import check, on_disk
from glassrag.settings import MAX_TOP_K

pytestmark = pytest.mark.slow

WORDS = ["heron", "otter", "lynx", "badger", "marten", "stoat", "weasel", "ferret", "mink", "sable"]


def _corpus(path: Path, n: int, tag: str) -> Path:
    # "heron" (WORDS[0]) is in one document of 50, so a whole check fits in one search.
    return write_jsonl(path, [
        {"doc_id": f"{tag}-{i}", "roles": ["public"] if i % 3 else ["staff"],
         "text": f"{WORDS[0] if i % 50 == 0 else WORDS[1 + i % 9]} {WORDS[1 + (i * 7) % 9]}"
                 f" record {tag} number {i}."}
        for i in range(n)
    ])


def _ingest(kb_dir: Path, corpus: Path, crash_at: str | None) -> subprocess.CompletedProcess:
    if not (kb_dir / "glassrag.toml").exists():
        # Small transactions so that an 1800-document ingest has several commit points.
        kb_dir.mkdir(parents=True)
        (kb_dir / "glassrag.toml").write_text("[ingest]\nbatch_size = 500\n")
    env = {**os.environ, "GLASSRAG_CRASH_AT": crash_at or ""}
    return subprocess.run(
        [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest", str(corpus), "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )


def _assert_consistent(kb_dir: Path) -> tuple[int, int]:
    with KnowledgeBase.open(kb_dir) as kb:
        assert check(kb.store, kb.lexical) == []
        status = kb.status()
        assert status["indexed_chunks"] == status["chunks"]
        assert status["applied_seq"] == status["last_seq"]
        # Search agrees with SQLite: every doc holding "heron" is found, none twice.
        staff = Principal("s", roles=["staff"])
        hits = kb.search("heron", principal=staff, top_k=MAX_TOP_K).hits
        ids = [h.chunk.chunk_id for h in hits]
        assert len(ids) == len(set(ids))
        expected = sum(
            1 for d in kb.documents() for c in kb.chunks(d.doc_id) if "heron" in c.text
        )
        assert len(ids) == expected < MAX_TOP_K  # all of them fit in one search
        return status["documents"], status["chunks"]


@pytest.mark.parametrize(
    "crash_at",
    ["ingest.before_commit:2", "ingest.after_commit:1", "ingest.after_commit:3",
     "index.before_commit", "index.after_commit"],
)
def test_killed_ingest_is_repaired_on_open(tmp_path: Path, crash_at: str) -> None:
    kb_dir = tmp_path / "kb"
    assert _ingest(kb_dir, _corpus(tmp_path / "first.jsonl", 300, "a"), None).returncode == 0
    killed = _ingest(kb_dir, _corpus(tmp_path / "second.jsonl", 1800, "b"), crash_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    documents, _ = _assert_consistent(kb_dir)
    assert documents >= 300  # nothing already stored is lost
    # And a second run completes the interrupted work.
    again = _ingest(kb_dir, tmp_path / "second.jsonl", None)
    assert again.returncode == 0, again.stderr
    assert _assert_consistent(kb_dir) == (2100, 2100)


def _kill_mid_ingest(kb_dir: Path, corpus: Path, tag: str, total: int,
                     rng: random.Random) -> None:
    """Start an ingest, wait until its first batch is committed, kill it a random moment
    later, and check that the kill landed before the ingest had finished its work."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest", str(corpus)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        while on_disk(kb_dir, f"{tag}-")[0] == 0:
            assert proc.poll() is None, "the ingest ended before committing anything"
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.2))
        assert proc.poll() is None, "the ingest finished before the kill: enlarge the corpus"
        proc.kill()
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    stored, last, applied = on_disk(kb_dir, f"{tag}-")
    # Mid-ingest: SQLite holds part of this corpus, or all of it with the index behind.
    assert 0 < stored < total or applied < last, (stored, last, applied)


def test_kill_at_random_moments(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    # Many small transactions, so that every kill lands between two of them or inside one,
    # and a corpus several times longer to ingest than the longest wait before the kill.
    (kb_dir / "glassrag.toml").write_text("[ingest]\nbatch_size = 100\n")
    rng = random.Random(14)
    total, tags = 15000, ["c", "d", "e"]
    corpora = tmp_path / "corpora"
    for tag in tags:
        _kill_mid_ingest(kb_dir, _corpus(corpora / f"{tag}.jsonl", total, tag), tag, total, rng)
        _assert_consistent(kb_dir)
    assert _ingest(kb_dir, corpora, None).returncode == 0
    assert _assert_consistent(kb_dir) == (total * len(tags), total * len(tags))


def test_a_batch_ends_at_its_character_budget(tmp_path: Path) -> None:
    """``batch_chars`` closes a transaction before ``batch_size`` documents when the batch's
    text reaches it: killed after the second commit, exactly two budgets' worth is stored."""
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    (kb_dir / "glassrag.toml").write_text("[ingest]\nbatch_size = 1000\nbatch_chars = 1000\n")
    corpus = write_jsonl(tmp_path / "c.jsonl", [
        {"doc_id": f"f-{i}", "text": f"{WORDS[i % 10]} record {i:03d} ".ljust(99, "x") + "."}
        for i in range(60)  # 100 characters each: ten documents fill a budget
    ])
    killed = _ingest(kb_dir, corpus, "ingest.after_commit:2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert on_disk(kb_dir, "f-")[0] == 20
    assert _ingest(kb_dir, corpus, None).returncode == 0
    assert on_disk(kb_dir, "f-")[0] == 60
