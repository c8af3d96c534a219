"""Traces: the record of one ``ask``, from question to verified answer, kept in SQLite.

A trace keeps the whole truth (true status, blocked chunk ids) for auditors. What a
principal gets back is :func:`redact`-ed: blocked ids only for admins, and under the
``conceal`` policy a non-admin sees exactly what the answer told them.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from glassrag.errors import NotFound
from glassrag.records import Principal
from glassrag.store.database import Store, now


def new_trace_id() -> str:
    return "tr_" + secrets.token_hex(8)


def save(store: Store, trace: dict[str, Any]) -> None:
    store.db.execute(
        "INSERT INTO traces(trace_id, created_at, principal_id, status, question, body)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (trace["trace_id"], trace["created_at"], trace["principal"]["principal_id"],
         trace["status"], trace["question"], json.dumps(trace, ensure_ascii=False)),
    )


def load(store: Store, trace_id: str, principal: Principal | None) -> dict[str, Any]:
    """The trace as ``principal`` may see it; None means the local operator (sees all).

    Another principal's trace is reported exactly like a missing one.
    """
    row = store.db.execute("SELECT body FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
    missing = NotFound(f"no trace with id {trace_id!r}", trace_id=trace_id)
    if row is None:
        raise missing
    trace = json.loads(row[0])
    if principal is None:
        return trace
    if not principal.admin and trace["principal"]["principal_id"] != principal.principal_id:
        raise missing
    return redact(trace, principal)


def listing(store: Store, principal: Principal | None, limit: int = 20) -> list[dict[str, Any]]:
    sql = "SELECT trace_id, created_at, principal_id, status, question, body FROM traces"
    args: list[Any] = []
    if principal is not None and not principal.admin:
        sql += " WHERE principal_id = ?"
        args.append(principal.principal_id)
    sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
    args.append(limit)
    rows = []
    for r in store.db.execute(sql, args):
        body = json.loads(r[5])
        status = r[3] if principal is None or principal.admin else body["reported_status"]
        rows.append({"trace_id": r[0], "created_at": r[1], "principal_id": r[2],
                     "status": status, "question": r[4]})
    return rows


def redact(trace: dict[str, Any], principal: Principal) -> dict[str, Any]:
    """Remove what only an auditor may see. Admins get everything."""
    if principal.admin:
        return trace
    out = dict(trace)
    out.pop("blocked_chunk_ids", None)
    out["candidates"] = [c for c in trace.get("candidates", []) if c.get("permitted", True)]
    if trace.get("disclosure") == "conceal":
        out.pop("blocked_count", None)
        out["status"] = trace["reported_status"]
    return out


def export(trace: dict[str, Any], store: Store, directory: Path) -> list[Path]:
    """Write the seed-001-style run records for ``trace`` into ``directory``.

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
            sources[key] = {
                "doc_id": item["doc_id"], "source": item["source"], "title": item["title"],
                "path": item.get("path"), "doc_version": item["doc_version"],
                "content_hash": item["content_hash"],
                "text": store.version_text(item["content_hash"]),
            }
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
