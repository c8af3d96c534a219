"""Behavioural evaluation: run a case file against a knowledge base, one PASS/FAIL per case.

A case asks one question as a principal with given roles and states what must happen: the
status, optionally a source / document / chunk that must be cited and a snippet the answer
must contain. :func:`run_cases` reports in the seed-000 format::

    refund_window: PASS (answered, handbook.md#refund)
    private_block: PASS (blocked_by_permission, none)
    passed: 2/2

As in the seed, a case that expects no source (``expected_source`` null or absent) passes on
its status alone, so a ``blocked_by_permission`` case passes without citations.

Case files are YAML (a list of cases, or a mapping with a ``cases:`` list), JSON (the same
shapes) or JSONL (one case object a line). The QA benchmark runner lives in
:mod:`glassrag.eval.qa` and is re-exported here, so ``glassrag eval`` needs one import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassrag.answer.verify import normalize_for_match
from glassrag.errors import GlassragError, InvalidInput
from glassrag.eval.qa import Progress, QAReport, run_qa
from glassrag.eval.record_files import parse_records
from glassrag.records import STATUSES, Mode, Principal
from glassrag.settings import MAX_TOP_K  # the engine's one cap on top_k

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase

REQUIRED = ("name", "question", "roles", "expected_status")
OPTIONAL_TEXT = ("expected_source", "expected_doc_id", "expected_chunk_id", "answer_contains")
KNOWN_KEYS = frozenset(REQUIRED + OPTIONAL_TEXT + ("top_k", "mode"))


@dataclass(frozen=True)
class EvalCase:
    """One behavioural expectation; ``None`` fields are not checked."""

    name: str
    question: str
    roles: tuple[str, ...]
    expected_status: str
    expected_source: str | None = None
    expected_doc_id: str | None = None
    expected_chunk_id: str | None = None
    answer_contains: str | None = None
    top_k: int | None = None
    mode: str | None = None


@dataclass
class CaseResult:
    """What one case produced; ``reasons`` explains each failed expectation."""

    name: str
    ok: bool
    status: str
    citations: list[str]
    reasons: list[str] = field(default_factory=list)
    answer: str = ""
    trace_id: str | None = None

    def line(self) -> str:
        cited = ", ".join(self.citations) if self.citations else "none"
        text = f"{self.name}: {'PASS' if self.ok else 'FAIL'} ({self.status}, {cited})"
        return text if self.ok else f"{text} - {'; '.join(self.reasons)}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvalReport:
    results: list[CaseResult]
    passed: int
    total: int

    @property
    def ok(self) -> bool:
        return self.passed == self.total

    def lines(self) -> list[str]:
        """One seed-format line per case, then ``passed: N/M``."""
        return [r.line() for r in self.results] + [f"passed: {self.passed}/{self.total}"]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


# -- loading -----------------------------------------------------------------------------


def load_cases(path: str | Path) -> list[EvalCase]:
    """Read and check a case file. Any problem raises :class:`InvalidInput` naming the file,
    the case (index, name, line where known) and the field; answers are compared after NFKC
    and whitespace normalisation (:func:`glassrag.answer.verify.normalize_for_match`)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".yaml", ".yml", ".json", ".jsonl"):
        raise InvalidInput(f"{path}: case files are .yaml, .yml, .json or .jsonl",
                           path=str(path), field="path")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read the case file: {exc}", path=str(path)) from exc
    raw = parse_records(path, text, "cases")
    if not raw:
        raise InvalidInput(f"{path}: the file holds no cases", path=str(path), field="cases")
    cases: list[EvalCase] = []
    seen: dict[str, str] = {}
    for index, (line, item) in enumerate(raw, start=1):
        case = _check_case(path, index, line, item)
        where = _where(index, case.name, line)
        if case.name in seen:
            raise InvalidInput(f"{path}: {where}: field 'name': duplicate name {case.name!r} "
                               f"(first used by {seen[case.name]})", path=str(path), field="name")
        seen[case.name] = where
        cases.append(case)
    return cases


def _where(index: int, name: object, line: int | None) -> str:
    label = f"case {index}"
    if isinstance(name, str) and name.strip():
        label += f" {name.strip()!r}"
    return label + (f" (line {line})" if line is not None else "")


