"""Traces: the record of one ``ask``, from question to verified answer, kept in SQLite.

A trace (:class:`glassrag.trace.Trace`) keeps the whole truth (true status, blocked chunk
ids, the model's raw replies, timings) for auditors. Who may read a trace is decided by
:func:`may_read`, and what a non-admin sees of it by :func:`redact`, the one place that
decides it (with :func:`glassrag.disclosure.disclose` for what the ``conceal`` policy hides).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from glassrag.disclosure import disclose
from glassrag.errors import NotFound
from glassrag.records import Principal
from glassrag.store.database import Store, now
from glassrag.store.version_access import may_read_version
from glassrag.trace import Trace, TraceEvidence

# What a non-admin reads instead of a failed rewrite's error, which can name the endpoint.
REWRITE_FAILED = "the rewrite failed, so the question was searched as asked"
_ATTEMPT_FIELDS = ("attempt", "round", "http_try", "http_status", "answerer")
_REWRITE_FIELDS = ("question", "status", "rewriter", "rewritten_query", "skipped_reason")


def new_trace_id() -> str:
    return "tr_" + secrets.token_hex(8)


def save(store: Store, trace: Trace) -> None:
    """Store ``trace`` (in the caller's transaction, if one is open)."""
    store.db.execute(
        "INSERT INTO traces(trace_id, created_at, principal_id, status, question, body)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (trace.trace_id, trace.created_at, trace.principal.principal_id,
         trace.status.value, trace.question, json.dumps(trace.to_dict(), ensure_ascii=False)),
    )
    cited = dict.fromkeys(c.doc_id for c in trace.citations)
    if cited:
        store.db.executemany("INSERT INTO trace_citations(doc_id, trace_id) VALUES (?, ?)",
                             [(doc_id, trace.trace_id) for doc_id in cited])


