"""PostgreSQL's change log is gap-safe for readers: a change can never become visible after
a change with a higher sequence number, so a reader that applies "everything after the
last sequence I applied" never skips one. Also: concurrent ingests from two processes lose
nothing, and commits wake LISTENers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import postgres_kb_dir, write_jsonl
from glassrag import KnowledgeBase
from glassrag.retrieval.integrity import check
from glassrag.store.database import Store, now
from glassrag.store.postgres import PostgresConnection


def _wait_until_blocked(observer: PostgresConnection, pid: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        row = observer.execute("SELECT wait_event_type, wait_event FROM pg_stat_activity"
                               " WHERE pid = ?", (pid,)).fetchone()
        if row is not None and row["wait_event_type"] == "Lock":
            assert row["wait_event"] == "advisory"
            return
        assert time.monotonic() < deadline, f"the second writer never waited: {row}"
        time.sleep(0.01)


def test_a_change_committed_late_is_not_skipped(pg_dsn: str) -> None:
    store = Store.postgres(pg_dsn)  # migrates; also the reader
    first, second = PostgresConnection(pg_dsn), PostgresConnection(pg_dsn)
    try:
        pid = second.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        first.begin()
        first.execute("INSERT INTO changes(doc_id, op, recorded_at) VALUES ('late', 'upsert', ?)",
                      (now(),))
        done = threading.Event()

        def other_writer() -> None:
            second.begin()
            second.execute("INSERT INTO changes(doc_id, op, recorded_at)"
                           " VALUES ('early', 'upsert', ?)", (now(),))
            second.commit()
            done.set()

        thread = threading.Thread(target=other_writer)
        thread.start()
        # The second writer waits for the first to commit before it may take a number.
        _wait_until_blocked(store.db, pid)  # type: ignore[arg-type]
        applied = 0
        seen = store.changes_since(applied)
        assert seen == [] and not done.is_set()
        first.commit()
        thread.join(30)
        assert done.is_set()
        changes = store.changes_since(applied)
        assert [doc for _, doc, _ in changes] == ["late", "early"]
        assert changes[0][0] < changes[1][0]
    finally:
        first.close()
        second.close()
        store.close()


def test_a_commit_wakes_a_listener(pg_dsn: str) -> None:
    store = Store.postgres(pg_dsn)
    listener = store.listen()
    assert listener is not None
    try:
        assert not listener.notifies(0.05)  # nothing committed yet
        store.begin()
        store.db.execute("INSERT INTO changes(doc_id, op, recorded_at) VALUES ('x', 'upsert', ?)",
                         (now(),))
        assert not listener.notifies(0.05)  # not before the commit
        store.commit()
        assert listener.notifies(30)
    finally:
        listener.close()
        store.close()


def _ingest(kb_dir: Path, corpus: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "glassrag", "--kb", str(kb_dir), "ingest", str(corpus), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_machines_ingesting_at_once_lose_nothing(pg_dsn: str, tmp_path: Path) -> None:
    # Two knowledge-base folders (two machines) on one database, small batches so that the
    # two ingests have many commits each.
    dirs = [postgres_kb_dir(tmp_path / f"m{n}", pg_dsn, "[ingest]\nbatch_size = 50\n")
            for n in range(2)]
    corpora = [write_jsonl(tmp_path / f"c{n}.jsonl", [
        {"doc_id": f"m{n}-{i}", "text": f"record {i} from machine {n}, heron otter."}
        for i in range(400)]) for n in range(2)]
    procs = [_ingest(d, c) for d, c in zip(dirs, corpora, strict=True)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    for kb_dir in dirs:
        with KnowledgeBase.open(kb_dir) as kb:
            assert kb.status()["documents"] == 800
            assert check(kb.store, kb.lexical) == []
            ids = {h.chunk.doc_id for h in kb.search("heron", top_k=1000).hits}
            assert ids == {f"m{n}-{i}" for n in range(2) for i in range(400)}
            logged = [doc for _, doc, _ in kb.store.changes_since(0)]
            assert sorted(logged) == sorted(ids)  # every document logged exactly once
