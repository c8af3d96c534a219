"""The change follower: a knowledge base on a shared PostgreSQL store applies what another
folder (another server or machine) commits, by notification or by polling, vectors
included, and keeps following when its connections to the database are cut."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import postgres_kb_dir, write_jsonl
from glassrag import KnowledgeBase
from glassrag.follower import ChangeFollower
from glassrag.settings import StoreSettings
from glassrag.store.postgres import PostgresConnection


def _wait(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


@pytest.fixture
def pair(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[KnowledgeBase, KnowledgeBase]]:
    """Two knowledge-base folders on one database: a writer and a follower."""
    writer = KnowledgeBase.open(postgres_kb_dir(tmp_path / "writer", pg_dsn))
    follower = KnowledgeBase.open(postgres_kb_dir(tmp_path / "follower", pg_dsn,
                                                  '\n[dense]\nembedder = "hash:32"\n'))
    yield writer, follower
    follower.close()
    writer.close()


def _docs(tmp_path: Path, tag: str, n: int = 5) -> Path:
    return write_jsonl(tmp_path / f"{tag}.jsonl", [
        {"doc_id": f"{tag}-{i}", "text": f"the {tag} heron number {i}"} for i in range(n)])


@pytest.mark.parametrize("follow", ["notify", "poll"])
def test_changes_from_another_folder_are_applied(
        pair: tuple[KnowledgeBase, KnowledgeBase], tmp_path: Path, follow: str) -> None:
    writer, reader = pair
    settings = StoreSettings(backend="postgres", follow=follow, poll_interval=0.05)
    follower = ChangeFollower(reader, settings).start()
    try:
        writer.ingest([_docs(tmp_path, "first")], embedder="hash:32")
        last = writer.store.last_seq()
        # Applied in the background: nothing here asks the follower's knowledge base.
        _wait(lambda: reader.lexical.applied_seq == last, "the lexical index caught up")
        dense = reader.dense()
        assert dense is not None
        _wait(lambda: dense._index is not None and dense._index.applied_seq == last,
              "the vector index caught up")
        assert follower.applied >= 1
        for mode in ("bm25", "dense"):
            hits = reader.search("first heron", mode=mode, top_k=10).hits
            assert {h.chunk.doc_id for h in hits} == {f"first-{i}" for i in range(5)}, mode
    finally:
        follower.stop()


def test_following_survives_lost_connections(pair: tuple[KnowledgeBase, KnowledgeBase],
                                             tmp_path: Path, pg_dsn: str) -> None:
    writer, reader = pair
    follower = ChangeFollower(reader, StoreSettings(backend="postgres", poll_interval=0.05))
    follower.start()
    admin = PostgresConnection(pg_dsn)
    try:
        writer.ingest([_docs(tmp_path, "before")])
        _wait(lambda: reader.lexical.applied_seq == writer.store.last_seq(), "caught up")
        # Cut every connection of the follower's side: its store's and its listener's.
        cut = admin.execute(
            "SELECT COUNT(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE"
            " pid <> pg_backend_pid() AND application_name IN (?, ?) AND datname ="
            " current_database()", ("glassrag", "glassrag change follower")).fetchone()["n"]
        assert cut >= 2
        writer.ingest([_docs(tmp_path, "zulu")])  # the writer reconnects too
        _wait(lambda: reader.lexical.applied_seq == writer.store.last_seq(), "caught up again")
        assert len(reader.search("zulu", top_k=10).hits) == 5
    finally:
        follower.stop()
        admin.close()
