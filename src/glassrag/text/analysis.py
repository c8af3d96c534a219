"""Text analysis: the terms glassrag indexes and searches with.

("Terms" are what analysis makes of text; "tokens" elsewhere are bearer tokens, except in
the store's ``tokens`` column and index field, which hold these terms.)

One function, :func:`analyze`, serves documents and queries alike, so a query can only
match text that was analysed the same way. The text is NFKC-normalised and casefolded,
then cut into script runs:

* Latin (and any other alphabetic script): word terms, English stop words dropped,
  Snowball English stemming (PyStemmer).
* Han without kana: jieba search-mode segmentation (Chinese), function words dropped.
* Han/kana when the text contains kana: character bigrams (Japanese). The choice is made
  for the whole text, not per run: Japanese prose has kanji-only runs between punctuation
  (``検索拡張生成、``) and they must be cut the same way as in a query that has kana around
  the same word (:func:`is_particle` names the bigrams that are only particles and endings).
* Hangul: character bigrams (Korean).

Identifiers and code tokens are matched whole as well as in parts: ``max_connections``,
``starlette.config``, ``--force``, ``hide_input=True`` and ``v2.1`` also give the whole
term (casefolded, not stemmed), and ``camelCase`` / ``PascalCase`` words also give their
stemmed parts (``RedirectResponse``: ``redirect``, ``respons``). A query naming
``max_connections`` then ranks the chunk holding exactly that above one holding
``max_keepalive_connections``, which shares only the parts. These extra terms come after
the others.

A one-character CJK run yields that character, so short queries never analyse to nothing.
"""

from __future__ import annotations

import functools
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
# unrelated chunks match every question. The same kinds of word as the English list:
# pronouns, demonstratives, particles, prepositions and conjunctions, auxiliaries and modal
# verbs, degree adverbs, "a"/"some", and the words of position and time that English says
# with prepositions (上, 里, 时, 以后). A question asked as one asks a colleague ("我在机器上
# 想用…的时候，可以…吗") is mostly such words, and each would otherwise weigh as a rare term no
# answering sentence holds.
_CHINESE_STOP_TEXT = (
    "的 了 是 在 和 与 及 或 等 吗 呢 啊 把 被 就 都 也 还 这 那 个 之 其 而 于 对 "
    "吧 什么 怎么 如何 哪些 为什么 "
    "我 我们 你 你们 您 他 他们 她 她们 它 它们 咱们 大家 自己 "
    "这个 那个 这些 那些 这样 那样 这么 那么 这里 那里 这儿 那儿 此 "
    "地 得 着 过 呀 嘛 哦 么 啦 "
    "从 向 往 给 让 跟 对于 关于 以及 或者 并且 而且 但 但是 可是 如果 因为 所以 然后 "
    "虽然 即使 还是 又 再 才 只 只是 就是 已经 一直 正在 很 太 更 非常 比较 "
    "能 能够 可以 可 会 要 应该 应 想 需 "
    "有 没 没有 "
    "一个 一些 一下 一点 任何 每 每个 所有 其他 这边 那边 "
    "上 下 里 中 时 时候 以后 之后 以前 之前"
)
CHINESE_STOPWORDS: frozenset[str] = frozenset(_CHINESE_STOP_TEXT.split())

_HAN = "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# Katakana without the middle dot U+30FB (punctuation); U+30FC (long vowel) is kept.
_KATAKANA = "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
_KANA = "\u3041-\u309f" + _KATAKANA
_HANGUL = "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af"

_WORD_RE = re.compile(r"[^\W_]+")  # letters and digits; '_' and punctuation split words
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")  # the same on lowercased ASCII, but faster
_KANA_RE = re.compile(f"[{_KANA}]")
_PAIRED_RE = re.compile(f"[{_KANA}{_HANGUL}]")  # scripts whose terms are character pairs
_HAN_RE = re.compile(f"[{_HAN}]")
_CJK_ANY_RE = re.compile(f"[{_HAN}{_KANA}{_HANGUL}]")
_RUN_RE = re.compile(f"([{_HAN}{_KANA}]+)|([{_HANGUL}]+)|([^{_HAN}{_KANA}{_HANGUL}]+)")
# One letter per character of a Japanese run: h(iragana), k(atakana) or c (kanji).
_JA_KIND = str.maketrans({**{chr(c): "h" for c in range(0x3041, 0x30a0)},
                          **{chr(c): "k" for c in range(0x30a1, 0x30fb)},
                          **{chr(c): "k" for c in range(0x30fc, 0x3100)},
                          **{chr(c): "k" for c in range(0x31f0, 0x3200)}})
