"""Retrieval quality on a BEIR-layout dataset: nDCG@10, recall@100 and MRR@10.

:func:`run_beir` reads ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` with
:func:`glassrag.eval.beir_data.load_beir`, ingests the corpus into a temporary knowledge base (one
glassrag JSONL record per document: ``doc_id`` = ``_id``, ``title``, ``text``, roles
``["public"]``; glassrag indexes the title's tokens with every chunk of the document), asks
every judged query as an admin principal (so no role filter applies), turns the chunk hits
into a document-level run (a document scores as its best chunk) and scores the run with
:func:`glassrag.eval.metrics.evaluate`, which drops a hit whose id equals the query id (BEIR's
convention).

Chunking (:data:`DEFAULT_CHUNKING`): the punctuation chunker with a size above the longest
document of the shared sets, so every document is one chunk, as BEIR scores documents
whole; ``benchmarks/RESULTS.md`` has the measurements behind that choice.

Two scorers:

* ``tokenizer=None`` (the default): glassrag itself, i.e. :meth:`KnowledgeBase.search`
  (BM25 in Tantivy with glassrag's analyzer; or ``dense``/``hybrid`` with an embedder).
  Tantivy's BM25 parameters are fixed at k1=1.2, b=0.75 (the Python binding exposes no
  way to change them).
* ``tokenizer="analyzer"`` (alias ``"jieba"``) or ``"bigram"``: a plain BM25 (the ``bm25s``
  package) over whole documents, pre-tokenised by :mod:`glassrag.eval.beir_bm25s`, which
  isolates the tokenizer for the jieba/bigram ablation without touching glassrag's analyzer
  or index. Needs the ``[bench]`` extra.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from glassrag.errors import EmptyQuery, GlassragError, InvalidInput
from glassrag.eval.beir_bm25s import BM25_DEFAULTS, TOKENIZER_ALIASES, Progress, Run, bm25s_run
from glassrag.eval.beir_data import Corpus, load_beir, write_records
from glassrag.eval.metrics import evaluate, per_query
from glassrag.eval.qa import benchmark_kb_dir
from glassrag.records import DENSE_MODES, Principal
from glassrag.settings import MAX_TOP_K

if TYPE_CHECKING:
    from glassrag.kb import KnowledgeBase


#: ``[chunking]`` of the temporary knowledge base: one chunk per document up to 12,000
#: characters (every document of scifact, cmrc2018-dev and xquad-en).
DEFAULT_CHUNKING: dict[str, Any] = {"jsonl": "punctuation", "size": 12000, "overlap": 200}
NDCG_K, RECALL_K, MRR_K = 10, 100, 10
METRICS = (f"ndcg@{NDCG_K}", f"recall@{RECALL_K}", f"mrr@{MRR_K}")
#: Failed queries listed by :meth:`BeirReport.lines` (``to_dict`` has them all).
SHOWN_FAILED = 5
EVAL_PRINCIPAL = Principal("eval", admin=True)
#: ``[dense]`` overrides for evaluation: no cosine cut-off, rankings are scored whole.
EVAL_DENSE: dict[str, Any] = {"min_score": -1.0}


@dataclass
class BeirReport:
    """One configuration on one dataset. ``per_query`` holds nDCG@10 by query id and
    ``run`` the document-level run; both are left out of :meth:`to_dict` unless asked."""

    dataset: str
    split: str
    n: int
    docs: int
    chunks: int
    mode: str
    embedder: str | None
    scorer: str
    metrics: dict[str, float]
    ingest_seconds: float
    embed_seconds: float
    search_seconds: float
    top_k: int
    empty_queries: int = 0
    #: Queries the engine rejected (``{"id", "error"}``): scored 0, the run went on.
    failed_queries: list[dict[str, str]] = field(default_factory=list)
    rerank: str | None = None
    fusion: str | None = None
    chunking: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    per_query: dict[str, float] = field(default_factory=dict)
    run: Run = field(default_factory=dict)

    @property
    def queries_per_second(self) -> float:
        return self.n / self.search_seconds if self.search_seconds > 0 else 0.0

    @property
    def label(self) -> str:
        """A short name for the configuration, e.g. ``hybrid st:all-MiniLM-L6-v2``."""
        parts = [self.mode if self.scorer == "glassrag" else self.scorer]
        parts += [p for p in (self.embedder, self.fusion and f"fusion={self.fusion}",
                              self.rerank and f"rerank={self.rerank}") if p]
        return " ".join(parts)

    def to_dict(self, *, per_query: bool = False, run: bool = False) -> dict[str, Any]:
        out = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}
        out["metrics"] = {k: round(v, 4) for k, v in self.metrics.items()}
        out["queries_per_second"] = round(self.queries_per_second, 2)
        if per_query:
            out["per_query"] = {k: round(v, 4) for k, v in self.per_query.items()}
        else:
            del out["per_query"]
        if not run:
            del out["run"]
        return out

    def lines(self) -> list[str]:
        metrics = "  ".join(f"{k} {v:.4f}" for k, v in self.metrics.items())
        timing = f"ingest {self.ingest_seconds:.1f}s"
        if self.embed_seconds:
            timing += f", embed {self.embed_seconds:.1f}s"
        out = [
            f"dataset: {self.dataset} ({self.split}: {self.n} queries, {self.docs} docs,"
            f" {self.chunks} chunks)",
            f"config: {self.label} (scorer {self.scorer})",
            metrics,
            f"elapsed: search {self.search_seconds:.1f}s ({self.queries_per_second:.1f}"
            f" queries/s); {timing}",
        ]
        if self.empty_queries:
            out.append(f"queries with no searchable terms (scored 0): {self.empty_queries}")
        if self.failed_queries:
            out.append(f"queries that failed (scored 0): {len(self.failed_queries)}")
            out += [f"  {f['id']}: {f['error']}" for f in self.failed_queries[:SHOWN_FAILED]]
            if len(self.failed_queries) > SHOWN_FAILED:
                out.append(f"  … and {len(self.failed_queries) - SHOWN_FAILED} more"
                           " (--json lists all)")
        if self.top_k < RECALL_K:
            out.append(f"note: only the top {self.top_k} were retrieved, so recall@{RECALL_K}"
                       f" here is recall@{self.top_k}")
        return out


def compare(a: BeirReport, b: BeirReport) -> list[str]:
    """Both reports side by side: each metric, ``b - a``, and per-query nDCG@10 wins."""
    width = max(len(a.label), len(b.label), 10)
    out = [f"dataset: {a.dataset} ({a.n} queries)" if (a.dataset, a.n) == (b.dataset, b.n)
           else f"datasets: {a.dataset} ({a.n} queries) vs {b.dataset} ({b.n} queries)",
           f"{'metric':<12} {a.label:>{width}} {b.label:>{width}} {'delta':>8}"]
    for name in dict.fromkeys([*a.metrics, *b.metrics]):
        va, vb = a.metrics.get(name), b.metrics.get(name)
        delta = f"{vb - va:+.4f}" if va is not None and vb is not None else "-"
        out.append(f"{name:<12} {_fmt(va):>{width}} {_fmt(vb):>{width}} {delta:>8}")
    out.append(f"{'queries/s':<12} {a.queries_per_second:>{width}.1f}"
               f" {b.queries_per_second:>{width}.1f}")
    common = a.per_query.keys() & b.per_query.keys()
    if common:
        wins = sum(b.per_query[q] > a.per_query[q] + 1e-9 for q in common)
        losses = sum(b.per_query[q] < a.per_query[q] - 1e-9 for q in common)
        out.append(f"ndcg@{NDCG_K} per query, {b.label} vs {a.label}: better {wins},"
                   f" worse {losses}, equal {len(common) - wins - losses}")
    return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


# -- running -----------------------------------------------------------------------------------


def run_beir(
    directory: str | Path,
    *,
    mode: str = "bm25",
    embedder: str | None = None,
    split: str = "test",
    kb_path: Path | None = None,
    limit: int | None = None,
    top_k: int = 100,
    progress: Progress | None = None,
    tokenizer: str | None = None,
    rerank: str | None = None,
    fusion: str | None = None,
    chunking: Mapping[str, Any] | None = None,
    dense: Mapping[str, Any] | None = None,
    bm25: Mapping[str, float] | None = None,
    title_in_text: bool = False,
) -> BeirReport:
    """Evaluate one retrieval configuration on the BEIR-layout set in ``directory``.

    ``mode``, ``embedder`` and ``rerank`` (``lexical`` or ``cross:PATH``) go to
    :meth:`KnowledgeBase.search`; ``embedder`` is ignored unless ``mode`` is ``dense`` or
    ``hybrid`` (without one, the knowledge base's configured or recorded embedder is used).
    ``fusion`` (``rrf`` or ``weighted``) and ``dense`` (any ``[dense]`` setting: ``rrf_k``,
    ``bm25_weight``, ``dense_weight``, ``candidates``, ``min_score``) override the knowledge
    base's settings for this run; by default ``min_score`` is -1 (:data:`EVAL_DENSE`) so the
    cosine threshold, which exists to answer ``no_evidence``, does not cut rankings short.
    With an embedder the chunks are embedded after ingest (timed apart; vectors already
    stored are reused).

    ``kb_path`` keeps the knowledge base there; when it already holds exactly the corpus'
    documents, ingest is skipped (so a second configuration reuses the index and stored
    vectors). ``limit`` evaluates only the first N judged queries (in ``queries.jsonl``
    order). ``top_k`` documents are retrieved per query (recall@100 needs 100).
    ``chunking`` overrides :data:`DEFAULT_CHUNKING`; ``title_in_text`` puts the title at the
    head of each document's text too (the lexical index and the embedder already see the
    title with each chunk; see ``vectorstore.embedding_text``).
    ``tokenizer`` switches to the bm25s scorer (see the module docstring), with
    ``bm25={"k1":…, "b":…}``. ``progress(done, total)`` is called while chunks are embedded
    and after each query.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InvalidInput(f"{directory}: not a directory", path=str(directory))
    if limit is not None and limit < 1:
        raise InvalidInput("limit must be at least 1", field="limit")
    if top_k < 1:
        raise InvalidInput("top_k must be at least 1", field="top_k")
    corpus, queries, qrels = load_beir(directory, split)
    if not corpus:
        raise InvalidInput(f"{directory / 'corpus.jsonl'}: no documents",
                           path=str(directory / "corpus.jsonl"))
    if limit is not None:
        queries = dict(list(queries.items())[:limit])
        qrels = {q: qrels[q] for q in queries}
    if mode not in DENSE_MODES:
        embedder = None  # only dense and hybrid use one: bm25 runs never embed
    if tokenizer is not None:
        if mode != "bm25" or rerank or fusion or dense:
            raise InvalidInput("tokenizer= selects the bm25s scorer: it takes mode 'bm25' and"
                               " no rerank, fusion or dense settings", field="tokenizer")
        return _run_bm25s(directory.name, split, corpus, queries, qrels, tokenizer,
                          dict(BM25_DEFAULTS, **(bm25 or {})), top_k, progress, title_in_text)
    if bm25:
        raise InvalidInput("bm25 parameters apply to the bm25s scorer only (tokenizer=…);"
                           " Tantivy's k1/b are fixed at 1.2/0.75", field="bm25")
    from glassrag.kb import KnowledgeBase

    chunk_settings = dict(DEFAULT_CHUNKING if chunking is None else chunking)
    dense_settings = {**EVAL_DENSE, **(dense or {}), **({"fusion": fusion} if fusion else {})}
    with benchmark_kb_dir(kb_path, "glassrag-beir-", {"chunking": chunk_settings}) as root, \
            KnowledgeBase.open(root) as kb:
        kb.settings.dense = _dense_settings(kb, dense_settings)
        ingest_seconds, embed_seconds = _ingest(kb, root, corpus, embedder, progress,
                                                title_in_text)
        chunks = int(kb.status().get("chunks", 0))
        if mode in DENSE_MODES and embedder is None:
            side = kb.dense(None)  # the configured or recorded embedder, for the report
            label = side.spec if side is not None else None
        else:
            label = embedder
        options: dict[str, Any] = {"mode": mode}
        options.update({k: v for k, v in (("embedder", embedder), ("rerank", rerank))
                        if v is not None})
        per_doc = max(chunks / len(corpus), 1.0)
        run: Run = {}
        empty = 0
        failed: list[dict[str, str]] = []
        started = time.perf_counter()
        for done, (qid, text) in enumerate(queries.items(), start=1):
            want = top_k + (1 if qid in corpus else 0)  # room for the dropped self-hit
            try:
                run[qid] = _doc_run(kb, text, want, per_doc, chunks, options)
            except EmptyQuery:
                run[qid] = {}
                empty += 1
            except GlassragError as exc:  # one query must not cost the run all its figures
                run[qid] = {}
                failed.append({"id": qid, "error": exc.message})
            if progress is not None:
                progress(done, len(queries))
        search_seconds = time.perf_counter() - started
    return _report(directory.name, split, qrels, run, docs=len(corpus), chunks=chunks,
                   mode=mode, embedder=label, scorer="glassrag", top_k=top_k,
                   ingest_seconds=ingest_seconds, embed_seconds=embed_seconds,
                   search_seconds=search_seconds, empty=empty, failed=failed, rerank=rerank,
                   fusion=fusion if mode == "hybrid" else None, chunking=chunk_settings,
                   params={"title_in_text": title_in_text,
                           **({"dense": dense_settings} if mode in DENSE_MODES else {})})


