"""Reading answered traces for the audits, without loading whole trace bodies.

A trace body holds the evidence text, every candidate and every model exchange; the audits
need the citations and the principal of every answered trace, and the rest only for the
few whose citations no longer hold. SQLite extracts the parts itself (``json_extract``);
a store whose connection is not SQLite's gets the body parsed here, with the same result.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from glassrag.errors import InvalidInput, NotFound
from glassrag.records import ANSWERED
from glassrag.store import traces
from glassrag.store.database import Store
from glassrag.trace import Trace

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase


@dataclass(frozen=True)
class AnsweredRow:
    trace_id: str
    created_at: str
    principal: dict[str, Any]
    citations: list[dict[str, Any]]


def parse_since(value: str) -> str:
    """``value`` (a date ``2026-05-01`` or an ISO date-time; no zone means UTC) in the form
    traces record ``created_at``, so the two compare as text."""
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise InvalidInput(f"since: {value!r} is not a date (YYYY-MM-DD) or an ISO date-time",
                           field="since") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def stored_trace(kb: KnowledgeBase, trace_id: str) -> Trace:
    """The whole stored trace ``trace_id``, typed (NotFound if there is none). For the local
    operator and admins: nothing is redacted."""
    with kb.lock:
        found = traces.read(kb.store, trace_id)
    if found is None:
        raise NotFound(f"no trace with id {trace_id!r}", trace_id=trace_id)
    return found


def _is_sqlite(store: Store) -> bool:
    return isinstance(store.db, sqlite3.Connection)


def answered(store: Store, since: str | None = None) -> Iterator[AnsweredRow]:
    """Every answered trace (created at or after ``since``), oldest first."""
    where = " WHERE status = ?" + (" AND created_at >= ?" if since else "")
    yield from _answered_rows(store, where + " ORDER BY created_at, trace_id",
                              [ANSWERED, *([since] if since else [])])


def answered_citing(store: Store, doc_ids: Collection[str]) -> Iterator[AnsweredRow]:
    """The answered traces citing one of ``doc_ids``, each once, found through the
    ``trace_citations`` table: an ingest that changed a few documents reads the traces
    that cite them, not every trace ever recorded."""
    ids = sorted(doc_ids)
    for start in range(0, len(ids), _BATCH):
        part = ids[start:start + _BATCH]
        marks = ", ".join("?" * len(part))
        # A trace citing two documents of one batch is one row (DISTINCT); one citing
        # documents of two batches is read twice, so callers count distinct trace ids.
        where = (" WHERE status = ? AND trace_id IN (SELECT DISTINCT trace_id FROM"
                 f" trace_citations WHERE doc_id IN ({marks}))")
        yield from _answered_rows(store, where, [ANSWERED, *part])


# Parameters per statement: well under SQLite's default limit (32,766) and PostgreSQL's.
_BATCH = 500


def _answered_rows(store: Store, where: str, args: list[Any]) -> Iterator[AnsweredRow]:
    if _is_sqlite(store):
        sql = ("SELECT trace_id, created_at, json_extract(body, '$.principal'),"
               " json_extract(body, '$.citations') FROM traces")
        rows = store.db.execute(sql + where, args).fetchall()
        for trace_id, created_at, principal, citations in rows:
            yield AnsweredRow(trace_id, created_at, json.loads(principal),
                              json.loads(citations or "[]"))
        return
    rows = store.db.execute("SELECT trace_id, created_at, body FROM traces" + where,
                            args).fetchall()
    for trace_id, created_at, body in rows:
        trace = json.loads(body)
        yield AnsweredRow(trace_id, created_at, trace["principal"], trace.get("citations", []))


def details(store: Store, trace_id: str) -> dict[str, Any]:
    """The question, answer and evidence of one trace."""
    if _is_sqlite(store):
        row = store.db.execute(
            "SELECT json_extract(body, '$.question'), json_extract(body, '$.answer'),"
            " json_extract(body, '$.evidence') FROM traces WHERE trace_id = ?", (trace_id,)
        ).fetchone()
        return {"question": row[0], "answer": row[1], "evidence": json.loads(row[2] or "[]")}
    body = json.loads(store.db.execute("SELECT body FROM traces WHERE trace_id = ?",
                                       (trace_id,)).fetchone()[0])
    return {"question": body["question"], "answer": body["answer"],
            "evidence": body.get("evidence", [])}
