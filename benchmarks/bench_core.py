"""Core benchmark: ingest throughput and BM25 search latency on a synthetic corpus.

glassrag and two peers run on the same corpus, in the same process, one after another:

* ``rank_bm25`` (``BM25Okapi``) -- what LangChain's ``BM25Retriever`` uses;
* ``bm25s`` with its default backend -- what LlamaIndex's ``BM25Retriever`` uses.

Both peers get the corpus (title + text of each chunk, as glassrag indexes it) and the
queries (unique terms, as glassrag searches them) already tokenized by
``glassrag.text.analysis.analyze``, so all three systems score the same tokens. The peers'
tokenization is *not* counted in their timings; glassrag's ingest and search timings
include its own analysis. Neither peer has a role filter: they are timed unfiltered, and
bm25s is also timed with a ``weight_mask`` that zeroes unreadable documents, the closest
thing it has. glassrag's and bm25s's passes over the queries are timed in turns, three
rounds of them (``--rounds``), so that both are measured in the same minutes of a
machine whose speed drifts; each percentile is over all rounds.

Usage::

    python benchmarks/bench_core.py                       # 100k English docs
    python benchmarks/bench_core.py --lang zh
    python benchmarks/bench_core.py --docs 10000 --skip-peers
    python benchmarks/bench_core.py --lang zh --keep-kb            # keep the knowledge base
    python benchmarks/bench_core.py --lang zh --kb PATH            # searches only, on it
    python benchmarks/bench_core.py --lang zh --dump-hits hits.json  # to compare versions

Before the timings are reported, the first ``--verify`` queries (100) are checked against
the whole query ranked exhaustively: the same hits, float32 scores and blocked counts.

Prints a table and writes ``benchmarks/out/bench-core-<lang>-<docs>-<time>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# Run from a checkout without installing; a PYTHONPATH set by the caller chooses the code
# measured instead (to time two versions with one script).
if (HERE.parent / "src" / "glassrag").is_dir() and not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(HERE.parent / "src"))

import synth  # noqa: E402

TARGETS = {
    "search_p50_ms_role_filter": 1.0,  # at 100k chunks
    "speedup_vs_rank_bm25": 20.0,
    "speedup_vs_bm25s": 5.0,  # English (issue 2)
    "speedup_vs_bm25s_zh": 1.0,  # Chinese: at least as fast (issue 15)
    "ingest_chunks_per_s_en": 10_000.0,
    "reingest_ratio": 0.05,
}
TOP_K = 10
#: How a peer's searches timed in turns with glassrag's are labelled among them.
RIVAL = "bm25s "


# -- measuring ---------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summarize(wall_s: Sequence[float], cpu_s: Sequence[float]) -> dict[str, Any]:
    """Wall-clock percentiles, plus the same for the calling thread's CPU time.

    Thread CPU time does not grow while the process waits for a core, so it stays
    meaningful on a shared, busy machine; wall time is what a user would see.
    """
    ms = [x * 1000 for x in wall_s]
    cpu = [x * 1000 for x in cpu_s]
    return {
        "n": len(ms),
        "p50_ms": statistics.median(ms),
        "p90_ms": percentile(ms, 90),
        "p99_ms": percentile(ms, 99),
        "mean_ms": statistics.fmean(ms),
        "max_ms": max(ms),
        "cpu_p50_ms": statistics.median(cpu),
        "cpu_p99_ms": percentile(cpu, 99),
        "latencies_ms": ms,
        "cpu_latencies_ms": cpu,
    }


def time_queries(run: Callable[[Any], Any], queries: Sequence[Any], warmup: int
                 ) -> tuple[list[float], list[float]]:
    """Run ``warmup`` queries untimed (cycling the list), then time each query once:
    wall clock and the calling thread's CPU time (all three systems search in the
    calling thread)."""
    return time_in_turns({"run": (run, queries)}, warmup)["run"]


def time_in_turns(runs: dict[str, tuple[Callable[[Any], Any], Sequence[Any]]], warmup: int,
                  rounds: int = 1, fresh: dict[str, Callable[[], None]] | None = None,
                  ) -> dict[str, tuple[list[float], list[float]]]:
    """Time several systems on the same queries (each its own form of them): each is
    warmed up with its first ``warmup`` queries, then each searches all its queries in
    turn, and the turns are repeated ``rounds`` times. ``fresh`` (by system) is called
    before each of that system's turns.

    Each turn is a whole pass, so each system is timed in its own steady state (its data
    in the caches); the rounds put every system in the same minutes, since a shared
    machine's speed drifts by more than the differences measured (the same pass of
    searches timed twice a second apart can differ by 1.6x)."""
    for run, queries in runs.values():
        for i in range(warmup):
            run(queries[i % len(queries)])
    timed: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in runs}
    gc.collect()
    gc.disable()  # a collection pause inside one query would land in the p99
    try:
        for _ in range(rounds):
            for name, (run, queries) in runs.items():
                wall, cpu = timed[name]
                (fresh or {}).get(name, lambda: None)()
                for q in queries:
                    c0 = time.thread_time()
                    t0 = time.perf_counter()
                    run(q)
                    t1 = time.perf_counter()
                    c1 = time.thread_time()
                    wall.append(t1 - t0)
                    cpu.append(c1 - c0)
        return timed
    finally:
        gc.enable()


# -- environment -------------------------------------------------------------------------
def machine_info() -> dict[str, Any]:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_total = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_total = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for pkg in ("glassrag", "tantivy", "numpy", "jieba", "PyStemmer", "rank-bm25", "bm25s",
                "scipy", "numba"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    commit = None
    code = measured_code()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        commit = subprocess.run(
            ["git", "-C", str(code), "describe", "--always", "--dirty"],
            capture_output=True, text=True, timeout=10,
        ).stdout.strip() or None
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model,
        "memory": mem_total,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "git": commit,  # of the glassrag code measured
        "glassrag_code": str(code),
    }


def measured_code() -> Path:
    """Where the glassrag package measured is imported from."""
    import glassrag

    return Path(glassrag.__file__).resolve().parent


def load_average() -> list[float] | None:
    """1/5/15-minute load: other work on the machine shows up in every latency here."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def peak_rss_mb() -> float | None:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    except (ImportError, OSError):
        return None


