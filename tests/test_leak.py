"""The leak test: nothing of a document outside a principal's roles reaches that principal.

For every example query and every principal, in every search mode, through the Python API
and the CLI (JSON and table output): no text, title, source or doc_id of an unreadable
document appears anywhere in the output.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from glassrag import KnowledgeBase, Principal
from glassrag.errors import EmptyQuery
from glassrag.interfaces.cli.main import app
from leak_fixtures import (
    PRINCIPALS,
    QUERIES,
    UNSEARCHABLE,
    _check,
    build_leak_kb,
)


@pytest.fixture(scope="module")
def leak_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_leak_kb(tmp_path_factory.mktemp("leak"))


def _cli_mode(args: list[str]) -> str:
    return args[args.index("--mode") + 1] if "--mode" in args else "bm25"


def _check_exit(result: Any, query: str, args: list[str]) -> None:
    """A CLI run succeeded, or failed exactly as an unsearchable query must (exit 2)."""
    if (query, _cli_mode(args)) in UNSEARCHABLE:
        assert result.exit_code == 2, (query, args, result.output)
        if "--json" in args:
            assert json.loads(result.stdout)["error"]["code"] == "empty_query"
    else:
        assert result.exit_code == 0, (query, args, result.output)


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_python_api_never_leaks(leak_kb: Path, principal: Principal) -> None:
    with KnowledgeBase.open(leak_kb) as kb:
        for query, mode in itertools.product(QUERIES, ["bm25", "overlap"]):
            if (query, mode) in UNSEARCHABLE:
                with pytest.raises(EmptyQuery) as info:
                    kb.search(query, principal=principal, top_k=50, mode=mode)
                _check(json.dumps(info.value.to_dict()), principal, f"error {mode}")
                continue
            result = kb.search(query, principal=principal, top_k=50, mode=mode)
            _check(json.dumps(result.to_dict(), ensure_ascii=False), principal, mode)
        for terms in (["textcanaryemployee0"], ["检索", "片段"], ["zebracanary"], ["refund"]):
            result = kb.search("terms", principal=principal, terms=terms, top_k=50)
            _check(json.dumps(result.to_dict(), ensure_ascii=False), principal, "terms")
        _check(json.dumps([d.doc_id + d.title + d.source
                           for d in kb.documents(principal)]), principal, "documents")


def test_secrets_are_findable_by_their_readers(leak_kb: Path) -> None:
    # Guard against a leak test that passes because secrets were never indexed.
    with KnowledgeBase.open(leak_kb) as kb:
        hr = kb.search("zebracanary", principal=Principal("h", roles=["hr"]), top_k=50)
        assert {h.chunk.doc_id for h in hr.hits} == {f"secretdoc-hr-{n}" for n in range(3)}
        assert hr.blocked_count == 6


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_cli_never_leaks(leak_kb: Path, principal: Principal) -> None:
    runner = CliRunner()
    role_args = [arg for r in principal.roles if r != "public" for arg in ("--role", r)]
    for query in QUERIES:
        for extra in ([], ["--json"], ["--mode", "overlap", "--json"]):
            result = runner.invoke(
                app, ["--kb", str(leak_kb), "search", query, *role_args, *extra]
            )
            _check_exit(result, query, extra)
            _check(result.output, principal, f"cli search {extra}")
    result = runner.invoke(
        app, ["--kb", str(leak_kb), "search", "x", "--terms", "zebracanary", *role_args]
    )
    assert result.exit_code == 0, result.output
    _check(result.output, principal, "cli terms")


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_answers_traces_and_records_never_leak(leak_kb: Path, principal: Principal,
                                               tmp_path: Path) -> None:
    with KnowledgeBase.open(leak_kb) as kb:
        for query in QUERIES:
            answer = kb.ask(query, principal=principal, top_k=10)
            _check(json.dumps(answer.to_dict(), ensure_ascii=False), principal, "ask")
            trace = kb.trace(answer.trace_id, principal=principal)
            _check(json.dumps(trace, ensure_ascii=False), principal, "trace")
            for path in kb.export_trace(answer.trace_id, tmp_path / answer.trace_id,
                                        principal=principal):
                _check(path.read_text(encoding="utf-8"), principal, f"export {path.name}")
            _check(json.dumps(kb.dry_run(query, principal=principal), ensure_ascii=False),
                   principal, "dry-run")
            _check(json.dumps(kb.inspect(query, principal=principal), ensure_ascii=False),
                   principal, "inspect")
        _check(json.dumps(kb.traces(principal=principal)), principal, "traces list")


def test_secret_questions_are_blocked_not_answered(leak_kb: Path) -> None:
    with KnowledgeBase.open(leak_kb) as kb:
        answer = kb.ask("zebracanary textcanaryhr0", principal=Principal("p"))
        assert answer.status == "blocked_by_permission"
        reader = kb.ask("zebracanary textcanaryhr0", principal=Principal("h", roles=["hr"]))
        assert reader.status == "answered"
        assert reader.citations[0].doc_id.startswith("secretdoc-hr-")


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_cli_ask_never_leaks(leak_kb: Path, principal: Principal) -> None:
    runner = CliRunner()
    role_args = [arg for r in principal.roles if r != "public" for arg in ("--role", r)]
    for query in QUERIES:
        for extra in ([], ["--json"], ["--dry-run"]):
            result = runner.invoke(app, ["--kb", str(leak_kb), "ask", query, *role_args, *extra])
            _check_exit(result, query, extra)
            _check(result.output, principal, f"cli ask {extra}")
        result = runner.invoke(app, ["--kb", str(leak_kb), "inspect", query, *role_args])
        _check_exit(result, query, [])
        _check(result.output, principal, "cli inspect")