def _dense_settings(kb: KnowledgeBase, overrides: Mapping[str, Any]) -> Any:
    """The knowledge base's ``[dense]`` settings with ``overrides``, validated."""
    from pydantic import ValidationError

    current = kb.settings.dense
    try:
        return type(current).model_validate({**current.model_dump(), **overrides})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors())
        raise InvalidInput(f"bad dense settings: {problems}", field="dense") from None


def _ingest(kb: KnowledgeBase, root: Path, corpus: Corpus, embedder: str | None,
            progress: Progress | None, title_in_text: bool) -> tuple[float, float]:
    """Ingest the corpus unless the knowledge base holds exactly its documents already;
    return (ingest seconds, embed seconds)."""
    held = {d.doc_id for d in kb.documents()}
    ingest_seconds = 0.0
    if held != corpus.keys():
        if held - corpus.keys():
            raise InvalidInput(f"{kb.path}: the knowledge base holds {len(held - corpus.keys())}"
                               " documents that are not in the corpus; use an empty --kb",
                               path=str(kb.path))
        records = root / "beir-corpus.jsonl"
        write_records(corpus, records, title_in_text=title_in_text)
        started = time.perf_counter()
        # The set's own documents, possibly written by eval --qa under another file name.
        report = kb.ingest([records], replace=True)
        if report.failed:
            raise InvalidInput(f"{records}: corpus not ingested: {report.failed[0].error}")
        ingest_seconds = time.perf_counter() - started
        records.unlink()
    embed_seconds = 0.0
    if embedder is not None:
        started = time.perf_counter()
        kb.embed(embedder, progress=progress)
        embed_seconds = time.perf_counter() - started
    return ingest_seconds, embed_seconds