def dir_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


# -- corpus --------------------------------------------------------------------------------
SHARD_DOCS = 10_000  # ~6.3 MB of English per file, under glassrag's 20 MB per-file cap


def load_corpus(args: argparse.Namespace) -> tuple[list[Path], list[dict[str, Any]], float]:
    """Generate (or reuse) the sharded corpus; return its files, records, generation time."""
    directory = args.out / f"corpus-{args.lang}-{args.docs}-s{args.seed}"
    n_shards = (args.docs + SHARD_DOCS - 1) // SHARD_DOCS
    paths = [directory / f"corpus-{i:04d}.jsonl" for i in range(n_shards)]
    gen_s = 0.0
    if not all(p.exists() for p in paths):
        t0 = time.perf_counter()
        paths = synth.write_shards(directory, args.docs, args.lang, args.seed, SHARD_DOCS)
        gen_s = time.perf_counter() - t0
    records: list[dict[str, Any]] = []
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            records.extend(json.loads(line) for line in handle)
    if len(records) != args.docs:
        raise SystemExit(f"corpus in {directory} has {len(records)} records, expected "
                         f"{args.docs}; delete the folder and run again")
    return paths, records, gen_s


def check_ingest(report: Any, expect_chunks: int | None, what: str) -> None:
    """A benchmark of an ingest that silently dropped files would measure nothing."""
    failed = list(getattr(report, "failed", None) or [])
    if failed:
        raise SystemExit(f"{what}: {len(failed)} input(s) failed, e.g. {failed[0]}")
    if expect_chunks is not None and int(report.chunks) != expect_chunks:
        raise SystemExit(f"{what}: {report.chunks} chunks, expected {expect_chunks}: {report}")


def make_analyzer() -> tuple[Callable[[str], list[str]], Callable[[list[str]], list[str]]]:
    """glassrag's own analyzer, so every system scores exactly the same tokens."""
    from glassrag.text.analysis import analyze

    def unique_terms(tokens: list[str]) -> list[str]:
        return list(dict.fromkeys(tokens))  # first-occurrence order, as glassrag searches

    return analyze, unique_terms


