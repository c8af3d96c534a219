"""Old document versions are served only under the roles they were stored with."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from glassrag import KnowledgeBase, Principal
from glassrag.store.database import DB_NAME

PUBLIC = Principal("p")
HR = Principal("h", roles=["hr"])
ADMIN = Principal("root", admin=True)
V1 = "---\nroles: [hr]\n---\nThe ocelot canary salary is 91000.\n"
V2 = "---\nroles: [public]\n---\nOcelot visiting hours are 9 to 5.\n"


def _two_versions(kb: KnowledgeBase, path: Path, first: str, second: str) -> tuple[str, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(first, encoding="utf-8")
    kb.ingest([path])
    old = kb.document(path.name).content_hash
    path.write_text(second, encoding="utf-8")
    kb.ingest([path])
    return old, kb.document(path.name).content_hash


def test_versions_record_their_roles(kb: KnowledgeBase, tmp_path: Path) -> None:
    _two_versions(kb, tmp_path / "pay.md", V1, V2)
    assert [(h["version"], h["roles"]) for h in kb.store.history("pay.md")] == [
        (1, ["hr"]), (2, ["public"]),
    ]


def test_hr_version_stays_hr_after_a_public_version(kb: KnowledgeBase, tmp_path: Path) -> None:
    old, new = _two_versions(kb, tmp_path / "pay.md", V1, V2)
    assert kb.document_text(old, doc_id="pay.md", principal=PUBLIC) is None
    assert kb.document_text(old, principal=PUBLIC) is None
    assert "91000" in (kb.document_text(old, doc_id="pay.md", principal=HR) or "")
    assert "91000" in (kb.document_text(old, doc_id="pay.md", principal=ADMIN) or "")
    assert kb.document_text(new, doc_id="pay.md", principal=PUBLIC) is not None
    assert "91000" in (kb.document_text(old) or "")  # the local operator reads everything


def test_tightened_document_closes_its_old_public_versions(kb: KnowledgeBase,
                                                           tmp_path: Path) -> None:
    public_first = "---\nroles: [public]\n---\nOcelot draft figures 91000.\n"
    hr_later = "---\nroles: [hr]\n---\nOcelot final salary table.\n"
    old, new = _two_versions(kb, tmp_path / "pay.md", public_first, hr_later)
    # The caller must be allowed by the version's roles and by the document's current ones.
    assert kb.document_text(old, doc_id="pay.md", principal=PUBLIC) is None
    assert kb.document_text(new, doc_id="pay.md", principal=PUBLIC) is None
    assert kb.document_text(old, doc_id="pay.md", principal=HR) is not None


def test_same_text_in_two_documents_is_judged_per_document(kb: KnowledgeBase,
                                                          tmp_path: Path) -> None:
    (tmp_path / "hr").mkdir()
    (tmp_path / "pub").mkdir()
    (tmp_path / "hr" / "a.md").write_text("Ocelot shared sentence.\n")
    (tmp_path / "pub" / "b.md").write_text("Ocelot shared sentence.\n")
    kb.ingest([tmp_path / "hr"], roles=["hr"])
    kb.ingest([tmp_path / "pub"], roles=["public"])
    same = kb.document("a.md").content_hash
    assert kb.document("b.md").content_hash == same
    assert kb.document_text(same, doc_id="b.md", principal=PUBLIC) is not None
    assert kb.document_text(same, doc_id="a.md", principal=PUBLIC) is None
    assert kb.document_text(same, doc_id="b.md", principal=None) is not None
    assert kb.document_text(same, doc_id="nope.md") is None


def test_a_deleted_document_that_returns_continues_its_versions(kb: KnowledgeBase,
                                                                tmp_path: Path) -> None:
    path = tmp_path / "pay.md"
    path.write_text(V1)
    kb.ingest([path])
    old = kb.document("pay.md").content_hash
    kb.delete("pay.md")
    path.write_text(V2)
    kb.ingest([path])
    assert kb.document("pay.md").version == 2
    assert [h["roles"] for h in kb.store.history("pay.md")] == [["hr"], ["public"]]
    assert kb.document_text(old, doc_id="pay.md", principal=PUBLIC) is None


def test_versions_from_before_the_migration_are_admin_only(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        old, new = _two_versions(kb, tmp_path / "pay.md", V2.replace("9 to 5", "8 to 4"), V2)
    # Turn the database back into schema 5, as glassrag wrote it before migrations had
    # names: no roles per version, no roles origin, no trace citation index, no migrations
    # table.
    db = sqlite3.connect(kb_dir / DB_NAME)
    db.execute("DROP TABLE trace_citations")
    db.execute("ALTER TABLE document_history DROP COLUMN roles")
    db.execute("ALTER TABLE documents DROP COLUMN roles_origin")
    db.execute("DROP TABLE glassrag_migrations")
    db.execute("PRAGMA user_version=5")
    db.commit()
    db.close()
    with KnowledgeBase.open(kb_dir) as kb:
        # The current version takes the document's roles; the older one is unknown.
        assert [h["roles"] for h in kb.store.history("pay.md")] == [None, ["public"]]
        assert kb.document_text(new, doc_id="pay.md", principal=PUBLIC) is not None
        assert kb.document_text(old, doc_id="pay.md", principal=PUBLIC) is None
        assert kb.document_text(old, doc_id="pay.md", principal=ADMIN) is not None


def test_http_lines_of_an_old_version_follow_its_roles(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    from fastapi.testclient import TestClient

    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token

    kb_dir = tmp_path / "kb"
    with KnowledgeBase.open(kb_dir) as kb:
        old, new = _two_versions(kb, tmp_path / "pay.md", V1, V2)
    app = create_app(kb_dir)
    with app.state.kb.lock:
        public = create_token(app.state.kb.store, "p", [])
        hr = create_token(app.state.kb.store, "h", ["hr"])
    with TestClient(app, base_url="http://127.0.0.1") as client:
        def get(token: str, content_hash: str):  # type: ignore[no-untyped-def]
            return client.get("/documents/pay.md/lines", params={"content_hash": content_hash},
                              headers={"Authorization": f"Bearer {token}"})

        denied = get(public, old)
        assert denied.status_code == 404 and "91000" not in denied.text
        assert get(public, new).status_code == 200
        allowed = get(hr, old)
        assert allowed.status_code == 200 and "91000" in allowed.text
        assert allowed.json()["current"] is False
