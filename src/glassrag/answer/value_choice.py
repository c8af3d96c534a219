"""Which unit to quote beside the answering one when the question asks for a value it lacks.

A question asking what the default is, how many, or which option is often answered in two
places: the sentence that matches its words, and the line that holds the value (an option
reference's "Default: `500`", the heading naming the option, the setting a guide mentions by
name and its reference section states). :func:`value_for` finds that second unit among the
scored candidates; the extractive and semantic answerers both quote it.
"""

from __future__ import annotations

from glassrag.answer.passages import title_unit
from glassrag.answer.scoring import Scored, new_literal
from glassrag.answer.values import (
    asks_default,
    asks_version,
    of_kind,
    seeks_literal,
    states_default,
    value_kind,
)

__all__ = ["section_name", "value_for"]

def value_for(question: str, first: Scored, scored: list[Scored]) -> Scored | None:
    """The unit to quote beside ``first`` because it holds the value the question asks for
    and ``first`` lacks: the heading naming it (:func:`_titled_name`), the default stated by
    the section of the setting ``first`` names (:func:`_value_under_named`) or a unit of
    ``first``'s own section (:func:`_value_in_section`); None when ``first`` has it."""
    if not seeks_literal(question):
        return None
    asked = question.casefold()
    kind = value_kind(question)
    # A question about the default is not answered by a sentence that gives some other value
    # (an option reference's description beside its "Default: `4096`" line).
    default = asks_default(question) and not states_default(first.unit.text)
    # The directive's name a unit is read with is quoted as its title, not taken as stated.
    if default or not new_literal(first.unit, asked, kind, titled=False):
        # A number in a title is rarely the one asked for ("Step 3"), but a version is: a
        # changelog's entry sits under "Version 5.2" or "v4.1.3 (2021.01.08)". (A question
        # asking which version asks for a number.)
        version = asks_version(question)
        titled = (None if default or (kind == "number" and not version)
                  else _titled_name(first, asked, scored, "number" if version else "name"))
        return (titled or _value_under_named(first, scored, asked, kind, default)
                or _value_in_section(first, scored, asked, kind, default))
    return None


def _titled_name(first: Scored, asked: str, scored: list[Scored], kind: str) -> Scored | None:
    """The heading line above ``first`` when it is the only name in sight: a question asking
    which command, option or call does something, answered by the description under a
    section titled with that name (:func:`~glassrag.answer.passages.title_unit`). When the
    section's own title names nothing ("Normal Executables"), the page's title line may: a
    reference page names what it documents once, at its top, which is then in the page's
    opening chunk among the evidence rather than in the chunk quoted. ``kind`` is "name", or
    "number" for a question asking which version (a changelog's "v4.1.3" title)."""
    title = title_unit(first.unit)
    if title is not None and new_literal(title, asked, kind):
        return Scored(title, first.coverage, first.preference, title.terms, 0.0, title=True)
    page = first.unit.chunk
    for candidate in scored:
        chunk = candidate.unit.chunk
        if chunk.doc_id != page.doc_id or chunk.chunk_id == page.chunk_id:
            continue
        title = title_unit(candidate.unit)
        if (title is not None and title.quote.strip().casefold() == page.title.casefold()
                and new_literal(title, asked, kind)):
            return Scored(title, first.coverage, first.preference, title.terms, 0.0,
                           title=True)
    return None


def _value_in_section(first: Scored, scored: list[Scored], asked: str,
                      kind: str = "any", default: bool = False) -> Scored | None:
    """For a question asking for a value whose best unit states none of the ``kind`` asked
    for (:func:`~glassrag.answer.values.value_kind`): the preferred unit of the same chunk
    (section) that holds one, e.g. the "Default: 500" line of an option whose description
    answered the question's words, or the sentence naming the setting after the one that
    describes the problem in the question's words (and its numbers). With ``default`` (the
    question asks for the default, the best unit states none) the unit must state one
    (:func:`~glassrag.answer.values.states_default`)."""
    # The first quote runs on over the block its ":" introduces, which is quoted already.
    first_end = first.unit.quote_end
    for candidate in scored:
        unit = candidate.unit
        # A line stating the default needs none of the question's words: "- **Default:** `x`"
        # under the option's heading answers "what if I set nothing" in its own words, and
        # "how large" of the option the sentence describes.
        if (unit.chunk.chunk_id == first.unit.chunk.chunk_id and new_literal(unit, asked, kind)
                and (candidate.own > 0.0 or default
                     or (kind == "number" and states_default(unit.text)))
                and (not default or states_default(unit.text))
                and (unit.end <= first.unit.start or unit.start >= first_end)):
            return candidate
    return None


def _value_under_named(first: Scored, scored: list[Scored], asked: str, kind: str,
                       default: bool) -> Scored | None:
    """For a question asking for a value whose best unit names a setting without giving the
    value (a guide's "when the number of log files exceeds `logs-max`"): a unit of the
    section titled with that name among the evidence, or of the object directive documenting
    it (``.. py:data:: LOGS_MAX``), its stated default first (the reference's "Default: 10"
    under `logs-max`). None when no section among the evidence is titled with a name the
    unit holds and the question does not."""
    # Literals are casefolded already; a number names no setting.
    names = {n for n in of_kind(first.unit.literals, "name") if n not in asked}
    if not names:
        return None
    page = first.unit.chunk.chunk_id
    # A stated default is the value a setting's reference section gives first.
    for candidate in sorted(scored, key=lambda c: not states_default(c.unit.text)):
        unit = candidate.unit
        if (unit.chunk.chunk_id != page
                and (section_name(unit.chunk.heading) in names
                     or unit.title.strip("`").casefold() in names)
                and new_literal(unit, asked, kind, titled=False)
                and (not default or states_default(unit.text))):
            return candidate
    return None


def section_name(heading: str | None) -> str:
    """The last title of a heading path, as a name: without its code marks, casefolded
    (``Config Settings › `logs-max``` is ``logs-max``)."""
    last = (heading or "").rsplit("\u203a", 1)[-1]
    return last.strip().strip("`").strip().casefold()
