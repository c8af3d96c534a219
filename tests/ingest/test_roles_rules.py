from __future__ import annotations

from pathlib import Path

import pytest

from glassrag.errors import InvalidInput
from glassrag.ingest.roles_rules import ROLES_FILE, RolesRules, load_roles_rules

RULES = """\
# Most specific rules first: the first match wins.
[[rule]]
glob = "internal/finance/**"
roles = ["finance", "executive"]

[[rule]]
glob = "internal/**"
roles = ["employee"]

[[rule]]
glob = "**/*.draft.md"
roles = ["editor"]
"""


def write_rules(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ROLES_FILE
    path.write_text(text, encoding="utf-8")
    return path


def test_rules_round_trip_and_first_match_wins(tmp_path: Path) -> None:
    rules = load_roles_rules(write_rules(tmp_path, RULES))
    assert rules.rules == (
        ("internal/finance/**", ("finance", "executive")),
        ("internal/**", ("employee",)),
        ("**/*.draft.md", ("editor",)),
    )
    assert rules.roles_for("internal/finance/q3/budget.md") == ("finance", "executive")
    assert rules.roles_for("internal/handbook.md") == ("employee",)
    assert rules.roles_for("internal/plan.draft.md") == ("employee",)  # earlier rule wins
    assert rules.roles_for("blog/launch.draft.md") == ("editor",)
    assert rules.roles_for("launch.draft.md") == ("editor",)
    assert rules.roles_for("public/faq.md") is None


def test_missing_file_means_no_rules(tmp_path: Path) -> None:
    rules = load_roles_rules(tmp_path / ROLES_FILE)
    assert rules == RolesRules() and rules.roles_for("anything.md") is None


def test_empty_file_means_no_rules(tmp_path: Path) -> None:
    assert load_roles_rules(write_rules(tmp_path, "# nothing yet\n")).rules == ()


def test_single_role_string_is_accepted_and_roles_are_cleaned(tmp_path: Path) -> None:
    text = (
        '[[rule]]\nglob = "hr/*"\nroles = "hr"\n'
        '[[rule]]\nglob = "ops/*"\nroles = [" ops ", "ops"]\n'
    )
    rules = load_roles_rules(write_rules(tmp_path, text))
    assert rules.rules == (("hr/*", ("hr",)), ("ops/*", ("ops",)))


def test_windows_style_relpath_still_matches() -> None:
    rules = RolesRules((("internal/**", ("employee",)),))
    assert rules.roles_for("internal\\memo.md") == ("employee",)


def test_invalid_toml_names_the_file_and_line(tmp_path: Path) -> None:
    path = write_rules(tmp_path, '[[rule]]\nglob = "a/**"\nroles = employee\n')
    with pytest.raises(InvalidInput) as info:
        load_roles_rules(path)
    assert str(path) in info.value.message
    assert "invalid TOML" in info.value.message and "line 3" in info.value.message


@pytest.mark.parametrize(
    ("text", "phrase", "rule", "field"),
    [
        ('[[rule]]\nroles = ["x"]\n', "rule 1: 'glob' must be a non-empty string", 1, "glob"),
        ('[[rule]]\nglob = ""\nroles = ["x"]\n', "rule 1: 'glob' must be", 1, "glob"),
        ('[[rule]]\nglob = "a/*"\nroles = ["x"]\n[[rule]]\nglob = "b/*"\n', "rule 2: 'roles'", 2,
         "roles"),
        ('[[rule]]\nglob = "a/*"\nroles = [1, 2]\n', "rule 1: 'roles' must be a list", 1, "roles"),
        ('[[rule]]\nglob = "a/*"\nroles = [""]\n', "rule 1: 'roles' must be a list", 1, "roles"),
        ('[[rule]]\nglob = "a/*"\nroles = []\n', "rule 1: 'roles' must name at least one", 1,
         "roles"),
        ('[[rule]]\nglob = "a/*"\nrole = ["x"]\n', "rule 1: unknown key 'role'", 1, "role"),
        ('[[rule]]\nglob = 5\nroles = ["x"]\n', "rule 1: 'glob' must be", 1, "glob"),
    ],
)
def test_malformed_rule_names_file_rule_and_field(
    tmp_path: Path, text: str, phrase: str, rule: int, field: str
) -> None:
    path = write_rules(tmp_path, text)
    with pytest.raises(InvalidInput) as info:
        load_roles_rules(path)
    assert info.value.message.startswith(f"{path}: ")
    assert phrase in info.value.message
    assert info.value.details == {"path": str(path), "rule": rule, "field": field}


def test_single_bracket_table_is_rejected(tmp_path: Path) -> None:
    path = write_rules(tmp_path, '[rule]\nglob = "a/*"\nroles = ["x"]\n')
    with pytest.raises(InvalidInput, match=r"write \[\[rule\]\]"):
        load_roles_rules(path)


def test_unknown_top_level_key_is_rejected(tmp_path: Path) -> None:
    path = write_rules(tmp_path, '[[rules]]\nglob = "a/*"\nroles = ["x"]\n')
    with pytest.raises(InvalidInput, match="unknown top-level key 'rules'"):
        load_roles_rules(path)


def test_non_utf8_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / ROLES_FILE
    path.write_bytes('[[rule]]\nglob = "内部/**"\nroles = ["x"]\n'.encode("gb18030"))
    with pytest.raises(InvalidInput, match=str(path)):
        load_roles_rules(path)


def test_unreadable_rules_path_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ROLES_FILE).mkdir()  # a directory where the file should be
    with pytest.raises(InvalidInput, match="cannot read"):
        load_roles_rules(tmp_path / ROLES_FILE)


