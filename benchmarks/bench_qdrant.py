"""The Qdrant index (local mode) against the embedded BM25 on SciFact, side by side.

For the 300 test queries, each configuration's top 10 documents are compared with the
embedded index's (overlap = shared documents / 10, averaged), and nDCG@10 is scored on the
unfiltered runs. Three settings:

* ``admin``: no role filter; every document public (the conformance targets: overlap
  >= 0.9, nDCG@10 within 0.01);
* ``filtered``: half the documents (by a hash of their id) for a ``staff`` role only, asked
  as a public principal under ``disclose``; both indexes filter inside the search;
* ``conceal``: the same documents under ``conceal``: the embedded index scores with the
  readable set's exact statistics, Qdrant with the readable set's IDF and a fixed average
  length (see glassrag.retrieval.qdrant_index).

Also ingest time and search latency (p50) per configuration: local mode is qdrant-client's
pure-Python engine (a brute-force scan), so its latency says nothing about a Qdrant server.

    python benchmarks/bench_qdrant.py [--scifact DIR] [--limit N] [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from glassrag import KnowledgeBase, Principal  # noqa: E402
from glassrag.eval.beir import DEFAULT_CHUNKING, write_records  # noqa: E402
from glassrag.eval.beir_data import load_beir  # noqa: E402
from glassrag.eval.metrics import evaluate, ranking  # noqa: E402

# The shared benchmarks sit next to the checkout (or next to the worktrees' folder).
SCIFACT = next((p / "shared" / "benchmarks" / "scifact" for p in ROOT.parents[:2]
                if (p / "shared" / "benchmarks" / "scifact").is_dir()),
               ROOT.parent / "shared" / "benchmarks" / "scifact")
ADMIN = Principal("bench", admin=True)
PUBLIC = Principal("bench-public")
K = 10


def _staff(doc_id: str) -> bool:
    return hashlib.sha256(doc_id.encode()).digest()[0] % 2 == 0


def _kb(root: Path, name: str, records: Path, qdrant: bool, disclosure: str,
        avgdl: Any = "") -> tuple[Path, float]:
    kb_dir = root / name
    kb_dir.mkdir()
    chunking = "".join(f"{k} = {json.dumps(v)}\n" for k, v in DEFAULT_CHUNKING.items())
    (kb_dir / "glassrag.toml").write_text(
        f"[chunking]\n{chunking}[permissions]\ndisclosure = \"{disclosure}\"\n"
        + ('[index]\nbackend = "qdrant"\n' if qdrant else "")
        + (f"avgdl = {avgdl}\n" if qdrant and avgdl else ""))
    started = time.perf_counter()
    with KnowledgeBase.open(kb_dir) as kb:
        report = kb.ingest([records])
        assert not report.failed, report.failed[:3]
    return kb_dir, time.perf_counter() - started


def _runs(kb_dir: Path, queries: dict[str, str], principal: Principal,
          ) -> tuple[dict[str, dict[str, float]], list[float]]:
    run: dict[str, dict[str, float]] = {}
    took: list[float] = []
    with KnowledgeBase.open(kb_dir) as kb:
        for qid, text in queries.items():
            started = time.perf_counter()
            hits = kb.search(text, principal=principal, top_k=K + 1).hits
            took.append((time.perf_counter() - started) * 1000)
            scores: dict[str, float] = {}
            for hit in hits:
                scores.setdefault(hit.chunk.doc_id, hit.score)
            run[qid] = scores
    return run, took


def _overlap(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> dict[str, Any]:
    values = []
    for qid in a:
        top_a = ranking(a[qid], qid)[:K]
        top_b = ranking(b[qid], qid)[:K]
        if top_a or top_b:
            values.append(len(set(top_a) & set(top_b)) / max(len(top_a), len(top_b)))
    return {"mean": round(statistics.fmean(values), 4), "min": round(min(values), 2),
            "identical": sum(v == 1.0 for v in values), "queries": len(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", type=Path, default=SCIFACT)
    parser.add_argument("--limit", type=int, default=None, help="first N test queries")
    parser.add_argument("--filtered-limit", type=int, default=100,
                        help="first N queries for the filtered and conceal settings (local "
                        "mode evaluates payload filters in Python: seconds per query)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "qdrant.json")
    args = parser.parse_args()
    corpus, queries, qrels = load_beir(args.scifact, "test")
    if args.limit:
        queries = dict(list(queries.items())[:args.limit])
        qrels = {q: qrels[q] for q in queries}
    results: dict[str, Any] = {"docs": len(corpus), "queries": len(queries)}
    with tempfile.TemporaryDirectory(prefix="bench-qdrant-") as tmp:
        root = Path(tmp)
        public = root / "public.jsonl"
        write_records(corpus, public)
        roles = root / "roles.jsonl"
        with public.open(encoding="utf-8") as src, roles.open("w", encoding="utf-8") as out:
            for line in src:
                record = json.loads(line)
                if _staff(record["doc_id"]):
                    record["roles"] = ["staff"]
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        few = dict(list(queries.items())[:args.filtered_limit])
        plans = [("admin", public, ADMIN, "disclose", queries, ""),
                 ("filtered", roles, PUBLIC, "disclose", few, ""),
                 ("conceal", roles, PUBLIC, "conceal", few, ""),
                 # The fixed length replaced by the corpus' own (an [index] avgdl setting).
                 ("conceal-avgdl", roles, PUBLIC, "conceal", few, "measured")]
        for setting, records, principal, disclosure, asked, avgdl in plans:
            row: dict[str, Any] = {"queries": len(asked)}
            runs = {}
            for engine in ("embedded", "qdrant"):
                if avgdl and engine == "qdrant":
                    avgdl = results["admin"]["qdrant"]["avgdl"]
                kb_dir, ingest_s = _kb(root, f"{setting}-{engine}", records,
                                       engine == "qdrant", disclosure, avgdl)
                runs[engine], took = _runs(kb_dir, asked, principal)
                row[engine] = {"ingest_s": round(ingest_s, 1),
                               "search_p50_ms": round(statistics.median(took), 2)}
                if setting == "admin":
                    row[engine]["ndcg@10"] = round(evaluate(qrels, runs[engine])["ndcg@10"], 4)
                if engine == "qdrant":
                    with KnowledgeBase.open(kb_dir) as kb:
                        row[engine]["avgdl"] = kb.status()["index"]["avgdl"]
            row["top10_overlap"] = _overlap(runs["embedded"], runs["qdrant"])
            results[setting] = row
            print(setting, json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
