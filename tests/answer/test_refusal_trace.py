"""A lexical refusal's trace says why: the answerer's draft, with the best coverage found
and the threshold it missed (in the operator's view; the asker's shows the refusal). That
record is built from readable evidence alone; under ``conceal`` a knowledge base that also
holds hidden pages (which would answer) gives the same answer, trace and dry run as one
without them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conceal_fixtures import batched_kb, scrub
from glassrag import KnowledgeBase, Principal
from glassrag.settings import AnswerSettings

READER = Principal("reader")
ROOT = Principal("root", admin=True)
PUBLIC = [
    {"doc_id": "kiln", "title": "Kiln", "source": "kiln.md", "roles": ["public"],
     "text": "The kiln fires glazed pots at night. Unglazed pots dry on the rack for a week."},
]
HIDDEN = [
    {"doc_id": f"ops-{n}", "title": "Kiln operations", "source": f"ops/{n}.md",
     "roles": ["ops"],
     "text": f"The kiln cooling schedule {n} lowers the temperature by forty degrees an hour "
             "after the glazed pots are fired."}
    for n in range(3)
]
# Answered by the hidden pages only; shares a word or two with the public one.
QUESTION = "How fast does the cooling schedule lower the kiln temperature?"


def _kb(root: Path, name: str, batches: list[list[dict[str, Any]]],
        disclosure: str = "conceal") -> Path:
    return batched_kb(root, name, batches, disclosure=disclosure)


def _scrub(value: Any) -> str:
    return json.dumps(scrub(value), ensure_ascii=False)


def test_a_refusal_trace_gives_the_coverage_and_the_threshold(tmp_path: Path) -> None:
    with KnowledgeBase.open(_kb(tmp_path, "kb", [PUBLIC], "disclose")) as kb:
        answer = kb.ask(QUESTION, principal=READER)
        assert answer.status == "no_evidence"
        trace = kb.trace(answer.trace_id)  # the operator's view: every record
        asker = kb.trace(answer.trace_id, principal=READER)
    # The asker sees that the answerer refused; the draft behind a refusal is the operator's.
    assert asker["attempts"] == [{"answerer": "extractive", "outcome": "rejected"}]
    [attempt] = trace["attempts"]
    notes = attempt["draft"]["notes"]
    assert attempt["draft"]["status"] == "no_evidence" and attempt["draft"]["citations"] == []
    # Six words: the share required is raised to min_covered_terms words' worth of them.
    required = AnswerSettings().min_covered_terms / 6
    assert notes["best_coverage"] < notes["threshold"] == pytest.approx(required)
    assert f"threshold is {required:.2f}" in notes["reason"]


def test_the_refusal_record_is_the_same_with_and_without_hidden_pages(tmp_path: Path) -> None:
    full = _kb(tmp_path, "full", [HIDDEN, PUBLIC])
    alone = _kb(tmp_path, "alone", [PUBLIC])
    outputs = []
    for kb_dir in (full, alone):
        with KnowledgeBase.open(kb_dir) as kb:
            answer = kb.ask(QUESTION, principal=READER)
            outputs.append([_scrub(answer.to_dict()),
                            _scrub(kb.trace(answer.trace_id, principal=READER)),
                            _scrub(kb.dry_run(QUESTION, principal=READER))])
            truth = kb.trace(answer.trace_id, principal=ROOT)["status"]
            assert truth == ("blocked_by_permission" if kb_dir == full else "no_evidence")
    assert outputs[0] == outputs[1]
