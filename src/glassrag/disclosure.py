"""The ``conceal`` policy, applied in one function: what a principal is told of the truth.

Under ``[permissions] disclosure = "conceal"`` a non-admin must not be able to tell
"matching evidence exists that you may not read" from "nothing matched". So the status
``blocked_by_permission`` reads ``no_evidence``, counts of blocked chunks are withheld, and
so are timings (how long a search took tells the two apart). Admins, and everyone under
``disclose``, are told the truth.

Every output that could carry one of these (search results, inspect, dry-run, answers, and
the trace a non-admin reads) takes them from :func:`disclose`, so the rule cannot drift
between copies. Whether the policy applies to a principal is
:meth:`glassrag.settings.Settings.conceals_from`.
"""

from __future__ import annotations

from dataclasses import dataclass

from glassrag.records import Status


@dataclass(frozen=True)
class Disclosed:
    """What the principal is told."""

    #: The status shown (None when the output has none, e.g. a search).
    status: Status | None
    #: The blocked count shown: the true one, or 0 when withheld.
    blocked_count: int
    #: True when counts and timings are withheld: outputs that carry them leave them out.
    concealed: bool


def disclose(status: str | None, blocked_count: int, *, conceal: bool) -> Disclosed:
    """The truth (``status``, ``blocked_count``) as told to a principal the ``conceal``
    policy does (``conceal=True``) or does not apply to."""
    shown = None if status is None else Status(status)
    if not conceal:
        return Disclosed(shown, blocked_count, concealed=False)
    return Disclosed(Status.NO_EVIDENCE if shown is Status.BLOCKED else shown, 0,
                     concealed=True)
