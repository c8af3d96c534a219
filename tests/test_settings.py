"""The one settings model: the glassrag.toml that ``init`` writes against it, the sections the
answerer, LLM client and dense retriever take as they are, and bad values named."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from glassrag import KnowledgeBase
from glassrag.dense.retriever import hnsw_params
from glassrag.errors import InvalidInput
from glassrag.llm.profiles import PROFILES, STRUCTURED_MODES
from glassrag.records import Fusion, Mode
from glassrag.settings import (
    DEFAULT_CONFIG,
    LLM_PROFILES,
    AnswerSettings,
    DenseSettings,
    LLMSettings,
    Settings,
    load_settings,
)
from glassrag.vectors.index import HnswParams

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_KEY = re.compile(r"^(#\s*)?([a-z0-9_]+) = ")
_SECTION = re.compile(r"^\[([a-z_]+)\]$")


def _config_lines() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in DEFAULT_CONFIG.splitlines():
        found = _SECTION.match(line)
        if found:
            current = found.group(1)
            sections[current] = []
        elif current is not None:
            sections[current].append(line)
    return sections


def _sections() -> dict[str, type[BaseModel]]:
    return {name: info.annotation for name, info in Settings.model_fields.items()}  # type: ignore[misc]


def test_the_written_config_is_the_model_every_field_with_its_default_and_a_comment() -> None:
    written = tomllib.loads(DEFAULT_CONFIG)
    defaults = Settings().model_dump(mode="json")
    lines = _config_lines()
    assert sorted(lines) == sorted(_sections()), "the same sections"
    for section, model in _sections().items():
        fields = model.model_fields
        keys: list[str] = []
        previous = ""
        for line in lines[section]:
            key = _KEY.match(line)
            if key is None or key.group(2) not in fields:
                assert not (key and not key.group(1)), f"[{section}] {line!r} is no setting"
                previous = line
                continue
            name, commented = key.group(2), bool(key.group(1))
            keys.append(name)
            # Each group of keys is introduced by a comment saying what they do.
            assert previous.startswith("#") or _KEY.match(previous), \
                f"[{section}] {name} has no comment"
            if defaults[section][name] is None:
                assert commented, f"[{section}] {name} has no value by default: comment it out"
            else:
                assert not commented, f"[{section}] {name} is written commented out"
                assert written[section][name] == defaults[section][name], f"[{section}] {name}"
            previous = line
        assert sorted(keys) == sorted(fields), f"[{section}] every field once, nothing else"
        assert set(written.get(section, {})) <= set(fields)


def test_init_writes_that_config_and_it_reads_back_as_the_defaults(tmp_path: Path) -> None:
    KnowledgeBase.init(tmp_path / "kb").close()
    assert (tmp_path / "kb" / "glassrag.toml").read_text(encoding="utf-8") == DEFAULT_CONFIG
    assert load_settings(tmp_path / "kb") == Settings()


def test_one_model_per_section_used_as_it_is() -> None:
    from glassrag.answer import extractive
    from glassrag.llm import client, profiles

    assert extractive.AnswerSettings is AnswerSettings
    assert profiles.LLMSettings is client.LLMSettings is LLMSettings
    assert Settings().answer == AnswerSettings() and Settings().llm == LLMSettings()
    # The profile names and structured-output modes are listed once, in settings.
    assert tuple(PROFILES) == LLM_PROFILES
    assert STRUCTURED_MODES == ("json_schema", "json_object", "text")
    # The vector index's parameters come from [dense]: same defaults, one conversion.
    assert hnsw_params(DenseSettings()) == HnswParams()
    assert hnsw_params(DenseSettings(hnsw_threshold=7, target_recall=0.5)) == \
        HnswParams(threshold=7, target_recall=0.5)


def test_settings_import_no_llm_or_vector_code() -> None:
    import ast

    import glassrag.settings as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert {m for m in imported if m and m.startswith("glassrag.")} <= {
        "glassrag.errors", "glassrag.records"}


def test_enums_read_from_toml_and_written_as_strings(tmp_path: Path) -> None:
    (tmp_path / "glassrag.toml").write_text('[search]\nmode = "hybrid"\n[dense]\nfusion = "rrf"\n')
    settings = load_settings(tmp_path)
    assert settings.search.mode is Mode.HYBRID and settings.dense.fusion is Fusion.RRF
    assert settings.model_dump(mode="json")["search"]["mode"] == "hybrid"
    (tmp_path / "glassrag.toml").write_text('[search]\nmode = "semantic"\n')
    with pytest.raises(InvalidInput, match=r"search\.mode: Input should be 'bm25', 'dense'"):
        load_settings(tmp_path)


def test_bad_values_built_in_python_are_invalid_input_naming_the_field() -> None:
    with pytest.raises(InvalidInput, match="min_coverage") as caught:
        AnswerSettings(min_coverage=2.0)
    assert caught.value.details["field"] == "min_coverage"
    with pytest.raises(InvalidInput, match="unknown LLM profile 'claude'"):
        LLMSettings().with_profile("claude")
    assert LLMSettings().with_profile(None).profile == "openai"
    assert LLMSettings(profile="ollama").with_profile(None).profile == "ollama"
    assert LLMSettings(profile="ollama").with_profile("vllm").profile == "vllm"


def test_the_names_are_the_documented_strings() -> None:
    from glassrag.records import NAMED_MODES, STATUSES, Status

    assert [m.value for m in Mode] == ["bm25", "dense", "hybrid", "overlap", "terms"]
    assert [m.value for m in NAMED_MODES] == ["bm25", "dense", "hybrid", "overlap"]
    assert tuple(Status) == STATUSES and [s.value for s in Status] == [
        "answered", "no_evidence", "blocked_by_permission", "unverified"]
    assert [f.value for f in Fusion] == ["rrf", "weighted"]
    assert f"{Mode.BM25}" == str(Mode.BM25) == "bm25" and Mode("bm25") is Mode.BM25
