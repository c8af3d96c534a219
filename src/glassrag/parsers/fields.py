"""The document fields a file may name itself: ``doc_id``, ``title``, ``source``,
``chunker`` and ``roles``, from Markdown front matter or a JSONL record, checked."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["explicit_roles", "jsonable", "take_fields"]


def jsonable(value: Any) -> Any:
    """``value`` with dates as ISO strings, so metadata survives JSON round trips."""
    # YAML turns unquoted dates into date objects.
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    return value


def take_fields(data: dict[str, Any], csv_roles: bool) -> dict[str, Any]:
    """Pop the SourceDocument fields out of ``data``, checked; ValueError names a bad one."""
    fields: dict[str, Any] = {}
    if isinstance(data.get("title"), str) and not data["title"].strip():
        del data["title"]  # an empty title means "none given": the default title applies
    for key in ("doc_id", "title", "source", "chunker"):
        value = data.pop(key, None)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValueError(f"'{key}' must be a non-empty string")
        if value is not None:
            fields[key] = value.strip()
    if "roles" in data:
        fields["roles"] = explicit_roles(data.pop("roles"), csv_roles)
    return fields


def explicit_roles(roles: Any, csv_roles: bool) -> tuple[str, ...]:
    """The roles a document names itself, checked.

    A ``roles`` key that is present but names no role (``[]``, ``""``, ``null``, ``[" "]``)
    is an error, never "no roles": falling back to the default role would publish a document
    whose author meant to restrict it.
    """
    if type(roles) is list and len(roles) == 1 and type(roles[0]) is str and roles[0].strip():
        return (roles[0].strip(),)  # the common case, what the checks below would return
    hint = " or a comma-separated string" if csv_roles else ""
    if csv_roles and isinstance(roles, str):
        # "hr, finance," is a comma list with a trailing comma, not a blank role.
        roles = [r for r in roles.split(",") if r.strip()]
    if roles is None:
        raise ValueError("'roles' is empty (null); name at least one role or remove the key")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise ValueError(f"'roles' must be a list of strings{hint}")
    if not roles:
        raise ValueError("'roles' is empty; name at least one role or remove the key")
    blank = next((n for n, r in enumerate(roles, start=1) if not r.strip()), None)
    if blank is not None:
        raise ValueError(f"'roles' entry {blank} is blank; every role must be a non-empty name")
    return tuple(dict.fromkeys(r.strip() for r in roles))