# -- glassrag ------------------------------------------------------------------------------
def time_ingest(kb: Any, args: argparse.Namespace, corpus_paths: list[Path]
                ) -> dict[str, Any]:
    """The first ingest of the corpus, then an unchanged re-ingest."""
    out: dict[str, Any] = {}
    c0, t0 = time.process_time(), time.perf_counter()
    report = kb.ingest([str(p) for p in corpus_paths], chunker="sentences")
    first = time.perf_counter() - t0
    first_cpu = time.process_time() - c0
    check_ingest(report, args.docs, "first ingest")  # one chunk per synthetic document
    chunks = int(report.chunks)
    out["ingest"] = {
        "seconds": first,
        "chunks": chunks,
        "added": getattr(report, "added", None),
        "chunks_per_s": chunks / first if first else None,
        "process_cpu_s": first_cpu,  # all threads (Tantivy indexes on its own threads)
        "docs_per_s": args.docs / first if first else None,
    }
    print(f"  glassrag ingest: {chunks} chunks in {first:.2f} s "
          f"({chunks / first:,.0f} chunks/s)", flush=True)

    c0, t0 = time.process_time(), time.perf_counter()
    report2 = kb.ingest([str(p) for p in corpus_paths], chunker="sentences")
    again = time.perf_counter() - t0
    again_cpu = time.process_time() - c0
    check_ingest(report2, None, "re-ingest")
    if getattr(report2, "unchanged", args.docs) != args.docs:
        raise SystemExit(f"re-ingest of the unchanged corpus changed something: {report2}")
    out["reingest"] = {
        "seconds": again,
        "added": getattr(report2, "added", None),
        "unchanged": getattr(report2, "unchanged", None),
        "chunks": getattr(report2, "chunks", None),
        "ratio_to_first": again / first if first else None,
        "process_cpu_s": again_cpu,
    }
    print(f"  glassrag re-ingest (unchanged): {again:.2f} s = {again / first:.1%} of first "
          f"(unchanged={out['reingest']['unchanged']})", flush=True)
    return out


Rivals = Callable[[], dict[str, tuple[Callable[[Any], Any], Sequence[Any]]]]


def bench_glassrag(args: argparse.Namespace, corpus_paths: list[Path], queries: list[str],
                   rivals: Rivals | None = None) -> dict[str, Any]:
    """Ingest (or reuse) the knowledge base and time its searches for three principals.
    ``rivals``, called after the ingest, gives a peer's searches (by label), which are
    timed in turns with glassrag's; their timings are returned under ``"_rivals"``."""
    from glassrag import KnowledgeBase, Principal
    from glassrag.text import analysis

    # (the code before forget_queries had only the cache itself)
    forget_queries = getattr(analysis, "forget_queries", None) or analysis._remembered.cache_clear

    out: dict[str, Any] = {}
    reuse = args.kb is not None
    workdir = Path(tempfile.mkdtemp(prefix="glassrag-bench-", dir=args.workdir))
    kb_path = args.kb if reuse else workdir / "kb"
    try:
        t0 = time.perf_counter()
        kb = KnowledgeBase.open(kb_path, create=not reuse)
        out["create_s"] = time.perf_counter() - t0
        if reuse:
            # Searches only, on a knowledge base an earlier run kept (--keep-kb): the
            # corpus must be the one it was built from.
            if kb.lexical.num_docs() != args.docs:
                raise SystemExit(f"{kb_path} holds {kb.lexical.num_docs()} chunks, expected "
                                 f"{args.docs}")
            out["reused_kb"] = str(kb_path)
        else:
            out.update(time_ingest(kb, args, corpus_paths))

        principals = {
            "role_filter_employee": Principal("bench", roles=["employee"]),
            "role_filter_all_roles": Principal("bench", roles=["employee", "finance"]),
            "public_only": Principal("bench", roles=[]),
        }
        first_query = queries[0]
        t0 = time.perf_counter()
        kb.search(first_query, principal=principals["role_filter_employee"], top_k=TOP_K,
                  mode="bm25")
        out["first_search_ms"] = (time.perf_counter() - t0) * 1000
        if args.lang != "en":
            out.update(settle_impacts(kb))

        searches: dict[str, Any] = {}
        top_docs: dict[str, list[list[str]]] = {}
        dumped: dict[str, list[dict[str, Any]]] = {}

        def searcher(principal: Any) -> Callable[[str], Any]:
            def run(q: str) -> Any:
                return kb.search(q, principal=principal, top_k=TOP_K, mode="bm25")
            return run

        mine = {label: (searcher(p), queries) for label, p in principals.items()}
        peer = rivals() if rivals is not None else {}
        # The employee pass times the queries as first seen, in every round: glassrag's
        # timings include its own analysis of the query, which it remembers.
        timed = time_in_turns({**mine, **peer}, args.warmup, args.rounds,
                              fresh={"role_filter_employee": forget_queries})
        out["_rivals"] = {label: timed[label] for label in peer}
        for label, (run, _) in mine.items():
            results = [run(q) for q in queries]
            stats = summarize(*timed[label])
            stats["mean_hits"] = statistics.fmean(len(r.hits) for r in results)
            if stats["mean_hits"] < 1:
                raise SystemExit(f"glassrag search [{label}] found nothing: is the KB empty?")
            stats["mean_blocked_count"] = statistics.fmean(r.blocked_count for r in results)
            searches[label] = stats
            top_docs[label] = [[h.chunk.doc_id for h in r.hits] for r in results]
            dumped[label] = [{"ids": [h.chunk.chunk_id for h in r.hits],
                              "scores": [h.score for h in r.hits],
                              "blocked": r.blocked_count} for r in results]
            print(f"  glassrag search [{label}]: p50 {stats['p50_ms']:.3f} ms, "
                  f"p99 {stats['p99_ms']:.3f} ms, cpu p50 {stats['cpu_p50_ms']:.3f} ms "
                  f"over {stats['n']} queries", flush=True)
        out["search"] = searches
        out["_top_docs"] = top_docs  # for the leak and agreement checks; not written out
        if args.dump_hits:
            # Scores as JSON floats round-trip exactly: two dumps (say, of two versions of
            # the code on the same corpus) are equal only if every hit and score is.
            args.dump_hits.write_text(json.dumps({"queries": queries, "hits": dumped}))
            print(f"  glassrag hits written to {args.dump_hits}", flush=True)
        if args.verify:
            out["exact"] = verify_exact(kb, principals, queries[:args.verify])
            print(f"  glassrag exact against the whole query: {out['exact']}", flush=True)

        kb.close()
        out["kb_size_mb"] = dir_size_mb(kb_path)
        t0 = time.perf_counter()
        kb = KnowledgeBase.open(kb_path, create=False)
        kb.search(first_query, principal=principals["role_filter_employee"], top_k=TOP_K,
                  mode="bm25")
        out["reopen_and_first_search_ms"] = (time.perf_counter() - t0) * 1000
        if args.lang != "en":
            # That search started a build in the background: let it end before the peers
            # are timed in this process.
            settle_impacts(kb)
        kb.close()
    finally:
        if not args.keep_kb:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            out["kb_path"] = str(kb_path)
    return out


