"""The OpenAI-compatible stub server as a fixture, with the environment pointing at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llm_stub import StubLLM


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubLLM]:
    with StubLLM() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "stub-model")
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        yield server
