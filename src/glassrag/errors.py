"""One error hierarchy for the whole engine.

Each error carries an HTTP status and a short machine code, so the CLI and the HTTP layer
can turn any of them into the same JSON shape: ``{"error": {"code", "message", "status"}}``.
Messages name the file, line or field at fault and never mention blocked documents.

Some messages name internals a caller has no business seeing, such as the model endpoint's
URL, the model's name or the name of the variable holding its key. Such an error also
carries a ``public_message`` saying what failed in general terms: :meth:`~GlassragError.to_dict`
gives that, without details, unless asked for the detail (the CLI, run by whoever holds the
knowledge base, asks; the HTTP API and MCP do not, and the server logs the detail).
"""

from __future__ import annotations

from typing import Any


class GlassragError(Exception):
    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, public_message: str | None = None,
                 **details: Any) -> None:
        super().__init__(message)
        self.message = message  # the full detail
        self.public_message = public_message  # None: ``message`` is safe for any caller
        self.details = details

    def to_dict(self, *, detail: bool = False) -> dict[str, Any]:
        """The JSON error body. Without ``detail``, an error that has a public message
        gives only that (no details): what any caller of a server may see."""
        if self.public_message is not None and not detail:
            return {"error": {"code": self.code, "message": self.public_message,
                              "status": self.status}}
        body: dict[str, Any] = {"code": self.code, "message": self.message, "status": self.status}
        if self.details:
            body["details"] = self.details
        return {"error": body}


class InvalidInput(GlassragError):
    """The caller sent something unusable: empty query, bad option value, bad field."""

    status = 400
    code = "invalid_input"


class EmptyQuery(InvalidInput):
    code = "empty_query"


class InputFileError(InvalidInput):
    """A single input file (or a line of it) cannot be ingested. The batch goes on."""

    code = "input_file_error"


class ChunkingError(InputFileError):
    code = "chunking_error"


class NotFound(GlassragError):
    status = 404
    code = "not_found"


class KnowledgeBaseNotFound(NotFound):
    code = "kb_not_found"


class SchemaVersionError(GlassragError):
    """The knowledge base was written by a newer glassrag than this one."""

    status = 500
    code = "schema_version"


class StoreUnavailable(GlassragError):
    """The database holding the knowledge base (PostgreSQL) cannot be reached."""

    status = 503
    code = "store_unavailable"


class MissingExtra(GlassragError):
    """An optional dependency is missing; the message says which extra installs it."""

    status = 501
    code = "missing_extra"

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(
            f"{package} is not installed; install it with: pip install 'glassrag[{extra}]'",
            package=package,
            extra=extra,
        )


class EmbeddingError(GlassragError):
    """The embedder failed or returned unusable vectors. Nothing was stored."""

    status = 502
    code = "embedding_error"


class EmbedderMismatch(GlassragError):
    """Vectors from two different models (or dimensions) would be compared."""

    status = 409
    code = "embedder_mismatch"
