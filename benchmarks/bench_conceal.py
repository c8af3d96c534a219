"""What ``conceal`` costs: BM25 search latency under ``disclose`` and under ``conceal``.

Under ``disclose`` (and for admins) a search is Tantivy's own top-k. Under ``conceal`` a
non-admin is scored with the statistics of its readable chunks (``glassrag.readable_bm25``):
every readable chunk holding a query term is fetched and scored from its analysed tokens, so
the cost grows with the number of matching chunks, not with top-k. One knowledge base, one
query set; the policy is switched between the timed runs.

Usage::

    python benchmarks/bench_conceal.py                  # 100k English chunks, 200 queries
    python benchmarks/bench_conceal.py --docs 10000 --queries 100
    python benchmarks/bench_conceal.py --kb /tmp/kb     # reuse (or keep) the knowledge base

Prints a table and writes ``benchmarks/out/bench-conceal-<lang>-<docs>-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if (HERE.parent / "src" / "glassrag").is_dir():
    sys.path.insert(0, str(HERE.parent / "src"))  # run from a checkout without installing

import bench_core  # noqa: E402
import synth  # noqa: E402

TOP_K = 10


def _kb(args: argparse.Namespace, corpus: list[Path]) -> tuple[Any, Path, bool]:
    from glassrag import KnowledgeBase

    kb_path = args.kb or Path(tempfile.mkdtemp(prefix="glassrag-conceal-")) / "kb"
    fresh = not (kb_path / "glassrag.db").exists()
    kb = KnowledgeBase.open(kb_path)
    if fresh:
        t0 = time.perf_counter()
        report = kb.ingest([str(p) for p in corpus], chunker="sentences")
        bench_core.check_ingest(report, args.docs, "ingest")
        print(f"  ingest: {report.chunks} chunks in {time.perf_counter() - t0:.1f} s",
              flush=True)
    return kb, kb_path, fresh


def _time(kb: Any, principal: Any, queries: list[str], warmup: int) -> dict[str, Any]:
    results: list[Any] = []

    def run(q: str) -> Any:
        return kb.search(q, principal=principal, top_k=TOP_K, mode="bm25")

    wall, cpu = bench_core.time_queries(run, queries, warmup)
    for q in queries:
        results.append(run(q))
    stats = bench_core.summarize(wall, cpu)
    stats["mean_hits"] = statistics.fmean(len(r.hits) for r in results)
    stats["_top"] = [[h.chunk.chunk_id for h in r.hits] for r in results]
    return stats


def _matching(kb: Any, principal: Any, queries: list[str]) -> float:
    """Mean number of readable chunks holding a query term: what conceal has to score."""
    from glassrag.retrieval.search import readable_sets
    from glassrag.text.analysis import analyze, unique_terms

    readable = readable_sets(kb.store, principal)
    counts = []
    for q in queries:
        per_set = kb.lexical.counts_by_roleset(kb.lexical.text_query(unique_terms(analyze(q))))
        counts.append(sum(n for r, n in per_set.items() if r in readable))
    return statistics.fmean(counts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--kb", type=Path, default=None,
                        help="knowledge base to reuse, or to create and keep")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    load_at_start = bench_core.load_average()
    print(f"corpus: {args.docs} {args.lang} docs; load average {load_at_start} on "
          f"{os.cpu_count()} CPUs", flush=True)
    corpus, _, _ = bench_core.load_corpus(args)
    queries = synth.queries(args.queries, args.lang, seed=args.seed + 1)

    from glassrag import Principal

    kb, kb_path, fresh = _kb(args, corpus)
    principals = {"employee": Principal("bench", roles=["employee"]),
                  "public_only": Principal("bench")}
    result: dict[str, Any] = {"docs": args.docs, "lang": args.lang, "queries": len(queries),
                              "top_k": TOP_K, "machine": bench_core.machine_info(),
                              "load_average_start": load_at_start, "search": {}}
    try:
        for label, principal in principals.items():
            row: dict[str, Any] = {"mean_readable_matches": _matching(kb, principal, queries)}
            for policy in ("disclose", "conceal"):
                kb.settings.permissions.disclosure = policy
                row[policy] = _time(kb, principal, queries, args.warmup)
            same = [a == b for a, b in zip(row["disclose"].pop("_top"),
                                           row["conceal"].pop("_top"), strict=True)]
            row["same_top_k_share"] = sum(same) / len(same)
            for policy in ("disclose", "conceal"):
                for key in ("latencies_ms", "cpu_latencies_ms"):
                    row[policy].pop(key)
            result["search"][label] = row
            print(f"  [{label}] readable matches/query {row['mean_readable_matches']:,.0f}; "
                  f"p50 disclose {row['disclose']['p50_ms']:.2f} ms, conceal "
                  f"{row['conceal']['p50_ms']:.2f} ms (cpu {row['disclose']['cpu_p50_ms']:.2f}"
                  f" / {row['conceal']['cpu_p50_ms']:.2f}); p99 {row['disclose']['p99_ms']:.2f}"
                  f" / {row['conceal']['p99_ms']:.2f} ms; same top-{TOP_K} "
                  f"{row['same_top_k_share']:.0%}", flush=True)
    finally:
        kb.close()
        if args.kb is None and fresh:
            shutil.rmtree(kb_path.parent, ignore_errors=True)
    result["load_average_end"] = bench_core.load_average()
    name = f"bench-conceal-{args.lang}-{args.docs}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    (args.out / name).write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
