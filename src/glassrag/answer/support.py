"""Answer support: a model's answer may say only what its quotes say.

The verifier proves that every quote occurs in the chunk it names. That alone lets a model
quote one true sentence and write anything beside it ("within 90 days" beside a quote that
says 14, "Refunds are never accepted", a planted code word). These checks hold the answer
text to its quotes, sentence by sentence:

* every number, URL, email address, code-like token (``Q4``, ``OPENAI_API_KEY``,
  ``CORSMiddleware``, ``SWORDFISH``, ``example.com``) and capitalised name in a sentence
  occurs in the quotes;
* a sentence adds no negation ("not", "never", 不, ない) where no quote has one;
* most of a sentence's content words, analysed as the index analyses text (stemmed English,
  jieba for Chinese, bigrams for Japanese), occur among the quotes' terms;
* no unquoted word of the answer comes from an evidence block addressed to the model;
* each quote states something: at least :data:`MIN_QUOTE_TERMS` content words.

A sentence is measured against all of the draft's quotes together: the reply format has no
sentence-to-citation map, and a faithful sentence often combines two quotes. The checks read
only the draft and the permitted evidence, never blocked chunks, so a verdict cannot tell
anyone what a document they may not read contains (see docs/llm.md, "Answer support").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from glassrag.text.analysis import analyze, unique_terms

# At least this share of a sentence's distinct content terms must occur in its quotes.
# Measured on faithful paraphrases (benchmarks/RESULTS.md, "Answer support"): a paraphrase
# keeps the facts and changes the connecting words; a made-up claim shares little.
MIN_SUPPORTED_SHARE = 0.5
# A quote must carry at least this many distinct content terms: "R" or "the" supports nothing.
MIN_QUOTE_TERMS = 2
_SHOW = 60
_REPLY_WORDS = frozenset({"yes", "correct", "inde", "sure", "可以", "是的", "对", "能", "行",
                          "はい", "ええ"})
_HIRAGANA = re.compile("[\u3041-\u309f]")

# Inline citation markers the model may add ("[C1]", "(C2, C3)", "【C1】"): labels, not claims.
_MARKER = re.compile(r"\s*[\[(（【]\s*C\d+(?:\s*[,，、;]\s*C\d+)*\s*[\])）】]")
# A sentence ends at . ! ? followed by space (not after a common abbreviation or an
# initial), at Chinese/Japanese full stops, and at line breaks.
_SENTENCE_END = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<!\bcf\.)(?<!\bDr\.)(?<!\bMr\.)"
    r"(?<!\bMs\.)(?<!\bMrs\.)(?<!\bNo\.)(?<!\bSt\.)(?<!\b[A-Z]\.)(?<=[.!?])\s+"
    r"|(?<=[。！？])|\n+")
_URL = re.compile(r"(?:https?|ftp)://[^\s<>\"'`)\]}]+|\bwww\.[^\s<>\"'`)\]}]+", re.IGNORECASE)
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
# "/" and "+" separate words here ("and/or"); a path or a URL is caught by its dots or scheme.
_CODE = re.compile(r"[A-Za-z0-9]+(?:[-_:.@][A-Za-z0-9]+)*")
_WORD = re.compile(r"[^\W_]+")
_TRAILING = ".,;:!?'\""

_NEGATION_EN = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|nowhere|neither|nor|cannot|without)\b|n['’]t\b",
    re.IGNORECASE)
_NEVER_EN = re.compile(r"\bnever\b", re.IGNORECASE)
# Chinese and Japanese negation, minus the common words that merely contain such a
# character (非常 "very", 不同 "different", 无论 "regardless", 少ない "few", ...).
_NEGATION_CJK = re.compile(r"不|没|沒|无|無|未|非|勿|否|ない|ません|いいえ")
_NOT_NEGATION_CJK = re.compile(r"非常|不同|不断|不仅|不管|无论|無論|是否|否则|未来|未來|少ない|"
                               r"並非|并非")
_NEVER_CJK = re.compile(r"从不|從不|从未|從未|从来不|从来没|永不|决不|決して|絶対に")

# Text addressed to the model rather than to a reader. Evidence is content: a block that
# carries such text supports no answer, and no answer may borrow its words. Matched on the
# text with whitespace collapsed, so a line break cannot split a phrase; role lines
# ("SYSTEM: ...") on the lines themselves, case-sensitively, so a YAML key does not count.
_ROLE_LINE = re.compile(r"^[ \t>*#-]*(SYSTEM|System|ASSISTANT|Assistant|DEVELOPER|Developer)"
                        r"\s*:[ \t]+\w", re.MULTILINE)
_ADDRESSED = re.compile(
    r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(instructions?|prompts?|rules|"
    r"guidelines|context)\b"
    r"|\b(system|developer) (prompt|message|instructions?)\b"
    r"|\b(tell|inform|advise|instruct|remind) (the |all |every )?(users?|customers?|readers?)"
    r" (that|to)\b"
    r"|\b(you|assistants?|the model|chatbots?|language models?|llms?|ai)\b,? (must|should|"
    r"shall|are to|need to|have to) (now |always |only |also )?(say|reply|answer|respond|"
    r"output|print|tell (the )?users?|mention|claim|state)\b"
    r"|\b(note|message|instructions?) (to|for) (the |any )?(ai|assistant|model|llm|chatbot|bot)s?\b"
    r"|\bif you are an? (ai|assistant|language model|llm|chatbot|bot)\b"
    r"|\b(when|before) answering\b|\b(in|at the end of) (every|each|your) (answer|reply)\b"
    r"|\bnew instructions\b|\bfrom now on\b"
    r"|\[/?INST\]|<\|im_start\|>|<\|system\|>|#{2,}\s*(instruction|system)"
    r"|(忽略|无视|無視).{0,10}(指令|指示|提示|要求|规则|規則)"
    r"|(你|助手|模型|AI|人工智能)(必须|应该|应当|要)(回答|回复|说|输出|告诉|声称)"
    r"|(指示|命令|プロンプト)を無視"
    r"|(あなた|アシスタント|AI|モデル)は.{0,12}(答え|回答|出力|言わ)なければ",
    re.IGNORECASE)


def addressed_to_model(text: str) -> bool:
    """Whether ``text`` speaks to the model ("ignore previous instructions", "Assistant:",
    "you must say ...") instead of stating something for a reader."""
    text = _normalize(text)
    return bool(_ROLE_LINE.search(text) or _ADDRESSED.search(" ".join(text.split())))


def quote_problems(quotes: Sequence[str]) -> list[str]:
    """Quotes too short to state anything: fewer than :data:`MIN_QUOTE_TERMS` content words."""
    problems = []
    for number, quote in enumerate(quotes, start=1):
        terms = unique_terms(analyze(quote))
        if len(terms) < MIN_QUOTE_TERMS:
            problems.append(f"citation {number}: the quote {_show(quote)} is too short to "
                            f"support an answer (at least {MIN_QUOTE_TERMS} content words)")
    return problems


def support_problems(answer: str, quotes: Sequence[str], *, context: Sequence[str] = (),
                     hostile: Sequence[str] = ()) -> list[str]:
    """Every way ``answer`` says more than ``quotes`` state; empty when it is supported.

    ``context`` is what the cited chunks say they are about (their titles and headings): its
    words count towards a sentence's share of supported content words, never as the source
    of a number, code, name or negation. ``hostile`` are the texts of evidence blocks
    addressed to the model: a word the quotes lack but such a block carries is a planted
    word, whatever the share rule would allow. The question is deliberately not support: a
    model that agrees with a leading question has not found the claim in the evidence.
    Each problem names the sentence (1-based) and the unsupported token or words.
    """
    evidence = _Quoted.of(quotes, context, hostile)
    problems: list[str] = []
    for number, sentence in enumerate(sentences(answer), start=1):
        label = f"sentence {number} ({_show(sentence)})"
        problems += _token_problems(label, sentence, evidence)
        problems += _negation_problems(label, sentence, evidence.negations)
        problems += _word_problems(label, _URL.sub(" ", _EMAIL.sub(" ", sentence)), evidence)
    return problems


@dataclass(frozen=True)
class _Quoted:
    """What a draft's quotes state, computed once for all its sentences."""

    folded: str  # the quotes, normalised and casefolded, for token lookups
    terms: frozenset[str]
    known: frozenset[str]  # terms plus the cited chunks' title and heading terms
    numbers: frozenset[str]
    negations: dict[str, str]
    planted: frozenset[str]  # terms only a block addressed to the model carries

    @classmethod
    def of(cls, quotes: Sequence[str], context: Sequence[str],
           hostile: Sequence[str]) -> _Quoted:
        quoted = _normalize(" ".join(quotes))
        terms = frozenset(analyze(quoted))
        return cls(folded=quoted.casefold(), terms=terms,
                   known=terms | {t for text in context for t in analyze(_normalize(text))},
                   numbers=frozenset(_numbers(quoted)), negations=_negations(quoted),
                   planted=frozenset(t for text in hostile
                                     for t in analyze(_normalize(text))) - terms)


