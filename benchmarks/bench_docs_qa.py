"""Answers on real documentation: the docs-qa development set, corpus by corpus.

For each corpus of the set (``corpus/<name>/``) a knowledge base with default settings is built
and every question asked (``glassrag.eval.docs``, the code behind ``glassrag evaluate QUESTIONS
--docs``). The script then writes ``predictions.jsonl`` in the set's scorer format (citation
paths ``corpus/<name>/<source>``), scores it with the set's own ``score.py`` (imported from
the set; its figures must equal glassrag's, and a difference is reported), and prints per
corpus and per question kind: answered / cited correctly, false refusals, ``no_evidence`` on
unanswerable questions, a gold passage among the top 5 hits, the answer length (median, 90th
percentile, characters of the answer text with code) and the ask latency (median).

    python benchmarks/bench_docs_qa.py                                   # bm25
    python benchmarks/bench_docs_qa.py --mode hybrid --embedder e5:multilingual-e5-small
    python benchmarks/bench_docs_qa.py --json > out.json                 # machine-readable
    python benchmarks/bench_docs_qa.py --markdown                        # RESULTS.md tables
    PYTHONPATH=/other/worktree/src python benchmarks/bench_docs_qa.py    # another branch

Knowledge bases are kept under ``benchmarks/out/docs-qa-kb/<key>/<corpus>/``, the key being a
hash of glassrag's source files, the mode's embedder and the corpus files, so a rerun on the
same code reuses them and a code change builds new ones; ``--rebuild`` builds afresh anyway.
Embeddings outlive the knowledge bases: they are keyed by chunk-text hash and model, so every
new knowledge base starts with the rows of ``benchmarks/out/docs-qa-embeddings.sqlite`` and
adds its own back after the run. A code change then re-embeds only the chunks whose text it
changed (a hybrid rerun takes about a minute instead of re-embedding ~2,000 chunks).
The glassrag under test is whatever ``import glassrag`` finds.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
EVAL_MODULES = {"docs_questions": "docs_questions", "docs_eval": "docs",
                "docs_eval_report": "docs_report"}
EMBEDDINGS_CACHE = OUT / "docs-qa-embeddings.sqlite"
KB_DB = "glassrag.db"
SET_CANDIDATES = (
    os.environ.get("DOCS_QA_DEV", ""),
    str(HERE.parent.parent / "shared" / "benchmarks" / "docs-qa-dev"),
    "/work/shared/benchmarks/docs-qa-dev",
)


def eval_modules() -> dict[str, ModuleType]:
    """glassrag's evaluation modules, by the names this script uses."""
    return {name: importlib.import_module(f"glassrag.eval.{module}")
            for name, module in EVAL_MODULES.items()}


def default_set() -> Path | None:
    return next((Path(p) for p in SET_CANDIDATES if p and (Path(p) / "questions.jsonl").is_file()),
                None)


def cache_key(set_dir: Path, mode: str, embedder: str | None) -> str:
    """A hash of the code under test, the embedder (dense and hybrid) and the corpus files."""
    import glassrag

    digest = hashlib.sha256()
    package = Path(glassrag.__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    digest.update(f"embedder={embedder if mode in ('dense', 'hybrid') else ''}".encode())
    for path in sorted((set_dir / "corpus").rglob("*")):
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path.relative_to(set_dir)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def kb_dirs(modules: dict[str, ModuleType], questions: list[Any], corpus: Path,
            kb_root: Path) -> list[Path]:
    """The knowledge-base folders run_docs_eval will use under ``kb_root``."""
    plan = modules["docs_eval"].corpus_folders(questions, corpus)
    return [kb_root] if len(plan) == 1 else [kb_root / (name or "_root") for name in plan]


def _cache_table(db: sqlite3.Connection, schema: str = "main") -> None:
    db.execute(f"CREATE TABLE IF NOT EXISTS {schema}.embeddings (content_hash TEXT NOT NULL,"
               " model TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,"
               " created_at TEXT NOT NULL, PRIMARY KEY (content_hash, model))")


def seed_embeddings(folders: list[Path]) -> None:
    """Give each knowledge base not built yet the cached embeddings (created empty first, so
    its schema is glassrag's own); chunks whose text is cached are then never re-embedded."""
    if not EMBEDDINGS_CACHE.is_file():
        return
    from glassrag.kb import KnowledgeBase

    for folder in folders:
        if (folder / KB_DB).exists():
            continue
        KnowledgeBase.open(folder).close()
        with contextlib.closing(sqlite3.connect(folder / KB_DB)) as db:
            db.execute("ATTACH DATABASE ? AS cache", (str(EMBEDDINGS_CACHE),))
            db.execute("INSERT OR IGNORE INTO main.embeddings SELECT * FROM cache.embeddings")
            db.commit()


def keep_embeddings(folders: list[Path]) -> None:
    """Add the knowledge bases' embeddings to the cache."""
    OUT.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(EMBEDDINGS_CACHE)) as cache:
        _cache_table(cache)
        for folder in folders:
            if (folder / KB_DB).exists():
                cache.execute("ATTACH DATABASE ? AS kb", (str(folder / KB_DB),))
                cache.execute("INSERT OR IGNORE INTO main.embeddings SELECT content_hash, model,"
                              " dim, vector, created_at FROM kb.embeddings")
                cache.commit()
                cache.execute("DETACH DATABASE kb")


