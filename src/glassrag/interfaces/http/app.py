"""The HTTP API and the web page: a thin FastAPI layer over :class:`KnowledgeBase`.

The principal of every request comes from its bearer token (see
:mod:`glassrag.store.bearer_tokens`);
no body or query field is read for roles. Every error, including validation errors and
unknown routes, is answered in the one shape ``{"error": {"code", "message", "status"}}``.
Endpoints are plain ``def`` so FastAPI runs them in its threadpool; the knowledge base's
own lock serialises SQLite and Tantivy use.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, File, Form, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from glassrag.errors import GlassragError, InvalidInput, NotFound
from glassrag.kb import KnowledgeBase
from glassrag.records import Chunk, Document, Principal
from glassrag.store.bearer_tokens import Forbidden, Unauthorized, principal_for

WEB_DIR = Path(__file__).parent / "web"
ANONYMOUS = "anonymous"
Mode = Literal["bm25", "dense", "hybrid", "overlap"]


class PayloadTooLarge(GlassragError):
    status = 413
    code = "payload_too_large"


class _Body(BaseModel):
    # Unknown fields are errors: a client sending ``roles`` or ``principal`` learns at once
    # that the server does not take them, instead of believing they had an effect.
    model_config = ConfigDict(extra="forbid")


class AskBody(_Body):
    question: str = Field(description="The question, in any language")
    top_k: int | None = Field(default=None, ge=1, le=1000)
    mode: Mode | None = None
    rewrite: bool | None = Field(
        default=None,
        description="Ask the knowledge base's model for a search query first and search with "
                    "both the question and the query (only when [llm] names a model). "
                    "null or absent: follow the [llm] rewrite_query setting.",
    )


class SearchBody(_Body):
    query: str
    top_k: int | None = Field(default=None, ge=1, le=1000)
    mode: Mode | None = None


def error_body(code: str, message: str, status: int) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def _error_response(exc: GlassragError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)


def document_dict(d: Document) -> dict[str, Any]:
    return {
        "doc_id": d.doc_id, "title": d.title, "source": d.source, "roles": list(d.roles),
        "version": d.version, "content_hash": d.content_hash, "parser": d.parser,
        "chunker": d.chunker, "chunk_count": d.chunk_count, "updated_at": d.updated_at,
    }


def chunk_dict(c: Chunk) -> dict[str, Any]:
    out: dict[str, Any] = {
        "chunk_id": c.chunk_id, "ordinal": c.ordinal, "line_start": c.line_start,
        "line_end": c.line_end, "heading": c.heading, "text": c.text,
    }
    if c.page is not None:
        out["page"] = c.page
    if c.slide is not None:
        out["slide"] = c.slide
    return out


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer`` header; "" for a malformed header."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def current_principal(request: Request) -> Principal:
    """The request's principal, from its bearer token and nothing else."""
    kb: KnowledgeBase = request.app.state.kb
    token = bearer_token(request)
    if token is None:
        if request.app.state.allow_anonymous:
            return Principal(ANONYMOUS)
        raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")
    # A token that was sent but is wrong is refused even when anonymous access is on:
    # silently downgrading would hide a misconfigured client.
    with kb.lock:
        found = principal_for(kb.store, token)
    if found is None:
        raise Unauthorized("invalid or revoked token")
    return found


def admin_principal(who: Annotated[Principal, Depends(current_principal)]) -> Principal:
    if not who.admin:
        raise Forbidden("this operation needs an admin token")
    return who


Who = Annotated[Principal, Depends(current_principal)]
Admin = Annotated[Principal, Depends(admin_principal)]