def settle_impacts(kb: Any) -> dict[str, Any]:
    """Wait for the precomputed term scores a CJK search builds in the background (the
    searches before they are ready take the Tantivy path), so the timed searches measure
    the steady state; report how long the build took."""
    from glassrag.retrieval import impacts

    t0 = time.perf_counter()
    ready = impacts.settle(kb.lexical, timeout=600)
    waited = time.perf_counter() - t0
    print(f"  glassrag term scores built in the background: ready={ready}, waited "
          f"{waited:.2f} s, build {impacts.build_seconds(kb.lexical):.2f} s", flush=True)
    return {"impacts_ready": ready, "impacts_wait_s": waited,
            "impacts_build_s": impacts.build_seconds(kb.lexical)}


def verify_exact(kb: Any, principals: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    """Compare each search with the whole query ranked exhaustively: every matching chunk
    scored by one Tantivy search, the readable ones kept in order, the others counted.
    Hits (ids and float32 scores, compared exactly) and blocked counts must be the same."""
    from glassrag.retrieval.search import readable_sets
    from glassrag.text.analysis import analyze, unique_terms

    lexical = kb.lexical
    searcher = lexical.searcher
    mismatches = 0
    for q in queries:
        text = lexical.text_query(unique_terms(analyze(q)))
        hits = searcher.search(text, limit=max(searcher.num_docs, 1), count=False).hits
        sets = searcher.fast_field_values("roleset", [a for _, a in hits])
        counts = lexical.counts_by_roleset(text)
        for principal in principals.values():
            readable = readable_sets(kb.store, principal) or set()  # no admin among them
            best = lexical._matches([h for h, r in zip(hits, sets, strict=True)
                                     if r in readable][:TOP_K])
            rows = kb.store.chunks_by_rowid([m.rowid for m in best])
            expected = ([rows[m.rowid].chunk_id for m in best], [m.score for m in best],
                        sum(n for rid, n in counts.items() if rid not in readable))
            got = kb.search(q, principal=principal, top_k=TOP_K, mode="bm25")
            mismatches += ([h.chunk.chunk_id for h in got.hits], [h.score for h in got.hits],
                           got.blocked_count) != expected
    return {"searches": len(queries) * len(principals), "mismatches": mismatches}


# -- peers -----------------------------------------------------------------------------------
def cached_tokens(path: Path | None, records: list[dict[str, Any]],
                  analyze: Callable[[str], list[str]]) -> tuple[list[list[str]], float]:
    """The peers' corpus tokens, read from ``path`` when an earlier run of the same corpus
    wrote it (tokenizing 100k Chinese documents with jieba takes minutes)."""
    if path is not None and path.exists():
        t0 = time.perf_counter()
        cached = json.loads(path.read_text())
        if cached["docs"] == [r["doc_id"] for r in records]:
            return cached["tokens"], time.perf_counter() - t0
        raise SystemExit(f"{path} holds the tokens of another corpus")
    tokens, seconds = tokenize_corpus(records, analyze)
    if path is not None:
        path.write_text(json.dumps({"docs": [r["doc_id"] for r in records], "tokens": tokens}))
    return tokens, seconds


def tokenize_corpus(records: list[dict[str, Any]], analyze: Callable[[str], list[str]]
                    ) -> tuple[list[list[str]], float]:
    t0 = time.perf_counter()
    interned: dict[str, str] = {}
    # glassrag indexes every chunk's title tokens with its text tokens (seed 000 scores
    # title + text), so the peers get the same. Interning keeps 100k token lists small.
    tokens = [
        [interned.setdefault(t, t) for t in analyze(r["title"]) + analyze(r["text"])]
        for r in records
    ]
    return tokens, time.perf_counter() - t0


def bench_rank_bm25(corpus_tokens: list[list[str]], query_tokens: list[list[str]],
                    warmup: int) -> tuple[dict[str, Any], list[list[int]]]:
    import numpy as np
    from rank_bm25 import BM25Okapi

    t0 = time.perf_counter()
    model = BM25Okapi(corpus_tokens)
    build = time.perf_counter() - t0
    print(f"  rank_bm25 index: {build:.2f} s", flush=True)

    def run(q: list[str]) -> list[int]:
        # get_scores + argpartition: cheaper than get_top_n's full argsort, so this
        # flatters rank_bm25 slightly compared with LangChain's use of get_top_n.
        scores = model.get_scores(q)
        top = np.argpartition(-scores, TOP_K)[:TOP_K]
        return top[np.argsort(-scores[top], kind="stable")].tolist()

    wall, cpu = time_queries(run, query_tokens, warmup)
    tops = [run(q) for q in query_tokens]
    stats = summarize(wall, cpu)
    stats["index_s"] = build
    print(f"  rank_bm25 search: p50 {stats['p50_ms']:.2f} ms, p99 {stats['p99_ms']:.2f} ms, "
          f"cpu p50 {stats['cpu_p50_ms']:.2f} ms over {stats['n']} queries", flush=True)
    return stats, tops


def index_bm25s(corpus_tokens: list[list[str]], masks: dict[str, Any]
                ) -> tuple[dict[str, Any], dict[str, Callable[[list[str]], Any]]]:
    """bm25s indexed on the corpus, and its searches by label: unfiltered, and with each
    of ``masks`` as its ``weight_mask``."""
    import bm25s

    t0 = time.perf_counter()
    model = bm25s.BM25()  # defaults, as LlamaIndex's BM25Retriever constructs it
    model.index(corpus_tokens, show_progress=False)
    build = time.perf_counter() - t0
    print(f"  bm25s index: {build:.2f} s (backend {model.backend})", flush=True)

    def searcher(mask: Any) -> Callable[[list[str]], Any]:
        def run(q: list[str]) -> Any:
            docs, _ = model.retrieve([q], k=TOP_K, show_progress=False, n_threads=0,
                                     weight_mask=mask)
            return docs[0]
        return run

    runs = {label: searcher(mask) for label, mask in {"unfiltered": None, **masks}.items()}
    return {"index_s": build, "backend": getattr(model, "backend", None)}, runs


def bm25s_results(out: dict[str, Any], runs: dict[str, Callable[[list[str]], Any]],
                  timed: dict[str, tuple[list[float], list[float]]],
                  query_tokens: list[list[str]]) -> dict[str, list[list[int]]]:
    """bm25s's timings (``timed``, by label) summarised into ``out``; its top hits."""
    tops: dict[str, list[list[int]]] = {}
    for label, run in runs.items():
        tops[label] = [run(q).tolist() for q in query_tokens]
        stats = out[label] = summarize(*timed[label])
        print(f"  bm25s search [{label}]: p50 {stats['p50_ms']:.3f} ms, "
              f"p99 {stats['p99_ms']:.3f} ms, cpu p50 {stats['cpu_p50_ms']:.3f} ms "
              f"over {stats['n']} queries", flush=True)
    return tops


def overlap_at_k(a: list[list[str]], b: list[list[str]]) -> float:
    """Mean |top-k(a) ∩ top-k(b)| / k over queries: do the systems find the same chunks?"""
    if not a:
        return float("nan")
    return statistics.fmean(len(set(x) & set(y)) / TOP_K for x, y in zip(a, b, strict=True))


# -- report ----------------------------------------------------------------------------------
def ratio(num: float | None, den: float | None) -> float | None:
    if num is None or not den:
        return None
    return num / den


def print_table(result: dict[str, Any]) -> None:
    rows: list[tuple[str, dict[str, Any]]] = []
    g = result.get("glassrag")
    if g:
        rows += [(f"glassrag bm25 [{label}]", s) for label, s in g["search"].items()]
    p = result.get("peers", {})
    if "rank_bm25" in p:
        rows.append(("rank_bm25 BM25Okapi (no filter)", p["rank_bm25"]))
    if "bm25s" in p:
        rows += [(f"bm25s default backend [{label}]", s) for label, s in p["bm25s"].items()
                 if isinstance(s, dict) and "p50_ms" in s]
    width = max(len(name) for name, _ in rows) if rows else 10
    print()
    print(f"{'system':<{width}}  {'p50 ms':>8}  {'p99 ms':>8}  {'cpu p50':>8}  {'queries':>7}")
    for name, s in rows:
        print(f"{name:<{width}}  {s['p50_ms']:>8.3f}  {s['p99_ms']:>8.3f}  "
              f"{s['cpu_p50_ms']:>8.3f}  {s['n']:>7}")
    if result.get("ratios"):
        print()
        for name, value in result["ratios"].items():
            print(f"{name}: {value:.1f}x" if value is not None else f"{name}: n/a")
    if result.get("targets"):
        print()
        for name, t in result["targets"].items():
            print(f"target {name}: {t['value']} (goal {t['goal']}) -> "
                  f"{'MET' if t['met'] else 'MISSED'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=1000, help="timed queries per system")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3,
                        help="times glassrag's and bm25s's passes are repeated, in turns")
    parser.add_argument("--rank-bm25-queries", type=int, default=30,
                        help="rank_bm25 is slow: time it on the first N queries only")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--skip-glassrag", action="store_true", help="time the peers only")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--workdir", default=None, help="where the temporary KB goes")
    parser.add_argument("--keep-kb", action="store_true")
    parser.add_argument("--kb", type=Path, default=None,
                        help="time searches on this knowledge base (kept by an earlier run "
                             "with --keep-kb from the same corpus) instead of ingesting")
    parser.add_argument("--peer-tokens", type=Path, default=None,
                        help="keep the peers' corpus tokens in this file, and reuse them")
    parser.add_argument("--dump-hits", type=Path, default=None,
                        help="write every search's chunk ids, scores and blocked count here")
    parser.add_argument("--verify", type=int, default=100,
                        help="check the first N queries' hits and blocked counts against "
                             "the whole query ranked exhaustively (0: skip)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_at_start = load_average()
    print(f"glassrag code: {measured_code()}", flush=True)
    print(f"corpus: {args.docs} {args.lang} docs, seed {args.seed}; load average "
          f"{load_at_start} on {os.cpu_count()} CPUs", flush=True)
    if load_at_start and load_at_start[0] > 0.5 * (os.cpu_count() or 1):
        print("WARNING: the machine is busy; latencies will be inflated", flush=True)
    corpus_paths, records, gen_s = load_corpus(args)
    doc_index = {r["doc_id"]: i for i, r in enumerate(records)}
    analyze, unique_terms = make_analyzer()

    # Same queries for every system; drop the (few) that analyse to no terms at all,
    # since glassrag rejects those as empty and the peers would return arbitrary docs.
    raw = synth.queries(args.queries * 2 + 100, args.lang, seed=args.seed + 1)
    queries: list[str] = []
    dropped = 0
    for q in raw:
        if len(queries) == args.queries:
            break
        if unique_terms(analyze(q)):
            queries.append(q)
        else:
            dropped += 1
    query_tokens = [unique_terms(analyze(q)) for q in queries]
    result: dict[str, Any] = {
        "benchmark": "bench_core",
        "started": started,
        "machine": machine_info(),
        "load_average_at_start": load_at_start,
        "corpus": {"lang": args.lang, "docs": args.docs, "seed": args.seed,
                   "files": len(corpus_paths), "dir": str(corpus_paths[0].parent),
                   "generate_s": gen_s,
                   "bytes": sum(p.stat().st_size for p in corpus_paths)},
        "queries": {"n": len(queries), "warmup": args.warmup, "rounds": args.rounds,
                    "top_k": TOP_K,
                    "dropped_empty": dropped,
                    "examples": queries[:5]},
        "notes": [
            "Peers get pre-tokenized corpus and queries (glassrag.text.analysis.analyze, unique "
            "query terms); their tokenization time is excluded from their search and index "
            "timings. glassrag's timings include its own analysis and result loading from "
            "SQLite.",
            "rank_bm25 and bm25s have no role filter. bm25s is also timed with weight_mask "
            "(unreadable docs weighted 0), its nearest equivalent.",
            f"rank_bm25 is timed on the first {args.rank_bm25_queries} queries only (it is "
            "slow); its ratio uses glassrag's p50 on those same queries.",
            "All systems run single-threaded in one process, one query at a time.",
            f"glassrag's and bm25s's passes are timed in turns, {args.rounds} rounds; each "
            "percentile is over all rounds. glassrag's employee pass forgets the analysed "
            "queries first, so it times every query as first seen.",
        ],
    }

    roles = [r["roles"] for r in records]
    peers: dict[str, Any] = {}

    def bm25s_rivals() -> dict[str, tuple[Callable[[Any], Any], Sequence[Any]]]:
        """Index bm25s (after glassrag's ingest, so that its data does not weigh on that
        timing); its searches, to be timed in turns with glassrag's."""
        print("peers (same corpus, pre-tokenized):", flush=True)
        corpus_tokens, tok_s = cached_tokens(args.peer_tokens, records, analyze)
        print(f"  tokenized corpus for peers in {tok_s:.2f} s", flush=True)
        import numpy as np

        masks = {
            "weight_mask_employee": np.array(
                [1.0 if set(r) & {"public", "employee"} else 0.0 for r in roles],
                dtype=np.float32),
        }
        peers["corpus_tokenize_s"] = tok_s
        peers["bm25s"], runs = index_bm25s(corpus_tokens, masks)
        peers["_corpus_tokens"], peers["_bm25s_runs"] = corpus_tokens, runs
        gc.collect()
        return {RIVAL + label: (run, query_tokens) for label, run in runs.items()}

    if not args.skip_glassrag:
        print("glassrag:", flush=True)
        g = bench_glassrag(args, corpus_paths, queries,
                           None if args.skip_peers else bm25s_rivals)
        # The role filter must hold: every hit readable by its principal.
        readable = {"role_filter_employee": {"public", "employee"},
                    "role_filter_all_roles": {"public", "employee", "finance"},
                    "public_only": {"public"}}
        leaks = 0
        for label, tops in g["_top_docs"].items():
            for doc_ids in tops:
                leaks += sum(1 for d in doc_ids if not set(roles[doc_index[d]]) & readable[label])
        g["role_filter_violations"] = leaks
        result["glassrag"] = g

    if not args.skip_peers:
        if "glassrag" in result:
            timed = result["glassrag"].pop("_rivals")
        else:
            timed = time_in_turns(bm25s_rivals(), args.warmup, args.rounds)
        runs = peers.pop("_bm25s_runs")
        bm25s_tops = bm25s_results(peers["bm25s"], runs,
                                   {label: timed[RIVAL + label] for label in runs},
                                   query_tokens)
        corpus_tokens = peers.pop("_corpus_tokens")
        n_rank = min(args.rank_bm25_queries, len(query_tokens))
        peers["rank_bm25"], rank_tops = bench_rank_bm25(
            corpus_tokens, query_tokens[:n_rank], warmup=min(3, n_rank))
        del corpus_tokens, runs
        gc.collect()
        result["peers"] = peers

        ids = [r["doc_id"] for r in records]
        if "glassrag" in result:
            g = result["glassrag"]
            broad = g["_top_docs"]["role_filter_all_roles"]
            emp = g["_top_docs"]["role_filter_employee"]
            result["agreement"] = {
                "overlap_at_10_glassrag_all_roles_vs_bm25s": overlap_at_k(
                    broad, [[ids[i] for i in t] for t in bm25s_tops["unfiltered"]]),
                "overlap_at_10_glassrag_employee_vs_bm25s_mask": overlap_at_k(
                    emp, [[ids[i] for i in t] for t in bm25s_tops["weight_mask_employee"]]),
                "overlap_at_10_glassrag_all_roles_vs_rank_bm25": overlap_at_k(
                    broad[:n_rank], [[ids[i] for i in t] for t in rank_tops]),
            }

    if "glassrag" in result and "peers" in result:
        g = result["glassrag"]["search"]
        p = result["peers"]
        emp = g["role_filter_employee"]
        n_rank = p["rank_bm25"]["n"]
        emp_first = statistics.median(emp["latencies_ms"][:n_rank])
        broad_first = statistics.median(g["role_filter_all_roles"]["latencies_ms"][:n_rank])
        result["ratios"] = {
            "rank_bm25_p50 / glassrag_p50 (employee filter, same queries)":
                ratio(p["rank_bm25"]["p50_ms"], emp_first),
            "rank_bm25_p50 / glassrag_p50 (all-roles filter, same queries)":
                ratio(p["rank_bm25"]["p50_ms"], broad_first),
            "bm25s_p50 / glassrag_p50 (bm25s unfiltered vs glassrag employee filter)":
                ratio(p["bm25s"]["unfiltered"]["p50_ms"], emp["p50_ms"]),
            "bm25s_p50 / glassrag_p50 (both unfiltered-equivalent: all roles)":
                ratio(p["bm25s"]["unfiltered"]["p50_ms"],
                      g["role_filter_all_roles"]["p50_ms"]),
            "bm25s_mask_p50 / glassrag_p50 (both filtered to employee)":
                ratio(p["bm25s"]["weight_mask_employee"]["p50_ms"], emp["p50_ms"]),
            "cpu: rank_bm25_p50 / glassrag_p50 (employee filter, same queries)":
                ratio(p["rank_bm25"]["cpu_p50_ms"],
                      statistics.median(emp["cpu_latencies_ms"][:n_rank])),
            "cpu: bm25s_p50 / glassrag_p50 (bm25s unfiltered vs glassrag employee filter)":
                ratio(p["bm25s"]["unfiltered"]["cpu_p50_ms"], emp["cpu_p50_ms"]),
            "bm25s_index_s / glassrag_ingest_s":
                ratio(p["bm25s"]["index_s"], (result["glassrag"].get("ingest") or {}).get(
                    "seconds")),
        }

    if "glassrag" in result:
        g = result["glassrag"]
        targets: dict[str, Any] = {}
        p50 = g["search"]["role_filter_employee"]["p50_ms"]
        targets["search_p50_ms_role_filter"] = {
            "value": round(p50, 4), "goal": f"<= {TARGETS['search_p50_ms_role_filter']}",
            "met": p50 <= TARGETS["search_p50_ms_role_filter"],
            "cpu_p50_ms": round(g["search"]["role_filter_employee"]["cpu_p50_ms"], 4),
            "note": None if args.docs == 100_000 else f"goal is for 100k chunks; ran {args.docs}",
        }
        if args.lang == "en" and g.get("ingest"):
            cps = g["ingest"]["chunks_per_s"]
            targets["ingest_chunks_per_s_en"] = {
                "value": round(cps), "goal": f">= {TARGETS['ingest_chunks_per_s_en']:.0f}",
                "met": cps >= TARGETS["ingest_chunks_per_s_en"]}
        if g.get("reingest"):
            rr = g["reingest"]["ratio_to_first"]
            targets["reingest_ratio"] = {"value": round(rr, 4),
                                         "goal": f"<= {TARGETS['reingest_ratio']}",
                                         "met": rr <= TARGETS["reingest_ratio"]}
        if g.get("exact"):
            targets["exact_results"] = {"value": g["exact"]["mismatches"], "goal": "== 0",
                                        "met": g["exact"]["mismatches"] == 0}
        if result.get("ratios"):
            r = result["ratios"]
            v = r["rank_bm25_p50 / glassrag_p50 (employee filter, same queries)"]
            targets["speedup_vs_rank_bm25"] = {
                "value": round(v, 1), "goal": f">= {TARGETS['speedup_vs_rank_bm25']}",
                "met": v >= TARGETS["speedup_vs_rank_bm25"]}
            v = r["bm25s_p50 / glassrag_p50 (bm25s unfiltered vs glassrag employee filter)"]
            goal = TARGETS["speedup_vs_bm25s" if args.lang == "en" else "speedup_vs_bm25s_zh"]
            targets["speedup_vs_bm25s"] = {"value": round(v, 2), "goal": f">= {goal}",
                                           "met": v >= goal}
        result["targets"] = targets
        g.pop("_top_docs", None)
        g.pop("_rivals", None)

    result["load_average_at_end"] = load_average()
    result["peak_rss_mb"] = peak_rss_mb()
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    print_table(result)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_file = args.out / f"bench-core-{args.lang}-{args.docs}-{stamp}.json"
    out_file.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"\nwrote {out_file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
