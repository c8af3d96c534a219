"""The role sets and the last change a search reads are kept between searches only while
the database is unchanged: a write by another KnowledgeBase on the same directory, by
another process, or through this connection is seen by the very next search."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.store.database import Store

QUERY = "quarterly refund ledger"


def _doc(path: Path, roles: list[str]) -> Path:
    return write_jsonl(path, [{"doc_id": "ledger", "title": "Ledger", "roles": roles,
                               "text": "The quarterly refund ledger is closed on Fridays."}])


def _ids(kb: KnowledgeBase, *roles: str) -> list[str]:
    found = kb.search(QUERY, principal=Principal("p", roles=list(roles)), mode="bm25")
    return [h.chunk.doc_id for h in found.hits]


def _seed(tmp_path: Path) -> Path:
    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir, create=True) as kb:
        kb.ingest(write_jsonl(tmp_path / "other.jsonl", [
            {"doc_id": "other", "title": "Other", "roles": ["public"],
             "text": "Nothing about money here."}]))
    return kb_dir


def test_a_new_role_set_from_another_knowledge_base_is_seen(tmp_path: Path) -> None:
    kb_dir = _seed(tmp_path)
    with KnowledgeBase.open(kb_dir) as reader, KnowledgeBase.open(kb_dir) as writer:
        assert _ids(reader, "auditor") == []  # the role sets and last change are now kept
        writer.ingest(_doc(tmp_path / "ledger.jsonl", ["auditor"]))
        assert _ids(reader, "auditor") == ["ledger"]
        assert _ids(reader) == []


def test_a_role_change_by_another_process_is_seen(tmp_path: Path) -> None:
    kb_dir = _seed(tmp_path)
    source = _doc(tmp_path / "ledger.jsonl", ["auditor"])
    with KnowledgeBase.open(kb_dir) as reader:
        assert _ids(reader, "auditor") == []
        for roles in (["auditor"], ["treasury"]):
            _doc(source, roles)
            done = subprocess.run(
                [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest", str(source)],
                capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            assert _ids(reader, roles[0]) == ["ledger"]
        # Moved from auditor to treasury: the auditor no longer reads it.
        assert _ids(reader, "auditor") == []
        [hit] = reader.search(QUERY, principal=Principal("p", roles=["treasury"])).hits
        assert hit.chunk.roles == ("treasury",)


def test_writes_through_the_same_connection_are_seen(tmp_path: Path) -> None:
    kb_dir = _seed(tmp_path)
    with KnowledgeBase.open(kb_dir) as kb:
        store: Store = kb.store
        before_sets, before_seq = store.rolesets(), store.last_seq()
        kb.ingest(_doc(tmp_path / "ledger.jsonl", ["auditor"]))
        assert store.last_seq() == before_seq + 1
        assert sorted(store.rolesets().values()) == sorted(
            [*before_sets.values(), ("auditor",)])


def test_a_rolled_back_write_is_not_kept(tmp_path: Path) -> None:
    kb_dir = _seed(tmp_path)
    with KnowledgeBase.open(kb_dir) as kb:
        store = kb.store
        before_sets, before_seq = store.rolesets(), store.last_seq()
        store.begin()
        store.db.execute("INSERT INTO rolesets(roles) VALUES ('[\"ghost\"]')")
        store.db.execute("INSERT INTO changes(doc_id, op, recorded_at) VALUES ('g', 'delete', 'x')")
        assert ("ghost",) in store.rolesets().values()  # read inside the transaction
        store.rollback()
        assert store.rolesets() == before_sets
        assert store.last_seq() == before_seq
