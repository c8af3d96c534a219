"""The optional trafilatura HTML extractor: ``[ingest] html_extractor = "trafilatura"``."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from glassrag import KnowledgeBase
from glassrag.errors import InputFileError, MissingExtra
from glassrag.parsers import Parsed, ParseOptions, parse_bytes, parser_for

pytest.importorskip("trafilatura")

PAGE = b"""<!doctype html>
<html lang="en"><head><title>Otter care guide</title>
<meta name="description" content="How to look after otters"></head>
<body>
<div class="menu"><ul>
  <li><a href="/">Home</a></li><li><a href="/shop">Shop zebrawidgets now</a></li>
  <li><a href="/about">About us</a></li>
</ul></div>
<div id="content"><div class="post">
<h1>Caring for river otters</h1>
<p>River otters need a large pool of clean water and a dry den to rest in during the day.
Keepers refresh the water every morning and check the den for damp bedding.</p>
<h2>Feeding</h2>
<p>Adult otters eat fish, crayfish and frogs; a zoo otter gets about one kilogram of fish
spread over several meals, so that it keeps foraging through the day.</p>
</div></div>
<div class="footer">Copyright 2024 Zebrawidget Corp. All rights reserved. Privacy policy.</div>
</body></html>
"""


def _parse(raw: bytes) -> Parsed:
    parser = parser_for(".html")
    assert parser is not None
    return parse_bytes(parser, raw, "otters", ParseOptions(html_extractor="trafilatura"))


def test_trafilatura_keeps_the_body_and_drops_the_boilerplate() -> None:
    parsed = _parse(PAGE)
    assert "River otters need a large pool of clean water" in parsed.text
    assert "one kilogram of fish" in parsed.text
    assert "zebrawidget" not in parsed.text.lower()
    assert "# Feeding" in parsed.text.split("\n") or "## Feeding" in parsed.text.split("\n")
    assert parsed.title in ("Otter care guide", "Caring for river otters")  # <title> or h1
    assert parsed.metadata.get("lang") == "en"
    assert max(len(line) for line in parsed.text.split("\n")) <= 100


def test_the_nesting_check_still_runs_first() -> None:
    deep = b"<html><body>" + b"<div>" * 600 + b"text" + b"</div>" * 600 + b"</body></html>"
    with pytest.raises(InputFileError, match="nested deeper than 512"):
        _parse(deep)


def test_missing_trafilatura_is_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "trafilatura" or name.startswith("trafilatura."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingExtra) as caught:
        _parse(PAGE)
    assert str(caught.value) == (
        "trafilatura is not installed; install it with: pip install 'glassrag[parsers]'"
    )


def _kb_with_extractor(tmp_path: Path, extractor: str | None) -> KnowledgeBase:
    kb_dir = tmp_path / "kb"
    KnowledgeBase.init(kb_dir).close()
    config = kb_dir / "glassrag.toml"
    text = config.read_text(encoding="utf-8")
    if extractor is not None:
        assert '\nhtml_extractor = "builtin"' in text
        text = text.replace('\nhtml_extractor = "builtin"', f'\nhtml_extractor = "{extractor}"')
        config.write_text(text, encoding="utf-8")
    return KnowledgeBase.open(kb_dir)


def _chunk_text(kb: KnowledgeBase, page: Path) -> str:
    report = kb.ingest([page])
    assert report.failed == []
    hits = kb.search("otters pool water den").hits
    assert hits
    return "\n".join(hit.chunk.text for hit in kb.search("otters").hits)


def test_the_setting_is_read_from_glassrag_toml(tmp_path: Path) -> None:
    page = tmp_path / "pages" / "otters.html"
    page.parent.mkdir()
    page.write_bytes(PAGE)
    kb = _kb_with_extractor(tmp_path, "trafilatura")
    try:
        text = _chunk_text(kb, page)
        assert "River otters need a large pool" in text
        assert "zebrawidget" not in text.lower()
        assert kb.search("zebrawidgets shop").hits == []
    finally:
        kb.close()


def test_the_builtin_default_keeps_what_trafilatura_drops(tmp_path: Path) -> None:
    page = tmp_path / "pages" / "otters.html"
    page.parent.mkdir()
    page.write_bytes(PAGE)
    kb = _kb_with_extractor(tmp_path, None)
    try:
        report = kb.ingest([page])
        assert report.failed == []
        assert kb.search("zebrawidgets shop").hits  # builtin has no <nav>/<footer> to drop
    finally:
        kb.close()


def test_missing_trafilatura_fails_only_that_file(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "pages" / "otters.html"
    page.parent.mkdir()
    page.write_bytes(PAGE)
    (page.parent / "notes.md").write_text("# Notes\n\nplatypus sightings are rare\n")
    kb = _kb_with_extractor(tmp_path, "trafilatura")
    kb.close()
    # The import is made to fail in this process only, so parse here, not in the helper.
    config = tmp_path / "kb" / "glassrag.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "parse_in_subprocess = true", "parse_in_subprocess = false"), encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kb")
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "trafilatura" or name.startswith("trafilatura."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    try:
        report = kb.ingest([page.parent])
        assert len(report.failed) == 1
        failure = report.failed[0]
        assert "otters.html" in str(failure)
        assert "trafilatura is not installed" in str(failure)
        assert kb.search("platypus").hits
    finally:
        kb.close()


def test_changing_the_setting_re_reads_the_page(tmp_path: Path) -> None:
    page = tmp_path / "pages" / "otters.html"
    page.parent.mkdir()
    page.write_bytes(PAGE)
    kb = _kb_with_extractor(tmp_path, None)
    try:
        assert kb.ingest([page]).failed == []
        assert kb.search("zebrawidgets shop").hits
    finally:
        kb.close()
    config = tmp_path / "kb" / "glassrag.toml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        '\nhtml_extractor = "builtin"', '\nhtml_extractor = "trafilatura"'), encoding="utf-8")
    kb = KnowledgeBase.open(tmp_path / "kb")
    try:
        assert kb.ingest([page]).failed == []
        assert kb.search("zebrawidgets shop").hits == []
        assert kb.search("otters pool water den").hits
    finally:
        kb.close()