def _doc_run(kb: KnowledgeBase, text: str, want: int, per_doc: float, chunks: int,
             options: Mapping[str, Any]) -> dict[str, float]:
    """The best ``want`` documents for a query: each scores as its best chunk. Asks for
    more chunks until ``want`` distinct documents came back or the index ran out."""
    chunks = min(chunks, MAX_TOP_K)  # kb.search takes no more than the engine's cap
    ask = min(max(math.ceil(want * per_doc), want), max(chunks, 1))
    while True:
        hits = kb.search(text, principal=EVAL_PRINCIPAL, top_k=ask, **options).hits
        docs: dict[str, float] = {}
        for hit in hits:
            doc_id = hit.chunk.doc_id
            if doc_id not in docs:
                docs[doc_id] = hit.score  # hits come best first
            elif hit.score > docs[doc_id]:
                docs[doc_id] = hit.score
        if len(docs) >= want or len(hits) < ask or ask >= chunks:
            return dict(sorted(docs.items(), key=lambda kv: -kv[1])[:want])
        ask = min(ask * 2, chunks)


def _run_bm25s(dataset: str, split: str, corpus: Corpus, queries: Mapping[str, str],
               qrels: Mapping[str, Mapping[str, int]], tokenizer: str,
               params: dict[str, float], top_k: int, progress: Progress | None,
               title_in_text: bool = False) -> BeirReport:
    ranked = bm25s_run(corpus, queries, tokenizer, params, top_k, progress, title_in_text)
    return _report(dataset, split, qrels, ranked.run, docs=len(corpus), chunks=len(corpus),
                   mode="bm25", embedder=None, scorer=ranked.scorer, top_k=top_k,
                   ingest_seconds=ranked.ingest_seconds, embed_seconds=0.0,
                   search_seconds=ranked.search_seconds, empty=ranked.empty, rerank=None,
                   fusion=None, chunking={}, params={**params, "method": "lucene",
                                        "title_in_text": title_in_text})


