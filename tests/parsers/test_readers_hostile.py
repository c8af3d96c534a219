"""Hostile text inputs: front matter and JSONL that used to raise, expand or hang.

Each case must come back as one error naming the file (or ``FILE:LINE``), with the rest of
the file (other JSONL lines) and of the batch unaffected.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from glassrag.parsers import Limits, ParseOptions
from glassrag.parsers.readers import read_file


def put(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def only_error(path: Path, **kwargs: object) -> str:
    result = read_file(path, **kwargs)  # type: ignore[arg-type]
    assert result.documents == [], result.documents
    [failure] = result.errors
    assert failure.path == str(path)
    return failure.error


def test_an_impossible_front_matter_date_is_that_files_error(tmp_path: Path) -> None:
    path = put(tmp_path / "leap.md", "---\ntitle: Leap\ndate: 2023-02-29\n---\n# Leap\nBody.\n")
    assert only_error(path) == (
        "front matter: invalid YAML at line 3: invalid date '2023-02-29' (day is out of range "
        "for month); quote it to keep it as text")
    quoted = put(tmp_path / "quoted.md", '---\ndate: "2023-02-29"\nok: 2024-02-29\n---\nBody.\n')
    [doc] = read_file(quoted).documents
    assert doc.metadata == {"date": "2023-02-29", "ok": "2024-02-29"}


@pytest.mark.parametrize(
    ("name", "front"),
    [
        ("flow.md", "a: " + "[" * 5000 + "]" * 5000),  # past libyaml's own 1,000-level stop
        ("block.md", "".join(" " * i + f"k{i}:\n" for i in range(100))),
        ("mixed.md", "a: " + "[" * 65 + "1" + "]" * 65),
    ],
)
def test_deeply_nested_front_matter_is_that_files_error(
    tmp_path: Path, name: str, front: str
) -> None:
    path = put(tmp_path / name, f"---\n{front}\n---\nBody.\n")
    error = only_error(path)
    assert error.startswith("front matter: invalid YAML at line ")
    assert "nested deeper than 64 levels" in error or "maximum nesting depth" in error


def test_front_matter_nesting_up_to_the_cap_loads(tmp_path: Path) -> None:
    path = put(tmp_path / "deep-ok.md", "---\na: " + "[" * 63 + "1" + "]" * 63 + "\n---\nBody.\n")
    [doc] = read_file(path).documents
    value = doc.metadata["a"]
    for _ in range(63):
        [value] = value
    assert value == 1


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    levels = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]"
               for i in range(3)]  # small enough to load at once without the refusal
    path = put(tmp_path / "lol.md", "---\n" + "\n".join(levels) + "\n---\nBody.\n")
    assert only_error(path) == (
        "front matter: invalid YAML at line 3: aliases (*name) are not accepted in front matter")


def test_a_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    path = put(tmp_path / "loop.md", "---\nloop: &x [*x]\n---\nBody.\n")
    assert "aliases (*name) are not accepted" in only_error(path)


def test_oversized_front_matter_is_refused_before_parsing(tmp_path: Path) -> None:
    front = "".join(f"key{i}: value number {i}\n" for i in range(6000))  # ~150 KB
    path = put(tmp_path / "big.md", f"---\n{front}---\nBody.\n")
    assert only_error(path) == (
        f"front matter is {len(front) - 1:,} characters, over the 100,000-character cap")
    roomy = ParseOptions(limits=Limits(max_front_matter_chars=200_000))
    [doc] = read_file(path, parse_options=roomy).documents
    assert len(doc.metadata) == 6000


@pytest.mark.parametrize("depth", [100, 100_000])
def test_deeply_nested_jsonl_metadata_fails_that_line_only(tmp_path: Path, depth: int) -> None:
    nested = '{"a":' * depth + "1" + "}" * depth
    lines = [json.dumps({"doc_id": "before", "text": "First."}),
             '{"doc_id": "deep", "text": "x", "metadata": ' + nested + "}",
             json.dumps({"doc_id": "after", "text": "Last."})]
    path = put(tmp_path / "deep.jsonl", "\n".join(lines) + "\n")
    result = read_file(path)
    assert [d.doc_id for d in result.documents] == ["before", "after"]
    [failure] = result.errors
    assert failure.path == f"{path}:2"
    assert failure.error in ("line 2: invalid JSON: nested too deeply",
                             "line 2: nested deeper than 64 levels")


def test_jsonl_metadata_nesting_up_to_the_cap_loads(tmp_path: Path) -> None:
    nested = '{"a":' * 62 + "1" + "}" * 62  # the record and metadata are two more levels
    path = put(tmp_path / "ok.jsonl", '{"doc_id": "d", "text": "x", "metadata": ' + nested + "}")
    [doc] = read_file(path).documents
    assert "a" in doc.metadata
