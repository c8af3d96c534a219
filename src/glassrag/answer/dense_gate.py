"""The dense refusal gate: in dense and hybrid modes, refuse a quote when neither the dense
evidence stands out nor the quote itself is close in meaning to the question.

Two signals, both read from evidence the principal may read:

* the dense margin (``[dense] min_margin``): the best permitted dense cosine over the
  median of the question's permitted dense candidates
  (:attr:`~glassrag.retrieval.search.Retrieval.dense_margin`). A passage that answers
  usually stands out from the rest; a near miss (the documented component, an undocumented
  property) usually does not;
* the quote cosine (``[dense] min_quote_cosine``): the cosine between the question (as a
  query) and the quoted text (as a passage), with the knowledge base's embedder. It catches
  answers the margin misses: one sentence of a long page answers, and every candidate of the
  page is about as close as any other.

The draft is refused only when both are weak, never when the question asks for a number and
the first quote states one (:func:`stated_number`), and never when it quotes the section titled
with an identifier the question names (:func:`titled_by_identifier`): in a reference, the
page of ``CMAKE_BUILD_TYPE`` is about ``CMAKE_BUILD_TYPE`` however alike its hundreds of
sibling pages read to the embedder. None of these can be computed from a chunk the
principal may not read, so a hidden document never turns ``no_evidence`` into ``answered``
or back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from glassrag.answer.extractive import ASIDES
from glassrag.answer.values import states_number, value_kind
from glassrag.records import NO_EVIDENCE, Draft, Hit
from glassrag.text.analysis import identifiers

if TYPE_CHECKING:
    import numpy as np

    from glassrag.retrieval.search import Retrieval

# At or above this no quote rescues evidence that does not stand out (the cosine of a text
# with itself); the quote is then not embedded at all.
NO_RESCUE = 1.0
# A heading's call signature and code marks, which a question leaves out: the section
# "`fs.createReadStream(path[, options])`" is titled with ``fs.createReadStream``.
_SIGNATURE = re.compile(r"\(.*\)\s*$")
_HEADING_SEPARATOR = " \u203a "


def titled_by_identifier(question: str, draft: Draft, hits: Sequence[Hit]) -> str | None:
    """The identifier of ``question`` that is the title of a section the draft quotes (the
    last step of a cited chunk's heading path), or None."""
    names = {name.casefold() for name in identifiers(question)}
    if not names:
        return None
    cited = {c.chunk_id for c in draft.citations}
    for hit in hits:
        heading = hit.chunk.heading
        if hit.chunk.chunk_id not in cited or not heading:
            continue
        title = heading.rsplit(_HEADING_SEPARATOR, 1)[-1].strip().strip("`").strip()
        title = _SIGNATURE.sub("", title).strip("`").strip().casefold()
        if title in names:
            return title
    return None


def stated_number(question: str, draft: Draft) -> bool:
    """Whether ``question`` asks for a number (how many, how long, which version:
    :func:`~glassrag.answer.values.value_kind`) and the draft's first quote states one the
    question does not name. The answer is then a value ("Default: `60`", "3.15"), whose
    closeness in meaning an embedder does not measure: a value line is as close to every
    question about its setting, and a reference page's sections stand out from none."""
    return (bool(draft.citations) and value_kind(question) == "number"
            and states_number(draft.citations[0].quote, question.casefold()))


def passes_at_any_threshold(question: str, draft: Draft, hits: Sequence[Hit]) -> str | None:
    """Why the gate lets ``draft`` pass whatever its thresholds, or None: the question asks
    for a number the first quote states (:func:`stated_number`), or the draft quotes the
    section titled with an identifier the question names (:func:`titled_by_identifier`)."""
    if stated_number(question, draft):
        return "passed: the question asks for a number and the first quote states one"
    titled = titled_by_identifier(question, draft, hits)
    if titled is not None:
        return f"passed: the quote is from the section titled {titled!r}, which the question names"
    return None


def quote_cosine(question: str, draft: Draft, embedder: Any,
                 question_vector: np.ndarray | None = None) -> float | None:
    """The highest cosine between ``question`` (its vector, if given, from the same embedder)
    and one of the draft's quotes, or None for a draft without quotes. The semantic
    fallback's draft already measured its one quote (``best_similarity``), so it is not
    embedded again. The quotes the draft's notes list as asides (the short ones,
    ``max_short_quotes``, and the sentence after the first quote, ``context_chars``) are not
    measured: a line of a few words or a sentence quoted for context is no sign of what the
    answer is about, and one more quote would be one more chance to pass."""
    measured = draft.notes.get("best_similarity")
    if draft.notes.get("method") == "semantic" and isinstance(measured, (int, float)):
        return float(measured)
    asides = draft.notes.get(ASIDES)
    quotes = [c.quote for c in draft.citations]
    if isinstance(asides, list) and len(asides) < len(quotes):
        quotes = [q for i, q in enumerate(quotes) if i not in asides]
    if not quotes:
        return None
    # Asymmetric models (E5) embed a query and a passage differently, as retrieval does.
    vector = (question_vector if question_vector is not None
              else embedder.embed_queries([question])[0])
    return float(max(embedder.embed(quotes) @ vector))


def refusal(question: str, found: Retrieval, draft: Draft, embedder: Any | None,
            min_quote_cosine: float, question_vector: np.ndarray | None = None,
            ) -> Draft | None:
    """None when the answered ``draft`` may be shown, else the ``no_evidence`` draft whose
    notes say why (the trace records them): the dense evidence does not stand out
    (``found.dense_stands_out``) and no quote reaches ``min_quote_cosine``.
    ``question_vector`` is the question's vector if the caller has it."""
    if found.dense_stands_out:
        return None
    passed = passes_at_any_threshold(question, draft, found.hits)
    if passed is not None:
        draft.notes["dense_gate"] = passed
        return None
    cosine = (quote_cosine(question, draft, embedder, question_vector)
              if embedder is not None and min_quote_cosine < NO_RESCUE else None)
    if cosine is not None and cosine >= min_quote_cosine:
        return None
    margin, needed = found.dense_margin, found.dense_min_margin
    reason = (f"the best dense hit stands {margin:.3f} above the median of the question's "
              f"dense candidates, under min_margin {needed:.3f}")
    reason += (f", and the quote's cosine to the question is {cosine:.3f}, under "
               f"min_quote_cosine {min_quote_cosine:.3f}" if cosine is not None
               else ", and no quote may rescue it (min_quote_cosine 1.0)")
    notes: dict[str, object] = {
        "reason": reason, "dense_margin": round(float(margin or 0.0), 4),
        "min_margin": needed, "quote_cosine": None if cosine is None else round(cosine, 4),
        "min_quote_cosine": min_quote_cosine,
        "refused_chunks": [c.chunk_id for c in draft.citations],
    }
    return Draft(status=NO_EVIDENCE, text="", citations=(), answerer=draft.answerer,
                 notes=notes)