def _token_problems(label: str, sentence: str, quoted: _Quoted) -> list[str]:
    """URLs, email addresses, numbers, codes and names the quotes do not contain."""
    problems = []
    rest = sentence
    for kind, pattern in (("URL", _URL), ("email address", _EMAIL)):
        for found in pattern.findall(rest):
            token = found.rstrip(_TRAILING)
            if not _contains(quoted.folded, token.casefold()):
                problems.append(_missing(label, kind, token))
        rest = pattern.sub(" ", rest)  # its parts are not checked again as codes
    problems += [_missing(label, "number", n) for n in dict.fromkeys(_numbers(rest))
                 if n not in quoted.numbers]
    for kind, token in _distinctive(rest):
        present = (_contains(quoted.folded, token.casefold())
                   or kind == "name" and set(analyze(token)) <= quoted.terms)
        if not present:
            problems.append(_missing(label, kind, token))
    return problems


def _word_problems(label: str, sentence: str, quoted: _Quoted) -> list[str]:
    """Words planted by a block addressed to the model; too few words quoted at all."""
    terms = content_terms(sentence)
    unsupported = [t for t in terms if t not in quoted.known]
    problems = []
    borrowed = [t for t in unsupported if t in quoted.planted]
    if borrowed:
        problems.append(f"{label}: {_words(borrowed)} come from an evidence block addressed "
                        "to the model, not from the cited quotes")
    supported = len(terms) - len(unsupported)
    if terms and supported / len(terms) < MIN_SUPPORTED_SHARE:
        problems.append(f"{label}: {supported} of its {len(terms)} content words occur in its "
                        f"quotes (at least {MIN_SUPPORTED_SHARE:.0%} must); not quoted: "
                        f"{_words(unsupported)}")
    return problems