# An acronym's plural ("URLs", "APIs", "IDs") is one word, not an acronym and a capitalised
# word ("UR" and "Ls"), which matches nothing the text means.
_ACRONYM_PLURAL = r"[A-Z]{2,}s(?![a-z0-9])"
# Identifier-like tokens, matched on the text before casefolding: words joined by "_", ".",
# "-", "=" or "/" (with an optional leading "-" or "--"), and camelCase words. Every one
# starts with "-" or an ASCII letter or digit: the leading lookahead says so, and lets the
# regex engine pass over other characters without trying each alternative (measured 2 to
# 2.5 times faster on Chinese and Japanese sentences, a quarter faster on English ones).
_COMPOUND_RE = re.compile(
    r"(?=[-A-Za-z0-9])(?:"
    r"(?<![A-Za-z0-9_\-])-{0,2}[A-Za-z0-9]+(?:[_.=/\-]+[A-Za-z0-9]+)+"
    r"|(?<![A-Za-z0-9_\-])--?[A-Za-z0-9][A-Za-z0-9]*"
    r"|(?<![A-Za-z0-9_])[A-Za-z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+"
    rf"|(?<![A-Za-z0-9_])(?!{_ACRONYM_PLURAL})[A-Z]{{2,}}[a-z][A-Za-z0-9]*"
    r")"
)
_CAMEL_PART_RE = re.compile(rf"{_ACRONYM_PLURAL}|[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")
_CONNECTORS = frozenset("_.=/-")
# Text with neither has no identifier: the common case, decided by two quick searches (a
# character class first in the pattern lets the regex engine skip ahead; measured 3-8 times
# faster than one search for the identifier shapes themselves).
_CONNECTOR_HINT = re.compile(r"[_.=/\-][A-Za-z0-9]")
# A capital after a lower-case letter ("getX") or before one after another capital
# ("JSONResponse"); starting at the capital keeps the search as quick as the one above.
_CAMEL_HINT = re.compile(r"[A-Z](?:(?<=[a-z][A-Z])|[A-Z][a-z])")
# ASCII to the words of _ASCII_WORD_RE: letters lowercased, digits kept, the rest spaces.
_ASCII_WORDS = str.maketrans({chr(c): chr(c).lower() if chr(c).isalnum() else " "
                              for c in range(128)})
# ASCII to character classes for the two hints above: "A" capital, "a" lower-case letter,
# "0" digit, "_" one of the connectors ``_.=/-``, " " anything else.
_ASCII_KINDS = str.maketrans({chr(c): "A" if chr(c).isupper() else "a" if chr(c).islower()
                              else "0" if chr(c).isdigit() else "_" if chr(c) in "_.=/-"
                              else " " for c in range(128)})
_PIECE_SPLIT_RE = re.compile(r"[./=]+")
# Names (name_terms): snake_case, dotted qualified names of identifiers (not file names:
# the last part is longer than an extension or not lowercase), camelCase words, and
# Capitalized-Hyphenated words of two letters or more a part (header names).
_NAME_RE = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?:"
    r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"
    r"|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
    r"\.(?:[A-Za-z_][A-Za-z0-9_]{4,}|[A-Za-z_]*[A-Z_][A-Za-z0-9_]*)"
    r"|[A-Za-z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+"
    rf"|(?!{_ACRONYM_PLURAL})[A-Z]{{2,}}[a-z][A-Za-z0-9]*"
    r"|[A-Z][A-Za-z0-9]+(?:-[A-Z][A-Za-z0-9]+)+"
    r")(?![A-Za-z0-9_\-])"
)
# A capitalised word inside a sentence, after a word (not the sentence's first), or several in
# a row: a product, protocol or project name (Kotlin, Bazel, QUIC, S3). Hyphenated and dotted
# words are left to _NAME_RE or to no one ("Ctrl-C" is a key, not a thing the documents must
# name), and so are words with letters beyond ASCII (Temüjin), which analysis would cut.
_PROPER_RE = re.compile(r"(?<=[\w,;)'\"`] )[A-Z][A-Za-z0-9]*[A-Za-z0-9]"
                        r"(?: [A-Z][A-Za-z0-9]*[A-Za-z0-9])*(?![\w.\-/])")
