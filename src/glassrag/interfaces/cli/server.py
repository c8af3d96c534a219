"""The ``glassrag`` commands for serving: tokens, serve (HTTP API and web page), mcp."""

from __future__ import annotations

import typer
from rich.table import Table

from glassrag.errors import InvalidInput
from glassrag.interfaces.cli.app import (
    JSON_OPTION,
    ROLES_ALIAS,
    app,
    handle_errors,
    open_kb,
    out,
    print_json,
    split_roles,
    state,
    tokens_app,
)
from glassrag.kb import resolve_kb_path


@tokens_app.command("create")
def tokens_create(
    principal: str = typer.Option(..., "--principal", help="Who the token stands for"),
    role: list[str] = typer.Option(
        [], "--role", help="A role of the principal (repeatable; comma lists ok)"),
    roles: list[str] = ROLES_ALIAS,
    admin: bool = typer.Option(False, "--admin", help="May ingest, delete and read all"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Create a token; it is printed once and only its hash is stored."""
    from glassrag.store.bearer_tokens import create_token

    split = split_roles(role, roles)
    with handle_errors(as_json):
        kb = open_kb()
        try:
            with kb.lock:
                token = create_token(kb.store, principal, split, admin)
        finally:
            kb.close()
    if as_json:
        print_json({"token": token, "principal_id": principal, "roles": split, "admin": admin})
    else:
        print(token)


@tokens_app.command("list")
def tokens_list(as_json: bool = JSON_OPTION) -> None:
    """Every token by token_id (a hash prefix; the secrets are not stored)."""
    from glassrag.store.bearer_tokens import list_tokens

    with handle_errors(as_json):
        kb = open_kb()
        try:
            rows = list_tokens(kb.store)
        finally:
            kb.close()
    if as_json:
        print_json(rows)
        return
    table = Table(title=f"{len(rows)} tokens")
    for column in ("token_id", "principal", "roles", "admin", "created_at", "revoked_at"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(r["token_id"], r["principal_id"], ",".join(r["roles"]),
                      "yes" if r["admin"] else "", r["created_at"], r["revoked_at"] or "")
    out.print(table)


@tokens_app.command("revoke")
def tokens_revoke(token: str = typer.Argument(..., help="The token, or its token_id")) -> None:
    """Revoke a token; requests with it get 401 from then on."""
    from glassrag.store.bearer_tokens import revoke_token

    with handle_errors(False):
        kb = open_kb()
        try:
            revoke_token(kb.store, token)
        finally:
            kb.close()
    out.print("revoked")


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Interface to listen on"),
    port: int = typer.Option(8000, help="Port"),
    allow_anonymous: bool | None = typer.Option(
        None, "--allow-anonymous/--no-anonymous",
        help="Serve requests without a token as public-only [default: [server] setting]"),
) -> None:
    """The HTTP API (routes at /docs, OpenAPI at /openapi.json) and the web page at /."""
    with handle_errors(False):
        try:
            import uvicorn  # noqa: F401  (checked here, so that a missing one names its extra)

            from glassrag.interfaces.http.app import create_app
            from glassrag.interfaces.http.serve import serve as serve_app
        except ImportError as exc:
            from glassrag.errors import MissingExtra

            raise MissingExtra(exc.name or "fastapi", "server") from None
        application = create_app(resolve_kb_path(state.kb_path), allow_anonymous=allow_anonymous,
                                 bind_host=host)
        settings = application.state.kb.settings.server
    one_blas_thread()
    serve_app(application, host, port, settings)


def one_blas_thread() -> bool:
    """Limit BLAS (the exact vector scan's sgemv) to one thread per call in the server.

    Concurrent requests already keep the cores busy, and OpenBLAS's spinning helper threads
    then fight them: a 20k-vector scan measured 8.0 ms with two BLAS threads against a busy
    core, 0.9 ms with one. Returns False when threadpoolctl is missing (nothing changed).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    threadpool_limits(limits=1, user_api="blas")
    return True


@app.command()
def mcp(
    token: str | None = typer.Option(
        None, "--token", envvar="GLASSRAG_TOKEN",
        help="stdio: the bearer token whose principal makes every call (checked at each "
             "call). Not used by streamable-http: each request carries its own."),
    transport: str = typer.Option("stdio", help="stdio or streamable-http"),
    host: str = typer.Option("127.0.0.1", help="Interface (streamable-http)"),
    port: int = typer.Option(8765, help="Port (streamable-http)"),
) -> None:
    """An MCP server with the tools search_knowledge_base and ask (over streamable-http at
    /mcp, every request needs Authorization: Bearer <token>)."""
    with handle_errors(False):
        if transport not in ("stdio", "streamable-http"):
            raise InvalidInput("--transport must be stdio or streamable-http",
                               field="transport")
        try:
            from glassrag.interfaces.mcp import run
        except ImportError as exc:
            from glassrag.errors import MissingExtra

            raise MissingExtra(exc.name or "mcp", "mcp") from None
        run(resolve_kb_path(state.kb_path), token, transport=transport, host=host, port=port)