def content_terms(text: str) -> list[str]:
    """The distinct analysed terms the share rule weighs.

    Left out: bare replies ("yes", 可以, はい), which a sentence may add without stating
    anything, and Japanese bigrams containing hiragana, which are mostly particles and
    endings (です, のデ) rather than content.
    """
    return [t for t in unique_terms(analyze(_normalize(text)))
            if t not in _REPLY_WORDS and not _HIRAGANA.search(t)]


def sentences(text: str) -> list[str]:
    """The answer's sentences, inline citation markers removed, blank pieces dropped."""
    cleaned = _MARKER.sub("", _normalize(text))
    return [s.strip() for s in _SENTENCE_END.split(cleaned) if s and s.strip()]


def _normalize(text: str) -> str:
    """NFKC, and thousands separators dropped: "1,000" and "1000" are one figure, for the
    number check and the analyser alike ("2.5" and "19:00" keep their separators)."""
    return _THOUSANDS.sub("", unicodedata.normalize("NFKC", text))


def _numbers(text: str) -> list[str]:
    return _NUMBER.findall(_normalize(text))


def _distinctive(sentence: str) -> list[tuple[str, str]]:
    """Code-like tokens and capitalised names: what a paraphrase has no reason to invent."""
    found: dict[str, str] = {}
    for token in _CODE.findall(sentence):
        kind = _code_kind(token)
        if kind:
            found.setdefault(token, kind)
    words = [w for w in _WORD.findall(sentence) if not w.isdigit()]
    for word in words[1:]:  # the first word is capitalised because it starts the sentence
        if word[0].isupper() and word[1:].islower() and word not in found:
            found.setdefault(word, "name")
    return [(kind, token) for token, kind in found.items()]


def _code_kind(token: str) -> str | None:
    letters = [ch for ch in token if ch.isalpha()]
    if not letters:
        return None  # a bare figure: the number check covers it
    if any(ch.isdigit() for ch in token) or "_" in token:
        return "code"
    if any(sep in token for sep in ".:@"):
        parts = re.split(r"[-_:.@]", token)
        return "code" if any(len(p) > 1 for p in parts) and len(parts) > 1 else None
    if len(letters) > 1 and all(ch.isupper() for ch in letters):
        return "code"  # SWORDFISH, PTO, HR
    if any(a.islower() and b.isupper() for a, b in zip(token, token[1:], strict=False)):
        return "code"  # CORSMiddleware, OpenAI
    return None


def _negations(text: str) -> dict[str, str]:
    """The negations ``text`` contains, by strength: ``{"never": word, "not": word}``.

    "never" counts as a negation too, so a quote saying "never" supports an answer's "not";
    only an answer's "never" needs a quote's "never".
    """
    found: dict[str, str] = {}
    cjk = _NOT_NEGATION_CJK.sub(" ", text)
    for strength, patterns in (("never", (_NEVER_EN, _NEVER_CJK)),
                               ("not", (_NEVER_EN, _NEVER_CJK, _NEGATION_EN, _NEGATION_CJK))):
        for pattern in patterns:
            match = pattern.search(cjk)
            if match:
                found.setdefault(strength, match.group())
    return found


def _negation_problems(label: str, sentence: str, quoted: dict[str, str]) -> list[str]:
    added = {k: v for k, v in _negations(sentence).items() if k not in quoted}
    if not added:
        return []
    word = added.get("never") or added["not"]  # name the stronger claim once
    where = "has 'never' or the like" if "never" in added else "has any negation"
    return [f"{label}: it adds the negation {word!r}, but none of its quotes {where}; a "
            "negation must come from the evidence"]


def _contains(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` as a whole token (not inside a longer one)."""
    pattern = rf"(?<![0-9a-z]){re.escape(needle)}(?![0-9a-z])"
    return bool(needle) and re.search(pattern, haystack) is not None


def _missing(label: str, kind: str, token: str) -> str:
    return (f"{label}: the {kind} {_show(token)} occurs in none of its quotes; every "
            "number, URL, email address, code and name in the answer must come from a quote")


def _words(terms: Iterable[str]) -> str:
    listed = list(terms)
    shown = ", ".join(repr(t) for t in listed[:8])
    return shown + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")


def _show(value: str) -> str:
    shown = repr(" ".join(value.split()))
    return shown if len(shown) <= _SHOW else shown[: _SHOW - 4] + "...'"
