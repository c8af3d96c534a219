"""Parsing under a time and memory budget, in one helper process reused from file to file.

Third-party parsers (pypdf, python-docx, python-pptx, lexbor, the e-mail package) can be
made to spend minutes or gigabytes on a small hostile file, in ways no check before parsing
foresees. So ingest hands each such file to a helper process whose address space is capped
(``RLIMIT_AS``: what it had after importing the parsers plus ``Budget.memory_mb``) and waits
at most ``Budget.seconds`` for the answer. A file over either budget fails alone: the helper
answers "exceeded the N MB parse budget" after a ``MemoryError``, or is killed at the
deadline and started again for the next file.

The helper is started once per process and kept, so a batch pays one start-up (about a
second) rather than one per file; requests and answers are length-prefixed JSON frames (the
file's bytes travel raw) on the helper's stdin and stdout. Markdown, text and JSONL never
come here: their readers are linear and bounded, and ingest speed depends on them.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from glassrag.errors import GlassragError, InputFileError
from glassrag.parsers.base import Budget, Limits, Parsed, ParseOptions, failure_reason

__all__ = ["parse_in_worker"]

_FRAME = struct.Struct("<Q")
_STARTUP_SECONDS = 120.0  # importing the parser libraries on a busy machine
_LOCK = threading.Lock()
_CURRENT: _Worker | None = None


def _frame(data: bytes) -> bytes:
    return _FRAME.pack(len(data)) + data


class _Worker:
    """The parent's handle on one helper process."""

    def __init__(self, memory_mb: int) -> None:
        env = dict(os.environ)
        # The helper must import this very glassrag, wherever it was imported from.
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
        self.memory_mb = memory_mb
        self.owner = os.getpid()
        self.buffer = bytearray()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "glassrag.parsers.worker", str(memory_mb)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
            )
        except OSError as exc:
            raise InputFileError(f"cannot start the parser helper process: {exc}") from exc
        try:
            ready = self.receive(time.monotonic() + _STARTUP_SECONDS)
        except EOFError:
            ready = None
        if ready != b"ready":
            self.stop()
            raise InputFileError(
                f"the parser helper process did not start ({_died(self.proc)}); "
                "[ingest] parse_in_subprocess = false parses in-process")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def receive(self, deadline: float) -> bytes | None:
        """One frame from the helper, or None at the deadline; EOFError if it died."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                if len(self.buffer) >= _FRAME.size:
                    (size,) = _FRAME.unpack_from(self.buffer)
                    if len(self.buffer) >= _FRAME.size + size:
                        data = bytes(self.buffer[_FRAME.size : _FRAME.size + size])
                        del self.buffer[: _FRAME.size + size]
                        return data
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise EOFError
                self.buffer += chunk

    def send(self, *parts: bytes) -> None:
        assert self.proc.stdin is not None
        for part in parts:
            self.proc.stdin.write(_frame(part))
        self.proc.stdin.flush()

    def stop(self) -> None:
        """End the helper (it has no state worth keeping) and reap it."""
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def _died(proc: subprocess.Popen[bytes]) -> str:
    code = proc.wait()
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _stop_current() -> None:
    global _CURRENT
    with _LOCK:
        if _CURRENT is not None and _CURRENT.owner == os.getpid():
            _CURRENT.stop()
        _CURRENT = None


atexit.register(_stop_current)


def _worker_for(budget: Budget) -> _Worker:
    """The running helper, (re)started when absent, dead, inherited or differently capped."""
    global _CURRENT
    current = _CURRENT
    if current is not None and current.owner == os.getpid() and current.alive() \
            and current.memory_mb == budget.memory_mb:
        return current
    if current is not None and current.owner == os.getpid():
        current.stop()
    _CURRENT = _Worker(budget.memory_mb)
    return _CURRENT


def parse_in_worker(parser_name: str, label: str, raw: bytes, stem: str,
                    options: ParseOptions) -> Parsed:
    """Parse ``raw`` in the helper under ``options.budget``; every failure an InputFileError."""
    global _CURRENT
    budget = options.budget
    assert budget is not None
    request = {"parser": parser_name, "stem": stem,
               "options": dataclasses.asdict(dataclasses.replace(options, budget=None))}
    with _LOCK:
        worker = _worker_for(budget)
        try:
            worker.send(json.dumps(request).encode(), raw)
            reply = worker.receive(time.monotonic() + budget.seconds)
        except (EOFError, BrokenPipeError):
            reason = _died(worker.proc)
            worker.stop()
            _CURRENT = None
            raise InputFileError(
                f"cannot parse {label}: the parser process died ({reason})") from None
        except BaseException:  # interrupted mid-request: its answer must not reach the next
            worker.stop()
            _CURRENT = None
            raise
        if reply is None:
            worker.stop()
            _CURRENT = None
            raise InputFileError(
                f"cannot parse {label}: exceeded the {budget.seconds:g} s parse budget")
    answer = json.loads(reply)
    if "error" in answer:
        raise InputFileError(answer["error"])
    fields = answer["parsed"]
    fields["positions"] = {k: tuple(v) for k, v in fields["positions"].items()}
    return Parsed(**fields)


# -- the helper's side ---------------------------------------------------------------------

def _limit_memory(memory_mb: int) -> None:
    """Cap the address space at what is mapped now plus ``memory_mb``; no core files.

    Where the mapped size cannot be read (no ``/proc``: macOS, whose address spaces are huge
    and where ``RLIMIT_AS`` is not enforced anyway) only the time budget applies.
    """
    import resource

    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        with open("/proc/self/statm") as fh:
            mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return
    limit = mapped + memory_mb * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _read_frame(stream: IO[bytes]) -> bytes | None:
    head = stream.read(_FRAME.size)
    if len(head) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(head)
    data = stream.read(size)
    return data if len(data) == size else None


def _options(data: dict[str, Any]) -> ParseOptions:
    limits = Limits(**data.pop("limits"))
    return ParseOptions(**{**data, "limits": limits, "budget": None})


def _answer(request: dict[str, Any], raw: bytes, memory_mb: int) -> dict[str, Any]:
    from glassrag.parsers.registry import PARSERS, parse_in_process

    parser = next(p for p in PARSERS if p.name == request["parser"])
    try:
        parsed = parse_in_process(
            parser, raw, request["stem"], _options(request["options"]),
            out_of_memory=f"exceeded the {memory_mb:,} MB parse budget",
        )
    except GlassragError as exc:
        return {"error": exc.message}
    return {"parsed": dataclasses.asdict(parsed)}


def _exit_with_parent() -> None:
    """End the helper when its parent is gone, even in the middle of a parse.

    A parent killed outright (SIGKILL, OOM) never closes the pipes in an orderly way, and a
    helper stuck in a hostile file would otherwise run on with nobody waiting for it.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="glassrag-parent-watch", daemon=True).start()


def _serve(memory_mb: int) -> None:
    """The helper's loop: a request and the file's bytes in, one answer out, until EOF."""
    _exit_with_parent()
    for module in ("pypdf", "docx", "pptx", "selectolax.lexbor", "email.policy"):
        # Imported before the cap, so the budget is what a parse itself takes; a missing one
        # makes its format fail alone, with the install command.
        with contextlib.suppress(ImportError):
            __import__(module)
    _limit_memory(memory_mb)
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's print() must not corrupt the frames
    out.write(_frame(b"ready"))
    out.flush()
    while (header := _read_frame(inp)) is not None and (raw := _read_frame(inp)) is not None:
        try:
            answer = _answer(json.loads(header), raw, memory_mb)
            reply = json.dumps(answer, default=str).encode()
        except MemoryError:  # building the answer itself did not fit
            reply = json.dumps({"error": f"the parse result exceeded the {memory_mb:,} MB "
                                         "parse budget"}).encode()
        except Exception as exc:  # noqa: BLE001 - a bad request must not end the helper
            reply = json.dumps({"error": f"cannot parse: {failure_reason(exc)}"}).encode()
        del raw
        out.write(_frame(reply))
        out.flush()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
