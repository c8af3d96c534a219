"""The leak test for query rewriting: a rewritten query that matches a document the principal
may not read brings none of it to that principal (not text, title, source or doc id, in the
answer, the model's requests, the returned trace or the CLI), and its count only where the
disclosure policy allows."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from glassrag.interfaces.cli.main import app
from llm_stub import Reply, StubLLM, answer_json
from rewrite_fixtures import (
    CAGE_QUESTION,
    CAGE_REWRITTEN,
    QUESTION,
    QUOTE,
    REWRITTEN,
    office_kb,
    rewrite_reply,
)
from rewrite_fixtures import stub as stub  # noqa: F401  (the fixture)
from rewrite_leak_fixtures import NOBODY, _clean


@pytest.mark.parametrize("disclosure", ["disclose", "conceal"])
def test_blocked_match_of_the_rewrite_stays_hidden(tmp_path: Path, stub: StubLLM,
                                                   disclosure: str) -> None:
    kb = office_kb(tmp_path, profile=True, rewrite_query=True, disclosure=disclosure,
                   secret=True)
    # The rewrite matches the facilities-only document and nothing public: no model answer.
    stub.push(Reply(rewrite_reply(CAGE_REWRITTEN)))
    answer = kb.ask(CAGE_QUESTION, principal=NOBODY)
    assert len(stub.requests) == 1 and answer.evidence == () and answer.citations == ()
    audit = kb.trace(answer.trace_id)  # the operator's view: the rewrite did reach it
    assert audit["blocked_chunk_ids"] == ["cagedocsecret#1"]
    assert audit["status"] == "blocked_by_permission"
    mine = kb.trace(answer.trace_id, NOBODY)
    if disclosure == "disclose":
        assert answer.status == "blocked_by_permission" and mine["blocked_count"] == 1
    else:
        assert answer.status == "no_evidence" and "blocked_count" not in mine
        assert mine["status"] == "no_evidence"
    _clean([answer.to_dict(), mine, kb.traces(NOBODY), stub.bodies()])
    kb.close()


def test_rewrite_with_permitted_and_blocked_matches(tmp_path: Path, stub: StubLLM) -> None:
    kb = office_kb(tmp_path, profile=True, rewrite_query=True, disclosure="conceal",
                   secret=True)
    # "bicycle" is in the public rack notice and in the secret: only the notice is evidence.
    reply = answer_json("answered", "Behind the east entrance.", [("C1", QUOTE)])
    stub.push(Reply(rewrite_reply(REWRITTEN)), Reply(reply))
    answer = kb.ask(QUESTION, principal=NOBODY)
    assert answer.status == "answered"
    assert [h.chunk.doc_id for h in answer.evidence] == ["doc-bike-rack"]
    assert kb.trace(answer.trace_id)["blocked_chunk_ids"] == ["cagedocsecret#1"]
    _clean([answer.to_dict(), kb.trace(answer.trace_id, NOBODY), stub.bodies()])
    # The same through the CLI (principal "cli", public only), JSON and text output.
    runner = CliRunner()
    for extra in (["--json"], []):
        stub.push(Reply(rewrite_reply(REWRITTEN)), Reply(reply))
        result = runner.invoke(app, ["--kb", str(kb.path), "ask", QUESTION, *extra])
        assert result.exit_code == 0, result.output
        assert "answered" in result.stdout
        _clean(result.output)
    dry = runner.invoke(app, ["--kb", str(kb.path), "ask", QUESTION, "--dry-run"])
    _clean(dry.output)
    kb.close()
