"""The stale-answer and recheck routes: admin tokens only (a trace names a principal and a
question), in the one error shape otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the [server] extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from glassrag import KnowledgeBase  # noqa: E402
from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402

POLICY = "---\nroles: [employee]\n---\n# Refunds\n\nRefunds are paid within 14 days.\n"
QUESTION = "Within how many days are refunds paid?"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, dict[str, str]], Path]]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text(POLICY, encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.ingest([docs])
        tokens = {"root": create_token(kb.store, "root", admin=True),
                  "pat": create_token(kb.store, "pat", ["employee"])}
    app = create_app(tmp_path / "kb")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client, {k: {"Authorization": f"Bearer {v}"} for k, v in tokens.items()}, docs


def test_stale_answers_and_recheck_over_http(
        server: tuple[TestClient, dict[str, dict[str, str]], Path]) -> None:
    client, auth, docs = server
    asked = client.post("/ask", json={"question": QUESTION}, headers=auth["pat"]).json()
    assert asked["status"] == "answered"
    assert client.get("/audit/stale-answers", headers=auth["root"]).json() == {
        "stale_answers": []}
    (docs / "refunds.md").write_text(POLICY.replace("14 days", "30 days"), encoding="utf-8")
    report = client.app.state.kb.ingest([docs])  # type: ignore[attr-defined]
    assert report.stale_answers == 1
    stale = client.get("/audit/stale-answers", headers=auth["root"])
    assert stale.status_code == 200
    [row] = stale.json()["stale_answers"]
    assert row["trace_id"] == asked["trace_id"] and row["principal"]["principal_id"] == "pat"
    assert row["stale_citations"][0]["new_lines"] == ["Refunds are paid within 30 days."]
    assert client.get("/audit/stale-answers", params={"since": "2999-01-01"},
                      headers=auth["root"]).json() == {"stale_answers": []}
    bad = client.get("/audit/stale-answers", params={"since": "never"}, headers=auth["root"])
    assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "since"
    again = client.post(f"/audit/recheck/{asked['trace_id']}", headers=auth["root"])
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["changed"] and "30 days" in body["new"]["answer"]
    assert body["principal"]["principal_id"] == "pat"
    assert client.post("/audit/recheck/tr_missing", headers=auth["root"]).status_code == 404


def test_the_audit_routes_are_for_admins_only(
        server: tuple[TestClient, dict[str, dict[str, str]], Path]) -> None:
    client, auth, _ = server
    asked = client.post("/ask", json={"question": QUESTION}, headers=auth["pat"]).json()
    for method, path in (("GET", "/audit/stale-answers"),
                         ("POST", f"/audit/recheck/{asked['trace_id']}")):
        assert client.request(method, path).status_code == 401
        refused = client.request(method, path, headers=auth["pat"])
        assert refused.status_code == 403
        assert set(refused.json()) == {"error"} and QUESTION not in refused.text
