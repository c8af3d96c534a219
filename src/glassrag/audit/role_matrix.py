"""The role matrix: every case asked once per role set, as an access audit.

``glassrag evaluate CASES --as-roles 'public;employee;employee,finance'`` asks each case's
question as a principal with each role set (the case's own ``roles`` and expectations are
not used) and shows what each kind of user gets: answered, blocked, refused. A cell holds
the status that user is told; under ``conceal`` a blocked question is told
``no_evidence``, and the cell then also names the true status, which the trace keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from glassrag.audit.trace_reads import stored_trace
from glassrag.errors import GlassragError, InvalidInput
from glassrag.records import Principal

if TYPE_CHECKING:
    from glassrag.eval.cases import EvalCase
    from glassrag.kb import KnowledgeBase

ERROR = "error"


def parse_role_sets(value: str) -> list[tuple[str, ...]]:
    """``'public;employee;employee,finance'`` as role sets: ``;`` between sets, ``,``
    between the roles of one set."""
    sets: list[tuple[str, ...]] = []
    for number, part in enumerate(value.split(";"), start=1):
        roles = tuple(dict.fromkeys(r.strip() for r in part.split(",") if r.strip()))
        if not roles:
            raise InvalidInput(f"--as-roles: role set {number} of {value!r} is empty; "
                               "separate sets with ';' and roles with ','", field="as_roles")
        if roles in sets:
            raise InvalidInput(f"--as-roles: role set {','.join(roles)!r} is given twice",
                               field="as_roles")
        sets.append(roles)
    return sets


@dataclass(frozen=True)
class Cell:
    status: str  # what this principal is told, or "error"
    true_status: str
    trace_id: str | None = None
    sources: tuple[str, ...] = ()
    error: str | None = None

    def text(self) -> str:
        if self.status == ERROR:
            return ERROR
        return self.status if self.true_status == self.status else \
            f"{self.status} ({self.true_status})"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "true_status": self.true_status,
                "trace_id": self.trace_id, "sources": list(self.sources), "error": self.error}


@dataclass(frozen=True)
class RoleMatrix:
    role_sets: list[tuple[str, ...]]
    cases: list[tuple[str, str]]  # (name, question)
    cells: list[list[Cell]]  # one row per case, one cell per role set

    @property
    def errors(self) -> int:
        return sum(cell.status == ERROR for row in self.cells for cell in row)

    def labels(self) -> list[str]:
        return [",".join(roles) for roles in self.role_sets]

    def to_dict(self) -> dict[str, Any]:
        labels = self.labels()
        return {"role_sets": [list(r) for r in self.role_sets],
                "cases": [{"name": name, "question": question,
                           "results": {label: cell.to_dict()
                                       for label, cell in zip(labels, row, strict=True)}}
                          for (name, question), row in zip(self.cases, self.cells, strict=True)],
                "errors": self.errors}

    def lines(self) -> list[str]:
        """The matrix as a fixed-width table: a row per case, a column per role set."""
        header = ["case", *self.labels()]
        rows = [[name, *(cell.text() for cell in row)]
                for (name, _), row in zip(self.cases, self.cells, strict=True)]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        return ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
                for r in [header, *rows]]


def role_matrix(kb: KnowledgeBase, cases: Sequence[EvalCase],
                role_sets: Sequence[Sequence[str]], *,
                progress: Callable[[int, int], None] | None = None) -> RoleMatrix:
    """Ask every case once per role set (each ask writes its trace, principal ``eval``).
    A question the engine rejects is an ``error`` cell; the run goes on."""
    total, done = len(cases) * len(role_sets), 0
    cells: list[list[Cell]] = []
    for case in cases:
        row = []
        for roles in role_sets:
            row.append(_ask(kb, case, tuple(roles)))
            done += 1
            if progress is not None:
                progress(done, total)
        cells.append(row)
    return RoleMatrix([tuple(r) for r in role_sets], [(c.name, c.question) for c in cases],
                      cells)


def _ask(kb: KnowledgeBase, case: EvalCase, roles: tuple[str, ...]) -> Cell:
    try:
        answer = kb.ask(case.question, principal=Principal("eval", roles=roles),
                        top_k=case.top_k, mode=case.mode)
    except GlassragError as exc:
        return Cell(ERROR, ERROR, error=exc.message)
    assert answer.trace_id is not None
    trace = stored_trace(kb, answer.trace_id)
    return Cell(answer.status, trace.status, answer.trace_id,
                tuple(dict.fromkeys(c.source for c in answer.citations)))
