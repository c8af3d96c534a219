"""The bm25s peer of BEIR runs: plain BM25 over pre-tokenised whole documents.

``glassrag eval --beir DIR --tokenizer analyzer|bigram`` scores a dataset with the ``bm25s``
package (Lucene IDF, k1/b default 1.2/0.75 like Tantivy) instead of glassrag's index, over
title + " " + text tokenised here: ``analyzer`` is :func:`glassrag.text.analysis.analyze`
unchanged (jieba search mode for Chinese), ``bigram`` the same except that Chinese runs become
overlapping character bigrams. Everything else being equal, this isolates the tokenizer for
the jieba/bigram ablation. Needs the ``[bench]`` extra.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from glassrag.errors import InvalidInput, needs_extra
from glassrag.eval.beir_data import Corpus
from glassrag.text.analysis import analyze, unique_terms

Progress = Callable[[int, int], None]
Run = dict[str, dict[str, float]]

#: Scorer names for ``tokenizer``; ``jieba`` is an alias of ``analyzer``.
TOKENIZERS = ("analyzer", "bigram")
TOKENIZER_ALIASES = {"jieba": "analyzer", "analyzer": "analyzer", "bigram": "bigram"}
# The Han and kana ranges of glassrag.analysis (not imported: they are private there).
_HAN = "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HAN_SPLIT = re.compile(f"([{_HAN}]+)|([^{_HAN}]+)")
_KANA = re.compile("[\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff]")
#: Tantivy's BM25 constants, also the default of the bm25s scorer so the two compare.
BM25_DEFAULTS = {"k1": 1.2, "b": 0.75}


def bigram_terms(text: str) -> list[str]:
    """:func:`analyze`, except that Chinese (Han runs in text without kana) becomes
    overlapping character bigrams, a one-character run one token, no stop words dropped.
    Other scripts are analysed as :func:`analyze` does (Japanese and Korean are bigrams
    there already)."""
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    if _KANA.search(text):
        return analyze(text)
    out: list[str] = []
    for han, rest in _HAN_SPLIT.findall(text):
        if han:
            out.extend([han[i:i + 2] for i in range(len(han) - 1)] if len(han) > 1 else [han])
        elif rest.strip():
            out.extend(analyze(rest))
    return out


def tokenize(text: str, tokenizer: str) -> list[str]:
    """Tokens of ``text`` for the bm25s scorer (``analyzer``/``jieba`` or ``bigram``)."""
    name = TOKENIZER_ALIASES.get(tokenizer)
    if name is None:
        raise InvalidInput(f"unknown tokenizer {tokenizer!r}; use one of"
                           f" {', '.join(sorted(TOKENIZER_ALIASES))}", field="tokenizer")
    return analyze(text) if name == "analyzer" else bigram_terms(text)


@dataclass(frozen=True)
class Bm25sRun:
    """A bm25s run: the document ranking per query and what it cost."""

    scorer: str  # "bm25s+analyzer" or "bm25s+bigram"
    run: Run
    ingest_seconds: float
    search_seconds: float
    empty: int  # queries with no searchable term


def bm25s_run(corpus: Corpus, queries: Mapping[str, str], tokenizer: str,
              params: dict[str, float], top_k: int, progress: Progress | None,
              title_in_text: bool = False) -> Bm25sRun:
    """Rank ``corpus`` for every query with bm25s and the ``tokenizer``'s tokens, ``top_k``
    documents plus one (a self-hit that the scoring drops)."""
    with needs_extra("bench", "bm25s"):
        import bm25s
    name = TOKENIZER_ALIASES.get(tokenizer)
    if name is None:
        tokenize("", tokenizer)  # raises the error naming the choices
    ids = list(corpus)
    started = time.perf_counter()
    vocab: dict[str, int] = {}
    # Title + " " + text, as BEIR's own BM25 baselines; title_in_text counts the title twice.
    rows = [[vocab.setdefault(t, len(vocab)) for t in tokenize(
        f"{corpus[d]['title']} " * (1 + title_in_text) + corpus[d]["text"], tokenizer)]
        for d in ids]
    retriever = bm25s.BM25(k1=params["k1"], b=params["b"], method="lucene")
    retriever.index(bm25s.tokenization.Tokenized(ids=rows, vocab=vocab), show_progress=False)
    ingest_seconds = time.perf_counter() - started
    run: Run = {qid: {} for qid in queries}
    empty = 0
    started = time.perf_counter()
    asked: dict[str, list[str]] = {}
    for done, (qid, text) in enumerate(queries.items(), start=1):
        tokens = unique_terms(tokenize(text, tokenizer))
        terms = [t for t in tokens if t in vocab]
        if terms:
            asked[qid] = terms
        else:  # nothing searchable, or no term the corpus has: an empty ranking
            empty += not tokens
        if progress is not None:
            progress(done, len(queries))
    if asked:
        k = min(top_k + 1, len(ids))  # one more for a self-hit, dropped by _report
        found, scores = retriever.retrieve(list(asked.values()), k=k, show_progress=False,
                                           n_threads=0)
        for row, qid in enumerate(asked):
            run[qid] = {ids[int(i)]: float(s) for i, s in
                        zip(found[row], scores[row], strict=True) if s > 0}
    search_seconds = time.perf_counter() - started
    return Bm25sRun(f"bm25s+{name}", run, ingest_seconds, search_seconds, empty)
