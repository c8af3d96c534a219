"""Which words of a question are everyday English, and which are rarer, more specific ones.

A question asking about something no document mentions cannot be answered from them: "store
the password in the system keyring" over documentation that never says "keyring". Names
(:func:`~glassrag.text.analysis.name_terms`) are one such kind of word; a lower-case word
that everyday English rarely uses (``keyring``, ``coroutines``, ``timeout``) is another. An
everyday word missing from the documents ("widest", "stay", "gone away") says nothing: the
question is only phrased differently. Everyday words are those of a general English
vocabulary shipped with the package (``common_words.txt``, where it comes from is in its
header), with their inflections and ``un-``/``non-`` forms.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from importlib import resources

from glassrag.text.analysis import analyze, has_cjk

# A word standing alone: not part of an identifier, a flag, a path or a file name (questions
# make those up as examples), nor a call.
_WORD = re.compile(r"(?<![\w./@\-])[A-Za-z]+(?:'[A-Za-z]+)?(?:-[A-Za-z]+)*(?![\w./@(\-])")
_SUFFIXES = ("s", "es", "ed", "ing", "er", "est", "ly")
# Endings that turn a final "y" into "i": "lazily" is "lazy", "copied" "copy", "tries" "try".
_Y_SUFFIXES = ("ily", "ied", "ies", "ier", "iest")
_PREFIXES = ("un", "non")
# Shortest stem left once an affix is taken off ("red" is not "r" + "ed").
_MIN_STEM = 3
# Shortest word read as a misspelling of a word one slip away ("parliment", "betwen");
# shorter words are too often other words ("async" is one letter from "sync").
MIN_TYPO_CHARS = 6
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# A text of more words is a pasted passage (an error message, a paragraph to match), not a
# question naming what it asks about: its rare words are its context. This also bounds the
# work on a long text.
MAX_QUESTION_WORDS = 50


@functools.cache
def _common() -> frozenset[str]:
    text = resources.files("glassrag.text").joinpath("common_words.txt").read_text("utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def _forms(word: str) -> set[str]:
    """``word`` and what it may be built on: without ``un-``/``non-``, without an inflection
    (``-s``, ``-ed``, ``-est`` ...), with the ``e``, the doubled consonant or the ``y`` that
    the inflection took ("widest" is "wide", "biggest" "big", "lazily" "lazy")."""
    forms = {word}
    forms.update(word[len(p):] for p in _PREFIXES
                 if word.startswith(p) and len(word) - len(p) >= _MIN_STEM)
    for form in list(forms):
        for suffix in _SUFFIXES:
            stem = form[: -len(suffix)]
            if form.endswith(suffix) and len(stem) >= _MIN_STEM:
                forms.update((stem, stem + "e"))
                if stem[-1] == stem[-2]:
                    forms.add(stem[:-1])
        forms.update(form[: -len(suffix)] + "y" for suffix in _Y_SUFFIXES
                     if form.endswith(suffix) and len(form) - len(suffix) >= _MIN_STEM - 1)
    return forms


def is_common(word: str) -> bool:
    """Whether ``word`` is everyday English (any case; a possessive "'s" is dropped), or a
    misspelling of an everyday word one letter away ("betwen", "parliment").

    >>> is_common("Widest"), is_common("uncompressed"), is_common("parliment")
    (True, True, True)
    >>> is_common("keyring")
    False
    """
    word = word.lower().removesuffix("'s")
    if "-" in word:  # "server-sent", "re-raising": everyday when each part is
        return all(map(is_common, word.split("-")))
    common = _common()
    return (word in common or not common.isdisjoint(_forms(word))
            or (len(word) >= MIN_TYPO_CHARS and one_edit_away(word, common)))


def one_edit_away(word: str, words: Collection[str]) -> bool:
    """Whether one of ``words`` is ``word`` with one letter left out, added, changed, or two
    neighbours swapped (how a word is most often mistyped)."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    for left, right in splits:
        if right and left + right[1:] in words:
            return True
        if len(right) > 1 and left + right[1] + right[0] + right[2:] in words:
            return True
        for letter in _LETTERS:
            if (right and letter != right[0] and left + letter + right[1:] in words) \
                    or left + letter + right in words:
                return True
    return False


def uncommon_words(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The words of English ``text`` that everyday English rarely uses, each with its analysed
    terms, in order and once each. In Chinese, Japanese or Korean text every Latin word is
    already a name (:func:`~glassrag.text.analysis.name_terms`), so there are none here; nor
    in a text of more than :data:`MAX_QUESTION_WORDS` words."""
    if has_cjk(text) or len(text.split(None, MAX_QUESTION_WORDS)) > MAX_QUESTION_WORDS:
        return []
    out: dict[str, tuple[str, ...]] = {}
    for match in _WORD.finditer(text):
        word = match.group()
        if word.lower() in out or is_common(word):  # most words: a set lookup, no analysis
            continue
        terms = tuple(analyze(word))
        if terms:
            out[word.lower()] = terms
    return list(out.items())


def written_short_or_long(terms: Sequence[str], words: Collection[str]) -> frozenset[str]:
    """The Latin ``terms`` of five letters or more that one of ``words`` writes short or long
    ("async" and "asynchronous", "config" and "configuration": one is the start of the
    other). Stemming joins inflections, not shortenings."""
    wanted = [t for t in terms if len(t) >= 5 and t not in words and t.isascii() and t.isalpha()]
    if not wanted:
        return frozenset()
    long = [w for w in words if len(w) >= 5 and w.isascii() and w.isalpha()]
    starts = {w[:5] for w in long}
    return frozenset(t for t in wanted if t[:5] in starts
                     and any(w.startswith(t) or t.startswith(w) for w in long))
