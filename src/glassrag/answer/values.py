"""Literal values: what a question asks for, and which values a sentence states.

Documentation answers "what is the default", "how many" and "which option" questions with a
literal: inline code, a number, a quoted string, a ``--flag`` or an identifier. These
predicates read the question's shape (:func:`seeks_literal`, :func:`value_kind`,
:func:`asks_default`) and a text's values (:func:`literals`, :func:`states_default`) in
English, Chinese and Japanese; the answerer's preferences are built on them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from glassrag.text.analysis import has_han, has_kana

# A literal value: inline code, a number (not a list marker), a quoted string, a flag.
_LITERAL = re.compile(
    # reST's inline literal is ``double``: read as one value, not as the text between two.
    r"``[^`\n]+``|`[^`\n]+`"
    r"|(?<![A-Za-z0-9_.])(?<![A-Za-z0-9]-)\d+(?:[.,]\d+)*(?![.)]\s)"
    r"|\"[^\"\n]{1,60}\"|'[^'\n]{1,60}'|\u201c[^\u201d\n]{1,60}\u201d|\u300c[^\u300d\n]{1,60}\u300d"
    r"|(?<![A-Za-z0-9_-])--?[A-Za-z][A-Za-z0-9_-]*"
    r"|(?<![A-Za-z0-9_])[A-Za-z]+(?:_[A-Za-z0-9]+)+|(?<![A-Za-z0-9_])[a-z]{2,}[A-Z][A-Za-z0-9]*"
)
# Questions that ask for a value, a name or a way (what/which/how/where, how many, the
# default), as opposed to yes/no questions: the answer to these is usually a literal.
_SEEKS_LITERAL = re.compile(
    r"\b(?:what|which|how|where|when|default|defaults)\b"
    r"|\u9ed8\u8ba4|\u591a\u5c11|\u51e0|\u591a\u957f|\u591a\u5927|\u591a\u4e45|\u54ea|\u4ec0\u4e48|\u600e|\u5982\u4f55"
    r"|\u30c7\u30d5\u30a9\u30eb\u30c8|\u3044\u304f\u3064|\u4f55|\u3069\u306e|\u3069\u308c|\u3069\u3046|\u3069\u3053|\u3069\u3093\u306a|\u65b9\u6cd5",
    re.IGNORECASE,
)


# Where a link points and a bare URL: an address, not a value the text states (the numbers
# of "[CVE-2018-12121](https://...)" name an advisory, they answer no "what value").
# A reST cross-reference (:ref:`ci-pipelines`, :doc:`/quickstart`) points the same way.
_ADDRESS = re.compile(r"\]\([^)\s]*\)|https?://[^\s<>)\]]+|:(?:ref|doc|numref|download):`[^`\n]*`")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# A metavariable of a synopsis (``<name>``, ``<dir>``): it stands for a value the reader
# supplies, so it is no value the documentation gives.
_PLACEHOLDER = re.compile(r"<[^<>\s][^<>]*>")
# Questions that ask for a way to do something (how do I, what should I set): the answer
# names what to set or run, so a number alone in a sentence does not answer them.
_ASKS_WAY = re.compile(
    r"\bhow (?:do|does|can|could|should|would|to)\b|\bwhat (?:should|must|do) (?:i|we|you)\b"
    r"|\u600e\u4e48|\u600e\u6837|\u600e\u9ebc|\u5982\u4f55|\u3069\u3046(?!\u304b)|\u65b9\u6cd5",
    re.IGNORECASE,
)
# Questions whose answer is a number (value_kind): a count or a size, another quantity, or a
# version.
# A count or a size: how many, how large, 多少, 几, いくつ, 何秒 (the answer is a number, or one
# written as a word). Not "how long", "how often" or "how much", nor 多久 or どのくらい: "until
# the process exits", "within a week", "on every change", "vast areas" answer those without one.
# Nor 几 that counts nothing: 那几个 / 这几个 / 哪几个 (those, these, which ones), 好几 and 十几
# (several, a dozen or so), 没几个 (hardly any), 几乎 (almost).
_ASKS_COUNT = re.compile(
    r"\bhow (?:many|big|large|small|wide)\b"
    r"|\u591a\u5c11|(?<![\u90a3\u8fd9\u54ea\u597d\u5341\u6ca1])\u51e0(?!\u4e4e)|\u591a\u5927"
    r"|\u3044\u304f\u3064"
    r"|\u4f55\s?(?:[A-Za-z]|\u79d2|\u5206|\u56de|\u500b|\u4ef6|\u65e5|\u6642\u9593|\u30df\u30ea|\u30d0\u30a4\u30c8|\u6587\u5b57|\u884c|\u500d|\u3064)",
    re.IGNORECASE,
)
# Which port: a number in digits ("5173"), never one written as a word.
_ASKS_PORT = re.compile(
    r"\b(?:which|what)(?: \w+)? port\b|\bport number\b"
    r"|(?:\u54ea\u4e2a|\u4ec0\u4e48|\u54ea)\s?\u7aef\u53e3|\u7aef\u53e3\u53f7"
    r"|\u3069\u306e\s?\u30dd\u30fc\u30c8|\u30dd\u30fc\u30c8\u756a\u53f7",
    re.IGNORECASE,
)
# Which exit or status code: a number in digits ("exits with 2", "sends 307"), as a port is.
# Asked which (どの終了コード) or what it is (終了コードは何), not what a given one means.
_JA_CODE = ("\u7d42\u4e86\u30b3\u30fc\u30c9|\u30b9\u30c6\u30fc\u30bf\u30b9\u30b3\u30fc\u30c9"
            "|\u7d42\u4e86\u30b9\u30c6\u30fc\u30bf\u30b9")
_ASKS_CODE = re.compile(
    r"\b(?:which|what)(?: (?!(?:does|do|did|is|are|was|can|will)\b)\w+)?"
    r" (?:exit|status|return|response) (?:code|status)\b"
    r"|(?:\u54ea\u4e2a|\u4ec0\u4e48)\s?(?:\u9000\u51fa\u7801|\u9000\u51fa\u4ee3\u7801"
    r"|\u72b6\u6001\u7801|\u8fd4\u56de\u7801)"
    r"|\u3069\u306e\s?(?:" + _JA_CODE + ")"
    r"|(?:" + _JA_CODE + r")\u306f\s?(?:\u4f55|\u3044\u304f\u3064)",
    re.IGNORECASE,
)
# A question asking for a point in time: the time of day or the date ("what time", "which
# day", 几点, 哪天, 哪年, いつ, 何時). Its answer is a time, a date or a release, written in
# digits in documentation. "When", 什么时候 and 何时 are left out: they as often ask under which
# condition ("When is the hook called?", 什么时候需要设置), and a date in prose may be written
# in words ("in March", "金朝"); on the QA sets they refused right answers and no wrong one.
_ASKS_WHEN = re.compile(
    r"\bwhat time\b|\b(?:which|what) (?:date|day)\b"
    r"|\u51e0\u70b9|\u54ea\u4e00?\u5929|\u54ea\u4e00?\u5e74"
    r"|\u3044\u3064|\u4f55\u6642|\u4f55\u65e5|\u4f55\u5e74",
    re.IGNORECASE,
)
# Questions whose answer is a number in digits: which port, which exit or status code, when.
_ASKS_DIGITS = (_ASKS_PORT, _ASKS_CODE, _ASKS_WHEN)
# Which environment variable: its name, which documentation writes in capitals (PAPERSIZE,
# NO_COLOR), so a quote naming none answers something else. Not "is there an environment
# variable …", which a sentence without the name may answer.
_ASKS_ENV_VAR = re.compile(
    r"\b(?:which|what)(?: \w+)? env(?:ironment)? var(?:iable)?s?\b"
    r"|(?:\u54ea(?:\u4e2a|\u4e9b|\u4e00\u4e2a)?|\u4ec0\u4e48)\s?\u73af\u5883\u53d8\u91cf"
    r"|\u3069\u306e\s?\u74b0\u5883\u5909\u6570",
    re.IGNORECASE,
)
# The name of an environment variable as a text writes it: a capitalised identifier with an
# underscore (NO_COLOR), a shell reference or assignment ($EDITOR, ${HOME}, %PATH%,
# PAPERSIZE=a4), or a capitalised word in a text that says it is an environment variable
# ("the PAGER environment variable"). A constant in code (``MARKER = "#"``) is none of these.
_ENV_VAR_NAME = re.compile(
    r"(?<![\w.])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![a-z])"
    r"|\$\{?[A-Z][A-Z0-9_]+|%[A-Z][A-Z0-9_]+%|(?<![\w.-])[A-Z][A-Z0-9_]+=[^\s=]"
)
_SAYS_ENV_VAR = re.compile(r"env(?:ironment)?[ _-]?var|\u73af\u5883\u53d8\u91cf"
                           r"|\u74b0\u5883\u5909\u6570", re.IGNORECASE)
_CAPITALISED_WORD = re.compile(r"(?<![\w.-])[A-Z][A-Z0-9]{2,}(?![\w(])")
# A quantity of any kind (value_kind): a count or a size, how long, how often, 多长, 多久; what
# size or length, or a value asked in a unit ("in bytes", "in seconds").
_ASKS_AMOUNT = re.compile(
    r"\bhow (?:much|long|often|old)\b|\u591a\u957f|\u591a\u4e45"
    r"|\u3069\u306e\u304f\u3089\u3044|\u3069\u308c\u304f\u3089\u3044"
    r"|\bwhat (?:\w+ )?(?:size|length|percentage)\b"
    r"|\bin (?:bytes|kilobytes|megabytes|seconds|milliseconds|minutes|hours|days|characters"
    r"|pixels|percent)\b",
    re.IGNORECASE,
)
# A version: which version, 哪个版本, どのバージョン (usually a number, but the pattern also
# meets "which archives does version 2.1 read", which asks for no number).
_ASKS_VERSION = re.compile(
    r"\b(?:which|what)\s+(?:[\w.-]+\s+){0,2}(?:version|release)s?\b"
    r"|\u54ea(?:\u4e2a|\u4e00\u4e2a|\u4e00)?\u7248\u672c|\u4ec0\u4e48\u7248\u672c"
    r"|\u3069\u306e\u30d0\u30fc\u30b8\u30e7\u30f3|\u4f55\u30d0\u30fc\u30b8\u30e7\u30f3",
    re.IGNORECASE,
)

# The words for "default" (a question asking for one, a sentence stating one): default, 默认,
# 默認, 缺省, デフォルト, 既定, and the Japanese 初期値 / 初期設定 (initial value, initial setting)
# and 標準で (as standard; not 標準出力, standard output). A quote saying one covers a question
# asking with another (scoring.DEFAULT_WORDS).
DEFAULT_SAYINGS = ("default", "\u9ed8\u8ba4", "\u9ed8\u8a8d", "\u7f3a\u7701",
                   "\u30c7\u30d5\u30a9\u30eb\u30c8", "\u65e2\u5b9a", "\u521d\u671f\u5024",
                   "\u521d\u671f\u8a2d\u5b9a", "\u6a19\u6e96\u3067")
_DEFAULT = re.compile(r"\bdefault(?:s|ed)?\b|" + "|".join(DEFAULT_SAYINGS[1:]), re.IGNORECASE)
# A question about the default that does not say the word: what happens when nothing is set
# ("if I don't set minimum_size", "unless I specify one", "unless told otherwise", "when
# nothing else is configured", "out of the box", "不设置的话", "如果我不传 tpl",
# "特に設定しない場合", "何も指定しなかった場合", "何も渡さずに").
_ASKS_UNSET = re.compile(
    r"\b(?:if|when) (?:i|we|you) (?:do not|don't|did not|didn't|have not|haven't|never)"
    r" (?:set|specif(?:y|ied)|pass(?:ed)?|configured?|changed?|touch(?:ed)?|give|given"
    r"|provided?|tell|told)\b"
    r"|\bunless (?:i|we|you) (?:set|specify|pass|configure|change|tell|give|provide)\b"
    r"|\bunless (?:told|configured|specified|set|changed|overridden)\b|\bout of the box\b"
    r"|\b(?:if|when) nothing(?: else)? is (?:set|configured|specified|given|passed|changed)\b"
    r"|\bwithout (?:setting|specifying|passing|configuring|changing|giving|providing)\b"
    r"|\u4e0d(?:\u505a\u4efb\u4f55|\u624b\u52a8)?(?:\u8bbe\u7f6e|\u914d\u7f6e|\u6307\u5b9a|\u4fee\u6539|\u4f20)"
    r"|\u6ca1(?:\u6709)?(?:\u8bbe\u7f6e|\u914d\u7f6e|\u6307\u5b9a|\u4f20)"
    r"|(?:\u6307\u5b9a|\u8a2d\u5b9a)(?:\u3057(?:\u306a\u3044|\u306a\u304b\u3063\u305f|\u3066\u3044\u306a\u3044)|\u305b\u305a)"
    r"|(?:\u30aa\u30d7\u30b7\u30e7\u30f3|\u6307\u5b9a|\u8a2d\u5b9a|\u5f15\u6570)(?:\u306a\u3057|\u7121\u3057)"
    r"|\u6e21\u3055(?:\u306a\u3044|\u306a\u304b\u3063\u305f|\u305a)",
    re.IGNORECASE,
)
# How far after that word the value may start ("Defaults to `600`", "**Default:** `500`",
# "默认为15000", "デフォルトは Vite の特別な値 `'x'`"), without crossing a sentence end.
DEFAULT_REACH = 24
_SENTENCE_END = re.compile(r"[.!?]\s|[\u3002\uff01\uff1f\uff1b]")


def literals(text: str) -> tuple[str, ...]:
    """The literal values in ``text`` (see :func:`has_literal`), casefolded, without the
    backticks and quotes around them."""
    if "](" in text or "://" in text or ":`" in text:
        text = _ADDRESS.sub(" ", text)
    found = (m.group().strip("`\"'\u201c\u201d\u300c\u300d").casefold()
             for m in _literal_matches(text))
    return tuple(dict.fromkeys(v for v in found if not _PLACEHOLDER.fullmatch(v)))


# Where a literal other than an identifier can start. A text holding no "_" and no
# lower-case letter before a capital holds no identifier literal, so no literal starts at a
# letter.
_NON_WORD_START = re.compile(r"[`\d\"'\u201c\u300c-]")
_CAMEL_JOIN = re.compile(r"[a-z][A-Z]")


def _literal_matches(text: str) -> Iterable[re.Match[str]]:
    """``_LITERAL.finditer(text)``. Without identifiers, the regex is tried only where a
    literal can start: finditer tries every alternative at every position, most of them
    letters of prose, where none can match (the same matches, a fraction of the time)."""
    if "_" in text or _CAMEL_JOIN.search(text) is not None:
        return _LITERAL.finditer(text)
    out: list[re.Match[str]] = []
    start = _NON_WORD_START.search(text)
    while start is not None:
        match = _LITERAL.match(text, start.start())
        if match is not None:
            out.append(match)
        start = _NON_WORD_START.search(text, match.end() if match else start.start() + 1)
    return out


def value_kind(question: str) -> str:
    """The kind of literal that answers ``question``: ``"number"`` for a quantity (how
    many, how long, 多少, いくつ), ``"name"`` for a way to do something (how do I, 怎么,
    どうすれば: the option, flag or call to use), else ``"any"``."""
    if (_ASKS_COUNT.search(question) or _ASKS_AMOUNT.search(question)
            or _ASKS_VERSION.search(question)):
        return "number"
    if _ASKS_WAY.search(question):
        return "name"
    return "any"


def asks_version(question: str) -> bool:
    """Whether ``question`` asks which version or release (哪个版本, どのバージョン): a
    changelog answers it with the title of the section its entry sits under."""
    return _ASKS_VERSION.search(question) is not None


def of_kind(values: Sequence[str], kind: str) -> list[str]:
    """The ``values`` (from :func:`literals`) that are of ``kind`` (see :func:`value_kind`)."""
    if kind == "number":
        return [v for v in values if any(ch.isdigit() for ch in v)]
    if kind == "name":
        return [v for v in values if not _NUMBER.fullmatch(v)]
    return list(values)


# A quantity written as a word: "two ways", "retried twice", "三次", "一つ".
_NUMBER_WORD = re.compile(
    r"\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"(?:thir|four|fif|six|seven|eigh|nine)teen|(?:twen|thir|for|fif|six|seven|eigh|nine)ty|"
    r"hundred|thousand|million|billion|once|twice|thrice|dozen|single|double|half)\b"
    r"|[\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03\u516b\u4e5d\u5341\u767e\u5343\u4e07\u4e24]",
    re.IGNORECASE,
)


def asks_count(question: str) -> bool:
    """Whether ``question`` asks how many or how large (多少, 几, いくつ, 何秒): a number, which
    a quote stating none does not give (:func:`states_quantity`)."""
    return _ASKS_COUNT.search(question) is not None


def asks_when(question: str) -> bool:
    """Whether ``question`` asks for a point in time ("what time", "which date", 几点, 哪天,
    いつ, 何時): a time, a date or a release, written in digits."""
    return _ASKS_WHEN.search(question) is not None


def lacks_quantity(question: str, quotes: Iterable[str]) -> bool:
    """Whether ``question`` asks for a count (:func:`asks_count`) and none of ``quotes``
    states a quantity (:func:`states_quantity`), or asks which port, which exit or status
    code, or when (:func:`asks_when`) and none of them holds a number in digits (a port, a
    code, a date or a release is never written as a word): such quotes answer something
    else."""
    asked = question.casefold()
    if any(pattern.search(question) is not None for pattern in _ASKS_DIGITS):
        return not any(states_number(quote, asked) for quote in quotes)
    if not asks_count(question):
        return False
    return not any(states_quantity(quote, asked) for quote in quotes)


def asks_env_var(question: str) -> bool:
    """Whether ``question`` asks which environment variable (哪个环境变量, どの環境変数)."""
    return _ASKS_ENV_VAR.search(question) is not None


def names_env_var(text: str, asked: str) -> bool:
    """Whether ``text`` names an environment variable (see :data:`_ENV_VAR_NAME`) that
    ``asked`` (the question, casefolded) does not already name."""
    names = [m.group() for m in _ENV_VAR_NAME.finditer(text)]
    if _SAYS_ENV_VAR.search(text) is not None:
        names += _CAPITALISED_WORD.findall(text)
    return any(name.strip("${}%").partition("=")[0].casefold() not in asked for name in names)


def missing_value(question: str, quotes: Sequence[str]) -> str | None:
    """What ``question`` asks for that none of ``quotes`` gives, said for a refusal's reason:
    a number (:func:`lacks_quantity`) or the name of an environment variable
    (:func:`asks_env_var`, :func:`names_env_var`); None when nothing is missing."""
    if lacks_quantity(question, quotes):
        return "a number (how many, which port or code, when)"
    if asks_env_var(question) and not any(names_env_var(q, question.casefold())
                                          for q in quotes):
        return "the name of an environment variable"
    return None


def states_quantity(text: str, asked: str) -> bool:
    """Whether ``text`` gives a quantity the question (``asked``, casefolded) does not
    already name: a number, or a number written as a word."""
    if states_number(text, asked):
        return True
    return any(word.group().casefold() not in asked for word in _NUMBER_WORD.finditer(text))


# Digits that count nothing: a footnote mark ("archives[5]", "。[79]"), a manual page's
# section ("papersize(5)", "apt-get(8)"), and an issue or pull request a changelog entry
# cites ("(#4452)", "[\\#140](…)", ":issue:`5034`"): a release is never numbered by them.
_REFERENCE_DIGITS = re.compile(r"\[\d{1,3}\]|(?<=[\w.+-])\(\d[a-z]?\)|(?<![\w&])#\d+\b"
                               r"|:(?:issue|pr|pull|gh|bug):`[^`]*`")


def states_number(text: str, asked: str) -> bool:
    """Whether ``text`` holds a number in digits that ``asked`` (the question, casefolded)
    does not already name."""
    if "[" in text or "(" in text or "#" in text or ":`" in text:
        text = _REFERENCE_DIGITS.sub(" ", text)
    return any(value not in asked for value in of_kind(literals(text), "number"))


def asks_default(question: str) -> bool:
    """Whether ``question`` asks for the default: names it (default, 默认, デフォルト, 既定)
    or asks what holds when nothing is set ("if I don't set", "不设置", "指定しない場合")."""
    return _DEFAULT.search(question) is not None or _ASKS_UNSET.search(question) is not None


# A signature with a parameter's default, written as a signature: in inline code
# ("`WebSocketException(code=1008, reason=None)`"), after "def", or as the argument of a reST
# object directive (".. autoclass:: RedisStore(db=0, key='jobs')"). A call in a code example
# ("close(code=1000)") passes a value; it states no default.
_SIGNATURE_DEFAULT = re.compile(
    r"(?:`|\bdef[ \t]+|::[ \t]+)[\w.]+\((?:[^()\n`]*?[,(\s])?\w+[ \t]*=[ \t]*[^\s,()=`]"
    r"[^,()\n`]*[,)]")


def unset_phrases(question: str) -> str:
    """The words with which ``question`` asks what holds when nothing is set ("without
    setting", "unless told otherwise", 不手动指定, 特に設定しない), joined by spaces: they ask
    for the default as the word "default" does."""
    return " ".join(m.group() for m in _ASKS_UNSET.finditer(question))


def names_default(text: str) -> bool:
    """Whether ``text`` says "default" (default, 默认, デフォルト, 既定): a table header with
    a column of defaults."""
    return _DEFAULT.search(text) is not None


def signature_default(text: str) -> bool:
    """Whether ``text`` holds a signature giving a parameter its default
    (`` `connect(host, port=5432)` ``, ``.. function:: connect(host, port=5432)``)."""
    return "=" in text and _SIGNATURE_DEFAULT.search(text) is not None


def states_default(text: str) -> bool:
    """Whether ``text`` gives a default value: the word "default" followed, within
    :data:`DEFAULT_REACH` characters of the same sentence, by a literal value, or a signature
    with a parameter's default (:func:`signature_default`)."""
    if signature_default(text):
        return True
    for word in _DEFAULT.finditer(text):
        window = text[word.end() : word.end() + DEFAULT_REACH + 40]
        stop = _SENTENCE_END.search(window)
        value = _LITERAL.search(window, 0, stop.start() if stop else len(window))
        if value is not None and value.start() <= DEFAULT_REACH:
            return True
    return False


def has_literal(text: str) -> bool:
    """Whether ``text`` holds a literal value: inline code, a number, a quoted string, a
    ``--flag`` or an identifier (``snake_case``, ``camelCase``)."""
    return _LITERAL.search(text) is not None


# Who and why (谁, 为什么, 誰, なぜ, どうして): open questions seeks_literal does not count.
_ASKS_WHO_OR_WHY = re.compile(r"\b(?:who|whom|whose|why)\b|\u8c01|\u4e3a\u4ec0\u4e48|"
                              r"\u8ab0|\u306a\u305c|\u3069\u3046\u3057\u3066", re.IGNORECASE)


# How a Chinese question asks yes or no: a closing 吗 or 么, or A-not-A (是不是, 能不能, 有没有)
# and 是否, 能否, 可否. One without them ("…的职业是？") asks what, without saying 什么.
_CHINESE_YES_NO = re.compile(r"[\u5417\u4e48]\s*[?\uff1f]?\s*$|(.)[\u4e0d\u6ca1]\1"
                             r"|[\u662f\u80fd\u53ef]\u5426")


def asks_yes_no(question: str) -> bool:
    """Whether ``question`` asks yes or no: asked as a question ("?" in English, a closing
    か in Japanese, 吗 or A-not-A in Chinese), asking neither what, which, how, where, who,
    why nor the default (:func:`seeks_literal`). Its answer is a verdict ("No, …",
    "必須ではありません")."""
    if seeks_literal(question) or _ASKS_WHO_OR_WHY.search(question) is not None:
        return False
    end = question.rstrip().rstrip("?\uff1f").rstrip()
    if has_kana(question):
        return end.endswith("\u304b")
    if has_han(question):
        return _CHINESE_YES_NO.search(question) is not None
    return end != question.rstrip()


def seeks_literal(question: str) -> bool:
    """Whether ``question`` asks what, which, how, where or the default (in English, Chinese
    or Japanese), whose answers are usually a literal value, rather than yes or no."""
    return _SEEKS_LITERAL.search(question) is not None
