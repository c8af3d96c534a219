"""``glassrag demo``: the workshop's four steps (chunks, an answer with citations, permission
and no-evidence checks, a mini evaluation) on the bundled examples, then the same flow on the
Chinese fare rules, each in a temporary knowledge base."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from glassrag.eval.examples import examples_dir
from glassrag.kb import KnowledgeBase
from glassrag.records import Answer, Principal

Say = Callable[[str], None]

PUBLIC = Principal("demo")


def _sources(answer: Answer) -> str:
    return ", ".join(dict.fromkeys(c.source for c in answer.citations)) or "none"


def _citation_lines(answer: Answer) -> list[str]:
    """Each citation with the exact lines it quotes, as ``glassrag ask`` prints them."""
    return [f"  [{n}] {c.source} lines {c.line_start}-{c.line_end} ({c.chunk_id}): {c.quote}"
            for n, c in enumerate(answer.citations, start=1)]


def _check(say: Say, kb: KnowledgeBase, label: str, question: str) -> None:
    """One permission or no-evidence check: the question asked, then its status."""
    say(f"question: {question}")
    say(f"{label}: {kb.ask(question, principal=PUBLIC).status}")


def _flow(say: Say, kb: KnowledgeBase, corpus: Path, cases: Path,
          questions: dict[str, str]) -> bool:
    from glassrag.eval.cases import load_cases, run_cases

    report = kb.ingest([corpus])
    chunks = [c for d in kb.documents() for c in kb.chunks(d.doc_id)]
    say("STEP 1: parse and chunk documents")
    say(f"chunks: {report.chunks}")
    first = chunks[0]
    # Step 2 cites sources; this line relates the chunk's document to its source.
    say(f"first_chunk: {first.chunk_id} -> {first.title}")
    say(f"first_chunk_document: {first.doc_id} (source {kb.document(first.doc_id).source}, "
        f"lines {first.line_start}-{first.line_end})")
    say("")
    say("STEP 2: answer with citations")
    result = kb.ask(questions["answer"], principal=PUBLIC)
    say(f"question: {questions['answer']}")
    say(f"status: {result.status}")
    say(f"answer: {result.answer}")
    say(f"citations: {_sources(result)}")
    for line in _citation_lines(result):
        say(line)
    say("")
    say("STEP 3: permission and no-evidence checks")
    if "private" in questions:
        _check(say, kb, "private_question_as_public", questions["private"])
    _check(say, kb, "unknown_question", questions["unknown"])
    say("")
    say("STEP 4: mini evaluation")
    evaluation = run_cases(kb, load_cases(cases))
    for line in evaluation.lines():
        say(line)
    return evaluation.passed == evaluation.total


def run_demo(say: Say) -> bool:
    """Print both flows; return True when every evaluation case passed."""
    root = examples_dir()
    ok = True
    with tempfile.TemporaryDirectory(prefix="glassrag-demo-") as tmp:
        with KnowledgeBase.open(Path(tmp) / "workshop") as kb:
            ok &= _flow(say, kb, root / "workshop" / "documents.jsonl",
                        root / "cases" / "workshop.yaml", {
                            "answer": "How many days do learners have for refunds?",
                            "private": "What is the private beta roadmap for Q4?",
                            "unknown": "What is the cafeteria menu today?",
                        })
        say("")
        say("== the same flow on the Chinese fare rules (examples/fare-rules) ==")
        say("")
        with KnowledgeBase.open(Path(tmp) / "fare-rules") as kb:
            ok &= _flow(say, kb, root / "fare-rules", root / "cases" / "fare-rules.yaml", {
                "answer": "距离起飞不足4小时退票，退票费是多少？",
                "unknown": "北京今天天气怎么样？",
            })
    return ok
