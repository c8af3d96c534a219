"""Questions about your own documentation, and the rules that judge an answer to one.

A question file is JSON Lines, one object a line (or a YAML or JSON list of the same
objects)::

    {"id": "net-001", "question": "What is the default timeout?", "answerable": true,
     "answers": ["30 seconds"],
     "evidence": [{"path": "docs/client.md", "line_start": 12, "line_end": 13}],
     "kind": "value", "lang": "en", "corpus": "client-docs"}

``id``, ``question`` and ``answerable`` are required. An answerable question needs at least
one gold string in ``answers`` (alternatives: any one of them counts) and at least one
``evidence`` span; ``path`` is relative to the documentation folder. ``kind`` (default
``unanswerable`` for unanswerable questions, else ``other``), ``lang`` and ``corpus`` only
group the figures.

The rules (the same as the docs-qa benchmark's scorer):

* an answer holds a gold string when, after :func:`normalise_answer` of both, the gold string
  is a substring of the answer;
* a citation (or a retrieved hit) matches an evidence span when its path ends with the span's
  path on a ``/`` boundary and its line range overlaps the span's.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassrag.errors import InvalidInput
from glassrag.eval.record_files import SUFFIXES, parse_records

if TYPE_CHECKING:
    from glassrag.records import Answer

_WHITESPACE = re.compile(r"\s+")
#: Fields that mark a JSONL file as a question file rather than a behavioural case file.
MARKERS = frozenset({"answerable", "evidence", "answers"})
KNOWN_FIELDS = frozenset({"id", "question", "answerable", "answers", "evidence", "kind",
                          "lang", "corpus"})


@dataclass(frozen=True)
class Span:
    """Lines ``line_start``..``line_end`` (1-based, inclusive) of the file at ``path``."""

    path: str
    line_start: int
    line_end: int


@dataclass(frozen=True)
class DocsQuestion:
    qid: str
    question: str
    answerable: bool
    answers: tuple[str, ...] = ()
    evidence: tuple[Span, ...] = ()
    kind: str = "other"
    lang: str = ""
    corpus: str = ""


# -- the judging rules ---------------------------------------------------------------------


def normalise_answer(text: str) -> str:
    """Compatibility-fold (NFKC), casefold, and drop invisible format characters (zero-width
    spaces, a BOM) and every whitespace character.

    Whitespace goes entirely, not just collapsed, because writers put spaces between CJK
    text and Latin letters or digits inconsistently: ``3 天`` and ``3天`` are one answer.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    visible = "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")
    return _WHITESPACE.sub("", visible)


def holds_answer(answer: str, golds: tuple[str, ...] | list[str]) -> bool:
    """True when ``answer`` contains one of ``golds`` once both are normalised."""
    text = normalise_answer(answer)
    return any(g and g in text for g in map(normalise_answer, golds))


def answer_text(answer: Answer) -> str:
    """The answer text without the ``Based on <source>`` prefixes of the renderer, so that
    a file name can never count as (part of) an answer. A heading path the label shows
    (``Based on CHANGES.md (Changelog › 1.6.0): ``) stays: it is what the answer says."""
    labels = [f"Based on {c.source}" for c in answer.citations]
    return "\n".join(_unlabelled(line, labels) for line in answer.answer.split("\n"))


def _unlabelled(line: str, labels: list[str]) -> str:
    for label in labels:
        if line.startswith(label + ": "):
            return line[len(label) + 2 :]
        if line.startswith(label + " ("):
            return line[len(label) :]
    return line


def _clean_path(path: str) -> str:
    path = path.replace("\\", "/").strip()
    while path.startswith("./"):
        path = path[2:]
    return path


def path_matches(cited: str, evidence_path: str) -> bool:
    """True when ``cited`` is ``evidence_path`` or ends with ``/`` + ``evidence_path``."""
    cited, wanted = _clean_path(cited or ""), _clean_path(evidence_path)
    return bool(cited and wanted) and (cited == wanted or cited.endswith("/" + wanted))


def overlaps(path: str, line_start: int | None, line_end: int | None, span: Span) -> bool:
    """True when lines ``line_start``..``line_end`` of ``path`` overlap ``span``.

    A range with one end missing is that one line; a range with neither never matches.
    """
    if not path_matches(path, span.path) or (line_start is None and line_end is None):
        return False
    start = line_end if line_start is None else line_start
    end = line_start if line_end is None else line_end
    assert start is not None and end is not None
    start, end = min(start, end), max(start, end)
    return start <= span.line_end and end >= span.line_start


