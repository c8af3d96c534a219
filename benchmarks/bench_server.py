"""Load test for ``glassrag serve``: concurrent clients against ``POST /ask``.

Builds (or reuses) a knowledge base from benchmarks/synth.py's corpus, starts uvicorn in this
process on a free port, runs ``--clients`` threads asking synthetic questions for
``--seconds``, optionally ingests more documents during the load, and reports requests/s,
p50/p99 latency and the error count. Not a timed test: run it by hand.

    python benchmarks/bench_server.py --docs 100000 --clients 50 --seconds 60 --ingest-during
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx
import uvicorn

sys.path.insert(0, str(Path(__file__).parent))
import synth  # noqa: E402

from glassrag import KnowledgeBase  # noqa: E402
from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(kb_dir: Path, docs: int) -> None:
    if (kb_dir / "glassrag.db").exists():
        return
    shards = synth.write_shards(kb_dir.parent / "corpus", docs, "en", shard_docs=10_000)
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest(shards)
        print(f"ingested {report.added} documents, {report.chunks} chunks", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=Path, default=Path("benchmarks/out/server/kb"))
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--ingest-during", action="store_true",
                        help="ingest 1,000 more documents while the load runs")
    args = parser.parse_args(argv)

    build(args.kb, args.docs)
    app = create_app(args.kb)
    with app.state.kb.lock:
        token = create_token(app.state.kb.store, "bench", ["employee", "finance", "hr"])
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)

    questions = synth.queries(1000, "en")
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + args.seconds

    def client(n: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                          headers={"Authorization": f"Bearer {token}"}) as http:
            i = n
            while time.monotonic() < stop:
                started = time.perf_counter()
                r = http.post("/ask", json={"question": questions[i % len(questions)]})
                took = time.perf_counter() - started
                with lock:
                    latencies.append(took)
                    if r.status_code != 200:
                        errors.append(f"{r.status_code} {r.text[:200]}")
                i += args.clients

    def ingest() -> None:
        extra = args.kb.parent / "extra.jsonl"
        with extra.open("w", encoding="utf-8") as f:
            for i, doc in enumerate(synth.generate(1000, "en", seed=99)):
                f.write(json.dumps({**doc, "doc_id": f"extra-{i}"}) + "\n")
        app.state.kb.ingest([extra])

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    if args.ingest_during:
        threads.append(threading.Thread(target=ingest))
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    server.should_exit = True
    latencies.sort()
    result = {
        "clients": args.clients, "seconds": round(elapsed, 1), "requests": len(latencies),
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1)
        if latencies else None,
        "errors": len(errors), "first_errors": errors[:5],
    }
    print(json.dumps(result, indent=2))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
