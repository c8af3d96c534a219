"""The roles rules file: path globs that give documents their roles.

``roles.toml`` lives at the knowledge-base root::

    [[rule]]
    glob = "internal/**"
    roles = ["employee"]

Rules are tried in file order and the first match wins. Globs use the same matcher as
discovery (:func:`glassrag.ingest.discovery.glob_match`) on the document's path relative to the
directory it was ingested from. A document that names its own roles (front matter, JSONL)
keeps them; ingest consults these rules only for documents that name none.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glassrag.errors import InvalidInput
from glassrag.ingest.discovery import glob_match

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["ROLES_FILE", "RolesRules", "load_roles_rules"]

ROLES_FILE = "roles.toml"
_RULE_KEYS = {"glob", "roles"}


@dataclass(frozen=True)
class RolesRules:
    """Ordered ``(glob, roles)`` pairs; an empty tuple means no rules."""

    rules: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def roles_for(self, relpath: str) -> tuple[str, ...] | None:
        """Roles of the first rule whose glob matches ``relpath`` (posix), else None."""
        for pattern, roles in self.rules:
            if glob_match(pattern, relpath):
                return roles
        return None


def _bad(path: Path, message: str, **details: Any) -> InvalidInput:
    return InvalidInput(f"{path}: {message}", path=str(path), **details)


def _parse_rule(path: Path, index: int, rule: Any) -> tuple[str, tuple[str, ...]]:
    # Rules are numbered from 1 in messages, as a person counts [[rule]] tables in the file.
    where = f"rule {index}"
    if not isinstance(rule, dict):
        raise _bad(path, f"{where} must be a table", rule=index)
    unknown = sorted(set(rule) - _RULE_KEYS)
    if unknown:
        # A typo such as "role" would otherwise silently leave documents on default roles.
        raise _bad(
            path, f"{where}: unknown key {unknown[0]!r} (expected 'glob' and 'roles')",
            rule=index, field=unknown[0],
        )
    glob = rule.get("glob")
    if not isinstance(glob, str) or not glob.strip():
        raise _bad(path, f"{where}: 'glob' must be a non-empty string", rule=index, field="glob")
    roles = rule.get("roles")
    if isinstance(roles, str):
        roles = [roles]
    if not isinstance(roles, list) or not all(isinstance(r, str) and r.strip() for r in roles):
        raise _bad(
            path, f"{where}: 'roles' must be a list of non-empty strings",
            rule=index, field="roles",
        )
    if not roles:
        raise _bad(path, f"{where}: 'roles' must name at least one role", rule=index, field="roles")
    return glob.strip(), tuple(dict.fromkeys(r.strip() for r in roles))


def load_roles_rules(path: Path) -> RolesRules:
    """Load a roles rules file; a missing file means no rules.

    Raises :class:`InvalidInput` naming the file, and the rule number and field at fault,
    when the file cannot be read or parsed or a rule is malformed.
    """
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return RolesRules()
    except tomllib.TOMLDecodeError as exc:
        raise _bad(path, f"invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise _bad(path, "not valid UTF-8") from exc
    except OSError as exc:
        raise _bad(path, f"cannot read: {exc.strerror or exc}") from exc
    unknown = sorted(set(data) - {"rule"})
    if unknown:
        raise _bad(path, f"unknown top-level key {unknown[0]!r}; write rules as [[rule]] tables")
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise _bad(path, "'rule' must be an array of tables: write [[rule]], not [rule]")
    return RolesRules(tuple(_parse_rule(path, i, r) for i, r in enumerate(rules, start=1)))
