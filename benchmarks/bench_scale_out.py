"""Scale-out benchmark: several ``glassrag serve`` processes on one PostgreSQL truth.

On benchmarks/synth.py's 100k-document English corpus (one chunk each), in a PostgreSQL
database (``--dsn``, else a throwaway cluster started from Debian's package as the tests
do):

* ingest into PostgreSQL (documents/s), and the same into SQLite for reference;
* catch-up rate: a new server folder building its lexical index from the change log on
  open (changes/s), and a running server's follower applying a batch ingested elsewhere;
* propagation delay: one document committed by a writer process until each server's
  follower has applied it (read from the server's index state file, so no request to the
  server catches it up instead), with LISTEN/NOTIFY and with polling;
* ``POST /ask`` p50, p99 and throughput with 1, 2 and 3 server processes (real processes,
  each with its own index), the load spread round-robin by client threads in three load
  processes,
  with commits that wait for the disk (PostgreSQL's default: every ask writes its trace)
  and with ``synchronous_commit = off`` (what a database on a disk with fast flushes
  would allow);
* the same load on one server over SQLite, for reference.

Not a timed test: run by hand, and read the numbers with the machine's core count in mind.

    python benchmarks/bench_scale_out.py --docs 100000 --seconds 20 --rounds 3 --clients 15
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # the throwaway cluster and serve helpers
if (HERE.parent / "src" / "glassrag").is_dir():
    sys.path.insert(0, str(HERE.parent / "src"))

import synth  # noqa: E402

from glassrag import KnowledgeBase  # noqa: E402
from glassrag.retrieval.lexical import STATE_NAME  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402
from pg_cluster import running_cluster  # noqa: E402
from serve_process import ServeProcess  # noqa: E402


def _settings(dsn: str, follow: str = "notify", poll: float = 2.0) -> str:
    return (f'[store]\nbackend = "postgres"\ndsn = "{dsn}"\nfollow = "{follow}"\n'
            f"poll_interval = {poll}\n")


def _kb_dir(path: Path, dsn: str | None, **store: Any) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    if dsn is not None:
        (path / "glassrag.toml").write_text(_settings(dsn, **store), encoding="utf-8")
    return path


def _applied(kb_dir: Path) -> int:
    try:
        return int(json.loads((kb_dir / "index" / "lexical" / STATE_NAME).read_text())
                   ["applied_seq"])
    except (OSError, ValueError, KeyError):
        return 0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ingest(kb_dir: Path, shards: list[Path]) -> dict[str, Any]:
    started = time.perf_counter()
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest(shards)
        took = time.perf_counter() - started
        return {"documents": report.added, "chunks": report.chunks, "seconds": round(took, 1),
                "documents_per_s": round(report.added / took)}


def catch_up_on_open(kb_dir: Path) -> dict[str, Any]:
    """A new folder on the shared database: opening it replays the whole change log."""
    started = time.perf_counter()
    with KnowledgeBase.open(kb_dir) as kb:
        took = time.perf_counter() - started
        changes = kb.lexical.applied_seq
    return {"changes": changes, "seconds": round(took, 1),
            "changes_per_s": round(changes / took)}


def follower_rate(writer: Path, servers: list[ServeProcess], n: int) -> dict[str, Any]:
    """``n`` documents ingested by the writer; how fast each running server applies them
    (from the writer's commit to the follower's last applied change)."""
    corpus = writer.parent / "follow.jsonl"
    with corpus.open("w", encoding="utf-8") as out:
        for i, doc in enumerate(synth.generate(n, "en", seed=77)):
            out.write(json.dumps({**doc, "doc_id": f"follow-{i}"}) + "\n")
    with KnowledgeBase.open(writer) as kb:
        before = kb.store.last_seq()
        began = time.perf_counter()
        kb.ingest([corpus])
        committed = time.perf_counter()
        last = kb.store.last_seq()
    done: dict[str, float] = {}
    while len(done) < len(servers):
        for s in servers:
            if s.kb_dir.name not in done and _applied(s.kb_dir) >= last:
                done[s.kb_dir.name] = time.perf_counter()
        time.sleep(0.002)
    return {"changes": last - before, "ingest_s": round(committed - began, 2),
            "applied_after_commit_s": {k: round(v - committed, 2) for k, v in done.items()},
            "changes_per_s_while_ingesting": round(
                (last - before) / (max(done.values()) - began))}


def propagation(writer: Path, servers: list[ServeProcess], trials: int, tag: str
                ) -> dict[str, Any]:
    """One new document per trial: commit (the writer's ingest returns) -> applied by each
    server's follower."""
    delays: list[float] = []
    with KnowledgeBase.open(writer) as kb:
        commits: list[float] = []
        commit = kb.store.commit

        def timed_commit() -> None:  # the moment the change becomes visible to others
            commit()
            commits.append(time.perf_counter())

        kb.store.commit = timed_commit  # type: ignore[method-assign]
        for trial in range(trials):
            path = writer.parent / f"{tag}-{trial}.md"
            path.write_text(f"# Trial {trial}\n\npropagation probe number {trial}\n")
            before = kb.store.last_seq()
            kb.ingest([path])
            committed = commits[-1]
            last = kb.store.last_seq()
            assert last > before, "the probe document was not new"
            pending = {s.kb_dir for s in servers}
            while pending:
                for d in list(pending):
                    if _applied(d) >= last:
                        delays.append(time.perf_counter() - committed)
                        pending.discard(d)
                time.sleep(0.0005)
            time.sleep(0.05)  # let the servers go idle between trials
    ms = [d * 1000 for d in delays]
    return {"samples": len(ms), "p50_ms": round(statistics.median(ms), 1),
            "p95_ms": round(_pct(ms, 0.95), 1), "max_ms": round(max(ms), 1)}


def _client_process(urls: list[str], token: str, first: int, step: int, threads: int,
                    seconds: float, out: Any) -> None:
    """One load process: ``threads`` clients asking round-robin over ``urls``."""
    questions = synth.queries(1000, "en", seed=5)
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(n: int) -> None:
        http = [httpx.Client(base_url=url, timeout=60,
                             headers={"Authorization": f"Bearer {token}"}) for url in urls]
        i = n
        try:
            while time.monotonic() < stop:
                started = time.perf_counter()
                r = http[i % len(http)].post("/ask", json={"question": questions[i % 1000]})
                took = time.perf_counter() - started
                with lock:
                    latencies.append(took)
                    if r.status_code != 200:
                        errors.append(f"{r.status_code} {r.text[:100]}")
                i += step
        finally:
            for h in http:
                h.close()

    pool = [threading.Thread(target=client, args=(first + t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    out.put((latencies, errors))


def load(servers: list[ServeProcess], token: str, clients: int, seconds: float,
         processes: int = 3) -> dict[str, Any]:
    """``clients`` concurrent clients for ``seconds``, spread over ``processes`` load
    processes (one Python process of 16 threads is itself the bottleneck on 2 cores)."""
    import multiprocessing

    questions = synth.queries(1000, "en", seed=5)
    for server in servers:  # a new process's first asks load modules and warm caches
        with httpx.Client(base_url=server.url, timeout=120,
                          headers={"Authorization": f"Bearer {token}"}) as http:
            for q in questions[-30:]:
                http.post("/ask", json={"question": q})
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    urls = [s.url for s in servers]
    per = clients // processes
    procs = [context.Process(target=_client_process,
                             args=(urls, token, p * per, clients, per, seconds, out))
             for p in range(processes)]
    began = time.monotonic()
    for p in procs:
        p.start()
    latencies: list[float] = []
    errors: list[str] = []
    for _ in procs:
        got, failed = out.get()
        latencies += got
        errors += failed
    for p in procs:
        p.join()
    elapsed = time.monotonic() - began
    ms = [x * 1000 for x in latencies]
    return {"servers": len(servers), "clients": per * processes, "requests": len(ms),
            "requests_per_s": round(len(ms) / elapsed, 1),
            "p50_ms": round(statistics.median(ms), 1), "p99_ms": round(_pct(ms, 0.99), 1),
            "errors": len(errors)}


def single_ask_p50(server: ServeProcess, token: str, n: int = 300) -> float:
    """One client, one request at a time: the latency of an ask with no queueing."""
    questions = synth.queries(n, "en", seed=6)
    with httpx.Client(base_url=server.url, timeout=60,
                      headers={"Authorization": f"Bearer {token}"}) as http:
        for q in questions[:20]:
            http.post("/ask", json={"question": q})  # warm
        took = []
        for q in questions:
            started = time.perf_counter()
            http.post("/ask", json={"question": q})
            took.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(took), 2)


@contextlib.contextmanager
def servers_for(dirs: list[Path]) -> Iterator[list[ServeProcess]]:
    started = [ServeProcess(d) for d in dirs]
    try:
        for s in started:
            s.start(timeout=600)  # opening a new folder builds its index first
        yield started
    finally:
        for s in started:
            s.stop()


def _synchronous_commit(dsn: str, value: str) -> None:
    """Whether a commit waits for the WAL to reach the disk (for the whole cluster)."""
    from glassrag.store.postgres import PostgresConnection

    conn = PostgresConnection(dsn)
    try:
        conn.execute(f"ALTER SYSTEM SET synchronous_commit = {value}")
        conn.execute("SELECT pg_reload_conf()")
    finally:
        conn.close()


def ask_rounds(dirs: list[Path], token: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """1, 2 and 3 servers, ``--rounds`` times interleaved (the machine's other load drifts);
    the median of each count's rounds."""
    rows: dict[int, list[dict[str, Any]]] = {1: [], 2: [], 3: []}
    for _ in range(args.rounds):
        for n in (1, 2, 3):
            with servers_for(dirs[:n]) as servers:
                row = load(servers, token, args.clients, args.seconds)
                row["load_average"] = round(os.getloadavg()[0], 1)
                print(json.dumps(row), file=sys.stderr)
                rows[n].append(row)
    return [{"servers": n, "rounds": [r["requests_per_s"] for r in got],
             "requests_per_s": statistics.median(r["requests_per_s"] for r in got),
             "p50_ms": statistics.median(r["p50_ms"] for r in got),
             "p99_ms": statistics.median(r["p99_ms"] for r in got),
             "errors": sum(r["errors"] for r in got)} for n, got in rows.items()]


def run(dsn: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"docs": args.docs, "cpus": os.cpu_count(),
                              "clients": args.clients, "seconds_per_run": args.seconds,
                              "load_average_before": os.getloadavg()}
    shards = synth.write_shards(root / "corpus", args.docs, "en", shard_docs=10_000)
    writer = _kb_dir(root / "writer", dsn)
    result["ingest_postgres"] = ingest(writer, shards)
    print(json.dumps(result["ingest_postgres"]), file=sys.stderr)
    if not args.skip_sqlite:
        sqlite_dir = _kb_dir(root / "sqlite", None)
        result["ingest_sqlite"] = ingest(sqlite_dir, shards)
        print(json.dumps(result["ingest_sqlite"]), file=sys.stderr)
    with KnowledgeBase.open(writer) as kb, kb.lock:
        token = create_token(kb.store, "bench", ["employee", "finance"])
    dirs = [_kb_dir(root / f"server{n}", dsn) for n in range(3)]
    result["catch_up_on_open"] = [catch_up_on_open(d) for d in dirs]
    print(json.dumps(result["catch_up_on_open"]), file=sys.stderr)
    with servers_for(dirs) as servers:
        result["ask_p50_one_client_ms"] = single_ask_p50(servers[0], token)
        result["follower"] = follower_rate(writer, servers, args.follow_docs)
        print(json.dumps(result["follower"]), file=sys.stderr)
        result["propagation_notify"] = propagation(writer, servers, args.trials, "notify")
        print(json.dumps(result["propagation_notify"]), file=sys.stderr)
    result["ask_durable_commits"] = ask_rounds(dirs, token, args)
    _synchronous_commit(dsn, "off")
    result["ask_commits_not_waiting_for_disk"] = ask_rounds(dirs, token, args)
    _synchronous_commit(dsn, "on")
    for d in dirs:
        (d / "glassrag.toml").write_text(_settings(dsn, "poll", args.poll), encoding="utf-8")
    with servers_for(dirs) as servers:
        result["propagation_poll"] = {"poll_interval_s": args.poll,
                                      **propagation(writer, servers, args.trials, "poll")}
        print(json.dumps(result["propagation_poll"]), file=sys.stderr)
    if not args.skip_sqlite:
        with KnowledgeBase.open(root / "sqlite") as kb, kb.lock:
            sqlite_token = create_token(kb.store, "bench", ["employee", "finance"])
        with servers_for([root / "sqlite"]) as (server,):
            result["sqlite_ask_p50_one_client_ms"] = single_ask_p50(server, sqlite_token)
            result["sqlite_ask"] = load([server], sqlite_token, args.clients, args.seconds)
            print(json.dumps(result["sqlite_ask"]), file=sys.stderr)
    result["load_average_after"] = os.getloadavg()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="a PostgreSQL database to use (it is filled)")
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--poll", type=float, default=1.0)
    parser.add_argument("--follow-docs", type=int, default=5000)
    parser.add_argument("--skip-sqlite", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="glassrag-scale-"))
    try:
        if args.dsn:
            result = run(args.dsn, root, args)
        else:
            with running_cluster(durable=True) as cluster:
                result = run(cluster.new_database("bench"), root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(json.dumps(result, indent=2))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"bench-scale-out-{args.docs}-{int(time.time())}.json").write_text(
        json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