def _report(dataset: str, split: str, qrels: Mapping[str, Mapping[str, int]], run: Run, *,
            docs: int, chunks: int, mode: str, embedder: str | None, scorer: str, top_k: int,
            ingest_seconds: float, embed_seconds: float, search_seconds: float, empty: int,
            failed: list[dict[str, str]] | None = None,
            rerank: str | None, fusion: str | None, chunking: dict[str, Any],
            params: dict[str, Any]) -> BeirReport:
    # Cut to top_k after the self-hit is gone, as BEIR scores the run it retrieved.
    from glassrag.eval.metrics import ranking

    run = {q: {d: scores[d] for d in ranking(scores, q)[:top_k]} for q, scores in run.items()}
    return BeirReport(
        dataset=dataset, split=split, n=len(qrels), docs=docs, chunks=chunks, mode=mode,
        embedder=embedder, scorer=scorer,
        metrics=evaluate(qrels, run, ndcg_k=NDCG_K, recall_k=RECALL_K, mrr_k=MRR_K),
        ingest_seconds=ingest_seconds, embed_seconds=embed_seconds,
        search_seconds=search_seconds, top_k=top_k, empty_queries=empty,
        failed_queries=list(failed or []), rerank=rerank,
        fusion=fusion, chunking=chunking, params=params,
        per_query=per_query(qrels, run, "ndcg", NDCG_K), run=run,
    )


