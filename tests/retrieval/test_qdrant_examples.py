"""The Qdrant index gives the embedded index's statuses, answers and citations on the
bundled examples: every case question, asked by several principals, in bm25, dense and
hybrid (RRF on both sides, so the fusion is the same formula)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import EXAMPLES
from glassrag import KnowledgeBase, Principal
from glassrag.retrieval.qdrant_index import QdrantIndex
from qdrant_support import BACKENDS, drop_collections, qdrant_kb_dir

# (example folder, its case file, ingest options), as examples/README.md runs them.
EXAMPLE_SETS = [
    ("workshop", "workshop.yaml", {"chunker": "sentences"}),
    ("fare-rules", "fare-rules.yaml", {}),
    ("kb", "kb.yaml", {}),
    ("notes", "notes.yaml", {}),
    ("tidepool", "tidepool-questions.yaml", {}),
]
DENSE = '[dense]\nembedder = "hash:64"\nfusion = "rrf"\n'
PRINCIPALS = [Principal("p"), Principal("e", roles=["employee"]),
              Principal("root", admin=True)]
MODES = ["bm25", "dense", "hybrid"]


def _questions(case_file: str) -> list[str]:
    data = yaml.safe_load((EXAMPLES / "cases" / case_file).read_text(encoding="utf-8"))
    rows = data["cases"] if isinstance(data, dict) and "cases" in data else data
    if isinstance(rows, dict):
        rows = rows.get("questions", [])
    return [row["question"] for row in rows]


def _outcome(kb: KnowledgeBase, question: str, principal: Principal, mode: str) -> Any:
    answer = kb.ask(question, principal=principal, mode=mode)
    return (answer.status, answer.answer,
            [(c.chunk_id, c.line_start, c.line_end, c.quote) for c in answer.citations])


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def pair(backend: str, tmp_path: Path, request: pytest.FixtureRequest,
         ) -> Iterator[tuple[KnowledgeBase, KnowledgeBase]]:
    folder, _, options = request.param
    embedded_dir = tmp_path / "embedded"
    embedded_dir.mkdir()
    (embedded_dir / "glassrag.toml").write_text(DENSE)
    qdrant_dir = qdrant_kb_dir(tmp_path / "qdrant", backend, DENSE, fusion="rrf")
    kbs = []
    for kb_dir in (embedded_dir, qdrant_dir):
        kb = KnowledgeBase.open(kb_dir)
        assert kb.ingest([EXAMPLES / folder], **options).failed == []
        kbs.append(kb)
    assert isinstance(kbs[1].lexical, QdrantIndex)
    yield kbs[0], kbs[1]
    for kb in kbs:
        kb.close()
    drop_collections(qdrant_dir)


@pytest.mark.parametrize("pair", EXAMPLE_SETS, indirect=True, ids=[s[0] for s in EXAMPLE_SETS])
def test_same_statuses_answers_and_citations_as_the_embedded_index(
        pair: tuple[KnowledgeBase, KnowledgeBase], request: pytest.FixtureRequest) -> None:
    embedded, qdrant = pair
    case_file = next(s[1] for s in EXAMPLE_SETS if request.node.callspec.id.endswith(s[0]))
    questions = _questions(case_file)
    assert questions
    statuses = set()
    for question in questions:
        for principal in PRINCIPALS:
            for mode in MODES:
                want = _outcome(embedded, question, principal, mode)
                assert _outcome(qdrant, question, principal, mode) == want, (
                    question, principal.principal_id, mode)
                statuses.add(want[0])
    assert "answered" in statuses
