"""The lexical index on its own (retrieval/lexical.py), fed from a real store: catching up
applies exactly the change log, a rebuild gives the same index, the role filter is exact
and applied before top-k, blocked matches are counted, deletes and updates take effect."""

from __future__ import annotations

from pathlib import Path

from conftest import write_jsonl
from glassrag import KnowledgeBase
from glassrag.records import Principal
from glassrag.retrieval.lexical import LexicalIndex, restricted_terms
from glassrag.retrieval.search import readable_sets
from glassrag.text.analysis import analyze

# Many hidden chunks that match better than the one public chunk.
DOCS = [{"doc_id": f"hidden-{n}", "title": "Ledger", "roles": ["finance"],
         "text": "ledger ledger ledger close ledger"} for n in range(30)] + [
    {"doc_id": "public", "title": "Notes", "roles": ["public"],
     "text": "The ledger closes on Fridays."}]


def _kb(tmp_path: Path) -> KnowledgeBase:
    kb = KnowledgeBase.open(tmp_path / "kb")
    kb.ingest([write_jsonl(tmp_path / "docs.jsonl", DOCS)])
    return kb


def _ids(kb: KnowledgeBase, index: LexicalIndex, query: str, principal: Principal,
         limit: int = 5) -> tuple[list[str], int]:
    readable = None if principal.admin else readable_sets(kb.store, principal)
    hits, blocked, _ = index.search(analyze(query), readable, limit)
    chunks = kb.store.chunks_by_rowid([h.rowid for h in hits])
    return [chunks[h.rowid].doc_id for h in hits], blocked


def test_catch_up_applies_the_change_log_and_records_its_position(tmp_path: Path) -> None:
    with _kb(tmp_path) as kb:
        fresh = LexicalIndex(tmp_path / "other-index")
        assert fresh.applied_seq == 0 and fresh.num_docs() == 0
        assert fresh.catch_up(kb.store) == len(DOCS)
        assert fresh.applied_seq == kb.store.last_seq()
        assert fresh.num_docs() == kb.lexical.num_docs() == len(DOCS)
        assert fresh.catch_up(kb.store) == 0  # nothing new
        # The position survives reopening.
        assert LexicalIndex(tmp_path / "other-index").applied_seq == kb.store.last_seq()


def test_the_role_filter_is_applied_before_top_k(tmp_path: Path) -> None:
    with _kb(tmp_path) as kb:
        ids, blocked = _ids(kb, kb.lexical, "ledger", Principal("p"), limit=1)
        assert ids == ["public"] and blocked == 30
        ids, blocked = _ids(kb, kb.lexical, "ledger", Principal("f", roles=["finance"]),
                            limit=40)
        assert len(ids) == 31 and blocked == 0
        admin, _ = _ids(kb, kb.lexical, "ledger", Principal("root", admin=True), limit=3)
        assert all(doc.startswith("hidden-") for doc in admin)  # they score higher


def test_a_rebuild_equals_catching_up(tmp_path: Path) -> None:
    with _kb(tmp_path) as kb:
        before = _ids(kb, kb.lexical, "ledger fridays", Principal("p"))
        kb.lexical.rebuild(kb.store)
        assert _ids(kb, kb.lexical, "ledger fridays", Principal("p")) == before
        assert kb.lexical.num_docs() == len(DOCS)


def test_deletes_and_updates_reach_the_index(tmp_path: Path) -> None:
    with _kb(tmp_path) as kb:
        kb.delete("hidden-0")
        assert kb.lexical.num_docs() == len(DOCS) - 1
        assert _ids(kb, kb.lexical, "ledger", Principal("p"))[1] == 29
        changed = [*DOCS[1:30], {**DOCS[30], "text": "The ledger closes on Thursdays."}]
        kb.ingest([write_jsonl(tmp_path / "docs.jsonl", changed)])
        assert _ids(kb, kb.lexical, "thursdays", Principal("p"))[0] == ["public"]
        assert _ids(kb, kb.lexical, "fridays", Principal("p"))[0] == []


def test_restricted_terms_suffix_every_word_with_the_role_set() -> None:
    assert restricted_terms(["ledger", "close"], 3) == "ledger\x1e3 close\x1e3"
    assert restricted_terms(["x"], 12) == "x\x1e12"
    assert restricted_terms([], 3) == ""