# -- two configurations ---------------------------------------------------------------------


_SPEC_NUMBERS = ("k1", "b", "rrf_k", "bm25_weight", "dense_weight", "candidates", "min_score")
_SPEC_INTS = ("rrf_k", "candidates")
_SPEC_KEYS = ("embedder", "rerank", "fusion", "tokenizer", *_SPEC_NUMBERS)


def parse_spec(spec: str) -> dict[str, Any]:
    """``run_beir`` keyword arguments from a configuration string, for ``--compare``:
    ``MODE[,key=value…]`` with keys ``embedder``, ``rerank``, ``fusion``, ``tokenizer``,
    ``k1``/``b`` (bm25s) and the numeric ``[dense]`` settings; e.g. ``hybrid``,
    ``dense,embedder=st:all-MiniLM-L6-v2``, ``hybrid,fusion=weighted,dense_weight=2``,
    ``bm25,tokenizer=bigram,k1=1.5``. A bare ``bigram``/``analyzer``/``jieba`` means the
    bm25s scorer with that tokenizer."""
    head, *rest = [p.strip() for p in spec.split(",") if p.strip()] or [""]
    if not head:
        raise InvalidInput("an empty configuration; e.g. 'hybrid' or 'bm25,tokenizer=bigram'",
                           field="compare")
    out: dict[str, Any] = {}
    if head in TOKENIZER_ALIASES:
        out.update(mode="bm25", tokenizer=head)
    else:
        out["mode"] = head
    for part in rest:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in _SPEC_KEYS:
            raise InvalidInput(f"bad configuration part {part!r} in {spec!r}; use key=value"
                               f" with one of {', '.join(_SPEC_KEYS)}", field="compare")
        if key in _SPEC_NUMBERS:
            try:
                number = float(value)
            except ValueError:
                raise InvalidInput(f"{key}={value!r} is not a number", field="compare") from None
            section = "bm25" if key in ("k1", "b") else "dense"
            out.setdefault(section, {})[key] = int(number) if key in _SPEC_INTS else number
        else:
            out[key] = value.strip()
    return out


def run_pair(directory: str | Path, first: Mapping[str, Any], second: Mapping[str, Any],
             **common: Any) -> tuple[BeirReport, BeirReport]:
    """Run two configurations on one knowledge base (the corpus is ingested once) and
    return both reports; print them with :func:`compare`. ``common`` (``split``, ``limit``,
    ``top_k``, ``progress``, ``kb_path``…) applies to both."""
    kb_path = common.pop("kb_path", None)
    with nullcontext(str(kb_path)) if kb_path else \
            tempfile.TemporaryDirectory(prefix="glassrag-beir-") as tmp:
        reports = [run_beir(directory, kb_path=Path(tmp), **{**common, **dict(config)})
                   for config in (first, second)]
    return reports[0], reports[1]


def table(reports: Sequence[BeirReport]) -> list[str]:
    """A Markdown table of several reports (for ``benchmarks/RESULTS.md``)."""
    out = ["| set | config | n | nDCG@10 | R@100 | MRR@10 | search q/s | ingest s | embed s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in reports:
        m = r.metrics
        out.append(f"| {r.dataset} | {r.label} | {r.n} | {m[METRICS[0]]:.4f} |"
                   f" {m[METRICS[1]]:.4f} | {m[METRICS[2]]:.4f} | {r.queries_per_second:.0f} |"
                   f" {r.ingest_seconds:.1f} | {r.embed_seconds:.1f} |")
    return out