# Longer "identifiers" are URLs and paths, which never come back whole in a question.
_MAX_COMPOUND_CHARS = 48

# PyStemmer objects keep internal state and must not be shared between threads.
_local = threading.local()
_jieba_lock = threading.Lock()
_jieba: Any = None

# The stem cache's bound: cleared when it grows past this many words.
_STEM_CACHE_MAX = 200_000


class _StemCache(dict[str, str]):
    """word -> stem, with stop words mapped to "" so one lookup both stems and filters; a
    word is stemmed the first time it is looked up. Vocabularies are Zipfian, so after a few
    documents nearly every word is a hit, and ``map(cache.__getitem__, words)`` stays in C.
    Plain dict get/set/clear are atomic under the GIL."""

    def __init__(self) -> None:
        super().__init__(dict.fromkeys(ENGLISH_STOPWORDS, ""))

    def __missing__(self, word: str) -> str:
        stem: str = _stemmer().stemWord(word)
        if len(self) > _STEM_CACHE_MAX:
            self.clear()
            self.update(dict.fromkeys(ENGLISH_STOPWORDS, ""))
        self[word] = stem
        return stem


_stems = _StemCache()
_stem_of = _stems.__getitem__


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
    return _stemmed(word_re.findall(text))


def _ascii_english(text: str) -> list[str]:
    """:func:`_english` of ASCII ``text`` (any case), without a regex: what is not a letter
    or digit becomes a space and the rest is lowercased in one ``translate``, so ``split``
    gives exactly ``_ASCII_WORD_RE.findall(text.lower())``, twice as fast."""
    return _stemmed(text.translate(_ASCII_WORDS).split())


def _stemmed(words: list[str]) -> list[str]:
    # The hot path of ingest: one cache lookup per word, stop words ("") dropped.
    return list(filter(None, map(_stem_of, words)))


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
    return list(_segmented(run))


# Chinese runs whose segmentation is remembered. jieba is most of the time of analysing
# Chinese, and runs come back: short ones ("例如", "消息") in sentence after sentence, and
# whole ones when the answerer reads a text again as a heading path or as the block a
# sentence introduces. About 0.3 KB a run on the docs-QA set's Chinese documentation.
_RUNS_CACHED = 16_384


@functools.lru_cache(maxsize=_RUNS_CACHED)
def _segmented(run: str) -> tuple[str, ...]:
    return tuple(
        token
        for token in _jieba_tokenizer().cut_for_search(run)
        if token not in CHINESE_STOPWORDS and not token.isspace() and _WORD_RE.match(token)
    )


def _bigrams(run: str) -> list[str]:
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


# Chinese question words the stop list keeps (it drops 什么, 怎么, 如何, 哪些, 为什么):
# indexed and searched like any word, but an answer states the value or the way, never the
# question word, so the answerer does not count them.
_CHINESE_QUESTION_WORDS = frozenset((
    "哪个", "哪里", "哪儿", "哪", "多少", "几", "几个", "几次", "怎样", "怎么样", "多久", "多长",
    "多长时间", "多大", "是否", "能否", "可否"))


def is_question_word(term: str) -> bool:
    """Whether ``term`` is a Chinese question word the analyser keeps (``哪个``, ``多少``,
    ``几次``), or a bigram led by 何 (``何秒``, ``何回``, ``何も``, ``何时``: how many seconds,
    how many times, nothing, when): searched like any word, but no answer holds it."""
    return term in _CHINESE_QUESTION_WORDS or (len(term) == 2 and term[0] == "\u4f55")


