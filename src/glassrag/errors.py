"""One error hierarchy for the whole engine, and every other exception class it raises.

Each error carries an HTTP status and a short machine code, so the CLI, the HTTP API and
MCP turn any of them into the same JSON shape: ``{"error": {"code", "message", "status",
"details"?}}``. Messages name the file, line or field at fault (``details.field`` is the
caller's own name for it) and never mention blocked documents.

Some messages name internals a caller has no business seeing, such as the model endpoint's
URL, the model's name or the name of the variable holding its key. Such an error also
carries a ``public_message`` saying what failed in general terms: :meth:`~GlassragError.to_dict`
gives that, without details, unless asked for the detail (the CLI, run by whoever holds the
knowledge base, asks; the HTTP API and MCP do not, and the server logs the detail).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
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


class BadHost(InvalidInput):
    """The Host header names a host the server does not answer for."""

    code = "invalid_host"


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


class Unauthorized(GlassragError):
    """No token, or a wrong or revoked one."""

    status = 401
    code = "unauthorized"


class Forbidden(GlassragError):
    """A valid token whose principal may not do this (e.g. ingest without admin)."""

    status = 403
    code = "forbidden"


class PayloadTooLarge(GlassragError):
    status = 413
    code = "payload_too_large"


class ServerBusy(GlassragError):
    """Every model slot and waiting place of a server is taken."""

    status = 503
    code = "busy"


class QdrantUnavailable(GlassragError):
    """Qdrant refused or failed a request (unreachable, wrong key, an old server)."""

    status = 503
    code = "index_unavailable"


class LLMError(GlassragError):
    status = 502
    code = "llm_error"


class LLMConfigError(GlassragError):
    status = 400
    code = "llm_config"


class ReplyError(ValueError):
    """A reply that cannot be turned into a draft; the message says why, for the trace."""


class ReplyTooLarge(Exception):  # noqa: N818 - it is a condition of the reply, not a bug
    """The reply grew past ``limit`` bytes; ``head`` is its first bytes, kept for the trace."""

    def __init__(self, limit: int, head: bytes, status: int) -> None:
        super().__init__(f"the reply is larger than {limit} bytes")
        self.limit, self.head, self.status = limit, head, status

    def truncated(self) -> str:
        """The kept head as text, with a marker saying it was cut and why."""
        text = self.head.decode("utf-8", "replace")
        return (f"{text}\n[glassrag: reply truncated: it exceeded max_reply_bytes = "
                f"{self.limit}; only the first {len(self.head)} bytes are kept]")


# Locations that say where a field was sent (HTTP body, query string...), not its name.
_WHERE = frozenset({"body", "query", "path", "header", "cookie", "form"})


def _printable(part: object) -> str:
    """A field name as text that can be sent: a lone surrogate in a submitted key is
    escaped, since it cannot be encoded as UTF-8."""
    return str(part).encode("utf-8", "backslashreplace").decode("utf-8")


def invalid_fields(problems: Iterable[Mapping[str, Any]]) -> InvalidInput:
    """One :class:`InvalidInput` for schema validation problems (pydantic's ``errors()``:
    dicts with ``loc`` and ``msg``), naming the caller's fields: ``question: Field
    required``, ``details.field`` the first one. Submitted values are never echoed."""
    fields: list[str] = []
    lines: list[str] = []
    for problem in problems:
        loc = [_printable(p) for p in problem.get("loc", ())]
        if len(loc) > 1 and loc[0] in _WHERE:
            loc = loc[1:]
        field = ".".join(loc) or "body"
        fields.append(field)
        lines.append(f"{field}: {problem.get('msg', 'invalid')}")
    if not fields:
        return InvalidInput("invalid request", field="body")
    return InvalidInput("; ".join(lines), field=fields[0], fields=list(dict.fromkeys(fields)))


@contextlib.contextmanager
def needs_extra(extra: str, package: str | None = None) -> Iterator[None]:
    """Imports inside this block come from an optional extra: a missing module becomes
    :class:`MissingExtra` naming ``package`` (the name pip installs, when it differs from the
    module's) or the missing module, and the extra that installs it.

    >>> with needs_extra("parsers", "python-docx"):   # doctest: +SKIP
    ...     import docx
    """
    try:
        yield
    except ImportError as exc:
        raise MissingExtra(package or exc.name or extra, extra) from exc
