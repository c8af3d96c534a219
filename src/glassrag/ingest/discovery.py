"""Find the input files under the paths given to ``ingest``.

Discovery only decides *which* files to look at; whether a file can be read is the readers'
business. Inside a directory, files of a type no reader handles (images, CSS, ``Makefile``)
are skipped and counted by reason; a file named explicitly goes to the readers, which fail
it with the reason.
Every problem with a path becomes a :class:`FailedInput` and the walk goes on.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from glassrag.records import FailedInput

__all__ = ["SKIPPED_UNSUPPORTED", "discover", "glob_match"]

SKIPPED_UNSUPPORTED = "unsupported type"


@lru_cache(maxsize=512)
def _compile_glob(pattern: str) -> re.Pattern[str]:
    """Translate a glob into a regex: ``*``/``?`` stay inside one path segment, ``**`` crosses."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**", i):
            i += 2
            if i < n and pattern[i] == "/":
                # "**/" also matches zero directories, so "**/*.md" matches "a.md".
                out.append("(?:.*/)?")
                i += 1
            else:
                out.append(".*")
            continue
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(pattern: str, relpath: str) -> bool:
    """Whether a posix relative path matches a glob.

    ``*`` and ``?`` never cross ``/``; ``**`` matches across directories and ``**/`` may match
    no directory at all, so ``"**/*.md"`` matches ``"a.md"`` and ``"drafts/**"`` matches
    everything under ``drafts/``. Matching is case-sensitive, as on a posix filesystem.
    """
    relpath = relpath.replace("\\", "/").removeprefix("./")
    return _compile_glob(pattern).match(relpath) is not None


def _matches(pattern: str, relpath: str) -> bool:
    """An ``--include``/``--exclude`` glob: with a ``/`` it matches the path relative to the
    ingested directory; without one, the file name at any depth (as in ``.gitignore``), so
    ``*.md`` means every Markdown file, however deep."""
    if "/" in pattern.rstrip("/"):
        return glob_match(pattern, relpath)
    return glob_match(pattern, relpath.rsplit("/", 1)[-1])


def _wanted(relpath: str, include: list[str] | None, exclude: list[str] | None) -> bool:
    # An empty include list means "everything", matching the settings file's default of [].
    if include and not any(_matches(p, relpath) for p in include):
        return False
    return not (exclude and any(_matches(p, relpath) for p in exclude))


def _stat_error(path: Path, exc: OSError) -> FailedInput:
    if exc.errno == errno.ELOOP:
        return FailedInput(str(path), "symlink loop: the link resolves to itself")
    if isinstance(exc, FileNotFoundError):
        if os.path.islink(path):
            return FailedInput(str(path), "no such file or directory (broken symlink)")
        return FailedInput(str(path), "no such file or directory")
    if isinstance(exc, PermissionError):
        return FailedInput(str(path), "permission denied")
    return FailedInput(str(path), f"cannot access: {exc.strerror or exc}")


def _inside(real: str, root_real: str) -> str | None:
    """``real`` relative to ``root_real`` (posix), or None when it lies outside."""
    rel = os.path.relpath(real, root_real)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return Path(rel).as_posix()


def _external(link: Path, target: str, root: Path) -> FailedInput:
    return FailedInput(
        str(link),
        f"symlink to {target}, outside the ingested directory {root}: not followed "
        "(pass --follow-external-links to ingest link targets outside it)",
    )


