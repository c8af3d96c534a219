"""Text analysis: the tokens glassrag indexes and searches with.

One function, :func:`analyze`, serves documents and queries alike, so a query can only
match text that was analysed the same way. The text is NFKC-normalised and casefolded,
then cut into script runs:

* Latin (and any other alphabetic script): word tokens, English stop words dropped,
  Snowball English stemming (PyStemmer).
* Han without kana: jieba search-mode segmentation (Chinese), function words dropped.
* Han/kana when the text contains kana: character bigrams (Japanese). The choice is made
  for the whole text, not per run: Japanese prose has kanji-only runs between punctuation
  (``検索拡張生成、``) and they must be cut the same way as in a query that has kana around
  the same word.
* Hangul: character bigrams (Korean).

A one-character CJK run yields that character, so short queries never analyse to nothing.
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
import unicodedata
from collections.abc import Iterable
from typing import Any

import Stemmer

# Standard English stop list (NLTK-sized). It includes the fragments left when the word
# regex splits contractions ("don't" -> "don", "t") so those do not pollute the index.
_ENGLISH_STOP_TEXT = """
    a about above after again against ain all am an and any are aren arent as at be
    because been before being below between both but by can couldn d did didn do does
    doesn doing don down during each few for from further had hadn has hasn have haven
    having he her here hers herself him himself his how i if in into is isn it its itself
    just ll m ma me mightn more most mustn my myself needn no nor not now o of off on once
    only or other our ours ourselves out over own re s same shan she should shouldn so
    some such t than that the their theirs them themselves then there these they this
    those through to too under until up ve very was wasn we were weren what when where
    which while who whom why will with won wouldn y you your yours yourself
    yourselves"""
ENGLISH_STOPWORDS: frozenset[str] = frozenset(_ENGLISH_STOP_TEXT.split())

# Chinese function words and question words: frequent, carry no topic, and would make
# unrelated chunks match every question.
_CHINESE_STOP_TEXT = (
    "的 了 是 在 和 与 及 或 等 吗 呢 啊 把 被 就 都 也 还 这 那 个 之 其 而 于 对 "
    "吧 什么 怎么 如何 哪些 为什么"
)
CHINESE_STOPWORDS: frozenset[str] = frozenset(_CHINESE_STOP_TEXT.split())

_HAN = "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# Katakana without the middle dot U+30FB (punctuation); U+30FC (long vowel) is kept.
_KANA = "\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af"

_WORD_RE = re.compile(r"[^\W_]+")  # letters and digits; '_' and punctuation split words
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")  # the same on lowercased ASCII, but faster
_KANA_RE = re.compile(f"[{_KANA}]")
_CJK_ANY_RE = re.compile(f"[{_HAN}{_KANA}{_HANGUL}]")
_RUN_RE = re.compile(f"([{_HAN}{_KANA}]+)|([{_HANGUL}]+)|([^{_HAN}{_KANA}{_HANGUL}]+)")

# PyStemmer objects keep internal state and must not be shared between threads.
_local = threading.local()
_jieba_lock = threading.Lock()
_jieba: Any = None

# word -> stem, with stop words mapped to "" so one dict lookup both stems and filters.
# Vocabularies are Zipfian, so after a few documents nearly every word is a hit. Plain dict
# get/set is atomic under the GIL; the cache is reset when it grows past its bound.
_STEM_CACHE_MAX = 200_000
_stems: dict[str, str] = dict.fromkeys(ENGLISH_STOPWORDS, "")


def _stemmer() -> Stemmer.Stemmer:
    stemmer: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def _normalize(text: str) -> str:
    # NFKC folds full-width letters/digits and half-width katakana; ASCII is already NFKC.
    if text.isascii():
        return text.lower()
    # The second NFKC recomposes what casefold decomposed (U+01F0 -> j + U+030C), so that
    # normalising twice changes nothing and a pre-normalised query analyses the same.
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _english(text: str, word_re: re.Pattern[str] = _WORD_RE) -> list[str]:
    # The hot path of ingest: one findall, one cache lookup per word, and one batched
    # stemWords call for the words not seen before.
    global _stems
    words = word_re.findall(text)
    found = list(map(_stems.get, words))
    if None in found:
        missing = list(dict.fromkeys(w for w, s in zip(words, found, strict=True) if s is None))
        new = dict(zip(missing, _stemmer().stemWords(missing), strict=True))
        if len(_stems) > _STEM_CACHE_MAX:
            _stems = dict.fromkeys(ENGLISH_STOPWORDS, "")
        _stems.update(new)
        found = [new[w] if s is None else s for w, s in zip(words, found, strict=True)]
    return list(filter(None, found))


def _jieba_tokenizer() -> Any:
    """Load jieba on first Han text only: it costs ~0.5 s and most corpora never need it."""
    global _jieba
    with _jieba_lock:
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.CRITICAL + 10)  # its load messages must not leak out
            tokenizer = jieba.Tokenizer()
            tokenizer.tmp_dir = tempfile.gettempdir()  # dictionary cache must be writable
            tokenizer.initialize()
            _jieba = tokenizer
    return _jieba


def _chinese(run: str) -> list[str]:
    return [
        token
        for token in _jieba_tokenizer().cut_for_search(run)
        if token not in CHINESE_STOPWORDS and not token.isspace() and _WORD_RE.match(token)
    ]


def _bigrams(run: str) -> list[str]:
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _runs(text: str) -> list[tuple[str, str, list[str]]]:
    japanese = _KANA_RE.search(text) is not None
    runs: list[tuple[str, str, list[str]]] = []
    for cjk, hangul, rest in _RUN_RE.findall(text):
        if cjk:
            if japanese:
                runs.append(("japanese", cjk, _bigrams(cjk)))
            else:
                runs.append(("chinese", cjk, _chinese(cjk)))
        elif hangul:
            runs.append(("korean", hangul, _bigrams(hangul)))
        elif _WORD_RE.search(rest):  # skip runs of bare punctuation and spaces
            runs.append(("english", rest.strip(), _english(rest)))
    return runs


def analyze(text: str) -> list[str]:
    """Return the index/query tokens of ``text`` in order, duplicates kept.

    >>> analyze("Refunds are returned within 5 days")
    ['refund', 'return', 'within', '5', 'day']
    """
    if text.isascii():
        return _english(text.lower(), _ASCII_WORD_RE)
    text = _normalize(text)
    if _CJK_ANY_RE.search(text) is None:
        return _english(text)
    return [token for _, _, tokens in _runs(text) for token in tokens]


def analyze_runs(text: str) -> list[tuple[str, str, list[str]]]:
    """Return ``(analyzer, run_text, tokens)`` per script run, for ``glassrag analyze``.

    ``analyzer`` is ``english``, ``chinese``, ``japanese`` or ``korean``; ``run_text`` is the
    normalised run. Concatenating the tokens gives exactly :func:`analyze`'s result.
    """
    return _runs(_normalize(text))


def unique_terms(tokens: Iterable[str]) -> list[str]:
    """Distinct tokens in first-seen order (``matched_terms`` and query terms use this)."""
    return list(dict.fromkeys(tokens))
