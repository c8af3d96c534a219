"""What reading one file produces, and what a text format's reader is handed.

Readers never raise for bad content: each problem becomes a :class:`FailedInput` in
:attr:`ReadResult.errors`, naming the file (and ``:LINE`` for a JSONL line or a ``[doc:…]``
section), and whatever is sound in the file is still returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from glassrag.parsers.base import Limits
from glassrag.records import FailedInput, SourceDocument

__all__ = ["FileContext", "ReadResult"]


@dataclass
class ReadResult:
    """The documents read from one file and the problems found in it."""

    documents: list[SourceDocument] = field(default_factory=list)
    errors: list[FailedInput] = field(default_factory=list)
    # Hidden pieces the parser left out (ParseOptions.keep_hidden keeps them).
    hidden_dropped: int = 0


@dataclass
class FileContext:
    """The file being read: how to name it in a failure and the defaults of its documents."""

    display: str  # the path as the caller gave it, for error messages
    relpath: str  # posix path relative to the ingest root: default doc_id and source
    abspath: str
    encoding: str | None = "utf-8"
    limits: Limits = field(default_factory=Limits)
    keep_hidden: bool = False  # keep what a reader never sees (comments), as ParseOptions says

    def fail(self, message: str, line: int | None = None) -> FailedInput:
        """A failure of this file, or of one line of it."""
        return FailedInput(self.display if line is None else f"{self.display}:{line}", message)

    def doc(self, text: str, **fields: Any) -> SourceDocument:
        """A document of this file; ``doc_id`` and ``source`` default to its relative path."""
        fields = {"doc_id": self.relpath, "source": self.relpath, **fields}
        return SourceDocument(text=text, path=self.abspath, encoding=self.encoding, **fields)