def test_globs_are_relative_to_the_parent_of_the_rules_directory(tmp_path: Path) -> None:
    kb_dir = tmp_path / "project" / ".glassrag"
    kb_dir.mkdir(parents=True)
    rules = load_roles_rules(write_rules(kb_dir, '[[rule]]\nglob = "docs/hr/**"\nroles = "hr"\n'))
    project = tmp_path / "project"
    assert rules.base == str(project.resolve())
    assert rules.match(project / "docs" / "hr" / "pay.md") == ("hr",)
    assert rules.match(project / "hr" / "pay.md") is None
    assert rules.relpath(tmp_path / "elsewhere.md") is None  # outside the base: no rule


def test_base_key_is_relative_to_the_rules_file(tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    kb_dir.mkdir()
    rules = load_roles_rules(write_rules(kb_dir, 'base = "../docs"\n[[rule]]\nglob = "hr/**"\n'
                                                'roles = "hr"\n'))
    assert rules.base == str((tmp_path / "docs").resolve())
    assert rules.match(tmp_path / "docs" / "hr" / "a.md") == ("hr",)


@pytest.mark.parametrize("value", ['""', "3", "[]"])
def test_bad_base_is_rejected(tmp_path: Path, value: str) -> None:
    path = write_rules(tmp_path, f"base = {value}\n")
    with pytest.raises(InvalidInput, match="'base' must be a non-empty path"):
        load_roles_rules(path)


def test_an_allowed_external_link_falls_back_to_its_own_path(tmp_path: Path) -> None:
    kb_dir = tmp_path / "p" / "kb"
    kb_dir.mkdir(parents=True)
    rules = load_roles_rules(write_rules(kb_dir, '[[rule]]\nglob = "hr/**"\nroles = "hr"\n'))
    outside = tmp_path / "far" / "x.md"
    assert rules.match(outside, link=tmp_path / "p" / "hr" / "x.md") == ("hr",)
    # A target inside the base decides by itself, whatever the link's path.
    assert rules.match(tmp_path / "p" / "pub" / "x.md", link=tmp_path / "p" / "hr" / "x.md") \
        is None


def test_misanchored_rule_is_explained(tmp_path: Path) -> None:
    kb_dir = tmp_path / "p" / "kb"
    kb_dir.mkdir(parents=True)
    rules = load_roles_rules(write_rules(kb_dir, '[[rule]]\nglob = "hr/**"\nroles = "hr"\n'))
    docs = tmp_path / "p" / "docs"
    why = rules.misanchored(docs / "hr" / "pay.md", docs)
    assert why is not None and "'hr/**'" in why and "write docs/hr/**" in why
    assert rules.misanchored(docs / "pub" / "a.md", docs) is None
    outside = rules.misanchored(tmp_path / "x" / "hr" / "a.md", tmp_path / "x")
    assert outside is not None and "set 'base'" in outside