class _Walker:
    """One ``discover`` call: collects files, failures, and what it has already visited."""

    def __init__(self, include: list[str] | None, exclude: list[str] | None,
                 follow_external_links: bool,
                 supported: Callable[[Path], bool] | None = None) -> None:
        self.include = include
        self.exclude = exclude
        self.follow_external_links = follow_external_links
        self.supported = supported
        self.skipped: dict[str, int] = {}
        self.skipped_paths: list[str] = []
        self.files: list[tuple[Path, Path]] = []
        self.failed: list[FailedInput] = []
        # Real paths of files already returned: the same file reached twice (two arguments,
        # two symlinks) would otherwise be ingested twice under two doc_ids.
        self._seen_files: set[str] = set()
        # Directories already walked, by (device, inode): a second symlink to a directory
        # that is not an ancestor is not a loop, but walking it again only yields duplicates.
        self._seen_dirs: set[tuple[int, int]] = set()

    def add_file(self, path: Path, root: Path, *, named: bool = False) -> None:
        """Take one file found under ``root`` (``named``: given on the command line).

        A file is taken under its resolved path: a link to a file inside the root is the
        same document as its target (its roles are the target's, and it is never ingested
        twice), and a link pointing outside the root is refused unless external links are
        allowed, in which case it keeps the link's own path.
        """
        real = os.path.realpath(path)
        rel = _inside(real, os.path.realpath(root))
        if rel is None:
            if not self.follow_external_links:
                self.failed.append(_external(path, real, root))
                return
            rel = path.relative_to(root).as_posix()
        else:
            if not named and any(part.startswith(".") for part in rel.split("/")):
                return  # a link into a hidden directory reaches nothing walking would
            path = root / rel
        wanted = _wanted(Path(rel).name, None, self.exclude) if named else \
            _wanted(rel, self.include, self.exclude)
        if not wanted or real in self._seen_files:
            return
        if not named and self.supported is not None and not self.supported(path):
            # Images, stylesheets, Makefile, LICENSE: part of a docs folder, not documents.
            # Counted, not failed; a file named explicitly still fails.
            self.skipped[SKIPPED_UNSUPPORTED] = self.skipped.get(SKIPPED_UNSUPPORTED, 0) + 1
            self.skipped_paths.append(str(path))
            return
        self._seen_files.add(real)
        self.files.append((path, root))

    def walk(self, directory: Path, root: Path, ancestors: dict[tuple[int, int], Path]) -> None:
        try:
            with os.scandir(directory) as it:
                names = sorted(entry.name for entry in it)
        except PermissionError:
            self.failed.append(FailedInput(str(directory), "permission denied: cannot list"))
            return
        except OSError as exc:
            self.failed.append(_stat_error(directory, exc))
            return
        for name in names:
            if name.startswith("."):
                continue  # .git, .glassrag, editor droppings: never knowledge-base content
            path = directory / name
            try:
                st = os.stat(path)  # follows symlinks on purpose
            except OSError as exc:
                self.failed.append(_stat_error(path, exc))
                continue
            if stat.S_ISDIR(st.st_mode):
                self.enter(path, root, st, ancestors)
            elif stat.S_ISREG(st.st_mode):
                self.add_file(path, root)
            # Sockets, FIFOs and devices inside a tree are not documents; skip them quietly.

    def enter(
        self, path: Path, root: Path, st: os.stat_result, ancestors: dict[tuple[int, int], Path]
    ) -> None:
        key = (st.st_dev, st.st_ino)
        if key in ancestors:
            self.failed.append(
                FailedInput(str(path), f"symlink loop: leads back to {ancestors[key]}")
            )
            return
        real = os.path.realpath(path)
        if (ancestors and not self.follow_external_links
                and _inside(real, os.path.realpath(root)) is None):
            self.failed.append(_external(path, real, root))
            return
        if key in self._seen_dirs:
            return
        self._seen_dirs.add(key)
        self.walk(path, root, {**ancestors, key: path})


def discover(
    paths: list[Path],
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    follow_external_links: bool = False,
    supported: Callable[[Path], bool] | None = None,
    skipped: dict[str, int] | None = None,
    skipped_paths: list[str] | None = None,
) -> tuple[list[tuple[Path, Path]], list[FailedInput]]:
    """Expand files and directories into ``(file, root)`` pairs, plus per-path failures.

    Directories are walked recursively in sorted order (a link back to an ancestor is
    reported once as a symlink loop); entries whose name starts with ``.`` are skipped.
    ``root`` is the directory argument a file was found under, or the parent of a file
    argument, so callers can form the path relative to it. Symlinks are resolved: a link
    to a file or directory inside ``root`` yields its target's path (once, however many
    links reach it); a link whose target lies outside ``root`` is a failure naming the link
    and its target, unless ``follow_external_links``, when it is taken under the link's
    path. ``include``/``exclude`` are globs (see :func:`glob_match`) on the resolved path
    relative to ``root``; a file named explicitly is taken whatever ``include`` says, but
    ``exclude`` still applies. Each file is returned at most once, for the first argument
    that reached it.

    With ``supported``, a file found inside a directory that it rejects is not returned but
    counted in ``skipped`` by reason (``"unsupported type"``), its path added to
    ``skipped_paths``; a file argument is always returned, so the reader can say why it
    cannot be read.
    """
    walker = _Walker(include, exclude, follow_external_links, supported)
    for path in paths:
        try:
            st = os.stat(path)
        except OSError as exc:
            walker.failed.append(_stat_error(path, exc))
            continue
        if stat.S_ISDIR(st.st_mode):
            walker.enter(path, path, st, {})
        else:
            # Anything else named explicitly (even a FIFO) goes to the readers, which say
            # exactly why it cannot be read instead of dropping it without a word.
            walker.add_file(path, path.parent, named=True)
    if skipped is not None:
        for reason, count in walker.skipped.items():
            skipped[reason] = skipped.get(reason, 0) + count
    if skipped_paths is not None:
        skipped_paths.extend(walker.skipped_paths)
    return walker.files, walker.failed