def read(store: Store, trace_id: str) -> Trace | None:
    """The stored trace, whole, or None."""
    row = store.db.execute("SELECT body FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
    return None if row is None else Trace.from_dict(json.loads(row[0]))


def load(store: Store, trace_id: str, principal: Principal | None) -> dict[str, Any]:
    """The trace as ``principal`` may see it; None means the local operator (sees all).

    A trace ``principal`` may not read (see :func:`may_read`) is reported exactly like a
    missing one.
    """
    trace = read(store, trace_id)
    missing = NotFound(f"no trace with id {trace_id!r}", trace_id=trace_id)
    if trace is None:
        raise missing
    if principal is None:
        return trace.to_dict()
    if not may_read(store, trace, principal):
        raise missing
    return redact(trace, principal)


def may_read(store: Store, trace: Trace, principal: Principal) -> bool:
    """Admins read every trace. Anyone else reads a trace of their own principal id, and
    only while they may read *all* of its evidence now: each evidence version is checked
    again against its own stored roles and its document's current ones (see
    :mod:`glassrag.store.version_access`), and a deleted document is one they cannot read.
    (Blocked chunks do not matter: nothing of them is in the trace a non-admin sees.)"""
    if principal.admin:
        return True
    if trace.principal.principal_id != principal.principal_id:
        return False
    return all(_evidence_readable(store, e, principal) for e in trace.evidence)


def _evidence_readable(store: Store, evidence: TraceEvidence, principal: Principal) -> bool:
    # A version check covers the document's current roles too; evidence recorded without
    # its version (older traces) is checked against the current document only.
    if evidence.content_hash:
        return may_read_version(store, evidence.content_hash, evidence.doc_id, principal)
    doc = store.document(evidence.doc_id)
    return doc is not None and principal.can_read(doc.roles)


def listing(store: Store, principal: Principal | None, limit: int = 20) -> list[dict[str, Any]]:
    """The newest ``limit`` traces ``principal`` may read (None: the local operator)."""
    sql = "SELECT trace_id, created_at, principal_id, status, question, body FROM traces"
    args: list[Any] = []
    if principal is not None and not principal.admin:
        sql += " WHERE principal_id = ?"
        args.append(principal.principal_id)
    sql += " ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?"
    rows: list[dict[str, Any]] = []
    # Pages rather than one cursor: may_read queries the same connection between rows.
    page, offset = max(limit, 1) * 2, 0
    while len(rows) < limit:
        batch = store.db.execute(sql, [*args, page, offset]).fetchall()
        for r in batch:
            trace = Trace.from_dict(json.loads(r[5]))
            if principal is None or may_read(store, trace, principal):
                status = (r[3] if principal is None or principal.admin
                          else _told_status(trace))
                rows.append({"trace_id": r[0], "created_at": r[1], "principal_id": r[2],
                             "status": status, "question": r[4]})
            if len(rows) == limit:
                break
        if len(batch) < page:
            break
        offset += page
    return rows


def redact(trace: Trace, principal: Principal) -> dict[str, Any]:
    """What ``principal`` sees of ``trace``. Admins get everything.

    A non-admin never gets: blocked chunk ids or blocked candidates; the model's endpoint,
    model name or key variable (``settings.llm`` keeps the profile name only, the request
    loses its ``model``); raw model replies; the text of drafts that failed verification,
    or the verifier's problems, which quote them (a count is kept); failure messages, which
    can name the endpoint. Each attempt keeps its number, round, HTTP try and status, its
    ``outcome`` (verified, rejected, unparseable or transport_error) and, once verified, its
    draft (the answer shown). Under ``conceal`` also no blocked count, the reported status
    instead of the true one, and no timings (they tell "only hidden chunks matched" from
    "nothing matched").
    """
    full = trace.to_dict()
    if principal.admin:
        return full
    told = disclose(trace.status, trace.blocked_count,
                    conceal=trace.disclosure == "conceal")
    out = dict(full)
    out.pop("blocked_chunk_ids", None)
    out["candidates"] = [c for c in full["candidates"] if c["permitted"]]
    out["settings"] = _settings_view(full["settings"])
    if isinstance(trace.request, dict):
        out["request"] = {k: v for k, v in trace.request.items() if k != "model"}
    out["attempts"] = [_attempt_view(a, told.concealed) for a in trace.attempts]
    out["verification"] = _verification_view(full["verification"])
    if isinstance(trace.rewrite, dict):
        out["rewrite"] = _rewrite_view(trace.rewrite, told.concealed)
    out["status"] = _told_status(trace)
    if told.concealed:
        out.pop("blocked_count", None)
        out.pop("timings_ms", None)
    return out


def _told_status(trace: Trace) -> str:
    told = disclose(trace.status, trace.blocked_count, conceal=trace.disclosure == "conceal")
    assert told.status is not None
    return told.status.value


def _settings_view(settings: dict[str, Any]) -> dict[str, Any]:
    llm = settings.get("llm")
    return {**settings, "llm": {"profile": llm.get("profile")} if isinstance(llm, dict) else llm}


def _verification_view(verification: dict[str, Any]) -> dict[str, Any]:
    return {"ok": verification.get("ok"), "citations": verification.get("citations", []),
            "problem_count": len(verification.get("problems", []))}


def _attempt_view(attempt: dict[str, Any], conceal: bool) -> dict[str, Any]:
    verification = attempt.get("verification") or {}
    ok = bool(verification.get("ok"))
    view = {k: attempt[k] for k in _ATTEMPT_FIELDS if k in attempt}
    view["outcome"] = ("transport_error" if attempt.get("error") else
                       "unparseable" if attempt.get("parse_error") else
                       "verified" if ok else "rejected")
    if verification:
        view["verification"] = _verification_view(verification)
    if ok and attempt.get("draft") is not None:
        view["draft"] = attempt["draft"]
    if not conceal and "latency_ms" in attempt:
        view["latency_ms"] = attempt["latency_ms"]
    return view


def _rewrite_view(stage: dict[str, Any], conceal: bool) -> dict[str, Any]:
    view = {k: stage.get(k) for k in _REWRITE_FIELDS}
    view["error"] = REWRITE_FAILED if stage.get("error") else None
    if not conceal:
        view["latency_ms"] = stage.get("latency_ms")
    return view


def export(trace: dict[str, Any], version_text: Callable[[str, str], str | None],
           directory: Path) -> list[Path]:
    """Write the run records for ``trace`` into ``directory``.

    ``version_text(content_hash, doc_id)`` gives a version's text, or None when the caller may
    no longer read it (its roles changed since the ask): that source is then written without
    text, marked ``"text_withheld": true``.

    Five JSON files share one prefix: ``-sources`` (snapshot of every evidence document
    version with its hash and full text, plus the retrieval), ``-request``, ``-attempt-N``,
    ``-response`` and ``-result`` (the verification). Together they let anyone follow
    answer -> citation -> chunk -> lines -> document version, even after the file changed.
    """
    directory.mkdir(parents=True, exist_ok=True)
    prefix = f"glassrag-{trace['trace_id']}"
    evidence = trace.get("evidence", [])
    sources: dict[str, dict[str, Any]] = {}
    for item in evidence:
        key = f"{item['doc_id']}@{item['doc_version']}"
        if key not in sources:
            text = version_text(item["content_hash"], item["doc_id"])
            sources[key] = {
                "doc_id": item["doc_id"], "source": item["source"], "title": item["title"],
                "path": item.get("path"), "doc_version": item["doc_version"],
                "content_hash": item["content_hash"], "text": text,
            }
            if text is None:
                sources[key]["text_withheld"] = True
    records: dict[str, Any] = {
        "sources": {
            "format": "glassrag-run-record/1", "kind": "sources", "trace_id": trace["trace_id"],
            "exported_at": now(), "sources": list(sources.values()),
            "retrieval": {
                "mode": trace["settings"]["mode"], "top_k": trace["settings"]["top_k"],
                "query_terms": trace.get("query_terms", []),
                "ranked_chunks": trace.get("candidates", []),
                "selected_ids": [e["chunk_id"] for e in evidence],
            },
            "notes": [{"chunk_id": e["chunk_id"], "line_start": e["line_start"],
                       "line_end": e["line_end"], "text": e["text"]} for e in evidence],
        },
        "request": {
            "kind": "request", "trace_id": trace["trace_id"],
            "source_snapshot_file": f"{prefix}-sources.json",
            "principal": trace["principal"], "question": trace["question"],
            "rewrite": trace.get("rewrite"),
            "settings": trace["settings"], "request": trace.get("request"),
        },
        "response": {
            "kind": "response", "trace_id": trace["trace_id"], "status": trace["status"],
            "answer": trace["answer"], "citations": trace["citations"],
        },
        "result": {
            "kind": "result", "trace_id": trace["trace_id"],
            "verification": trace.get("verification"), "status": trace["status"],
            "timings_ms": trace.get("timings_ms"),
        },
    }
    for n, attempt in enumerate(trace.get("attempts", []), start=1):
        records[f"attempt-{n}"] = {"kind": "attempt", "trace_id": trace["trace_id"], **attempt}
    written = []
    for name, body in records.items():
        path = directory / f"{prefix}-{name}.json"
        path.write_text(json.dumps(body, ensure_ascii=False, indent=2), encoding="utf-8")
        written.append(path)
    return written
