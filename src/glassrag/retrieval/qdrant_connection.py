"""The connection to Qdrant: a server or cluster by URL, or qdrant-client's local mode.

Local mode keeps the collection in a directory and locks it for one client, so every
knowledge base opened in this process on the same directory shares one client (counted,
closed with the last user), and calls to it are serialised: local mode is not thread-safe,
and the HTTP server searches from several threads. Another *process* on the same directory
is refused with an error that says so; several processes need a Qdrant server.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from glassrag.errors import GlassragError, InvalidInput, QdrantUnavailable, needs_extra
from glassrag.settings import IndexSettings

T = TypeVar("T")


@dataclass
class Connection:
    client: Any
    where: str
    local: bool
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: int = 1

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``client.method(...)``, serialised, with failures as :class:`QdrantUnavailable`."""
        with self.lock, self._quiet():
            try:
                return getattr(self.client, method)(*args, **kwargs)
            except GlassragError:
                raise
            except Exception as exc:  # qdrant-client raises many kinds; all mean the same here
                raise QdrantUnavailable(f"Qdrant at {self.where}: {method} failed: {exc}",
                                        where=self.where) from exc

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        # Local mode warns that payload indexes do nothing there; the same calls configure
        # a server, so they are made either way.
        with warnings.catch_warnings():
            if self.local:
                warnings.simplefilter("ignore", UserWarning)
            yield


_LOCAL: dict[str, Connection] = {}
_LOCAL_LOCK = threading.Lock()


def connect(settings: IndexSettings, kb_dir: Path) -> Connection:
    """A connection for ``[index]`` (``url`` set: that server; else local mode at ``path``)."""
    with needs_extra("qdrant", "qdrant-client"):
        from qdrant_client import QdrantClient
    if settings.url:
        return Connection(QdrantClient(url=settings.url, api_key=_api_key(settings),
                                       timeout=int(settings.timeout)), settings.url, local=False)
    path = (kb_dir / settings.path).resolve()
    key = str(path)
    with _LOCAL_LOCK:
        shared = _LOCAL.get(key)
        if shared is not None:
            shared.users += 1
            return shared
        path.mkdir(parents=True, exist_ok=True)
        client = _open_local(QdrantClient, path)
        _LOCAL[key] = shared = Connection(client, key, local=True)
        return shared


def _open_local(factory: Callable[..., T], path: Path) -> T:
    try:
        return factory(path=str(path), force_disable_check_same_thread=True)
    except RuntimeError as exc:  # portalocker: the directory is locked by another process
        raise QdrantUnavailable(
            f"{path}: the Qdrant local-mode index is in use by another process (local mode "
            "serves one process at a time; stop it, or run a Qdrant server and set [index] "
            "url)", where=str(path)) from exc


def release(conn: Connection) -> None:
    """Give the connection back; the last user of a local one closes it."""
    if not conn.local:
        conn.client.close()
        return
    with _LOCAL_LOCK:
        conn.users -= 1
        if conn.users > 0:
            return
        _LOCAL.pop(conn.where, None)
    with conn.lock:
        conn.client.close()


def _api_key(settings: IndexSettings) -> str | None:
    if not settings.api_key_env:
        return None
    value = os.environ.get(settings.api_key_env)
    if not value:
        raise InvalidInput(
            f"[index] api_key_env names {settings.api_key_env}, which is not set",
            field="index.api_key_env")
    return value
