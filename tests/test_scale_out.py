"""Many servers, one truth: real ``glassrag serve`` processes on one real PostgreSQL.

Three servers, each with its own knowledge-base folder (its own Tantivy index) and the same
database. A document ingested through one server, or by ``glassrag ingest`` from a fourth
folder (another machine), is applied by the others' followers without any request reaching
them; tokens issued anywhere work everywhere and a revocation too; a server killed in the
middle of an ingest leaves the others whole, and every server converges on the truth, the
killed one once it is back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import postgres_kb_dir, write_jsonl
from glassrag import KnowledgeBase
from glassrag.retrieval.lexical import STATE_NAME, LexicalIndex
from glassrag.store.bearer_tokens import create_token, revoke_token
from glassrag.store.database import Store
from serve_process import ServeProcess

pytestmark = pytest.mark.slow
WORDS = ["heron", "otter", "lynx", "badger", "marten", "stoat", "weasel", "ferret"]


def _applied(kb_dir: Path) -> int:
    """The change a server's lexical index has applied, read from its files (not through
    the server, whose search would catch up by itself)."""
    try:
        return int(json.loads((kb_dir / "index" / "lexical" / STATE_NAME).read_text())
                   ["applied_seq"])
    except (OSError, ValueError, KeyError):
        return 0


def _wait_applied(kb_dirs: list[Path], seq: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while any(_applied(d) < seq for d in kb_dirs):
        assert time.monotonic() < deadline, [(d.name, _applied(d), seq) for d in kb_dirs]
        time.sleep(0.02)


@pytest.fixture
def cluster(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[Store, list[ServeProcess], dict]]:
    dirs = [postgres_kb_dir(tmp_path / f"server{n}", pg_dsn, "[ingest]\nbatch_size = 50\n")
            for n in range(3)]
    with KnowledgeBase.open(dirs[0]) as kb, kb.lock:  # creates the schema
        tokens = {"admin": create_token(kb.store, "ops", [], admin=True),
                  "staff": create_token(kb.store, "sam", ["staff"])}
    servers = [ServeProcess(d).start() for d in dirs]
    truth = Store.postgres(pg_dsn)
    try:
        yield truth, servers, tokens
    finally:
        for server in servers:
            server.stop()
        truth.close()


def _upload(server: ServeProcess, token: str, name: str, records: list[dict]) -> httpx.Response:
    body = "".join(json.dumps(r) + "\n" for r in records).encode()
    return server.request("POST", "/documents", token, files={"file": (name, body)})


def _hits(server: ServeProcess, token: str, query: str) -> list[str]:
    r = server.request("POST", "/search", token, json={"query": query, "top_k": 1000})
    assert r.status_code == 200, r.text
    return [h["chunk_id"] for h in r.json()["hits"]]


def _records(tag: str, n: int) -> list[dict]:
    return [{"doc_id": f"{tag}-{i}", "roles": ["staff"] if i % 4 == 0 else ["public"],
             "text": f"{WORDS[i % 8]} {tag}word record {i} of the {tag} batch."}
            for i in range(n)]


def test_many_servers_share_one_truth(cluster: tuple[Store, list[ServeProcess], dict],
                                      tmp_path: Path, pg_dsn: str) -> None:
    truth, servers, tokens = cluster
    dirs = [s.kb_dir for s in servers]
    admin, staff = tokens["admin"], tokens["staff"]
    # A token created before the servers started works on every one of them.
    for server in servers:
        assert server.request("GET", "/documents", staff).status_code == 200

    # Ingested through server 0: the other two apply it with no request reaching them.
    up = _upload(servers[0], admin, "first.jsonl", _records("first", 40))
    assert up.status_code == 201, up.text
    _wait_applied(dirs, truth.last_seq())
    for server in servers:
        r = server.request("POST", "/ask", staff,
                           json={"question": "which record of the firstword batch is 12?"})
        assert r.json()["status"] == "answered"
        assert r.json()["citations"][0]["doc_id"] == "first-12", r.text
    assert len({frozenset(_hits(s, staff, "firstword")) for s in servers}) == 1

    # Ingested by `glassrag ingest` on another machine (its own folder, same database).
    other = postgres_kb_dir(tmp_path / "laptop", pg_dsn)
    corpus = write_jsonl(tmp_path / "cli.jsonl", _records("cli", 30))
    done = subprocess.run([sys.executable, "-m", "glassrag", "--kb", str(other), "ingest",
                           str(corpus)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    _wait_applied(dirs, truth.last_seq())
    assert [len(_hits(s, staff, "cliword")) for s in servers] == [30, 30, 30]

    # A token issued and then revoked through one server's store is refused by all.
    with KnowledgeBase.open(dirs[1]) as kb, kb.lock:
        late = create_token(kb.store, "late", [])
    assert all(s.request("GET", "/documents", late).status_code == 200 for s in servers)
    with KnowledgeBase.open(dirs[2]) as kb, kb.lock:
        revoke_token(kb.store, late)
    assert all(s.request("GET", "/documents", late).status_code == 401 for s in servers)

    # Server 2 is killed in the middle of an ingest of 1000 documents (20 batches).
    big = _records("big", 1000)
    failed: list[BaseException] = []

    def upload_big() -> None:
        try:
            _upload(servers[2], admin, "big.jsonl", big)
        except httpx.TransportError as exc:  # the server died under the request
            failed.append(exc)

    thread = threading.Thread(target=upload_big)
    thread.start()
    while _stored(truth, "big-") == 0:
        assert thread.is_alive(), "the upload ended before committing anything"
        time.sleep(0.005)
    servers[2].kill()
    thread.join(60)
    stored = _stored(truth, "big-")
    assert failed and 0 < stored < 1000, stored  # the kill landed mid-ingest

    # The two survivors converge on what was committed; nothing else is lost.
    _wait_applied(dirs[:2], truth.last_seq())
    expected = _count_with(truth, "bigword")
    assert [len(_hits(s, staff, "bigword")) for s in servers[:2]] == [expected] * 2
    assert len(_hits(servers[0], staff, "firstword")) == 40

    # While server 2 is down the ingest is finished through server 0; server 2 comes back
    # and catches up on open.
    assert _upload(servers[0], admin, "big.jsonl", big).status_code == 201
    servers[2].start()
    _wait_applied(dirs, truth.last_seq())
    # The same chunks everywhere. (Not necessarily in the same order: equal scores are
    # ordered by each Tantivy index's own layout, which differs between servers.)
    results = {frozenset(_hits(s, staff, "bigword")) for s in servers}
    assert len(results) == 1 and len(results.pop()) == 1000
    for kb_dir in dirs:
        index = LexicalIndex(kb_dir / "index" / "lexical")
        assert index.num_docs() == truth.counts()["chunks"] == 1070


def _stored(truth: Store, prefix: str) -> int:
    return int(truth.db.execute("SELECT COUNT(*) AS n FROM documents WHERE doc_id LIKE ?",
                                (prefix + "%",)).fetchone()["n"])


def _count_with(truth: Store, word: str) -> int:
    return int(truth.db.execute("SELECT COUNT(*) AS n FROM chunks WHERE text LIKE ?",
                                (f"% {word} %",)).fetchone()["n"])
