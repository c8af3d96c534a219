"""The role matrix (``evaluate CASES --as-roles``) on the workshop example: every case asked once
per role set, a matrix of what each kind of user is told."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, init_kb_with
from glassrag import KnowledgeBase
from glassrag.audit.role_matrix import parse_role_sets, role_matrix
from glassrag.errors import InvalidInput
from glassrag.eval.cases import load_cases
from glassrag.interfaces.cli.main import app

WORKSHOP = EXAMPLES / "workshop" / "documents.jsonl"
CASES = EXAMPLES / "cases" / "workshop.yaml"
SETS = "public;employee;employee,finance"


def _kb(kb_dir: Path) -> Path:
    with KnowledgeBase.open(kb_dir) as kb:
        assert kb.ingest([WORKSHOP], chunker="sentences").failed == []
    return kb_dir


def test_cli_matrix_on_the_workshop(tmp_path: Path) -> None:
    kb_dir = _kb(tmp_path / "kb")
    runner = CliRunner()
    result = runner.invoke(app, ["--kb", str(kb_dir), "evaluate", str(CASES), "--as-roles", SETS,
                                 "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["role_sets"] == [["public"], ["employee"], ["employee", "finance"]]
    statuses = {c["name"]: {label: r["status"] for label, r in c["results"].items()}
                for c in body["cases"]}
    assert statuses == {
        "refund_window": {"public": "answered", "employee": "answered",
                          "employee,finance": "answered"},
        "api_key_setup": {"public": "answered", "employee": "answered",
                          "employee,finance": "answered"},
        "private_block": {"public": "blocked_by_permission", "employee": "answered",
                          "employee,finance": "answered"},
    }
    roadmap = body["cases"][2]["results"]["employee"]
    assert roadmap["sources"] == ["internal.md#roadmap"] and roadmap["trace_id"]
    assert body["errors"] == 0
    text = runner.invoke(app, ["--kb", str(kb_dir), "evaluate", str(CASES), "--as-roles", SETS])
    assert text.exit_code == 0
    lines = text.stdout.splitlines()
    assert lines[0].split() == ["case", "public", "employee", "employee,finance"]
    assert lines[3].split() == ["private_block", "blocked_by_permission", "answered",
                                "answered"]


def test_under_conceal_a_cell_names_the_true_status(tmp_path: Path) -> None:
    kb_dir = _kb(init_kb_with(tmp_path / "kb", 'disclosure = "disclose"',
                              'disclosure = "conceal"'))
    with KnowledgeBase.open(kb_dir) as kb:
        matrix = role_matrix(kb, load_cases(CASES), parse_role_sets("public;employee"))
    blocked = matrix.cells[2][0]
    assert blocked.status == "no_evidence" and blocked.true_status == "blocked_by_permission"
    assert blocked.text() == "no_evidence (blocked_by_permission)"
    assert matrix.cells[2][1].text() == "answered"


def test_a_rejected_question_is_an_error_cell_and_the_run_goes_on(tmp_path: Path) -> None:
    kb_dir = _kb(tmp_path / "kb")
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "- {name: stop_words, question: 'the of and', roles: [public], "
        "expected_status: no_evidence}\n"
        "- {name: refund, question: 'How many days do learners have for refunds?', "
        "roles: [public], expected_status: answered}\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["--kb", str(kb_dir), "evaluate", str(cases), "--as-roles",
                                      "public;employee", "--json"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["errors"] == 2
    assert body["cases"][0]["results"]["public"]["status"] == "error"
    assert body["cases"][0]["results"]["public"]["error"]
    assert body["cases"][1]["results"]["employee"]["status"] == "answered"


@pytest.mark.parametrize("value", ["public;;employee", "  ", "public;public", ";"])
def test_bad_role_sets_are_rejected(value: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_role_sets(value)
    assert caught.value.details["field"] == "as_roles"
    kb_dir = _kb(tmp_path / "kb")
    result = CliRunner().invoke(app, ["--kb", str(kb_dir), "evaluate", str(CASES), "--as-roles",
                                      value, "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["details"]["field"] == "as_roles"


def test_as_roles_needs_a_case_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--kb", str(tmp_path / "kb"), "evaluate", "--as-roles",
                                      "public"])
    assert result.exit_code == 2