# English words of the kinds the Chinese stop list drops and NLTK's list keeps: modal verbs,
# "want" (想, 要), adverbs of degree and time, quantifiers and indefinite pronouns. A
# question asked as one asks a colleague ("I'd really want it to still work even if
# something ...") is full of them, and no answering sentence need hold them. The index
# keeps them (so stored analyses do not change); :func:`is_filler` lets the answerer skip them.
# Left out: words whose stem is another word's ("quite" and "quit", "several" and "severity").
_ENGLISH_FILLER_TEXT = """
    would could might must may shall want also even still ever every already always really
    sometimes actually simply rather able something anything nothing everything
    someone anyone everyone somebody anybody instead anyway many much another"""


@functools.cache
def _english_fillers() -> frozenset[str]:
    return frozenset(_english(_ENGLISH_FILLER_TEXT))


def is_filler(term: str) -> bool:
    """Whether ``term`` is an analysed English filler word (:data:`_ENGLISH_FILLER_TEXT`:
    ``would``, ``want``, ``still``, ``someth``, ``mani``), which says how a question is asked,
    not what about."""
    return term in _english_fillers()


# The one-character case particles and the copula: after a kanji they end a word
# (共通の, 設定を, 推奨で), where other hiragana more often continue it (付け, 使う, 書き).
_PARTICLES = frozenset("のをはがにでとやもへだ")


def is_particle(term: str) -> bool:
    """Whether ``term`` is Japanese grammar rather than a word: a bigram that starts in
    hiragana or runs from katakana into hiragana (``ます``, ``すか``, ``の開``, ``ーは``), a
    kanji followed by a case particle or the copula (``通の``, ``定を``, ``奨で``), or a
    hiragana character standing alone (``Kotlinのdata``). They are indexed like every
    bigram (they carry word order), but match almost every chunk and say nothing about
    what it is about, so the answerer does not count them as the question's words."""
    kinds = term.translate(_JA_KIND)
    if len(term) == 1:
        return kinds == "h"
    if len(term) != 2:
        return False
    return kinds[0] == "h" or kinds == "kh" or (kinds[1] == "h" and term[1] in _PARTICLES)


# Japanese bigrams worth less than a word each to the answerer (benchmarks/RESULTS.md, "Docs
# QA: question words no answer holds…"). A katakana word of n characters is n - 1 bigrams,
# each a question term: セキュリティサポート would weigh nine times 認証. Each bigram of such a
# word weighs its IDF over the square root of the word's bigram count, so a long loanword
# counts more than a short word, but not letter by letter. A bigram across a katakana word
# and a kanji (ド時, ス内) is part of neither word, only their order: it weighs
# JUNCTION_SHARE.
_KATAKANA_WORD = re.compile(f"[{_KATAKANA}]{{3,}}")
_JUNCTION = re.compile(f"(?=([{_KATAKANA}][{_HAN}]|[{_HAN}][{_KATAKANA}]))")
JUNCTION_SHARE = 0.5


def katakana_shares(text: str) -> dict[str, float]:
    """The factor of each bigram of the katakana words of ``text`` (three characters or
    more): one over the square root of its word's bigram count (the smallest, for a bigram
    of several words); and :data:`JUNCTION_SHARE` for a bigram across katakana and kanji."""
    shares: dict[str, float] = {}
    for word in _KATAKANA_WORD.findall(text):
        count = len(word) - 1
        for i in range(count):
            gram = word[i : i + 2]
            shares[gram] = min(shares.get(gram, 1.0), count ** -0.5)
    for gram in _JUNCTION.findall(text):
        shares[gram] = min(shares.get(gram, 1.0), JUNCTION_SHARE)
    return shares


def _may_hold_identifier(text: str) -> bool:
    """Whether ``_CONNECTOR_HINT`` or ``_CAMEL_HINT`` matches ``text``. For ASCII text the
    same question is asked of its character classes (one ``translate``, then substring
    searches), about four times faster than the two regex searches."""
    if not text.isascii():
        return _CONNECTOR_HINT.search(text) is not None or _CAMEL_HINT.search(text) is not None
    kinds = text.translate(_ASCII_KINDS)
    # A connector before a letter or digit; a lower-case letter before a capital; two
    # capitals before a lower-case letter.
    return ("_" in kinds and ("_A" in kinds or "_a" in kinds or "_0" in kinds)) or (
        "A" in kinds and ("aA" in kinds or "AAa" in kinds))


