"""Hostile files end to end: the CLI reports and exits 1, HTTP answers 400, the batch goes on.

Before, a front-matter date such as 2023-02-29 or deeply nested YAML or JSONL ended the
whole ingest with a traceback (nothing stored) and the admin upload with a 500.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from glassrag import KnowledgeBase
from glassrag.interfaces.cli.main import app
from hidden_content_fixtures import PAGE

BAD = {
    "leap.md": "---\ndate: 2023-02-29\n---\nLeap day notes.\n",
    "deep.md": "---\na: " + "[" * 2000 + "]" * 2000 + "\n---\nDeep notes.\n",
    "lol.md": "---\na: &a [x, x]\nb: &b [*a, *a]\n---\nLaughs.\n",
    "deep.jsonl": '{"doc_id": "j", "text": "t", "metadata": ' + '{"a":' * 5000 + "1"
                  + "}" * 5000 + "}\n",
}


def _inbox(tmp_path: Path) -> Path:
    folder = tmp_path / "inbox"
    folder.mkdir()
    for name, text in BAD.items():
        (folder / name).write_text(text)
    (folder / "good.md").write_text("# Good\n\nwombat burrows are square\n")
    return folder


def test_the_cli_reports_every_bad_file_and_stores_the_rest(tmp_path: Path) -> None:
    folder = _inbox(tmp_path)
    result = CliRunner().invoke(app, ["--kb", str(tmp_path / "kb"), "ingest", str(folder),
                                      "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["added"] == 1
    failed = {Path(f["path"].split(":")[0]).name: f["error"] for f in report["failed"]}
    assert set(failed) == set(BAD)
    assert "invalid date '2023-02-29'" in failed["leap.md"]
    assert "aliases (*name) are not accepted" in failed["lol.md"]
    assert "nested" in failed["deep.md"] or "nesting" in failed["deep.md"]
    assert failed["deep.jsonl"] == "line 1: nested deeper than 64 levels"
    kb = KnowledgeBase.open(tmp_path / "kb")
    try:
        assert kb.search("wombat burrows").hits
    finally:
        kb.close()


def test_the_admin_upload_answers_400_naming_the_problem(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    from fastapi.testclient import TestClient

    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token

    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    application = create_app(kb_dir)
    kb = application.state.kb
    with kb.lock:
        admin = {"Authorization": f"Bearer {create_token(kb.store, 'root', admin=True)}"}
    with TestClient(application, base_url="http://127.0.0.1") as client:
        for name, text in BAD.items():
            r = client.post("/documents", files={"file": (name, text.encode(), "text/plain")},
                            headers=admin)
            assert r.status_code == 400, (name, r.text)
            assert r.json()["error"]["message"].startswith(f"{name}: ")
        r = client.post("/documents", files={"file": ("page.html", PAGE, "text/html")},
                        headers=admin)
        assert r.status_code == 201, r.text
        assert r.json()["hidden_dropped"] == {"total": 5, "files": {"page.html": 5}}
