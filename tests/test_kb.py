"""The knowledge base end to end: real SQLite, real Tantivy, real files in temp dirs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import EXAMPLES, init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.errors import EmptyQuery, InvalidInput, NotFound, SchemaVersionError

PUBLIC = Principal("visitor")
EMPLOYEE = Principal("erin", roles=["employee"])


def test_workshop_ingest_and_search(kb: KnowledgeBase) -> None:
    report = kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    assert (report.added, report.chunks, report.failed) == (4, 4, [])
    result = kb.search("How many days do learners have for refunds?", principal=PUBLIC)
    assert result.hits[0].chunk.chunk_id == "refund-policy#1"
    assert result.hits[0].chunk.source == "handbook.md#refund"
    assert "refund" in result.hits[0].matched_terms
    assert result.hits[0].scores["bm25"] == result.hits[0].score > 0


def test_role_filter_runs_inside_the_search(kb: KnowledgeBase) -> None:
    kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    question = "What is the private beta roadmap for Q4?"
    as_public = kb.search(question, principal=PUBLIC)
    assert as_public.hits == []
    assert as_public.blocked_count == 1
    as_employee = kb.search(question, principal=EMPLOYEE)
    assert [h.chunk.doc_id for h in as_employee.hits] == ["private-roadmap"]
    assert as_employee.blocked_count == 0


def test_filter_is_applied_before_top_k(kb: KnowledgeBase, tmp_path: Path) -> None:
    # Twenty secret chunks outrank the one public chunk; a post-filter with top_k=5 would
    # return nothing. Filtering inside the search must still find the public chunk.
    # 120 secrets also overflow the unfiltered first pass (4 x top_k, at least 40), so the
    # filtered second pass is exercised too.
    records = [
        {"doc_id": f"secret-{i}", "text": "zebra zebra zebra migration notes", "roles": ["hr"]}
        for i in range(120)
    ]
    records.append({"doc_id": "open", "text": "a zebra was seen once", "roles": ["public"]})
    records.append({"doc_id": "open2", "text": "zebra zebra crossing", "roles": ["public"]})
    kb.ingest([write_jsonl(tmp_path / "z.jsonl", records)])
    result = kb.search("zebra", principal=PUBLIC, top_k=5)
    assert [h.chunk.doc_id for h in result.hits] == ["open2", "open"]
    assert result.blocked_count == 120
    hr = kb.search("zebra", principal=Principal("h", roles=["hr"]), top_k=200)
    assert len(hr.hits) == 122 and hr.blocked_count == 0
    scores = [h.score for h in hr.hits]
    assert scores == sorted(scores, reverse=True)


def test_public_principal_always_has_public_role() -> None:
    assert Principal("x").roles == ("public",)
    assert Principal("x", roles=["employee", " employee "]).roles == ("employee", "public")


def test_empty_and_stop_word_queries_are_errors(kb: KnowledgeBase) -> None:
    kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    with pytest.raises(EmptyQuery):
        kb.search("   ")
    with pytest.raises(EmptyQuery, match="stop words"):
        kb.search("what is the")
    with pytest.raises(InvalidInput):
        kb.search("refund", mode="nonsense")


def test_incremental_reingest(kb: KnowledgeBase, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("a", "b", "c"):
        (notes / f"{name}.md").write_text(f"# Note {name}\n\nalpha {name} text\n\nbeta {name}\n")
    first = kb.ingest([notes])
    assert (first.added, first.updated, first.unchanged) == (3, 0, 0)
    seq = kb.store.last_seq()

    again = kb.ingest([notes])
    assert (again.added, again.updated, again.unchanged, again.chunks) == (0, 0, 3, 0)
    assert kb.store.last_seq() == seq, "an unchanged re-ingest must log (and index) nothing"

    before = {c.chunk_id: c for d in ("a.md", "c.md") for c in kb.chunks(d)}
    (notes / "b.md").write_text("# Note b\n\nalpha b rewritten with gamma\n")
    changed = kb.ingest([notes])
    assert (changed.updated, changed.unchanged) == (1, 2)
    assert kb.store.last_seq() == seq + 1
    after = {c.chunk_id: c for d in ("a.md", "c.md") for c in kb.chunks(d)}
    assert before == after
    assert kb.document("b.md").version == 2
    # The docs chunker keeps a heading with its section's text.
    assert [c.text for c in kb.chunks("b.md")] == ["# Note b\n\nalpha b rewritten with gamma"]
    assert kb.search("gamma").hits[0].chunk.doc_id == "b.md"
    assert kb.search("beta", top_k=10).hits and all(
        h.chunk.doc_id != "b.md" for h in kb.search("beta").hits
    )

    (notes / "c.md").unlink()
    kept = kb.ingest([notes])
    assert kept.deleted == 0 and kb.document("c.md")
    pruned = kb.ingest([notes], prune=True)
    assert pruned.deleted == 1
    with pytest.raises(NotFound):
        kb.document("c.md")
    assert all(h.chunk.doc_id != "c.md" for h in kb.search("alpha").hits)
    assert kb.status()["indexed_chunks"] == kb.status()["chunks"]


def test_failed_change_keeps_the_stored_version(kb: KnowledgeBase, tmp_path: Path) -> None:
    note = tmp_path / "n.md"
    note.write_text("short line about walruses\n")
    kb.ingest([note], chunker="structure")
    note.write_text("walrus " * 200 + "\n")  # one line over structure's 600-character limit
    report = kb.ingest([note], chunker="structure")
    assert len(report.failed) == 1 and "line 1" in report.failed[0].error
    assert kb.search("walruses").hits[0].chunk.text == "short line about walruses"


def test_bad_files_do_not_stop_the_batch(kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nplatypus facts\n")
    (folder / "empty.txt").write_text("")
    (folder / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (folder / "report.pdf").write_bytes(b"%PDF-1.4\n")
    (folder / "records.jsonl").write_text(
        '{"doc_id": "r1", "text": "platypus eggs"}\n{not json}\n{"doc_id": "r3"}\n'
    )
    report = kb.ingest([folder])
    assert report.added == 2  # good.md and r1
    failed = {Path(f.path.split(":")[0]).name for f in report.failed}
    assert failed == {"empty.txt", "blob.txt", "report.pdf", "records.jsonl"}
    assert any(f.path.endswith(":2") for f in report.failed)
    assert any(f.path.endswith(":3") for f in report.failed)
    assert {h.chunk.doc_id for h in kb.search("platypus").hits} == {"good.md", "r1"}


def test_roles_from_front_matter_rules_option_and_default(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    kb = KnowledgeBase.init(kb_dir)
    (kb_dir / "roles.toml").write_text('[[rule]]\nglob = "docs/hr/**"\nroles = ["hr"]\n')
    docs = tmp_path / "docs"
    (docs / "hr").mkdir(parents=True)
    (docs / "hr" / "pay.md").write_text("salary bands for ocelots\n")
    (docs / "fm.md").write_text("---\nroles: [finance]\n---\nocelot budget\n")
    (docs / "plain.md").write_text("ocelot care guide\n")
    kb.ingest([docs])
    roles = {d.doc_id: d.roles for d in kb.documents()}
    assert roles == {"hr/pay.md": ("hr",), "fm.md": ("finance",), "plain.md": ("public",)}
    assert {h.chunk.doc_id for h in kb.search("ocelot").hits} == {"plain.md"}
    kb.ingest([docs], roles=["staff"])  # --roles only applies where nothing else does
    assert kb.document("plain.md").roles == ("staff",)
    assert kb.document("fm.md").roles == ("finance",)
    kb.close()


def test_init_writes_the_default_role_explicitly(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    text = (tmp_path / "kb" / "glassrag.toml").read_text()
    assert 'default_roles = ["public"]' in text
    assert 'disclosure = "disclose"' in text
    kb.close()


def test_default_role_from_settings(tmp_path: Path) -> None:
    kb_dir = init_kb_with(tmp_path / "kb", 'default_roles = ["public"]',
                          'default_roles = ["internal"]')
    note = tmp_path / "n.md"
    note.write_text("capybara schedule\n")
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([note])
        assert kb.document("n.md").roles == ("internal",)
        assert kb.search("capybara").hits == []
        assert kb.search("capybara", principal=Principal("i", roles=["internal"])).hits


def test_conceal_policy_hides_blocked_counts(tmp_path: Path) -> None:
    kb_dir = init_kb_with(tmp_path / "kb", 'disclosure = "disclose"', 'disclosure = "conceal"')
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
        result = kb.search("private beta roadmap", principal=PUBLIC)
        assert result.hits == [] and result.blocked_count == 0


def test_bad_settings_name_the_field(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    (kb_dir / "glassrag.toml").write_text('[permissions]\ndisclosure = "shout"\n')
    with pytest.raises(InvalidInput, match="permissions.disclosure"):
        KnowledgeBase.open(kb_dir)


def test_delete_and_not_found(kb: KnowledgeBase) -> None:
    kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    kb.delete("office-hours")
    assert "office-hours" not in {d.doc_id for d in kb.documents()}
    with pytest.raises(NotFound):
        kb.delete("office-hours")
    assert kb.status()["indexed_chunks"] == 3


def test_unreadable_document_looks_missing(kb: KnowledgeBase) -> None:
    kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    with pytest.raises(NotFound) as missing:
        kb.document("no-such-doc", principal=PUBLIC)
    with pytest.raises(NotFound) as hidden:
        kb.document("private-roadmap", principal=PUBLIC)
    assert str(missing.value).replace("no-such-doc", "X") == str(hidden.value).replace(
        "private-roadmap", "X"
    )


def test_index_is_rebuilt_when_deleted(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        kb.ingest([EXAMPLES / "workshop" / "documents.jsonl"])
    import shutil

    shutil.rmtree(kb_dir / "index")
    with KnowledgeBase.open(kb_dir) as kb:
        assert kb.status()["indexed_chunks"] == 4
        assert kb.search("refund").hits
        assert kb.reindex() == 4


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    KnowledgeBase.open(kb_dir).close()
    db = sqlite3.connect(kb_dir / "glassrag.db")
    db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(SchemaVersionError, match="99"):
        KnowledgeBase.open(kb_dir)


def test_open_without_create_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="glassrag init"):
        KnowledgeBase.open(tmp_path / "nowhere", create=False)


def test_document_versions_are_kept(kb: KnowledgeBase, tmp_path: Path) -> None:
    note = tmp_path / "v.md"
    note.write_text("first wording of the tapir rule\n")
    kb.ingest([note])
    old_hash = kb.document("v.md").content_hash
    note.write_text("second wording of the tapir rule\n")
    kb.ingest([note])
    assert kb.document_text(old_hash) == "first wording of the tapir rule\n"
    assert [h["version"] for h in kb.store.history("v.md")] == [1, 2]


def test_prune_spares_records_of_a_file_with_a_broken_line(kb: KnowledgeBase,
                                                           tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text('{"doc_id": "one", "text": "llama one"}\n'
                       '{"doc_id": "two", "text": "llama two"}\n')
    kb.ingest([records])
    records.write_text('{"doc_id": "one", "text": "llama one"}\n{"doc_id": "two", "te\n')
    report = kb.ingest([records], prune=True)
    assert report.deleted == 0 and len(report.failed) == 1
    records.write_text('{"doc_id": "one", "text": "llama one"}\n')
    assert kb.ingest([records], prune=True).deleted == 1
    assert [d.doc_id for d in kb.documents()] == ["one"]


def test_unchanged_files_are_not_even_parsed(kb: KnowledgeBase, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import glassrag.ingest.run as ingest_module

    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.md").write_text("aardvark\n")
    write_jsonl(folder / "r.jsonl", [{"doc_id": "r1", "text": "red"}, {"doc_id": "r2",
                                                                         "text": "blue"}])
    kb.ingest([folder])
    reads: list[str] = []
    real = ingest_module.read_file
    monkeypatch.setattr(ingest_module, "read_file",
                        lambda path, **kw: reads.append(path.name) or real(path, **kw))
    report = kb.ingest([folder])
    assert (report.unchanged, reads) == (3, [])
    kb.delete("r2")  # a removed document brings its file back into play
    report = kb.ingest([folder])
    assert (report.added, report.unchanged, reads) == (1, 2, ["r.jsonl"])
    kb.ingest([folder], roles=["staff"])  # different options: files are parsed again
    assert reads.count("a.md") == 1 and kb.document("a.md").roles == ("staff",)


def test_filtered_search_equals_filtering_the_full_ranking(kb: KnowledgeBase,
                                                           tmp_path: Path) -> None:
    """Differential: the two-pass filtered top-k against brute force over the full ranking."""
    import random

    rng = random.Random(7)
    words = [f"w{i}" for i in range(40)]
    role_sets = [["public"], ["hr"], ["finance"], ["hr", "finance"], ["legal"]]
    kb.ingest([write_jsonl(tmp_path / "r.jsonl", [
        {"doc_id": f"d{i}", "roles": rng.choice(role_sets),
         "text": " ".join(rng.choices(words, weights=range(40, 0, -1), k=12))}
        for i in range(600)
    ])])
    admin = Principal("a", admin=True)
    for roles in ([], ["hr"], ["finance"], ["legal"], ["hr", "legal"]):
        principal = Principal("p", roles=roles)
        for _ in range(15):
            query = " ".join(rng.sample(words, 2))
            top_k = rng.choice([1, 3, 10, 50])
            full = kb.search(query, principal=admin, top_k=1000).hits
            readable = [h for h in full if principal.can_read(h.chunk.roles)]
            got = kb.search(query, principal=principal, top_k=top_k)
            assert [round(h.score, 4) for h in got.hits] == [
                round(h.score, 4) for h in readable[:top_k]]
            assert all(principal.can_read(h.chunk.roles) for h in got.hits)
            assert got.blocked_count == len(full) - len(readable)
