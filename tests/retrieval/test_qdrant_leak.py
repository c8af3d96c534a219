"""The leak tests on the Qdrant index: the canary documents of tests/test_leak.py through
the Python API (every mode, dense and hybrid included) and HTTP; and under ``conceal`` the
differential test of tests/retrieval/test_conceal_differential.py (byte-identical output with and
without hidden documents, Python API and HTTP)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_conceal_differential as differential

import conceal_fixtures
import test_leak
from conftest import init_kb_with, write_jsonl
from glassrag import KnowledgeBase, Principal
from glassrag.retrieval.qdrant_index import QdrantIndex
from glassrag.settings import write_index_settings
from qdrant_support import BACKENDS, drop_collections, index_values, qdrant_kb_dir

EMBEDDER = "hash:64"
PRINCIPALS = test_leak.PRINCIPALS


@pytest.fixture(scope="module", params=BACKENDS)
def leak_dir(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """tests/test_leak.py's knowledge base (the examples plus per-role secrets) on Qdrant,
    with a hash embedder so that dense and hybrid run too."""
    root = tmp_path_factory.mktemp("qdrant-leak")
    qdrant_kb_dir(root / "kb", request.param, f'[dense]\nembedder = "{EMBEDDER}"\n')
    kb_dir = test_leak.build_leak_kb(root)
    with KnowledgeBase.open(kb_dir) as kb:
        assert isinstance(kb.lexical, QdrantIndex)
        assert kb.status()["index"]["embedder"] == EMBEDDER
    yield kb_dir
    drop_collections(kb_dir)


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_python_api_never_leaks(leak_dir: Path, principal: Principal) -> None:
    test_leak.test_python_api_never_leaks(leak_dir, principal)
    with KnowledgeBase.open(leak_dir) as kb:
        for query, mode in itertools.product(test_leak.QUERIES, ["dense", "hybrid"]):
            result = kb.search(query, principal=principal, top_k=50, mode=mode)
            test_leak._check(json.dumps(result.to_dict(), ensure_ascii=False), principal, mode)
            answer = kb.ask(query, principal=principal, top_k=10, mode=mode)
            test_leak._check(json.dumps(answer.to_dict(), ensure_ascii=False), principal,
                             f"ask {mode}")
            view = kb.inspect(query, principal=principal, mode=mode)
            test_leak._check(json.dumps(view, ensure_ascii=False), principal, f"inspect {mode}")


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_answers_traces_and_records_never_leak(leak_dir: Path, principal: Principal,
                                               tmp_path: Path) -> None:
    test_leak.test_answers_traces_and_records_never_leak(leak_dir, principal, tmp_path)


def test_secrets_are_findable_by_their_readers(leak_dir: Path) -> None:
    test_leak.test_secrets_are_findable_by_their_readers(leak_dir)
    test_leak.test_secret_questions_are_blocked_not_answered(leak_dir)


@pytest.fixture(scope="module")
def server(leak_dir: Path) -> Iterator[tuple[object, dict[str, str]]]:
    """tests/interfaces/test_server.py's server fixture, on the Qdrant knowledge base."""
    pytest.importorskip("fastapi", reason="the [server] extra is not installed")
    from fastapi.testclient import TestClient

    from glassrag.interfaces.http.app import create_app
    from glassrag.store.bearer_tokens import create_token

    app = create_app(leak_dir)
    kb = app.state.kb
    with kb.lock:
        tokens = {p.principal_id: create_token(kb.store, p.principal_id, p.roles, p.admin)
                  for p in [*PRINCIPALS, Principal("root", admin=True)]}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client, tokens


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.principal_id)
def test_http_never_leaks(server: tuple[object, dict[str, str]], principal: Principal) -> None:
    import test_server

    test_server.test_http_never_leaks(server, principal)  # type: ignore[arg-type]


def test_secrets_reach_their_readers_over_http(server: tuple[object, dict[str, str]]) -> None:
    import test_server

    test_server.test_secrets_reach_their_readers_over_http(server)  # type: ignore[arg-type]


# -- conceal: nothing returned depends on hidden documents ----------------------------------
def _conceal_kb(root: Path, name: str, batches: list[list[dict]], backend: str) -> Path:
    kb_dir = init_kb_with(root / name, 'disclosure = "disclose"', 'disclosure = "conceal"')
    write_index_settings(kb_dir, index_values(backend))
    with KnowledgeBase.open(kb_dir) as kb:
        assert isinstance(kb.lexical, QdrantIndex)
        for n, batch in enumerate(batches):
            report = kb.ingest([write_jsonl(root / f"{name}-{n}.jsonl", batch)],
                               embedder=conceal_fixtures.EMBEDDER)
            assert report.failed == [] and report.added == len(batch)
        assert kb.status()["index"]["avgdl_scope"] == "fixed"
    return kb_dir


@pytest.fixture(scope="module", params=BACKENDS)
def kbs(request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    root = tmp_path_factory.mktemp("qdrant-differential")
    d = differential
    made = {"full": _conceal_kb(root, "full", [d.HR, d.EMPLOYEE, d.PUBLIC], request.param),
            "p0": _conceal_kb(root, "p0", [d.PUBLIC], request.param),
            "alice": _conceal_kb(root, "alice", [d.EMPLOYEE, d.PUBLIC], request.param)}
    yield made
    for kb_dir in made.values():
        drop_collections(kb_dir)


@pytest.mark.parametrize("principal", [conceal_fixtures.P0, conceal_fixtures.ALICE],
                         ids=lambda p: p.principal_id)
def test_conceal_python_output_is_identical_without_hidden_documents(
        kbs: dict[str, Path], principal: Principal) -> None:
    differential.test_python_api_output_is_identical_without_hidden_documents(kbs, principal)
    # Not vacuous: the hidden documents are there for an admin, and shift row ids.
    with KnowledgeBase.open(kbs["full"]) as kb:
        admin = kb.search("salary bonus payroll", principal=Principal("a", admin=True))
        assert {h.chunk.doc_id for h in admin.hits} >= {"hr-0", "hr-5"}
        assert kb.search("salary bonus payroll", principal=principal).blocked_count == 0


def test_conceal_orders_equal_scores_by_doc_id(kbs: dict[str, Path]) -> None:
    differential.test_equal_scores_are_ordered_by_doc_id(kbs)


@pytest.mark.parametrize("principal", [conceal_fixtures.P0, conceal_fixtures.ALICE],
                         ids=lambda p: p.principal_id)
def test_conceal_http_output_is_identical_without_hidden_documents(
        kbs: dict[str, Path], principal: Principal) -> None:
    differential.test_http_output_is_identical_without_hidden_documents(kbs, principal)


def test_conceal_scores_with_readable_statistics(kbs: dict[str, Path]) -> None:
    # The same chunk, asked by the same public principal, scores the same whatever else is
    # hidden in the collection; an admin is scored with the whole collection's statistics.
    with KnowledgeBase.open(kbs["full"]) as full, KnowledgeBase.open(kbs["p0"]) as alone:
        seen = full.search("refund days", principal=conceal_fixtures.P0).hits
        truth = alone.search("refund days", principal=conceal_fixtures.P0).hits
        assert [(h.chunk.chunk_id, h.score) for h in seen] == \
            [(h.chunk.chunk_id, h.score) for h in truth]
        admin = {h.chunk.chunk_id: h.score for h in full.search(
            "refund days", principal=Principal("a", admin=True), top_k=50).hits}
        assert admin[seen[0].chunk.chunk_id] != seen[0].score
