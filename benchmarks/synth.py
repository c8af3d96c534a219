"""Deterministic synthetic corpora for glassrag's benchmarks (English and Chinese).

Nothing is downloaded. The same ``(n_docs, lang, seed)`` always gives byte-identical
output on any machine and Python >= 3.10, because every random choice comes from one
seeded :class:`random.Random` and the vocabularies are built in a fixed order.

English words follow a Zipf distribution over a vocabulary of ~3,800 surface forms:
real stop words hold the top ranks (so stop-word removal matters), and the content
words are a few hundred real stems plus made-up stems, each in several inflected forms
(``-s``, ``-ed``, ``-ing``, ``-er``, ``-ation``, ...) so that stemming folds them together.
Chinese words are the 3,000 most frequent two-character words of jieba's bundled
dictionary plus a handful of one-character particles, also Zipf-distributed.

Texts contain no sentence-ending punctuation (no ``.``, ``!``, ``?``, ``。``), so each
document is exactly one chunk whichever chunker reads it; English texts are kept under
580 characters so they also fit the 600-character limit of the ``structure`` chunker.

Usage::

    python benchmarks/synth.py --docs 100000 --lang en --out /tmp/synth-en
    python benchmarks/synth.py --docs 100000 --lang zh --out /tmp/synth-zh --queries 1000

writes ``OUT/corpus.jsonl`` (one ``{doc_id, title, source, roles, text}`` record a line)
and, with ``--queries N``, ``OUT/queries.jsonl`` (``{query_id, text}``). glassrag refuses
input files over 20 MB by default (100k English documents are ~63 MB); ``--shard-docs
10000`` writes ``OUT/corpus-0000.jsonl``, ``OUT/corpus-0001.jsonl``, ... instead.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import re
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

# The vocabulary never depends on the corpus seed: corpora and query sets made with
# different seeds still share one word distribution.
VOCAB_SEED = 20240611
ZIPF_EXPONENT = 1.0
ROLE_CHOICES = ((0.5, ("public",)), (0.8, ("employee",)), (1.0, ("finance",)))
MAX_EN_CHARS = 580


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


EN_STOPWORDS = _words(
    "the of and to a in is that for it as was with be by on not he this are or his from "
    "at which but have an they you were her she there been one all we their has would when "
    "if will can more no who so what its into than them these some could other then do"
)

# Real content stems, base forms only; inflections are derived below.
EN_REAL_STEMS = _words(
    "account access action address agree allow answer apply archive arrange assign attach "
    "audit balance bill block board book branch budget build cache call change charge check "
    "claim clean client close code collect commit compare complete connect contract control "
    "copy count cover create credit custom cycle deliver deploy design detail develop "
    "document draft edit employ enable enroll estimate event expect export extract fetch "
    "field file filter finance finish follow format forward fund gather grant group guide "
    "handle host import improve include index inspect install invoice issue join label "
    "launch learn lease limit link list load locate lock log manage market measure meet "
    "merge migrate model monitor move name network note notify offer open order own pack "
    "page parse partner pay permit place plan point policy post prepare price print "
    "process produce project protect publish purchase query queue rank rate read receive "
    "record reduce refund register release remove render rent repair report request "
    "require reserve reset resolve restore return review route rule run sample save scale "
    "schedule score search secure select sell send serve session settle share ship sign "
    "sort source split staff start state store stream submit supply support switch sync "
    "target task teach test ticket track trade train transfer travel trust update upload "
    "use user value verify view visit vote wait warn watch work write"
)

_ONSETS = _words("b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sc sh sl "
                 "sm sn sp st str t th tr v w z")
_INNER_ONSETS = _words("b c d f g k l m n p r s t v z")
_VOWELS = _words("a a e e i i o o u ai ea ee ou")
_CODAS = ("", "", "", "n", "r", "l", "m", "nd", "nt", "st", "ck", "sk", "mp", "rn", "ld")
_SUFFIXES = ("s", "ed", "ing", "er", "ers", "ation", "ly", "ment", "ness", "able")

ZH_PARTICLES = tuple("的了在是和也就都而与及着把被从")


@cache
def _zipf_cum_weights(size: int) -> tuple[float, ...]:
    return tuple(itertools.accumulate(1.0 / (rank**ZIPF_EXPONENT) for rank in range(1, size + 1)))


def _inflect(stem: str, suffix: str) -> str:
    if suffix[0] in "aeiou" and stem.endswith("e"):
        return stem[:-1] + suffix
    if suffix == "s" and stem.endswith(("s", "sh", "ch", "x", "z")):
        return stem + "es"
    return stem + suffix


def _made_up_stem(rng: random.Random) -> str:
    syllables = rng.choice((2, 2, 2, 3))
    parts = []
    for i in range(syllables):
        onset = rng.choice(_ONSETS if i == 0 else _INNER_ONSETS)
        coda = rng.choice(_CODAS) if i == syllables - 1 else ""
        parts.append(onset + rng.choice(_VOWELS) + coda)
    return "".join(parts)


@cache
def english_vocabulary(n_made_up_stems: int = 600) -> tuple[str, ...]:
    """Surface forms in Zipf rank order: stop words first, then shuffled content words."""
    rng = random.Random(VOCAB_SEED)
    taken = set(EN_STOPWORDS)
    stems = list(EN_REAL_STEMS)
    taken.update(stems)
    while len(stems) < len(EN_REAL_STEMS) + n_made_up_stems:
        stem = _made_up_stem(rng)
        if 4 <= len(stem) <= 9 and stem not in taken:
            taken.add(stem)
            stems.append(stem)
    forms: list[str] = []
    seen: set[str] = set(EN_STOPWORDS)
    for stem in stems:
        n_suffixes = rng.randint(2, 5)
        for word in [stem, *(_inflect(stem, s) for s in rng.sample(_SUFFIXES, n_suffixes))]:
            if word not in seen:
                seen.add(word)
                forms.append(word)
    rng.shuffle(forms)
    return EN_STOPWORDS + tuple(forms)


@cache
def chinese_vocabulary(n_words: int = 3000) -> tuple[str, ...]:
    """One-character particles, then jieba's most frequent two-character words."""
    import jieba

    dict_path = Path(jieba.__file__).with_name("dict.txt")
    pattern = re.compile(r"[\u4e00-\u9fff]{2}")
    rows: list[tuple[int, str]] = []
    with dict_path.open(encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 2 and pattern.fullmatch(parts[0]):
                rows.append((-int(parts[1]), parts[0]))
    rows.sort()  # by frequency, then by the word itself: a total, stable order
    words = [word for _, word in rows[:n_words]]
    # Particles every third rank from the top: frequent, but not a third of all text.
    for i, particle in enumerate(ZH_PARTICLES):
        words.insert(3 * i, particle)
    return tuple(words)


def vocabulary(lang: str) -> tuple[str, ...]:
    if lang == "en":
        return english_vocabulary()
    if lang == "zh":
        return chinese_vocabulary()
    raise ValueError(f"unknown lang {lang!r}; expected 'en' or 'zh'")


class _Sampler:
    def __init__(self, lang: str, rng: random.Random) -> None:
        self.words = vocabulary(lang)
        self.cum = _zipf_cum_weights(len(self.words))
        self.total = self.cum[-1]
        self.rng = rng

    def draw(self, k: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum, k=k)

    def draw_distinct(self, k: int) -> list[str]:
        out: list[str] = []
        while len(out) < k:
            word = self.words[bisect.bisect(self.cum, self.rng.random() * self.total)]
            if word not in out:
                out.append(word)
        return out


def _roles(rng: random.Random) -> list[str]:
    x = rng.random()
    for threshold, roles in ROLE_CHOICES:
        if x < threshold:
            return list(roles)
    return list(ROLE_CHOICES[-1][1])


def _english_text(sampler: _Sampler, rng: random.Random) -> str:
    words = sampler.draw(rng.randint(60, 90))
    while len(" ".join(words)) > MAX_EN_CHARS:
        words.pop()
    words[0] = words[0].capitalize()
    return " ".join(words)


def _chinese_text(sampler: _Sampler, rng: random.Random) -> str:
    target = rng.randint(100, 140)
    pieces: list[str] = []
    length = 0
    next_comma = rng.randint(5, 12)
    while length < target:
        word = sampler.draw(1)[0]
        pieces.append(word)
        length += len(word)
        next_comma -= 1
        if next_comma == 0 and length < target - 4:
            pieces.append("，")
            length += 1
            next_comma = rng.randint(5, 12)
    return "".join(pieces)


def _title(sampler: _Sampler, rng: random.Random, lang: str) -> str:
    stop = set(EN_STOPWORDS) | set(ZH_PARTICLES)
    words = [w for w in sampler.draw(12) if w not in stop][: rng.randint(2, 4)] or ["untitled"]
    return " ".join(w.capitalize() for w in words) if lang == "en" else "".join(words)


def generate(n_docs: int, lang: str = "en", seed: int = 0) -> Iterator[dict[str, Any]]:
    """Yield ``n_docs`` records ``{doc_id, title, source, roles, text}``, deterministically.

    Roles: ``["public"]`` 50 %, ``["employee"]`` 30 %, ``["finance"]`` 20 %.
    """
    rng = random.Random(f"glassrag-synth/{lang}/{seed}")
    sampler = _Sampler(lang, rng)
    make_text = _english_text if lang == "en" else _chinese_text
    for i in range(n_docs):
        yield {
            "doc_id": f"{lang}-{i:07d}",
            "title": _title(sampler, rng, lang),
            "source": f"synth/{lang}/{i // 1000:04d}.md#d{i}",
            "roles": _roles(rng),
            "text": make_text(sampler, rng),
        }


def queries(n: int, lang: str = "en", seed: int = 1) -> list[str]:
    """``n`` queries of 2-5 distinct words drawn from the corpus's own word distribution.

    A query made only of stop words / particles is redrawn, so every query has at least one
    content word. English words are joined by spaces; Chinese words are run together, as
    people type them.
    """
    rng = random.Random(f"glassrag-synth-queries/{lang}/{seed}")
    sampler = _Sampler(lang, rng)
    stop = set(EN_STOPWORDS) | set(ZH_PARTICLES)
    joiner = " " if lang == "en" else ""
    out: list[str] = []
    while len(out) < n:
        words = sampler.draw_distinct(rng.randint(2, 5))
        if any(word not in stop for word in words):
            out.append(joiner.join(words))
    return out


def write_corpus(path: Path, n_docs: int, lang: str, seed: int = 0) -> Path:
    """Write the corpus as JSONL, atomically (a partial file never has the final name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in generate(n_docs, lang, seed):
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def write_shards(directory: Path, n_docs: int, lang: str, seed: int = 0,
                 shard_docs: int = 10_000) -> list[Path]:
    """Write the corpus as ``corpus-0000.jsonl``, ``corpus-0001.jsonl``, ... of ``shard_docs``
    records each (glassrag caps a single input file at 20 MB by default; 10k English
    documents are ~6.3 MB). The concatenation equals :func:`write_corpus`'s single file.
    """
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    records = generate(n_docs, lang, seed)
    for shard in range((n_docs + shard_docs - 1) // shard_docs):
        path = directory / f"corpus-{shard:04d}.jsonl"
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        with tmp.open("w", encoding="utf-8") as handle:
            for record in itertools.islice(records, shard_docs):
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        tmp.replace(path)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000, help="number of documents")
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--queries", type=int, default=0, help="also write N queries")
    parser.add_argument("--shard-docs", type=int, default=0,
                        help="write corpus-NNNN.jsonl files of N documents instead of one file")
    args = parser.parse_args(argv)

    if args.shard_docs:
        paths = write_shards(args.out, args.docs, args.lang, args.seed, args.shard_docs)
        print(f"wrote {args.docs} documents to {len(paths)} files in {args.out}",
              file=sys.stderr)
    else:
        corpus = write_corpus(args.out / "corpus.jsonl", args.docs, args.lang, args.seed)
        print(f"wrote {args.docs} documents to {corpus}", file=sys.stderr)
    if args.queries:
        qpath = args.out / "queries.jsonl"
        with qpath.open("w", encoding="utf-8") as handle:
            for i, text in enumerate(queries(args.queries, args.lang, args.seed + 1)):
                handle.write(json.dumps({"query_id": f"q{i}", "text": text}, ensure_ascii=False))
                handle.write("\n")
        print(f"wrote {args.queries} queries to {qpath}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