def matches_any(path: str, line_start: int | None, line_end: int | None,
                spans: tuple[Span, ...]) -> bool:
    return any(overlaps(path, line_start, line_end, span) for span in spans)


# -- reading a question file ---------------------------------------------------------------


def is_question_file(path: str | Path) -> bool:
    """True when ``path`` is a record file (JSON Lines, JSON or YAML) whose first record has
    a question-file field (``answerable``, ``answers`` or ``evidence``); a behavioural case
    file has none."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES or not path.is_file():
        return False
    try:
        records = parse_records(path, path.read_text(encoding="utf-8-sig"), "questions")
    except (OSError, UnicodeDecodeError, InvalidInput):
        return False
    first = records[0][1] if records else None
    return isinstance(first, dict) and bool(MARKERS & first.keys())


def load_questions(path: str | Path) -> list[DocsQuestion]:
    """Read and check a question file: JSON Lines, or a JSON or YAML list of the same
    objects (or a mapping whose ``questions`` key holds it). Every problem names the file,
    the line and the field."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise InvalidInput(f"{path}: question files are .jsonl, .json, .yaml or .yml",
                           path=str(path), field="path")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read the question file: {exc}",
                           path=str(path)) from exc
    questions: list[DocsQuestion] = []
    seen: dict[str, str] = {}
    for index, (line, record) in enumerate(parse_records(path, text, "questions"), start=1):
        where = f"line {line}" if line is not None else f"question {index}"
        question = _check(path, where, record)
        if question.qid in seen:
            raise InvalidInput(f"{path}: {where}: field 'id': duplicate id {question.qid!r} "
                               f"(first on {seen[question.qid]})", path=str(path), line=line,
                               field="id")
        seen[question.qid] = where
        questions.append(question)
    if not questions:
        raise InvalidInput(f"{path}: the file holds no questions", path=str(path))
    return questions


def _check(path: Path, where: str, record: Any) -> DocsQuestion:
    def fail(key: str, problem: str) -> InvalidInput:
        return InvalidInput(f"{path}: {where}: field {key!r}: {problem}", path=str(path),
                            field=key)

    if not isinstance(record, dict):
        raise fail("id", "expected an object")
    unknown = sorted(set(record) - KNOWN_FIELDS)
    if unknown:
        raise fail(unknown[0], f"unknown field; known: {', '.join(sorted(KNOWN_FIELDS))}")
    for key in ("id", "question"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise fail(key, "required, a non-empty string")
    answerable = record.get("answerable")
    if not isinstance(answerable, bool):
        raise fail("answerable", "required, true or false")
    answers = record.get("answers", [])
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise fail("answers", "expected a list of strings")
    evidence = record.get("evidence", [])
    if not isinstance(evidence, list):
        raise fail("evidence", "expected a list of {path, line_start, line_end}")
    spans = tuple(_span(fail, n, item) for n, item in enumerate(evidence, start=1))
    if answerable and not any(a.strip() for a in answers):
        raise fail("answers", "an answerable question needs at least one gold string")
    if answerable and not spans:
        raise fail("evidence", "an answerable question needs at least one evidence span")
    if not answerable and (answers or spans):
        raise fail("answers" if answers else "evidence",
                   "an unanswerable question has no answers and no evidence")
    labels = {}
    for key in ("kind", "lang", "corpus"):
        value = record.get(key, "")
        if not isinstance(value, str):
            raise fail(key, "expected a string")
        labels[key] = value.strip()
    kind = labels["kind"] or ("other" if answerable else "unanswerable")
    return DocsQuestion(record["id"].strip(), record["question"], answerable,
                        tuple(a for a in answers if a.strip()), spans, kind,
                        labels["lang"], labels["corpus"])


def _span(fail: Any, number: int, item: Any) -> Span:
    key = f"evidence[{number}]"
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) \
            or not item["path"].strip():
        raise fail(key, "expected {path, line_start, line_end} with a non-empty path")
    start: Any = item.get("line_start")
    end: Any = item.get("line_end", start)
    if not (_line_number(start) and _line_number(end)):
        raise fail(key, "line_start and line_end must be line numbers (integers >= 1)")
    if end < start:
        raise fail(key, f"line_end {end} is before line_start {start}")
    return Span(item["path"].strip(), start, end)


def _line_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