def _check_case(path: Path, index: int, line: int | None, item: Any) -> EvalCase:
    name = item.get("name") if isinstance(item, dict) else None
    where = _where(index, name, line)

    def fail(key: str, problem: str) -> InvalidInput:
        return InvalidInput(f"{path}: {where}: field {key!r}: {problem}", path=str(path),
                            case=index, line=line, field=key)

    if not isinstance(item, dict):
        raise InvalidInput(f"{path}: {where}: expected a mapping of fields, got "
                           f"{type(item).__name__}", path=str(path), case=index, line=line)
    for key in item:
        if key not in KNOWN_KEYS:
            raise fail(str(key), f"unknown field; known fields: {', '.join(sorted(KNOWN_KEYS))}")
    for key in REQUIRED:
        if item.get(key) is None:
            raise fail(key, "missing (required)")
    for key in ("name", "question", *OPTIONAL_TEXT):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise fail(key, f"must be a non-empty string, got {value!r}")
    roles = item["roles"]
    if not isinstance(roles, list) or not all(isinstance(r, str) and r.strip() for r in roles):
        raise fail("roles", f"must be a list of role names, e.g. [public]; got {roles!r}")
    if item["expected_status"] not in STATUSES:
        raise fail("expected_status", f"unknown status {item['expected_status']!r}; choose "
                                      f"one of {', '.join(STATUSES)}")
    top_k = item.get("top_k")
    if top_k is not None and (type(top_k) is not int or not 1 <= top_k <= MAX_TOP_K):
        raise fail("top_k", f"must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    if item.get("mode") is not None and item["mode"] not in tuple(Mode):
        raise fail("mode", f"unknown mode {item['mode']!r}; choose one of {', '.join(Mode)}")

    def text(key: str) -> str | None:
        value = item.get(key)
        return value.strip() if isinstance(value, str) else None

    return EvalCase(
        name=item["name"].strip(), question=item["question"].strip(),
        roles=tuple(r.strip() for r in roles), expected_status=item["expected_status"],
        expected_source=text("expected_source"), expected_doc_id=text("expected_doc_id"),
        expected_chunk_id=text("expected_chunk_id"), answer_contains=text("answer_contains"),
        top_k=top_k, mode=item.get("mode"),
    )


# -- running -----------------------------------------------------------------------------


def run_case(kb: KnowledgeBase, case: EvalCase) -> CaseResult:
    """Ask ``case.question`` as a principal with ``case.roles`` and check every expectation.

    A question the engine rejects fails its case (status ``error``, the message as the
    reason) instead of ending the run."""
    try:
        answer = kb.ask(case.question, principal=Principal("eval", roles=case.roles),
                        top_k=case.top_k, mode=case.mode)
    except GlassragError as exc:
        return CaseResult(name=case.name, ok=False, status="error", citations=[],
                          reasons=[f"error: {exc.message}"])
    sources = list(dict.fromkeys(c.source for c in answer.citations))
    reasons: list[str] = []
    if answer.status != case.expected_status:
        reasons.append(f"status {answer.status}, expected {case.expected_status}")
    for label, expected, got in (
        ("source", case.expected_source, sources),
        ("doc_id", case.expected_doc_id, [c.doc_id for c in answer.citations]),
        ("chunk_id", case.expected_chunk_id, [c.chunk_id for c in answer.citations]),
    ):
        if expected is not None and expected not in got:
            cited = ", ".join(dict.fromkeys(got)) or "none"
            reasons.append(f"expected {label} {expected} not cited (cited: {cited})")
    if case.answer_contains is not None and (
        normalize_for_match(case.answer_contains) not in normalize_for_match(answer.answer)
    ):
        reasons.append(f"answer does not contain {case.answer_contains!r}")
    return CaseResult(name=case.name, ok=not reasons, status=answer.status, citations=sources,
                      reasons=reasons, answer=answer.answer, trace_id=answer.trace_id)


def run_cases(
    kb: KnowledgeBase, cases: Sequence[EvalCase], *, progress: Progress | None = None
) -> EvalReport:
    """Run every case in order; ``progress(done, total)`` is called after each one."""
    results: list[CaseResult] = []
    for done, case in enumerate(cases, start=1):
        results.append(run_case(kb, case))
        if progress is not None:
            progress(done, len(cases))
    return EvalReport(results=results, passed=sum(r.ok for r in results), total=len(results))


def evaluate_file(kb: KnowledgeBase, path: str | Path, *,
                  progress: Progress | None = None) -> EvalReport:
    """:func:`load_cases` then :func:`run_cases`: what ``glassrag eval CASES`` does."""
    return run_cases(kb, load_cases(path), progress=progress)


__all__ = ["CaseResult", "EvalCase", "EvalReport", "QAReport", "evaluate_file", "load_cases",
           "run_case", "run_cases", "run_qa"]