def predictions(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in the scorer's format; citations name ``corpus/<name>/<source>``."""
    return [{"id": r["id"], "status": r["status"], "answer": r["answer"],
             "citations": [{"path": f"corpus/{r['corpus']}/{c['source']}",
                            "line_start": c["line_start"], "line_end": c["line_end"]}
                           for c in r["citations"]]}
            for r in rows]


def official_scores(set_dir: Path, preds: list[dict[str, Any]]) -> dict[str, Any]:
    """The set's own score.py on ``preds``: per corpus, per kind and overall."""
    spec = importlib.util.spec_from_file_location("docs_qa_score", set_dir / "score.py")
    assert spec is not None and spec.loader is not None
    score = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(score)
    questions = score.load_jsonl(str(set_dir / "questions.jsonl"))
    by_id = {p["id"]: p for p in preds}
    results = [score.judge(q, by_id.get(q["id"])) for q in questions]
    out: dict[str, Any] = {"OVERALL": score.aggregate(results)}
    for key in ("corpus", "kind"):
        for name in dict.fromkeys(r[key] for r in results):
            out[f"{key} {name}"] = score.aggregate([r for r in results if r[key] == name])
    return out


def disagreements(report: Any, official: dict[str, Any]) -> list[str]:
    """Where glassrag's own figures differ from score.py's (they must not)."""
    pairs = {"answered_correct": "answered_correct", "cited_correct": "cited_correct",
             "both_correct": "both_correct", "false_refusal": "false_refusal",
             "no_evidence": "no_evidence_acc"}
    ours = {"OVERALL": report.overall}
    for key in ("corpus", "kind"):
        ours.update({f"{key} {n}": f for n, f in report.groups.get(key, {}).items()})
    out = []
    for group, theirs in official.items():
        for mine, their_key in pairs.items():
            a, b = ours.get(group, {}).get(mine), theirs.get(their_key)
            if (a is None) != (b is None) or (a is not None and abs(a - b) > 1e-3):
                out.append(f"{group} {mine}: glassrag {a} vs score.py {b}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=default_set(),
                        help="the docs-qa folder (questions.jsonl, score.py, corpus/)")
    parser.add_argument("--mode", default="bm25", help="bm25 | dense | hybrid")
    parser.add_argument("--embedder", default=None, help="for dense and hybrid, e.g. "
                        "e5:multilingual-e5-small")
    parser.add_argument("--top-k", type=int, default=None, help="evidence chunks per question")
    parser.add_argument("--corpus", action="append", default=[], help="only this corpus "
                        "(repeatable)")
    parser.add_argument("--rebuild", action="store_true", help="build the knowledge bases "
                        "afresh")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--failures", type=int, default=0, help="failures to list")
    args = parser.parse_args(argv)
    if args.set is None or not (args.set / "questions.jsonl").is_file():
        parser.error("no docs-qa set found; pass --set DIR (or set DOCS_QA_DEV)")
    modules = eval_modules()
    questions = modules["docs_questions"].load_questions(args.set / "questions.jsonl")
    if args.corpus:
        questions = [q for q in questions if q.corpus in args.corpus]
    key = cache_key(args.set, args.mode, args.embedder)
    kb_root = OUT / "docs-qa-kb" / key
    if args.rebuild and kb_root.exists():
        shutil.rmtree(kb_root)
    dense = args.mode in ("dense", "hybrid")
    folders = kb_dirs(modules, questions, args.set / "corpus", kb_root)
    if dense:
        seed_embeddings(folders)
    started = time.perf_counter()
    report = modules["docs_eval"].run_docs_eval(
        questions, args.set / "corpus", kb_path=kb_root, mode=args.mode,
        embedder=args.embedder, top_k=args.top_k)
    if dense:
        keep_embeddings(folders)
    elapsed = time.perf_counter() - started
    preds = predictions(report.rows)
    OUT.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    pred_path = OUT / f"docs-qa-{args.mode}-{stamp}-predictions.jsonl"
    pred_path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in preds),
                         encoding="utf-8")
    official = official_scores(args.set, preds) if not args.corpus else {}
    differ = disagreements(report, official)
    import glassrag

    result = {"mode": args.mode, "embedder": args.embedder, "glassrag": glassrag.__file__,
              "kb": str(kb_root), "elapsed_seconds": round(elapsed, 1),
              "predictions": str(pred_path), "score_py": official, "score_py_differs": differ,
              **report.to_dict()}
    (OUT / f"docs-qa-{args.mode}-{stamp}.json").write_text(
        json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    elif args.markdown:
        print("\n".join(modules["docs_eval_report"].markdown(report)))
    else:
        print("\n".join(report.lines(failures=args.failures)))
        print(f"\nglassrag: {glassrag.__file__}\nknowledge bases: {kb_root}\n"
              f"predictions: {pred_path}\nelapsed: {elapsed:.1f}s")
    for line in differ:
        print(f"WARNING: {line}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
