"""`glassrag ask --rewrite/--no-rewrite`, the dry run's rewrite request, and the rewrite line
of `glassrag trace`, against the stub server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from glassrag.interfaces.cli.main import app
from llm_stub import Reply, StubLLM, answer_json
from rewrite_fixtures import QUESTION, QUOTE, REWRITTEN, office_kb, rewrite_reply
from rewrite_fixtures import stub as stub  # noqa: F401  (the fixture)

runner = CliRunner()


def test_cli_rewrite_flag(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path)  # no [llm] settings: --llm names the model, --rewrite asks
    base = ["--kb", str(kb.path), "ask", QUESTION, "--llm", "openai"]
    kb.close()
    without = json.loads(runner.invoke(app, [*base, "--json"]).stdout)
    assert without["status"] == "no_evidence" and stub.requests == []

    dry = json.loads(runner.invoke(app, [*base, "--rewrite", "--dry-run"]).stdout)
    assert dry["rewrite"]["status"] == "dry_run" and dry["rewrite"]["rewriter"] == "llm:openai"
    assert dry["rewrite"]["request"]["messages"][1]["content"] == f"Question:\n{QUESTION}"
    assert dry["evidence"] == [] and stub.requests == []  # shown, not sent

    stub.push(Reply(rewrite_reply(REWRITTEN)),
              Reply(answer_json("answered", "Behind the east entrance.", [("C1", QUOTE)])))
    result = runner.invoke(app, [*base, "--rewrite", "--json"])
    data = json.loads(result.stdout)
    assert data["status"] == "answered" and data["citations"][0]["quote"] == QUOTE
    assert stub.bodies()[0] == dry["rewrite"]["request"]  # the dry run showed what was sent

    shown = runner.invoke(app, ["--kb", str(tmp_path / "office"), "trace", data["trace_id"]])
    assert "rewrite: used (llm:openai, stub-model, " in shown.stdout
    assert f'"{REWRITTEN}"' in shown.stdout


def test_cli_no_rewrite_overrides_the_setting(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True, rewrite_query=True)
    kb.close()
    args = ["--kb", str(tmp_path / "office"), "ask", QUESTION]
    data = json.loads(runner.invoke(app, [*args, "--no-rewrite", "--json"]).stdout)
    assert data["status"] == "no_evidence" and stub.requests == []
    shown = runner.invoke(app, ["--kb", str(tmp_path / "office"), "trace", data["trace_id"]])
    assert "rewrite: off" in shown.stdout

    stub.push(Reply("nope", status=503))
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)  # the setting: on
    assert data["status"] == "no_evidence" and len(stub.requests) == 1
    shown = runner.invoke(app, ["--kb", str(tmp_path / "office"), "trace", data["trace_id"]])
    assert "rewrite: failed (llm:openai, stub-model" in shown.stdout
    assert "HTTP 503" in shown.stdout and "searched as asked" in shown.stdout