def create_app(kb_path: str | Path, *, allow_anonymous: bool | None = None) -> Any:
    """The FastAPI app serving the knowledge base at ``kb_path`` (one shared instance).

    ``allow_anonymous`` overrides the ``[server] allow_anonymous`` setting.
    """
    kb = KnowledgeBase.open(kb_path, create=False)
    anonymous = (kb.settings.server.allow_anonymous if allow_anonymous is None
                 else allow_anonymous)
    max_upload = kb.settings.server.max_upload_bytes

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        kb.close()

    app = FastAPI(
        title="glassrag", version="0.1.0", lifespan=lifespan,
        description="Permission-aware search and answers with verified citations. "
                    "Authenticate with `Authorization: Bearer <token>`.",
    )
    app.state.kb = kb
    app.state.allow_anonymous = anonymous

    @app.exception_handler(GlassragError)
    def _glassrag_error(_: Request, exc: GlassragError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        # Field locations and pydantic's message only: never echo the submitted values.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg', 'invalid')}"
            for err in exc.errors()
        )
        return JSONResponse(error_body("invalid_input", problems or "invalid request", 422),
                            status_code=422)

    @app.exception_handler(StarletteHTTPException)
    def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail), exc.status_code),
                            status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    def _internal_error(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body("internal_error", "internal server error", 500),
                            status_code=500)

    @app.get("/healthz", tags=["meta"])
    def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    @app.post("/ask", tags=["answers"])
    def ask(body: AskBody, who: Who) -> dict[str, Any]:
        """Answer a question from the documents the caller may read, with citations."""
        return kb.ask(body.question, principal=who, top_k=body.top_k, mode=body.mode,
                      rewrite=body.rewrite).to_dict()

    @app.post("/search", tags=["search"])
    def search(body: SearchBody, who: Who) -> dict[str, Any]:
        """Permitted hits with scores and matched terms, and a count of blocked matches."""
        return kb.search(body.query, principal=who, top_k=body.top_k, mode=body.mode).to_dict()

    @app.get("/documents", tags=["documents"])
    def documents(who: Who) -> dict[str, Any]:
        """The documents the caller may read."""
        return {"documents": [document_dict(d) for d in kb.documents(who)]}

    @app.get("/documents/{doc_id}", tags=["documents"])
    def document(doc_id: str, who: Who) -> dict[str, Any]:
        """A document and its chunks; 404 when it is missing or not readable by the caller."""
        doc = kb.document(doc_id, who)
        chunks = kb.chunks(doc_id, who)
        return {**document_dict(doc), "chunks": [chunk_dict(c) for c in chunks]}

    @app.get("/documents/{doc_id}/lines", tags=["documents"])
    def lines(
        doc_id: str, who: Who,
        line_start: Annotated[int, Query(ge=1)] = 1,
        line_end: Annotated[int | None, Query(ge=1)] = None,
        content_hash: str | None = None,
    ) -> dict[str, Any]:
        """Lines ``line_start``..``line_end`` (file line numbers, as citations give them) of
        the document's current version, or of the version ``content_hash`` if it had one."""
        doc = kb.document(doc_id, who)
        wanted = content_hash or doc.content_hash
        if wanted != doc.content_hash:
            with kb.lock:
                known = {h["content_hash"] for h in kb.store.history(doc_id)}
            if wanted not in known:
                raise NotFound(f"document {doc_id!r} has no version {wanted!r}",
                               doc_id=doc_id)
        text = kb.document_text(wanted)
        if text is None:
            raise NotFound(f"document {doc_id!r} has no version {wanted!r}", doc_id=doc_id)
        all_lines = text.split("\n")
        first = doc.line_offset + 1
        last = doc.line_offset + len(all_lines)
        end = min(line_end if line_end is not None else last, last)
        if end < line_start:
            raise InvalidInput("line_end is before line_start", field="line_end")
        return {
            "doc_id": doc.doc_id, "title": doc.title, "source": doc.source,
            "content_hash": wanted, "current": wanted == doc.content_hash,
            "line_start": max(line_start, first), "line_end": end,
            "lines": [{"line": n, "text": all_lines[n - first]}
                      for n in range(max(line_start, first), end + 1)],
        }

    @app.post("/documents", tags=["documents"], status_code=201)
    def upload(
        _: Admin,
        file: Annotated[UploadFile, File(description="The document; its type is sniffed")],
        roles: Annotated[str, Form(description="Comma-separated roles for the document")] = "",
    ) -> dict[str, Any]:
        """Ingest one uploaded file (admin only). The name decides the doc_id and reader."""
        name = Path(file.filename or "").name or "upload.txt"
        with tempfile.TemporaryDirectory(prefix="glassrag-upload-") as tmp:
            target = Path(tmp) / name
            size = 0
            with target.open("wb") as out:
                while block := file.file.read(1 << 20):
                    size += len(block)
                    if size > max_upload:
                        raise PayloadTooLarge(
                            f"upload is larger than max_upload_bytes ({max_upload})",
                            max_upload_bytes=max_upload)
                    out.write(block)
            report = kb.ingest([tmp], roles=[r.strip() for r in roles.split(",") if r.strip()])
        result = report.to_dict()
        # Temp paths mean nothing to the client; the file name does.
        result["failed"] = [{"path": name, "error": f["error"].replace(tmp, "")}
                            for f in result["failed"]]
        hidden = result["hidden_dropped"]
        hidden["files"] = {name: hidden["total"]} if hidden["total"] else {}
        if report.failed and not (report.added or report.updated or report.unchanged):
            raise InvalidInput(f"{name}: " + "; ".join(f["error"] for f in result["failed"]),
                               field="file")
        return result

    @app.delete("/documents/{doc_id}", tags=["documents"])
    def delete(doc_id: str, _: Admin) -> dict[str, Any]:
        """Remove a document and its chunks (admin only)."""
        kb.delete(doc_id)
        return {"deleted": doc_id}

    @app.get("/traces/{trace_id}", tags=["answers"])
    def trace(trace_id: str, who: Who) -> dict[str, Any]:
        """An ask's trace: the caller's own, or any for an admin; others get 404."""
        return kb.trace(trace_id, who)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")
    return app
