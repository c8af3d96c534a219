"""The checks every HTTP request passes before the application sees it (pure ASGI).

In order: the Host header must name an allowed host (a DNS-rebinding page reaches a
loopback server under its own name), the bearer token must be valid unless the path is
public, and a declared body must fit the path's size limit. All three are decided from
the request line and headers alone, so a refused request's body is never read; a body
without a length (chunked) is counted as it is read and cut off at the limit. Every
response gets the security headers, and authenticated ones ``Cache-Control: no-store``.

Used in front of the FastAPI app (``glassrag serve``) and the MCP SDK's streamable-HTTP
app (``glassrag mcp``), so both authenticate the same way.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from glassrag.errors import BadHost, GlassragError, InvalidInput, PayloadTooLarge, Unauthorized
from glassrag.records import Principal
from glassrag.settings import ServerSettings
from glassrag.store.bearer_tokens import TokenReader

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PRINCIPAL_KEY = "glassrag.principal"  # where the request's principal is left in scope["state"]
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
# Room for the multipart framing around an upload of max_upload_bytes.
MULTIPART_SLACK = 64 * 1024
# No inline script or style, nothing from another origin, and no framing.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


def host_name(value: str) -> str:
    """The host of a Host header (or a configured host): no port, no IPv6 brackets, lower."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:  # name:port; a bare IPv6 address has several colons
        return value.partition(":")[0]
    return value


def allowed_hosts(configured: Iterable[str], bind_host: str | None) -> frozenset[str] | None:
    """The Host names to accept; None accepts any (``"*"`` configured).

    With nothing configured: the loopback names and the host the server binds to (unless
    that is a wildcard address, which names no host).
    """
    names = {host_name(h) for h in configured if h.strip()}
    if "*" in names:
        return None
    if not names:
        names = set(LOOPBACK_HOSTS)
        if bind_host and host_name(bind_host) not in ("0.0.0.0", "::", ""):
            names.add(host_name(bind_host))
    return frozenset(names)


@dataclass(frozen=True)
class GuardPolicy:
    """What :class:`Guard` enforces; ``authenticate`` maps an Authorization header value
    (None when absent) to a principal or raises Unauthorized."""

    authenticate: Callable[[str | None], Principal]
    hosts: frozenset[str] | None
    body_limit: Callable[[str], int]  # path -> the largest body accepted, in bytes
    public_paths: frozenset[str] = frozenset()
    public_prefixes: tuple[str, ...] = ()
    extra_headers: tuple[tuple[bytes, bytes], ...] = field(default=SECURITY_HEADERS)

    def is_public(self, path: str) -> bool:
        return path in self.public_paths or path.startswith(self.public_prefixes)


def guard_policy(settings: ServerSettings, tokens: TokenReader, *, allow_anonymous: bool,
                 bind_host: str | None, public_paths: frozenset[str] = frozenset(),
                 public_prefixes: tuple[str, ...] = (),
                 upload_path: str | None = None) -> GuardPolicy:
    """The :class:`GuardPolicy` of a glassrag HTTP server from its ``[server]`` settings."""
    upload_limit = settings.max_upload_bytes + MULTIPART_SLACK

    def body_limit(path: str) -> int:
        return upload_limit if path == upload_path else settings.max_body_bytes

    return GuardPolicy(
        authenticate=lambda header: tokens.authenticate(header, allow_anonymous=allow_anonymous),
        hosts=allowed_hosts(settings.allowed_hosts, bind_host), body_limit=body_limit,
        public_paths=public_paths, public_prefixes=public_prefixes,
    )


class Guard:
    """ASGI middleware applying a :class:`GuardPolicy` before the wrapped app runs."""

    def __init__(self, app: ASGIApp, policy: GuardPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no route serves one: refuse before any check
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        public = self.policy.is_public(scope["path"])
        try:
            self._check_host(headers.get("host"))
            if not public:
                principal = self.policy.authenticate(headers.get("authorization"))
                scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
            limit = self.policy.body_limit(scope["path"])
            _check_length(headers, limit)
        except GlassragError as exc:
            await _send_error(send, exc, self.policy.extra_headers)
            return
        extra = self.policy.extra_headers + (() if public else ((b"cache-control", b"no-store"),))
        await self.app(scope, _limited(receive, limit), _with_headers(send, extra))

    def _check_host(self, host: str | None) -> None:
        allowed = self.policy.hosts
        if allowed is None:
            return
        name = host_name(host or "")
        if name not in allowed:
            raise BadHost("the Host header names a host this server does not answer for; "
                          "add it to [server] allowed_hosts", field="host")


def _headers(scope: Scope) -> dict[str, str]:
    # A repeated header keeps its first value; latin-1 is how ASGI servers hand them over.
    out: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        out.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return out


def _check_length(headers: dict[str, str], limit: int) -> None:
    declared = headers.get("content-length")
    if declared is None:
        return
    try:
        size = int(declared)
    except ValueError:
        raise InvalidInput("Content-Length is not a number", field="content-length") from None
    if size > limit:
        raise PayloadTooLarge(f"the request body is {size} bytes; the limit is {limit}",
                              limit=limit)


def _limited(receive: Receive, limit: int) -> Receive:
    """``receive`` that fails once more than ``limit`` body bytes have arrived."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                # Raised inside the app's body read: Starlette (FastAPI and the MCP SDK's
                # app) turns an HTTPException there into the response, 413 here.
                from starlette.exceptions import HTTPException

                raise HTTPException(413, f"the request body is larger than {limit} bytes")
        return message

    return wrapped


def _with_headers(send: Send, extra: tuple[tuple[bytes, bytes], ...]) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {name.lower() for name, _ in message.get("headers", ())}
            message["headers"] = [*message.get("headers", ()),
                                  *((n, v) for n, v in extra if n not in present)]
        await send(message)

    return wrapped


async def _send_error(send: Send, exc: GlassragError,
                      extra: tuple[tuple[bytes, bytes], ...]) -> None:
    body = json.dumps(exc.to_dict(), ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store"), *extra]
    if isinstance(exc, Unauthorized):
        headers.append((b"www-authenticate", b"Bearer"))
    # Any body was left unread, so the connection cannot carry another request.
    headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
