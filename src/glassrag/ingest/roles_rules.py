"""The roles rules file: path globs that give documents their roles.

``roles.toml`` lives in the knowledge-base directory::

    # base = ".."          # optional; the default: the directory holding the knowledge base
    [[rule]]
    glob = "docs/internal/**"
    roles = ["employee"]

Globs are matched against a document's resolved path (symlinks followed) relative to one
base directory, the knowledge base's parent by default (for ``./.glassrag`` that is the
project directory), so a rule means the same thing whichever folder is named on the
command line. ``base``, if given, is relative to the directory holding ``roles.toml``.
Rules are tried in file order and the first match wins; the matcher is discovery's
(:func:`glassrag.ingest.discovery.glob_match`). A document that names its own roles (front matter,
JSONL) keeps them; ingest consults these rules only for documents that name none.
"""

from __future__ import annotations

import os
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
    """Ordered ``(glob, roles)`` pairs; an empty tuple means no rules.

    ``base`` is the real path of the directory the globs are relative to.
    """

    rules: tuple[tuple[str, tuple[str, ...]], ...] = ()
    base: str = ""

    def roles_for(self, relpath: str) -> tuple[str, ...] | None:
        """Roles of the first rule whose glob matches ``relpath`` (posix), else None."""
        found = self._first(relpath)
        return None if found is None else self.rules[found][1]

    def _first(self, relpath: str) -> int | None:
        for index, (pattern, _) in enumerate(self.rules):
            if glob_match(pattern, relpath):
                return index
        return None

    def misanchored(self, file: str | Path, root: str | Path) -> str | None:
        """Why a file no rule matched would have matched one relative to ``root`` (the
        folder named on the command line), else None.

        Globs are relative to ``base``; a rule written against the ingested folder instead
        (``internal/**`` for ``docs/internal/...``) would otherwise silently give such a
        file the default roles.
        """
        rel_root = _relative(file, os.path.realpath(root))
        if rel_root is None or self.relpath(file) == rel_root:
            return None
        index = self._first(rel_root)
        if index is None:
            return None
        glob = self.rules[index][0]
        where = self.relpath(file)
        folder = self.relpath(os.path.realpath(root))
        here = f"{where!r} here" if where is not None else "this file is outside it"
        fix = (f"; for this folder write {folder}/{glob}" if folder not in (None, ".")
               else "; set 'base' in roles.toml to the folder the globs are written for")
        return (
            f"roles rule {index + 1} ({glob!r}) matches {rel_root!r}, the path relative to "
            f"the ingested folder, but rules match paths relative to {self.base} "
            f"({here}){fix}; not ingested, so that it does not get other roles than meant"
        )

    def relpath(self, path: str | Path) -> str | None:
        """``path`` as the globs see it: posix, relative to ``base``; None outside ``base``
        (no rule can match there)."""
        return _relative(path, self.base) if self.base else None

    def match(self, file: str | Path, link: str | Path | None = None) -> tuple[str, ...] | None:
        """The roles the rules give the file at real path ``file``.

        ``link`` is the path a file was reached by when that differs (an external link,
        allowed explicitly): its own path is the rule's key only when the target lies
        outside ``base``, where no rule could match it.
        """
        rel = self.relpath(file)
        if rel is None and link is not None:
            rel = self.relpath(link)
        return None if rel is None else self.roles_for(rel)


def _relative(path: str | Path, base: str) -> str | None:
    rel = os.path.relpath(path, base)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return Path(rel).as_posix()


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

    The globs' base is ``base`` from the file (relative to the file's directory), else the
    parent of the file's directory. Raises :class:`InvalidInput` naming the file, and the
    rule number and field at fault, when the file cannot be read or parsed or a rule is
    malformed.
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
    unknown = sorted(set(data) - {"rule", "base"})
    if unknown:
        raise _bad(path, f"unknown top-level key {unknown[0]!r}; write rules as [[rule]] tables")
    rules = data.get("rule", [])
    if not isinstance(rules, list):
        raise _bad(path, "'rule' must be an array of tables: write [[rule]], not [rule]")
    base = data.get("base", os.pardir)
    if not isinstance(base, str) or not base.strip():
        raise _bad(path, "'base' must be a non-empty path", field="base")
    return RolesRules(
        tuple(_parse_rule(path, i, r) for i, r in enumerate(rules, start=1)),
        base=os.path.realpath(path.parent / base.strip()),
    )
