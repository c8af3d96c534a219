"""What the pipeline and ingest tell the outside once they are done: OpenTelemetry spans and
in-process observers (the server's ``/metrics``).

Two hooks, each called once: :func:`ask_finished` after an ask's trace is stored, and
:func:`ingest_finished` after an ingest. Both run after the work is committed and never
fail it: an observer that raises is logged and the ask or ingest returns as it would have.
Observers are held weakly, so a server that goes away takes its observer with it.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from glassrag.settings import Settings
    from glassrag.store.database import Store
    from glassrag.trace import Trace

log = logging.getLogger("glassrag.observe")


class Observer(Protocol):
    def on_ask(self, store: Store, trace: Trace) -> None: ...

    def on_ingest(self, store: Store, report: dict[str, Any]) -> None: ...


_observers: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()


def watch(observer: Observer) -> None:
    """Call ``observer`` after every ask and ingest of this process (until it is dropped)."""
    with _lock:
        _observers.add(observer)


def unwatch(observer: Observer) -> None:
    with _lock:
        _observers.discard(observer)


def _each(method: str, store: Store, payload: Any) -> None:
    with _lock:
        current = list(_observers)
    for observer in current:
        try:
            getattr(observer, method)(store, payload)
        except Exception:  # an observer's bug must not fail an ask that already happened
            log.exception("observer %r failed in %s", observer, method)


def ask_finished(store: Store, settings: Settings, trace: Trace) -> None:
    """After an ask's trace is stored: spans (when OpenTelemetry is set up), then observers."""
    try:
        from glassrag.telemetry import emit_ask

        emit_ask(trace, settings.telemetry)
    except Exception:
        log.exception("emitting the spans of trace %s failed", trace.trace_id)
    _each("on_ask", store, trace)


def ingest_finished(store: Store, report: dict[str, Any]) -> None:
    """After an ingest has committed: observers get its report (as JSON)."""
    _each("on_ingest", store, report)
