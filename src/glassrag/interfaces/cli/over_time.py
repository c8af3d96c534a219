"""The ``glassrag`` commands about answers over time: ``traces stale``, ``recheck``,
``why-not`` and the role matrix of ``evaluate --as-roles``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from glassrag.interfaces.cli.app import (
    EXIT_FAILED,
    JSON_OPTION,
    MODE_OPTION,
    ROLE_OPTION,
    app,
    cli_principal,
    handle_errors,
    open_kb,
    out,
    print_json,
    progress_bar,
    traces_app,
)


def say(text: str) -> None:
    """One line of output, printed as it is (no Rich markup: ``[1]`` stays ``[1]``)."""
    out.print(text, markup=False, highlight=False)


@traces_app.command("stale")
def traces_stale(
    since: str | None = typer.Option(
        None, "--since", help="Only answers asked on or after this date (YYYY-MM-DD) or ISO "
        "date-time"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Past answers whose citations no longer hold, each with a diff of the cited lines.

    A citation no longer holds when its lines changed, its document was deleted, or its
    roles changed so that the asker may no longer read it."""
    from glassrag.audit.stale import stale_answers

    with handle_errors(as_json):
        kb = open_kb()
        try:
            found = stale_answers(kb, since=since)
        finally:
            kb.close()
    if as_json:
        print_json([s.to_dict() for s in found])
        return
    for answer in found:
        p = answer.principal
        say(f"{answer.trace_id}  {answer.created_at}  asked by {p['principal_id']} "
                    f"({', '.join(p['roles'])}): {answer.question}")
        for c in answer.citations:
            say(f"  [{c.number}] {c.doc_id} lines {c.cited_lines[0]}-{c.cited_lines[1]}"
                        f" ({c.source}, {_versions(c)}): {_reasons(c)}")
            for line in c.diff.splitlines():
                say(f"      {line}")
    say(f"{len(found)} stale answers" if found else "no stale answers")


def _versions(c: Any) -> str:
    if c.current_version is None:
        return f"v{c.cited_version}, deleted"
    if c.current_version == c.cited_version:
        return f"v{c.cited_version}"
    return f"v{c.cited_version} -> v{c.current_version}"


def _reasons(c: Any) -> str:
    said = []
    for reason in c.reasons:
        if reason == "lines_changed":
            said.append("cited lines changed" + ("" if not c.quote_still_present else
                                                 " (the quote still occurs in the document)"))
        elif reason == "document_deleted":
            said.append("document deleted")
        else:
            roles = ", ".join(c.current_roles or ())
            said.append(f"roles are now {roles}: the asker may no longer read it")
    return "; ".join(said)


@app.command("recheck")
def recheck_command(
    trace_id: str = typer.Argument(..., help="A trace id from ask"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Ask a past question again as its principal and show old and new side by side.

    The principal (id, roles), mode, top_k, terms, answerer and rewrite come from the trace."""
    from glassrag.audit.recheck import recheck

    with handle_errors(as_json):
        kb = open_kb()
        try:
            result = recheck(kb, trace_id)
        finally:
            kb.close()
    if as_json:
        print_json(result.to_dict())
        return
    p = result.principal
    say(f"question: {result.question}")
    say(f"principal: {p['principal_id']} roles={','.join(p['roles'])}")
    table = Table(show_lines=True)
    for column in ("", "old", "new"):
        table.add_column(column, overflow="fold")
    old, new = result.old, result.new
    table.add_row("trace_id", old.trace_id, new.trace_id)
    table.add_row("asked at", old.created_at, new.created_at)
    table.add_row("status", _status(old), _status(new))
    table.add_row("answer", old.answer, new.answer)
    table.add_row("citations", _cited(old.citations), _cited(new.citations))
    out.print(table, markup=False)
    say(f"changed: {'yes' if result.changed else 'no'}")
    for note in result.notes:
        say(f"note: {note}")


def _status(side: Any) -> str:
    return side.status if side.status == side.true_status else \
        f"{side.status} (true: {side.true_status})"


def _cited(citations: list[dict[str, Any]]) -> str:
    return "\n".join(f"[{n}] {c['source']} lines {c['line_start']}-{c['line_end']} "
                     f"v{c.get('doc_version')}" for n, c in enumerate(citations, start=1)) or "none"


@app.command("why-not")
def why_not_command(
    question: str = typer.Argument(..., help="The question"),
    doc: str = typer.Option(..., "--doc", help="The doc_id that was expected"),
    lines: str | None = typer.Option(None, "--lines", help="Only this passage, e.g. 12-20"),
    role: list[str] = ROLE_OPTION,
    mode: str | None = MODE_OPTION,
    top_k: int | None = typer.Option(None, "--top-k", help="Evidence chunks [default: 5]"),
    as_admin: bool = typer.Option(
        False, "--as-admin", help="Tell everything, as to an admin: whether the roles kept "
        "it out, and a missing file's ingest error"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Name the first stage that dropped a document (or lines of it) from the answer.

    Without --as-admin the reply is what the asking principal may learn: a document it may
    not read is reported exactly like one that does not exist."""
    from glassrag.audit.why_not import why_not

    with handle_errors(as_json):
        kb = open_kb()
        try:
            verdict = why_not(kb, question, doc, lines=lines, principal=cli_principal(role),
                              as_admin=as_admin, mode=mode, top_k=top_k)
        finally:
            kb.close()
    if as_json:
        print_json(verdict.to_dict())
        return
    say(f"stage: {verdict.stage}")
    say(f"reason: {verdict.reason}")
    for key, value in verdict.details.items():
        shown = value if isinstance(value, (str, int, float)) or value is None else \
            json.dumps(value, ensure_ascii=False)
        say(f"{key}: {shown}")


def eval_role_matrix(cases: Path | None, as_roles: str, as_json: bool) -> None:
    """``evaluate CASES --as-roles SETS``: the role matrix (exit 1 if a question errored)."""
    from glassrag.audit.role_matrix import parse_role_sets, role_matrix
    from glassrag.errors import InvalidInput
    from glassrag.eval.cases import load_cases

    with handle_errors(as_json):
        if cases is None:
            raise InvalidInput("--as-roles needs a case file", field="--as-roles")
        role_sets = parse_role_sets(as_roles)
        case_list = load_cases(cases)
        kb = open_kb()
        try:
            with progress_bar("asking") as tick:
                matrix = role_matrix(kb, case_list, role_sets, progress=tick)
        finally:
            kb.close()
    if as_json:
        print_json(matrix.to_dict())
    else:
        for line in matrix.lines():
            say(line)
    if matrix.errors:
        raise typer.Exit(EXIT_FAILED)