def _compounds(text: str) -> list[str]:
    """The whole identifiers of ``text`` (casefolded) and the stemmed parts of its
    camelCase words, in order: the terms :func:`analyze` adds after the others."""
    if not _may_hold_identifier(text):
        return []
    out: list[str] = []
    for match in _COMPOUND_RE.finditer(text):
        word = match.group()
        if len(word) > _MAX_COMPOUND_CHARS:
            continue
        if _CONNECTORS.intersection(word):
            whole = word.lower()
            out.append(whole)
            # The pieces of a dotted name, a path or key=value that are identifiers
            # themselves: "Context.call_on_close" is also "call_on_close".
            pieces = [p for p in _PIECE_SPLIT_RE.split(whole) if p]
            if len(pieces) > 1:
                out.extend(p for p in pieces if _CONNECTORS.intersection(p))
        else:  # camelCase
            # A one-letter part is a prefix, not a word: CMake, CTest and CPack are not about
            # "c" (the letter matches every C-language mention and a query's every "CMake").
            parts = [p for p in _CAMEL_PART_RE.findall(word) if len(p) > 1]
            out.extend(_english(" ".join(parts).lower(), _ASCII_WORD_RE))
    return out


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a Han, kana or Hangul character."""
    return _CJK_ANY_RE.search(text) is not None


def has_kana(text: str) -> bool:
    """Whether ``text`` holds a kana character: Japanese, as Chinese text never does."""
    return _KANA_RE.search(text) is not None


def writes_pairs(text: str) -> bool:
    """Whether ``text`` holds kana or Hangul: Japanese or Korean, whose terms are pairs of
    characters (``ハッ``, ``서버``), where English and Chinese ones are words."""
    return _PAIRED_RE.search(text) is not None


def has_han(text: str) -> bool:
    """Whether ``text`` holds a Han character (Chinese, or Japanese kanji)."""
    return _HAN_RE.search(text) is not None


def identifiers(text: str) -> list[str]:
    """The identifiers ``text`` writes, as written (``cache_size``, ``CliRunner``,
    ``click.Choice``): the shapes :func:`name_terms` counts as names, before analysis."""
    text = unicodedata.normalize("NFKC", text)
    return list(dict.fromkeys(m.group() for m in _NAME_RE.finditer(text)
                              if len(m.group()) <= _MAX_COMPOUND_CHARS))


def name_terms(text: str) -> list[tuple[str, ...]]:
    """The names in ``text``: terms (as :func:`analyze` writes them) that each stand for one
    specific thing. A question naming something that no document mentions cannot be
    answered from them, however well they cover its other words.

    Names are identifiers (``cache_size``, ``CliRunner``, ``Cache-Control``; a dotted name
    ``click.Choice`` also goes by its last part, ``Choice``); in Chinese, Japanese or Korean
    text, every word in Latin script (``Kubernetes``, ``QUIC``); in other text, a capitalised
    word after the first word of its sentence (``Bazel``, ``Kotlin``, ``S3``; several in a row
    are one name, known by any part: ``Graham Twigg``), except a lone acronym of up to three
    letters, which English uses as a common word (``ISO`` dates, a ``URL``).
    Each name comes as the tuple of the terms it may appear as. Flags, file names and plain
    hyphenated words (``--host``, ``mytool.py``, ``half-written``, ``Ctrl-C``) are left out:
    questions make up examples.
    """
    text = unicodedata.normalize("NFKC", text)
    names: list[tuple[str, ...]] = []
    for match in _NAME_RE.finditer(text):
        word = match.group()
        if len(word) > _MAX_COMPOUND_CHARS:
            continue
        if "." in word:  # a qualified name: the last part names the thing too
            last = word.rsplit(".", 1)[1].lower()
            names.append((word.lower(), *([last] if "_" in last else
                                          _english(last, _ASCII_WORD_RE))))
        elif _CONNECTORS.intersection(word):
            names.append((word.lower(),))
        else:
            names.append(tuple(_english(word.lower(), _ASCII_WORD_RE)))
    if has_cjk(text):  # a Latin word in CJK text is a name
        tokens = _latin_tokens(_normalize(text))
        names.extend((t,) for t in tokens if len(t) > 1 and not t.isdigit())
    else:
        for match in _PROPER_RE.finditer(text):
            run = match.group()
            if len(run) <= 3 and run.isalpha() and run.isupper():
                continue  # ISO, URL, TLS: acronyms used as common words
            # "Graham Twigg" is one name: known when the documents say either part.
            names.append(tuple(_ascii_english(run)))
    return list(dict.fromkeys(n for n in names if n))


def _latin_tokens(text: str) -> list[str]:
    """The tokens of ``text``'s runs outside CJK and Hangul script, as :func:`_runs` gives
    them, without segmenting the CJK runs (with jieba, most of a Chinese query's analysis)."""
    return [token for cjk, hangul, rest in _RUN_RE.findall(text)
            if not cjk and not hangul and _WORD_RE.search(rest) for token in _english(rest)]


def _runs(text: str) -> list[tuple[str, str, list[str]]]:
    japanese = has_kana(text)
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


# A backslash-escaped ASCII punctuation character (Markdown's ``enable\_js``, ``\*args``, as
# converters from HTML write them): the character itself, so the name is one identifier.
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def analyze(text: str) -> list[str]:
    """Return the index/query terms of ``text`` in order, duplicates kept.

    >>> analyze("Refunds are returned within 5 days")
    ['refund', 'return', 'within', '5', 'day']
    """
    if "\\" in text:
        text = _ESCAPED.sub(r"\1", text)
    if text.isascii():
        return _ascii_english(text) + _compounds(text)
    extra = _compounds(_identifier_text(text))
    text = _normalize(text)
    if _CJK_ANY_RE.search(text) is None:
        return _english(text) + extra
    return [token for _, _, tokens in _runs(text) for token in tokens] + extra


def _identifier_text(text: str) -> str:
    """Non-ASCII ``text`` as identifiers are looked for in it: NFKC, and every non-ASCII
    character casefolded (``ß`` is ``ss``, as in the words around it) while ASCII letters
    keep their case, which camelCase needs."""
    text = unicodedata.normalize("NFKC", text)
    folded = text.translate(_NON_ASCII_FOLDS)
    return text if folded == text else unicodedata.normalize("NFKC", folded)


class _NonAsciiFolds(dict[int, int | str]):
    """A :meth:`str.translate` table that casefolds non-ASCII characters, filled as
    characters are met (each is folded once per process, not once per occurrence)."""

    def __missing__(self, code: int) -> int | str:
        char = chr(code)
        folded = char if code < 128 else char.casefold()
        value: int | str = code if folded == char else folded
        self[code] = value
        return value


_NON_ASCII_FOLDS = _NonAsciiFolds()


# Questions repeat (people ask again, evaluations and benchmarks re-run their question
# sets), and segmenting a Chinese one with jieba is most of its analysis. Long pasted
# questions are not kept: the cache stays small.
_QUERY_CACHE_CHARS = 1000


@functools.lru_cache(maxsize=4096)
def _remembered(text: str) -> tuple[str, ...]:
    return tuple(analyze(text))


def analyze_query(text: str) -> list[str]:
    """:func:`analyze` for a query, remembering the last few thousand short ones."""
    if len(text) > _QUERY_CACHE_CHARS:
        return analyze(text)
    return list(_remembered(text))


def forget_queries() -> None:
    """Forget the queries :func:`analyze_query` remembers (a benchmark timing queries as
    first seen)."""
    _remembered.cache_clear()


def analyze_runs(text: str) -> list[tuple[str, str, list[str]]]:
    """Return ``(analyzer, run_text, terms)`` per script run, for ``glassrag analyze``.

    ``analyzer`` is ``english``, ``chinese``, ``japanese`` or ``korean``, and
    ``identifiers`` for the whole identifiers and camelCase parts that come last; ``run_text``
    is the normalised run. Concatenating the terms gives exactly :func:`analyze`'s result.
    """
    runs = _runs(_normalize(text))
    extra = _compounds(_identifier_text(text))
    return runs + ([("identifiers", " ".join(extra), extra)] if extra else [])


def unique_terms(tokens: Iterable[str]) -> list[str]:
    """Distinct terms in first-seen order (``matched_terms`` and query terms use this)."""
    return list(dict.fromkeys(tokens))
