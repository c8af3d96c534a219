"""The sentence after an answer's first quote, quoted while the answer stays short.

Documentation often answers in the sentence after the one that restates the question: the
fix after the error it describes ("Cause: … Solution: …"), the command after "turn it off
with this setting.", the "No." after a FAQ's question, the option that removes the
configuration files after the one that keeps them. That sentence seldom shares the question's
words, so coverage never chooses it. It is quoted as context, right after the first quote,
when the whole answer stays within ``[answer] context_chars``: short answers gain the
sentence that completes them and long ones stay as they were (benchmarks/RESULTS.md, "Docs
QA: the sentence after the answer").
"""

from __future__ import annotations

from collections.abc import Sequence

from glassrag.answer.passages import Unit
from glassrag.answer.structure import table_row_starts


def answer_chars(quoted: Sequence[Unit]) -> int:
    """The length of an answer quoting ``quoted``: its quotes and one separator each."""
    return sum(len(unit.quote) + 1 for unit in quoted)


def sentence_after(first: Unit, pool: Sequence[Unit], quoted: Sequence[Unit],
                   budget: int) -> Unit | None:
    """The one-sentence unit of ``pool`` that comes right after ``first`` in its chunk (past
    the block ``first`` introduces), if that chunk is a section of a document (it has a
    heading path), the unit overlaps no quote of ``quoted`` and the answer with it stays
    within ``budget`` characters; else None. A record without sections (a JSONL of facts,
    seed 000's two-sentence chunks) is a list of statements, not an argument that goes on."""
    if not first.chunk.heading:
        return None
    later = [u for u in pool if u.chunk.chunk_id == first.chunk.chunk_id and u.size == 1
             and u.start >= first.quote_end]
    after = min(later, key=lambda u: u.start, default=None)
    if after is None or any(_overlaps(after, other) for other in quoted):
        return None
    if _table_row(first) or _table_row(after):
        return None  # the next row of a table is another entry's
    return after if answer_chars(quoted) + len(after.quote) <= budget else None


def _table_row(unit: Unit) -> bool:
    text = unit.chunk.text
    return text.rfind("\n", 0, unit.start) + 1 in table_row_starts(text)


def _overlaps(unit: Unit, other: Unit) -> bool:
    return (unit.chunk.chunk_id == other.chunk.chunk_id
            and unit.start < other.quote_end and other.start < unit.quote_end)
