"""One way to import an optional dependency: :func:`glassrag.errors.needs_extra`."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import glassrag
from glassrag.errors import MissingExtra, needs_extra
from glassrag.parsers import ParseOptions

SOURCE = Path(glassrag.__file__).parent


def test_a_missing_module_names_the_package_and_its_extra(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docx", None)
    with pytest.raises(MissingExtra) as caught, needs_extra("parsers", "python-docx"):
        import docx  # noqa: F401
    assert caught.value.message == ("python-docx is not installed; install it with: "
                                    "pip install 'glassrag[parsers]'")
    assert caught.value.details == {"package": "python-docx", "extra": "parsers"}
    assert isinstance(caught.value.__cause__, ImportError)


def test_without_a_package_name_the_missing_module_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    with pytest.raises(MissingExtra, match=r"^uvicorn is not installed.*glassrag\[server\]"), \
            needs_extra("server"):
        import uvicorn  # noqa: F401


def test_other_errors_pass_through() -> None:
    with pytest.raises(ValueError, match="not an import"), needs_extra("parsers", "pypdf"):
        raise ValueError("not an import")


def _word() -> Any:
    from glassrag.parsers import word

    return word.parse(b"", "x", ParseOptions())


def _slides() -> Any:
    from glassrag.parsers import slides

    return slides.parse(b"", "x", ParseOptions())


def _pdf() -> Any:
    from glassrag.parsers import pdf

    return pdf.parse(b"%PDF-1.4\n%%EOF\n", "x", ParseOptions())


def _html() -> Any:
    from glassrag.parsers import webpage

    return webpage.parse(b"<p>x</p>", "x", ParseOptions())


def _faiss() -> Any:
    from glassrag.vectors.faisslib import load_faiss

    return load_faiss()


def _torch_model() -> Any:
    from glassrag.dense.local_models import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder("some-model", runtime="torch").embed(["x"])


def _numpy_model() -> Any:
    from glassrag.dense.local_models import SentenceTransformerEmbedder

    # tokenizers is imported before the model directory is read.
    return SentenceTransformerEmbedder("some-model", runtime="numpy")._load_numpy()


def _openai() -> Any:
    from glassrag.llm.client import post

    return post(None, None, {})  # type: ignore[arg-type]  # the import comes first


@pytest.mark.parametrize(("call", "hidden", "package", "extra"), [
    (_word, "docx", "python-docx", "parsers"),
    (_slides, "pptx", "python-pptx", "parsers"),
    (_pdf, "pypdf", "pypdf", "parsers"),
    (_html, "selectolax.lexbor", "selectolax", "parsers"),
    (_faiss, "faiss", "faiss-cpu", "dense"),
    (_openai, "openai", "openai", "llm"),
    (_torch_model, "sentence_transformers", "sentence-transformers", "dense"),
    (_numpy_model, "tokenizers", "tokenizers", "minilm"),
])
def test_each_optional_import_names_its_package(
        monkeypatch: pytest.MonkeyPatch, call: Callable[[], Any], hidden: str, package: str,
        extra: str) -> None:
    monkeypatch.setitem(sys.modules, hidden, None)
    with pytest.raises(MissingExtra) as caught:
        call()
    assert caught.value.details == {"package": package, "extra": extra}


def test_no_module_writes_its_own_import_or_raise() -> None:
    copies = [f"{path.relative_to(SOURCE)}:{n}"
              for path in SOURCE.rglob("*.py") if path.name != "errors.py"
              for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\bMissingExtra\(", line)]
    assert copies == []
