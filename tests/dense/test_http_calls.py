"""Retries and deadlines of model calls (glassrag.http_calls), on real sockets."""

from __future__ import annotations

import email.utils
import socket
import time

from glassrag.http_calls import Deadline, RetryPolicy, transient_status, with_retries


def test_transient_statuses_are_the_sdks() -> None:
    assert [s for s in (400, 401, 404, 408, 409, 422, 429, 500, 502, 503) if
            transient_status(s)] == [408, 409, 429, 500, 502, 503]


def test_waits_follow_retry_after_else_a_capped_exponential() -> None:
    policy = RetryPolicy(5, base=0.5, cap=8.0, retry_after_cap=30.0)
    assert [policy.wait(n, {}) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert policy.wait(0, {"retry-after": "3"}) == 3.0
    assert policy.wait(0, {"retry-after": "3600"}) == 30.0
    assert policy.wait(0, {"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    soon = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.0 < policy.wait(0, {"retry-after": soon}) <= 5.0
    assert policy.wait(2, {"retry-after": "soon"}) == 2.0  # unreadable: the backoff
    assert RetryPolicy(3, base=0.0).wait(2, {}) == 0.0


def test_with_retries_stops_at_a_kept_result_or_the_last_try() -> None:
    waits: list[float] = []
    tries: list[int] = []

    def flaky(n: int) -> str:
        tries.append(n)
        return "ok" if n == 2 else "busy"

    def again(result: str) -> dict[str, str] | None:
        return {} if result == "busy" else None

    assert with_retries(flaky, again, RetryPolicy(5), waits.append) == "ok"
    assert tries == [0, 1, 2] and waits == [0.5, 1.0]
    tries.clear()
    assert with_retries(flaky, again, RetryPolicy(1), waits.append) == "busy"
    assert tries == [0, 1]


def test_a_deadline_ends_a_blocked_read() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.settimeout(10)  # the per-read timeout alone would wait this long
        with Deadline(0.2) as deadline:
            deadline.watch([ours])
            assert ours.recv(10) == b""  # shut down: the read returns at once
        assert deadline.expired


def test_a_request_finished_in_time_is_left_alone() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        with Deadline(0.5) as deadline:
            deadline.watch([ours])
            theirs.sendall(b"reply")
            assert ours.recv(10) == b"reply"
        time.sleep(0.7)  # past the deadline: the timer was cancelled on exit
        assert not deadline.expired
        theirs.sendall(b"more")
        assert ours.recv(10) == b"more"


def test_a_socket_watched_after_expiry_is_shut_at_once() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs, Deadline(0.05) as deadline:
        time.sleep(0.2)
        deadline.watch([ours])
        ours.settimeout(10)
        assert ours.recv(10) == b""


def test_nothing_watched_needs_no_cleanup() -> None:
    with Deadline(0.01) as deadline:
        time.sleep(0.1)
    assert deadline.expired
