"""`glassrag demo` prints the seed workshop's four steps in the seed's format."""

from __future__ import annotations

from typer.testing import CliRunner

from glassrag.interfaces.cli.main import app


def test_demo_prints_the_workshop_steps() -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for expected in [
        "STEP 1: parse and chunk documents",
        "chunks: 4",
        "first_chunk: refund-policy#1 -> Course refund policy",
        # The chunk's document and the source step 2 cites, related.
        "first_chunk_document: refund-policy (source handbook.md#refund, lines 1-1)",
        "STEP 2: answer with citations",
        "question: How many days do learners have for refunds?",
        "status: answered",
        "citations: handbook.md#refund",
        "STEP 3: permission and no-evidence checks",
        "question: What is the private beta roadmap for Q4?",
        "private_question_as_public: blocked_by_permission",
        "question: What is the cafeteria menu today?",
        "unknown_question: no_evidence",
        "STEP 4: mini evaluation",
        "refund_window: PASS (answered, handbook.md#refund)",
        "api_key_setup: PASS (answered, setup.md#keys)",
        "private_block: PASS (blocked_by_permission, none)",
        "passed: 3/3",
    ]:
        assert expected in lines, expected
    answer = next(line for line in lines if line.startswith("answer: Based on handbook.md#refund"))
    assert "14 days" in answer
    # Each citation with its line range, right after the seed's citations line.
    cited = lines[lines.index("citations: handbook.md#refund") + 1]
    assert cited.startswith("  [1] handbook.md#refund lines 1-1 (refund-policy#1): Learners")
    # Each check is printed after the question it asked, in order.
    step3 = lines[lines.index("STEP 3: permission and no-evidence checks") + 1:][:4]
    assert [line.split(":")[0] for line in step3] == [
        "question", "private_question_as_public", "question", "unknown_question"]
    assert any(line.startswith("  [1] fare-rules.md lines 14-14 ") for line in lines)
    # The Chinese fare-rules flow retrieves the rule for refunds under four hours.
    assert any("38%" in line for line in lines if line.startswith("answer: Based on fare-rules"))
    assert lines.count("passed: 3/3") == 1 and "passed: 5/5" in lines
