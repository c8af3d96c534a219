"""Files holding a list of records: JSON Lines (one object a line), or a JSON or YAML
document that is a list or a mapping with one key holding the list. Each record comes with
the 1-based line it starts on (when known), so every later error can name it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from glassrag.errors import InvalidInput

SUFFIXES = (".jsonl", ".json", ".yaml", ".yml")


def parse_records(path: Path, text: str, key: str) -> list[tuple[int | None, Any]]:
    """``(line, record)`` pairs of ``text`` read as ``path``'s suffix says; ``key`` names the
    list in a JSON or YAML mapping (``cases``, ``questions``). Syntax errors name the line."""
    if path.suffix.lower() == ".jsonl":
        return _parse_jsonl(path, text)
    return _parse_document(path, text, path.suffix.lower(), key)


def _parse_jsonl(path: Path, text: str) -> list[tuple[int | None, Any]]:
    out: list[tuple[int | None, Any]] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            out.append((lineno, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}: line {lineno}: invalid JSON: {exc.msg} at column "
                               f"{exc.colno}", path=str(path), line=lineno) from exc
    return out


def _parse_document(path: Path, text: str, suffix: str, key: str,
                    ) -> list[tuple[int | None, Any]]:
    lines: list[int | None] = []
    try:
        if suffix == ".json":
            data = json.loads(text) if text.strip() else None
        else:
            data = yaml.safe_load(text)
            lines = yaml_item_lines(text, key)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}",
                           path=str(path), line=exc.lineno) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidInput(f"{path}: invalid YAML{at}: {problem}", path=str(path)) from exc
    if isinstance(data, dict):
        extra = sorted(str(k) for k in data if k != key)
        if extra:
            raise InvalidInput(f"{path}: unknown top-level key(s) {', '.join(extra)}; the file "
                               f"is a list of {key} or a mapping with one key, {key!r}",
                               path=str(path), field=extra[0])
        data = data.get(key)
    if data is None:
        return []
    if not isinstance(data, list):
        raise InvalidInput(f"{path}: field {key!r}: expected a list of {key}, got "
                           f"{type(data).__name__}", path=str(path), field=key)
    lines = lines if len(lines) == len(data) else [None] * len(data)
    return list(zip(lines, data, strict=True))


def yaml_item_lines(text: str, key: str) -> list[int | None]:
    """1-based first line of each item of a YAML list (top level, or under ``key``); empty
    if the shape is odd."""
    node = yaml.compose(text)
    if isinstance(node, yaml.MappingNode):
        node = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [item.start_mark.line + 1 for item in node.value]
