"""``glassrag demo``: the seed-000 workshop's four steps on the bundled examples, then the same
flow on the Chinese fare rules, each in a temporary knowledge base."""

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


def _flow(say: Say, kb: KnowledgeBase, corpus: Path, cases: Path,
          questions: dict[str, str]) -> bool:
    from glassrag.eval.cases import load_cases, run_cases

    report = kb.ingest([corpus])
    chunks = [c for d in kb.documents() for c in kb.chunks(d.doc_id)]
    say("STEP 1: parse and chunk documents")
    say(f"chunks: {report.chunks}")
    say(f"first_chunk: {chunks[0].chunk_id} -> {chunks[0].title}")
    say("")
    say("STEP 2: answer with citations")
    result = kb.ask(questions["answer"], principal=PUBLIC)
    say(f"question: {questions['answer']}")
    say(f"status: {result.status}")
    say(f"answer: {result.answer}")
    say(f"citations: {_sources(result)}")
    say("")
    say("STEP 3: permission and no-evidence checks")
    if "private" in questions:
        private = kb.ask(questions["private"], principal=PUBLIC)
        say(f"private_question_as_public: {private.status}")
    unknown = kb.ask(questions["unknown"], principal=PUBLIC)
    say(f"unknown_question: {unknown.status}")
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
