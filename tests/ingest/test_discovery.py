from __future__ import annotations

import os
from pathlib import Path

import pytest

from glassrag.ingest.discovery import discover, glob_match

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def write(path: Path, text: str = "some words\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def rels(pairs: list[tuple[Path, Path]]) -> list[str]:
    return [file.relative_to(root).as_posix() for file, root in pairs]


@pytest.mark.parametrize(
    ("pattern", "relpath", "expected"),
    [
        ("**/*.md", "a.md", True),
        ("**/*.md", "notes/deep/a.md", True),
        ("**/*.md", "notes/a.txt", False),
        ("*.md", "a.md", True),
        ("*.md", "notes/a.md", False),  # a single star stays inside one directory
        ("drafts/**", "drafts/a.md", True),
        ("drafts/**", "drafts/x/y/z.txt", True),
        ("drafts/**", "final/drafts.md", False),
        ("internal/**/*.md", "internal/a.md", True),
        ("internal/**/*.md", "internal/hr/pay.md", True),
        ("notes/?.txt", "notes/a.txt", True),
        ("notes/?.txt", "notes/ab.txt", False),
        ("[abc]*.md", "b-side.md", True),
        ("[!abc]*.md", "b-side.md", False),
        ("faq.md", "faq.md", True),
        ("faq.md", "FAQ.md", False),
        ("a+b(1).md", "a+b(1).md", True),  # regex metacharacters are literal
    ],
)
def test_glob_match(pattern: str, relpath: str, expected: bool) -> None:
    assert glob_match(pattern, relpath) is expected


def test_directory_walk_is_recursive_sorted_and_skips_hidden(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    for rel in ["zeta.md", "alpha.txt", "sub/beta.md", "sub/inner/gamma.jsonl", "mid.md"]:
        write(kb / rel)
    write(kb / ".git" / "config")
    write(kb / ".glassrag" / "store.txt")
    write(kb / "sub" / ".hidden.md")
    files, failed = discover([kb])
    assert failed == []
    assert rels(files) == [
        "alpha.txt", "mid.md", "sub/beta.md", "sub/inner/gamma.jsonl", "zeta.md",
    ]
    assert all(root == kb for _, root in files)


def test_file_argument_uses_its_parent_as_root(tmp_path: Path) -> None:
    note = write(tmp_path / "notes" / "plan.md")
    files, failed = discover([note])
    assert files == [(note, note.parent)] and failed == []


def test_missing_path_is_reported_and_the_rest_still_found(tmp_path: Path) -> None:
    good = write(tmp_path / "good.md")
    files, failed = discover([tmp_path / "nope", good])
    assert files == [(good, tmp_path)]
    assert [(f.path, f.error) for f in failed] == [
        (str(tmp_path / "nope"), "no such file or directory")
    ]


def test_include_and_exclude_globs_apply_to_relative_paths(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    for rel in ["a.md", "b.txt", "drafts/c.md", "guides/d.md", "guides/e.txt"]:
        write(kb / rel)
    files, _ = discover([kb], include=["**/*.md"], exclude=["drafts/**"])
    assert rels(files) == ["a.md", "guides/d.md"]
    # An empty include list (the settings default) means every file.
    files, _ = discover([kb], include=[], exclude=[])
    assert len(files) == 5


def test_explicit_file_ignores_include_but_not_exclude(tmp_path: Path) -> None:
    note = write(tmp_path / "todo.txt")
    files, _ = discover([note], include=["**/*.md"])
    assert files == [(note, tmp_path)]
    files, failed = discover([note], exclude=["*.txt"])
    assert files == [] and failed == []


def test_link_to_a_file_outside_the_root_is_refused_naming_link_and_target(
    tmp_path: Path,
) -> None:
    target = write(tmp_path / "elsewhere" / "real.md")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "linked.md").symlink_to(target)
    files, failed = discover([kb])
    assert files == []
    assert [f.path for f in failed] == [str(kb / "linked.md")]
    assert str(target) in failed[0].error and "outside the ingested directory" in failed[0].error
    assert "--follow-external-links" in failed[0].error


def test_external_link_is_followed_under_its_link_name_when_allowed(tmp_path: Path) -> None:
    target = write(tmp_path / "elsewhere" / "real.md")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "linked.md").symlink_to(target)
    files, failed = discover([kb], follow_external_links=True)
    assert files == [(kb / "linked.md", kb)] and failed == []


def test_link_to_a_directory_outside_the_root_is_refused_once(tmp_path: Path) -> None:
    write(tmp_path / "etc" / "passwd.txt")
    write(tmp_path / "etc" / "shadow.txt")
    kb = tmp_path / "kb"
    write(kb / "a.md")
    (kb / "system").symlink_to(tmp_path / "etc", target_is_directory=True)
    files, failed = discover([kb])
    assert rels(files) == ["a.md"]
    assert [f.path for f in failed] == [str(kb / "system")]
    assert str(tmp_path / "etc") in failed[0].error
    files, failed = discover([kb], follow_external_links=True)
    assert rels(files) == ["a.md", "system/passwd.txt", "system/shadow.txt"] and failed == []


def test_link_inside_the_root_is_its_target_and_taken_once(tmp_path: Path) -> None:
    # a-public/notes.md -> ../hr/secret.md: one document, under the target's own path (so
    # the target's roles rule applies), not a second copy under the link's path.
    kb = tmp_path / "kb"
    secret = write(kb / "hr" / "secret.md")
    (kb / "a-public").mkdir()
    (kb / "a-public" / "notes.md").symlink_to(Path("..") / "hr" / "secret.md")
    files, failed = discover([kb])
    assert files == [(secret, kb)] and failed == []
    # Named on its own, the link still stands for its target.
    files, _ = discover([kb / "a-public" / "notes.md", kb])
    assert [f.resolve() for f, _ in files] == [secret.resolve()]


def test_globs_apply_to_the_resolved_path_of_a_link(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / "drafts" / "plan.md")
    write(kb / "pub" / "ok.md")
    (kb / "pub" / "plan.md").symlink_to(kb / "drafts" / "plan.md")
    files, _ = discover([kb], exclude=["drafts/**"])
    assert rels(files) == ["pub/ok.md"]


def test_root_given_through_a_symlink_is_not_external(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write(real / "sub" / "n.md")
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    files, failed = discover([tmp_path / "alias"])
    assert failed == [] and rels(files) == ["sub/n.md"]


def test_symlink_loop_to_ancestor_is_reported_once(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / "a.md")
    write(kb / "sub" / "b.md")
    (kb / "sub" / "back").symlink_to(kb, target_is_directory=True)
    files, failed = discover([kb])
    assert rels(files) == ["a.md", "sub/b.md"]
    assert len(failed) == 1
    assert failed[0].path == str(kb / "sub" / "back")
    assert "symlink loop" in failed[0].error


def test_self_referencing_symlink_is_a_loop(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "self").symlink_to(kb / "self")
    files, failed = discover([kb])
    assert files == []
    assert [f.path for f in failed] == [str(kb / "self")]
    assert "symlink loop" in failed[0].error


def test_broken_symlink_is_reported_as_missing(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "gone.md").symlink_to(tmp_path / "deleted.md")
    files, failed = discover([kb])
    assert files == []
    assert failed[0].path == str(kb / "gone.md")
    assert failed[0].error.startswith("no such file or directory")


def test_same_file_from_two_arguments_is_returned_once(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    note = write(kb / "sub" / "n.md")
    files, _ = discover([kb, kb / "sub", note])
    assert files == [(note, kb)]


def test_second_link_to_a_directory_is_not_a_loop(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / "shared" / "s.md")
    (kb / "alias").symlink_to(kb / "shared", target_is_directory=True)
    files, failed = discover([kb])
    assert failed == []
    assert rels(files) == ["shared/s.md"]  # the alias is resolved to its target


def test_special_files_inside_a_tree_are_skipped(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / "a.md")
    os.mkfifo(kb / "pipe.txt")
    files, failed = discover([kb])
    assert rels(files) == ["a.md"] and failed == []


@pytest.mark.skipif(IS_ROOT, reason="root can list any directory")
def test_unreadable_directory_is_reported(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / "ok.md")
    locked = kb / "locked"
    write(locked / "secret.md")
    locked.chmod(0)
    try:
        files, failed = discover([kb])
    finally:
        locked.chmod(0o755)
    assert rels(files) == ["ok.md"]
    assert [f.path for f in failed] == [str(locked)]
    assert "permission denied" in failed[0].error


def test_unreadable_directory_is_reported_even_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root bypasses permission bits, so make listing this one directory fail the way it
    # does for an ordinary user.
    kb = tmp_path / "kb"
    write(kb / "ok.md")
    locked = kb / "locked"
    write(locked / "secret.md")
    real_scandir = os.scandir

    def scandir(path: os.PathLike[str]) -> object:
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    files, failed = discover([kb])
    assert rels(files) == ["ok.md"]
    assert [(f.path, f.error) for f in failed] == [(str(locked), "permission denied: cannot list")]
