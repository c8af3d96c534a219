"""Embedders: spec parsing, validation, the hash embedder, an OpenAI-compatible endpoint
(a real HTTP stub server on 127.0.0.1 with scripted replies) and the real bundled model."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import numpy as np
import pytest

import dense_fixtures
from conftest import top_rows
from embedder_fixtures import Stub, api, vectors_body
from embedder_fixtures import stub as stub  # noqa: F401 - the fixture
from glassrag.dense.base import BaseEmbedder
from glassrag.dense.embedders import parse_embedder
from glassrag.dense.hash_embedder import HashEmbedder
from glassrag.dense.local_models import SentenceTransformerEmbedder, bundled_model_path
from glassrag.dense.openai_embedder import OpenAIEmbedder
from glassrag.errors import EmbeddingError, InvalidInput, MissingExtra
from glassrag.text.analysis import analyze
from glassrag.vectors.index import VectorIndex, VectorRows

REFUND = "Refunds are issued to the original payment method within 14 days of the request."
CORPUS = [
    REFUND,
    "The cafeteria serves lunch from noon until two o'clock.",
    "Passwords must be rotated every ninety days.",
    "Pets are welcome in the office on Fridays.",
]
# Paraphrases that share no analysed term with the passage they ask about.
PARAPHRASES = [("How do I get my money back?", 0), ("Can I bring my dog to work?", 3)]

# The real-model fixtures (they skip when the model or sentence-transformers is missing).
minilm_path = dense_fixtures.minilm_path
minilm = dense_fixtures.minilm


# -- spec parsing and validation -------------------------------------------------------
def test_parse_specs_are_cheap_and_named() -> None:
    assert parse_embedder("hash:64").name == "hash:64"
    st = parse_embedder("st:sentence-transformers/all-MiniLM-L6-v2?batch_size=8")
    assert isinstance(st, SentenceTransformerEmbedder)
    assert (st.name, st.batch_size, st._model) == ("st:all-MiniLM-L6-v2", 8, None)
    assert parse_embedder("st:/models/e5").name == "st:/models/e5"
    api = parse_embedder("openai:nomic-embed-text:latest?base_url=http://h:1/v1&timeout=2",
                         api_key_env="MY_KEY")
    assert isinstance(api, OpenAIEmbedder)
    assert (api.name, api.endpoint, api.timeout, api.api_key_env) == (
        "openai:nomic-embed-text:latest", "http://h:1/v1/embeddings", 2.0, "MY_KEY")
    assert not api._dim  # nothing asked of the server yet


@pytest.mark.parametrize("spec, message", [
    ("minilm", "must look like"), ("st:", "names no model"), ("foo:bar", "unknown embedder"),
    ("hash:4", "8..65536"), ("hash:x", "invalid literal"), ("st:m?colour=red", "colour"),
])
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_embedder(spec)


class Scripted(BaseEmbedder):
    """Returns whatever the test put in ``replies``, one array per batch."""

    def __init__(self, replies: list[np.ndarray], dim: int = 4) -> None:
        self.name, self.batch_size, self._dim, self.replies = "scripted", 2, dim, replies

    @property
    def dim(self) -> int:
        return self._dim

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self.replies.pop(0)


def test_validation_of_inputs_and_outputs() -> None:
    ok = np.array([[3.0, 4.0, 0, 0], [0, 0, 0, 2.0]])
    calls: list[tuple[int, int]] = []
    out = Scripted([ok, ok[:1]]).embed(["a", "b", "c"], progress=lambda d, t: calls.append((d, t)))
    assert out.dtype == np.float32 and out.shape == (3, 4)
    np.testing.assert_allclose(out[0], [0.6, 0.8, 0, 0])
    assert calls == [(2, 3), (3, 3)]
    assert Scripted([]).embed([]).shape == (0, 4)
    with pytest.raises(InvalidInput, match="text 1 is empty"):
        Scripted([ok]).embed(["a", "  "])
    with pytest.raises(EmbeddingError, match="text 3 contains NaN"):
        Scripted([ok, np.array([[1.0, 0, 0, 0], [np.nan, 0, 0, 0]])]).embed(list("abcd"))
    with pytest.raises(EmbeddingError, match="text 1 is all zeros"):
        Scripted([np.array([[1.0, 0, 0, 0], [0, 0, 0, 0]])]).embed(["a", "b"])
    with pytest.raises(EmbeddingError, match="dimension 3, expected 4"):
        Scripted([np.ones((2, 3))]).embed(["a", "b"])
    with pytest.raises(EmbeddingError, match="expected 2 vectors"):
        Scripted([np.ones((1, 4))]).embed(["a", "b"])


def test_hash_embedder_is_deterministic_and_lexical() -> None:
    embedder = HashEmbedder(256)
    a, b, c = embedder.embed([REFUND, REFUND.upper(), "Refunds, refunds, refunds!"])
    np.testing.assert_allclose(np.linalg.norm([a, b, c], axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(a, b)  # same analysed tokens, same vector
    assert float(a @ c) > 0.2  # share "refund"
    # Deterministic across processes: pinned values, not Python's salted hash().
    assert np.flatnonzero(HashEmbedder(64).embed(["refund"])[0]).tolist() == \
        np.flatnonzero(HashEmbedder(64).embed(["refunds"])[0]).tolist()
    # Lexical, not semantic: a paraphrase with no shared term scores ~0.
    query = embedder.embed([PARAPHRASES[0][0]])[0]
    assert float(query @ a) < 0.2
    assert embedder.embed(["the of and"]).shape == (1, 256)  # stop words only still embed


def test_missing_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    embedder = parse_embedder("st:all-MiniLM-L6-v2?runtime=torch")
    with pytest.raises(MissingExtra, match=r"sentence-transformers is not installed"):
        embedder.embed(["x"])


def test_openai_success_batches_and_key(stub: tuple[Stub, str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    script, base = stub
    monkeypatch.setenv("EMB_KEY", "sk-test-123")
    script.reply(200, vectors_body(2, 8))
    script.reply(200, vectors_body(1, 8))
    out = api(base, batch_size=2, api_key_env="EMB_KEY").embed(["a", "b", "c"])
    assert out.shape == (3, 8)
    assert out[0] @ out[1] < 0.999  # rows kept in "index" order, not reply order
    assert [r["body"]["input"] for r in script.requests] == [["a", "b"], ["c"]]
    assert script.requests[0]["body"]["model"] == "text-embedding-3-small"
    assert script.requests[0]["auth"] == "Bearer sk-test-123"
    assert script.requests[0]["path"] == "/v1/embeddings"


def test_openai_retries_429_then_succeeds(stub: tuple[Stub, str]) -> None:
    script, base = stub
    script.reply(429, {"error": {"message": "slow down"}}, Retry_After="0")
    script.reply(200, vectors_body(1, 4))
    assert api(base).embed(["x"]).shape == (1, 4)
    assert len(script.requests) == 2


def test_openai_5xx_gives_up_naming_endpoint_and_status(stub: tuple[Stub, str]) -> None:
    script, base = stub
    script.reply(500, b"internal trouble")
    with pytest.raises(EmbeddingError) as caught:
        api(base, max_retries=2).embed(["x"])
    message = caught.value.message
    assert f"{base}/embeddings: HTTP 500" in message and "after 3 attempts" in message
    assert "internal trouble" in message and caught.value.details["http_status"] == 500
    assert len(script.requests) == 3


def test_openai_401_hints_at_the_key_without_showing_it(stub: tuple[Stub, str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    script, base = stub
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    script.reply(401, {"error": {"message": "bad key"}})
    with pytest.raises(EmbeddingError, match=r"HTTP 401.*\$OPENAI_API_KEY") as caught:
        api(base).embed(["x"])
    assert "sk-secret-value" not in caught.value.message
    assert len(script.requests) == 1  # 4xx other than 429 is not retried


@pytest.mark.parametrize("body, message", [
    (vectors_body(1, 6), "dimension 6, expected 8"),
    (b'{"data": [{"index": 0, "embedding": [NaN, 1.0, 0, 0, 0, 0, 0, 0]}]}', "NaN"),
    ({"data": []}, "asked for 1 embeddings, got 0"),
    ({"result": "?"}, "unexpected reply shape"),
    (b"<html>gateway</html>", "not JSON"),
])
def test_openai_bad_replies(stub: tuple[Stub, str], body: Any, message: str) -> None:
    script, base = stub
    script.reply(200, body)
    with pytest.raises(EmbeddingError, match=message):
        api(base, dim=8).embed(["x"])


def test_dimension_learned_then_enforced(stub: tuple[Stub, str]) -> None:
    script, base = stub
    script.reply(200, vectors_body(1, 5))
    script.reply(200, vectors_body(1, 7))
    embedder = api(base, batch_size=1)
    assert embedder.dim == 5  # a probe request
    with pytest.raises(EmbeddingError, match="dimension 7, expected 5"):
        embedder.embed(["x"])


@pytest.mark.parametrize(("status", "padding"), [(200, ""), (503, "p" * 1500)],
                         ids=["body", "headers"])
def test_openai_reply_trickled_past_the_deadline_is_cut_off(
        stub: tuple[Stub, str], status: int, padding: str) -> None:
    script, base = stub
    script.trickle = 0.2  # each piece well within the 1 s timeout; the whole, seconds longer
    script.reply(status, vectors_body(1, 64), X_Padding=padding)
    with pytest.raises(EmbeddingError) as caught:
        api(base, timeout=1, deadline=0.5, max_retries=1).embed(["x"])
    assert caught.value.message == (f"{base}/embeddings: no complete reply within the 0.5s "
                                    "deadline after 2 attempts (the embedder's deadline option)")
    assert len(script.requests) == 2  # a late reply is retried like a timeout


def test_openai_transient_statuses_and_retry_after_dates(stub: tuple[Stub, str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    script, base = stub
    waits: list[float] = []
    caller, real_sleep = threading.get_ident(), time.sleep

    def wait(seconds: float) -> None:  # a stub thread left by an earlier test sleeps too
        if threading.get_ident() == caller:
            waits.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", wait)
    # 408 and 409 are retried as the openai SDK retries them; an HTTP-date Retry-After
    # in the past means "now".
    script.reply(408, {"error": {"message": "timeout"}})
    script.reply(409, {"error": {"message": "busy"}}, Retry_After="Wed, 21 Oct 2015 07:28:00 GMT")
    script.reply(200, vectors_body(1, 4))
    assert api(base).embed(["x"]).shape == (1, 4)
    assert len(script.requests) == 3 and waits == [0.0, 0.0]


def test_unreachable_endpoint() -> None:
    with pytest.raises(EmbeddingError, match=r"127\.0\.0\.1:9/v1/embeddings: unreachable"):
        api("http://127.0.0.1:9/v1", max_retries=1, timeout=2).embed(["x"])


# -- the real model (bundled all-MiniLM-L6-v2) -------------------------------------------
@pytest.mark.model
def test_bundled_model_resolves_and_embeds(minilm: SentenceTransformerEmbedder) -> None:
    assert minilm._resolve() == str(bundled_model_path())
    vectors = minilm.embed(CORPUS)
    assert minilm.dim == 384 and vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


@pytest.mark.model
@pytest.mark.parametrize("query, expected", PARAPHRASES)
def test_dense_finds_paraphrases_that_lexical_misses(minilm: SentenceTransformerEmbedder,
                                                     query: str, expected: int) -> None:
    assert not set(analyze(query)) & set(analyze(CORPUS[expected]))  # BM25 scores it 0
    index = VectorIndex(minilm.dim, minilm.name)
    index.rebuild(VectorRows(np.arange(len(CORPUS)), [f"d{i}" for i in range(len(CORPUS))],
                             np.ones(len(CORPUS)), minilm.embed(CORPUS)), 1)
    best = top_rows(index, minilm.embed([query])[0], {1}, 2)
    assert best[0][0] == expected and best[0][1] > best[1][1] + 0.1
    lexical = HashEmbedder(256)
    assert lexical.embed([query])[0] @ lexical.embed([CORPUS[expected]])[0] < 0.2


@pytest.mark.model
def test_missing_local_model_is_a_clear_error(minilm_path: str) -> None:
    with pytest.raises(EmbeddingError, match="cannot load the model.*local files only"):
        parse_embedder("st:/nonexistent/model-dir").embed(["x"])
