"""The error contract: every exception class in errors.py, one shape for schema problems."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import glassrag
from glassrag.errors import InvalidInput, invalid_fields

PACKAGE = Path(glassrag.__file__).parent
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items()
                      if isinstance(value, type) and issubclass(value, BaseException)}


def _base_names(node: ast.ClassDef) -> set[str]:
    names = set()
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.add(base.id)
        elif isinstance(base, ast.Attribute):
            names.add(base.attr)
    return names


def test_every_exception_class_is_defined_in_errors_py() -> None:
    errors_tree = ast.parse((PACKAGE / "errors.py").read_text(encoding="utf-8"))
    exceptions = BUILTIN_EXCEPTIONS | {
        n.name for n in ast.walk(errors_tree) if isinstance(n, ast.ClassDef)}
    elsewhere: dict[str, list[ast.ClassDef]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        elsewhere[str(path.relative_to(PACKAGE))] = [
            n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    found: list[str] = []
    grew = True
    while grew:  # a class deriving from one found here is an exception class too
        grew = False
        for where, classes in elsewhere.items():
            for node in classes:
                label = f"{where}:{node.lineno} {node.name}"
                if label not in found and _base_names(node) & exceptions:
                    found.append(label)
                    exceptions.add(node.name)
                    grew = True
    assert found == [], "exception classes outside errors.py: " + ", ".join(found)


def test_schema_problems_name_the_callers_fields_without_values() -> None:
    err = invalid_fields([
        {"loc": ("body", "question"), "msg": "Field required", "input": {}},
        {"loc": ("body", "top_k"), "msg": "Input should be greater than or equal to 1",
         "input": -5},
        {"loc": ("body", "roles"), "msg": "Extra inputs are not permitted",
         "input": ["secret-role"]},
    ])
    assert isinstance(err, InvalidInput) and err.status == 400
    body = err.to_dict()["error"]
    assert body["details"] == {"field": "question", "fields": ["question", "top_k", "roles"]}
    assert body["message"].startswith("question: Field required; top_k: Input should be")
    assert "secret-role" not in str(body) and "-5" not in str(body)
    # An MCP argument's location is its name alone; a lone surrogate in a key is escaped.
    assert invalid_fields([{"loc": ("mode",), "msg": "bad"}]).details["field"] == "mode"
    assert invalid_fields([{"loc": ("body", "\ud800"), "msg": "x"}]).details["field"] == \
        "\\ud800"
    assert invalid_fields([{"loc": ("body",), "msg": "JSON decode error"}]).details[
        "field"] == "body"
