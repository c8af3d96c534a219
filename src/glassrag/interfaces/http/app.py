"""The HTTP API and the web page: a thin FastAPI layer over :class:`KnowledgeBase`.

The principal of every request comes from its bearer token (see
:mod:`glassrag.store.bearer_tokens`),
checked with the Host header and the body size by :mod:`glassrag.interfaces.http.guard` before the
body is read; no body or query field is read for roles. Every error, including validation
errors (400, naming the field) and unknown routes, is answered in the one shape
``{"error": {"code", "message", "status", "details"?}}``. Most endpoints are plain ``def``
so FastAPI runs them in its threadpool (the
knowledge base's own lock serialises SQLite and Tantivy use); ``/ask`` waits for a slot of
:class:`~glassrag.interfaces.model_gate.ModelGate` instead, and ``/healthz`` runs on the event loop,
so neither queues behind slow model calls.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Form, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from glassrag import __version__
from glassrag.errors import (
    Forbidden,
    GlassragError,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    invalid_fields,
)
from glassrag.follower import ChangeFollower
from glassrag.interfaces.http import audit_routes, metrics, openai_chat
from glassrag.interfaces.http.guard import PRINCIPAL_KEY, Guard, guard_policy
from glassrag.interfaces.model_gate import ModelGate
from glassrag.kb import KnowledgeBase
from glassrag.records import Chunk, Document, NamedMode, Principal
from glassrag.settings import MAX_TOP_K
from glassrag.store.bearer_tokens import TokenReader

log = logging.getLogger("glassrag.interfaces.http.app")
#: Where uploaded files are kept, inside the knowledge base directory.
UPLOADS_DIR = "uploads"

WEB_DIR = Path(__file__).parent / "web"
# Served without a token; every other path (unknown ones included) needs one.
PUBLIC_PATHS = frozenset({"/", "/healthz", "/capabilities", "/docs", "/openapi.json",
                          "/favicon.ico"})
# The modes of POST /ask and /search, in the order the web page offers them.
HTTP_MODES = ("bm25", "hybrid", "dense", "overlap")
ERROR_SCHEMA = {"type": "object", "required": ["error"], "properties": {"error": {
    "type": "object", "required": ["code", "message", "status"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                   "status": {"type": "integer"}, "details": {"type": "object"}}}}}
PUBLIC_PREFIXES = ("/static/",)


class _Body(BaseModel):
    # Unknown fields are errors: a client sending ``roles`` or ``principal`` learns at once
    # that the server does not take them, instead of believing they had an effect.
    model_config = ConfigDict(extra="forbid")


class AskBody(_Body):
    question: str = Field(description="The question, in any language")
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    mode: NamedMode | None = None
    rewrite: bool | None = Field(
        default=None,
        description="Ask the knowledge base's model for a search query first and search with "
                    "both the question and the query (only when [llm] names a model). "
                    "null or absent: follow the [llm] rewrite_query setting.",
    )


class SearchBody(_Body):
    query: str
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    mode: NamedMode | None = None


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


def served_modes(kb: KnowledgeBase) -> list[str]:
    """The modes of :data:`HTTP_MODES` this knowledge base can serve: dense and hybrid
    only when it has an embedder (configured, or recorded with its vectors)."""
    with kb.lock:
        dense = kb.dense() is not None
    return [m for m in HTTP_MODES if dense or m not in ("dense", "hybrid")]


def _openapi_400(app: Any) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` saying what the server does: a request that fails validation is a
    400 in the error shape (FastAPI's own spec says 422 with its validation schema)."""
    default = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = default()
            for operations in spec.get("paths", {}).values():
                for operation in operations.values():
                    responses = operation.get("responses", {})
                    if responses.pop("422", None) is not None:
                        responses["400"] = {
                            "description": "Invalid input (details.field names the field)",
                            "content": {"application/json": {
                                "schema": {"$ref": "#/components/schemas/Error"}}}}
            schemas = spec.setdefault("components", {}).setdefault("schemas", {})
            schemas.pop("HTTPValidationError", None)
            schemas.pop("ValidationError", None)
            schemas["Error"] = ERROR_SCHEMA
            app.openapi_schema = spec
        return app.openapi_schema

    return openapi


