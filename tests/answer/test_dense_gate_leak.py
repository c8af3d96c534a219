"""The dense refusal gate under ``conceal``: its decision, and what the trace says of it,
do not depend on documents the asker cannot read. The same questions asked of a knowledge
base that also holds hidden documents (which would answer them, and share their words) and
of one without them give the same answer, trace view and dry run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conceal_fixtures import EMBEDDER, P0, batched_kb, scrub
from glassrag import KnowledgeBase, Principal

PUBLIC = [
    {"doc_id": "shipping", "title": "Shipping", "source": "shipping.md", "roles": ["public"],
     "text": "Parcels to France take four days by road. Parcels to Canada take twelve days "
             "by sea. Every parcel is packed in recycled cardboard."},
    {"doc_id": "returns", "title": "Returns", "source": "returns.md", "roles": ["public"],
     "text": "Returned parcels are inspected within two days of arrival."},
]
HIDDEN = [
    {"doc_id": f"ops-{n}", "title": "Parcel operations", "source": f"ops/{n}.md",
     "roles": ["ops"],
     "text": "Parcels to Canada are insured for customs. Returned parcels to France take "
             f"nine days to inspect. Cardboard stock {n} is counted weekly."}
    for n in range(4)
]
QUESTIONS = ["How long do parcels to Canada take?", "How long are returned parcels inspected?",
             "What insurance do parcels to Canada get?", "cardboard stock counted weekly"]
MODES = ("dense", "hybrid")


def _kb(root: Path, name: str, batches: list[list[dict[str, Any]]], quote: float) -> Path:
    return batched_kb(root, name, batches, embedder=EMBEDDER, settings=[
        ('min_margin = "auto"', "min_margin = 2.0"),
        ('min_quote_cosine = "auto"', f"min_quote_cosine = {quote}"),
        ('min_score = "auto"', "min_score = -1.0")])


def _scrub(value: Any) -> str:
    return json.dumps(scrub(value), ensure_ascii=False)


def _outputs(kb_dir: Path, principal: Principal) -> tuple[list[str], list[str]]:
    """What ``principal`` gets back, and the true statuses (for the test's own checks)."""
    seen, truth = [], []
    with KnowledgeBase.open(kb_dir) as kb:
        for question in QUESTIONS:
            for mode in MODES:
                answer = kb.ask(question, principal=principal, mode=mode, embedder=EMBEDDER)
                seen += [_scrub(answer.to_dict()),
                         _scrub(kb.trace(answer.trace_id, principal=principal)),
                         _scrub(kb.dry_run(question, principal=principal, mode=mode,
                                           embedder=EMBEDDER))]
                truth.append(kb.trace(answer.trace_id,
                                      principal=Principal("root", admin=True))["status"])
    return seen, truth


@pytest.mark.parametrize("quote", [-1.0, 0.5, 0.999])
def test_the_gate_decides_alike_with_and_without_hidden_documents(
        tmp_path: Path, quote: float) -> None:
    full = _kb(tmp_path, "full", [HIDDEN, PUBLIC], quote)
    alone = _kb(tmp_path, "alone", [PUBLIC], quote)
    seen, true_statuses = _outputs(full, P0)
    want, _ = _outputs(alone, P0)
    assert seen == want
    if quote == 0.999:  # every quote refused: the hidden pages would answer some of them
        assert "blocked_by_permission" in true_statuses
    if quote == -1.0:  # every quote rescued
        assert any('"status": "answered"' in s for s in seen)