async def current_principal(request: Request) -> Principal:
    """The request's principal, from its bearer token and nothing else.

    The guard authenticated the request before its body was read and left the principal in
    the request's state; ``async`` so that reading it takes no worker thread.
    """
    found = request.scope.get("state", {}).get(PRINCIPAL_KEY)
    if isinstance(found, Principal):
        return found
    tokens: TokenReader = request.app.state.tokens  # a route the guard treats as public
    return tokens.authenticate(request.headers.get("authorization"),
                               allow_anonymous=request.app.state.allow_anonymous)


async def admin_principal(who: Annotated[Principal, Depends(current_principal)]) -> Principal:
    if not who.admin:
        raise Forbidden("this operation needs an admin token")
    return who


Who = Annotated[Principal, Depends(current_principal)]
Admin = Annotated[Principal, Depends(admin_principal)]


def create_app(kb_path: str | Path, *, allow_anonymous: bool | None = None,
               bind_host: str | None = None) -> Any:
    """The FastAPI app serving the knowledge base at ``kb_path`` (one shared instance).

    ``allow_anonymous`` overrides the ``[server] allow_anonymous`` setting; ``bind_host``
    (the address the server listens on) joins the loopback names as an accepted Host when
    ``[server] allowed_hosts`` is empty.
    """
    kb = KnowledgeBase.open(kb_path, create=False)
    server_settings = kb.settings.server
    anonymous = (server_settings.allow_anonymous if allow_anonymous is None
                 else allow_anonymous)
    max_upload = server_settings.max_upload_bytes
    tokens = TokenReader(kb.store)
    gate = ModelGate(server_settings.max_concurrent_model_calls,
                     server_settings.max_waiting_model_calls)

    # A store shared with other servers: follow its change log in the background.
    follower = ChangeFollower(kb) if kb.store.dsn is not None else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if follower is not None:
            follower.start()
        yield
        if follower is not None:
            follower.stop()
        tokens.close()
        kb.close()

    app = FastAPI(
        title="glassrag", version=__version__, lifespan=lifespan,
        # Swagger UI and ReDoc load unpinned scripts from a CDN, on the origin whose
        # localStorage holds the page's token: /docs is a first-party page instead.
        docs_url=None, redoc_url=None,
        description="Permission-aware search and answers with verified citations. "
                    "Authenticate with `Authorization: Bearer <token>`.",
    )
    app.state.kb = kb
    app.state.tokens = tokens
    app.state.model_gate = gate
    app.state.allow_anonymous = anonymous
    app.add_middleware(Guard, policy=guard_policy(
        server_settings, tokens, allow_anonymous=anonymous, bind_host=bind_host,
        public_paths=PUBLIC_PATHS, public_prefixes=PUBLIC_PREFIXES, upload_path="/documents"))

    @app.exception_handler(GlassragError)
    def _glassrag_error(_: Request, exc: GlassragError) -> JSONResponse:
        if exc.public_message is not None:  # the caller gets the public message only
            log.warning("%s: %s", exc.code, exc.message)
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        # A bad field is a 400 whichever check finds it, the schema's or the engine's.
        return _error_response(invalid_fields(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed",
                413: "payload_too_large"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail), exc.status_code),
                            status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    def _internal_error(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(error_body("internal_error", "internal server error", 500),
                            status_code=500)

    @app.get("/healthz", tags=["meta"])
    @app.head("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/capabilities", tags=["meta"])
    def capabilities() -> dict[str, Any]:
        """What this server can do, for the web page: the retrieval modes it serves (dense
        and hybrid only with an embedder), its default mode and the largest top_k."""
        return {"modes": served_modes(kb), "default_mode": kb.settings.search.mode,
                "max_top_k": MAX_TOP_K, "version": __version__}

    @app.post("/ask", tags=["answers"])
    async def ask(body: AskBody, who: Who) -> dict[str, Any]:
        """Answer a question from the documents the caller may read, with citations."""
        return await gate.run(lambda: kb.ask(body.question, principal=who, top_k=body.top_k,
                                             mode=body.mode, rewrite=body.rewrite).to_dict())

    @app.post("/search", tags=["search"])
    def search(body: SearchBody, who: Who) -> dict[str, Any]:
        """Permitted hits with scores and matched terms, and a count of blocked matches."""
        return kb.search(body.query, principal=who, top_k=body.top_k, mode=body.mode).to_dict()

    @app.get("/documents", tags=["documents"])
    def documents(who: Who) -> dict[str, Any]:
        """The documents the caller may read."""
        return {"documents": [document_dict(d) for d in kb.documents(who)]}

    # doc_ids are paths ("guides/setup"): every route takes the rest of the URL path, and
    # /lines is registered before /documents/{doc_id} so that it is not read as an id.
    @app.get("/documents/{doc_id:path}/lines", tags=["documents"])
    def lines(
        doc_id: str, who: Who,
        line_start: Annotated[int, Query(ge=1)] = 1,
        line_end: Annotated[int | None, Query(ge=1)] = None,
        content_hash: str | None = None,
    ) -> dict[str, Any]:
        """Lines ``line_start``..``line_end`` (file line numbers, as citations give them) of
        the document's current version, or of the version ``content_hash`` if it had one
        and the caller may read it (its own roles and the document's current ones)."""
        doc = kb.document(doc_id, who)
        wanted = content_hash or doc.content_hash
        text = kb.document_text(wanted, doc_id=doc_id, principal=who)
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

    @app.get("/documents/{doc_id:path}", tags=["documents"])
    def document(doc_id: str, who: Who) -> dict[str, Any]:
        """A document and its chunks; 404 when it is missing or not readable by the caller."""
        doc = kb.document(doc_id, who)
        chunks = kb.chunks(doc_id, who)
        return {**document_dict(doc), "chunks": [chunk_dict(c) for c in chunks]}

    @app.post("/documents", tags=["documents"], status_code=201)
    def ingest(
        _: Admin,
        file: Annotated[UploadFile, File(description="The document; its type is sniffed")],
        roles: Annotated[str, Form(description="Comma-separated roles for the document")] = "",
        replace: Annotated[bool, Form(description="Let this upload replace a document of "
                                      "the same doc_id that was ingested from another file")]
        = False,
    ) -> dict[str, Any]:
        """Ingest one file sent as multipart ``file`` (admin only). Its name is the doc_id
        and decides the reader; uploading the same name again updates that document."""
        name = Path(file.filename or "").name or "upload.txt"
        # Uploads are kept in one folder of the knowledge base, so a second upload of a name
        # is the same file changed (an update), while a document ingested from a file
        # elsewhere keeps its doc_id unless ``replace`` says otherwise.
        uploads = kb.path / UPLOADS_DIR
        uploads.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=uploads, prefix=".part-", delete=False) as out:
            part = Path(out.name)
            size = 0
            try:
                while block := file.file.read(1 << 20):
                    size += len(block)
                    if size > max_upload:
                        raise PayloadTooLarge(
                            f"upload is larger than max_upload_bytes ({max_upload})",
                            max_upload_bytes=max_upload)
                    out.write(block)
            except BaseException:
                out.close()
                part.unlink(missing_ok=True)
                raise
        target = uploads / name
        previous = target.read_bytes() if target.exists() else None
        part.replace(target)
        report = kb.ingest([target], roles=[r.strip() for r in roles.split(",") if r.strip()],
                           replace=replace)
        if report.failed and not (report.added or report.updated or report.unchanged):
            # Nothing was stored from this upload: the folder keeps what the store holds.
            if previous is None:
                target.unlink(missing_ok=True)
            else:
                target.write_bytes(previous)
        result = report.to_dict()
        # Server paths mean nothing to the client; the file name does.
        folder = str(uploads) + "/"
        result["failed"] = [{"path": name, "error": f["error"].replace(folder, "")}
                            for f in result["failed"]]
        result["no_rule_matched"] = [name] if result["no_rule_matched"] else []
        hidden = result["hidden_dropped"]
        hidden["files"] = {name: hidden["total"]} if hidden["total"] else {}
        if report.failed and not (report.added or report.updated or report.unchanged):
            raise InvalidInput(f"{name}: " + "; ".join(f["error"] for f in result["failed"]),
                               field="file")
        return result

    @app.delete("/documents/{doc_id:path}", tags=["documents"])
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

    @app.get("/favicon.ico", include_in_schema=False, status_code=204)
    def favicon() -> None:
        """No icon: answered so that browsers asking for one log no failed request."""

    @app.get("/docs", include_in_schema=False)
    def api_docs() -> FileResponse:
        """The routes of /openapi.json, rendered by first-party script only."""
        return FileResponse(WEB_DIR / "docs.html", media_type="text/html")

    for routes in (audit_routes, openai_chat, metrics):
        app.include_router(routes.router(kb, current_principal, admin_principal))
    app.mount("/static", StaticFiles(directory=WEB_DIR), name="static")
    app.openapi = _openapi_400(app)  # type: ignore[method-assign]
    return app
