"""YAML front matter, loaded with bounds: no aliases, limited nesting, dates checked.

Front matter is metadata a person writes by hand, so nothing it needs is lost by refusing
what makes YAML expensive or fragile:

- aliases (``*name``) and merge keys are refused, since a few hundred bytes of nested aliases
  expand to gigabytes once the value is copied or serialised (the "billion laughs");
- nesting is capped (``max_depth``), so every later recursive step (JSON encoding, the
  metadata copy) stays far from Python's recursion limit;
- an impossible date such as ``2023-02-29`` is a YAML error at its line, not a ``ValueError``.

libyaml (``CSafeLoader``) is used when PyYAML has it; it also stops nesting past 1,000 levels
while scanning, before anything is built.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, SequenceNode

__all__ = ["deeper_than", "load_front_matter"]

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):
    """SafeLoader whose timestamp errors carry the line of the bad value."""

    def construct_yaml_timestamp(self, node: Node) -> Any:
        try:
            return SafeConstructor.construct_yaml_timestamp(self, node)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(
                None, None, f"invalid date {node.value!r} ({exc}); quote it to keep it as text",
                node.start_mark,
            ) from None


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


def _check_nodes(root: Node, max_depth: int) -> None:
    """Refuse aliases (a node reached twice) and nesting past ``max_depth``, iteratively."""
    seen: set[int] = set()
    stack: list[tuple[Node, int, Node]] = [(root, 1, root)]
    while stack:
        node, depth, parent = stack.pop()
        if id(node) in seen:  # the second use: name the collection that holds it
            raise ConstructorError(
                None, None, "aliases (*name) are not accepted in front matter",
                parent.start_mark)
        seen.add(id(node))
        if isinstance(node, (MappingNode, SequenceNode)):
            if depth > max_depth:
                raise ConstructorError(
                    None, None, f"nested deeper than {max_depth} levels", node.start_mark)
            children = (
                [part for pair in node.value for part in pair]
                if isinstance(node, MappingNode) else node.value
            )
            stack.extend((child, depth + 1, node) for child in children)


def load_front_matter(text: str, max_depth: int) -> Any:
    """Load one YAML document (``None`` when empty); raise :class:`yaml.YAMLError` if bad.

    Errors keep their ``problem_mark`` where YAML gives one, so callers can name the line.
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(node, max_depth)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def deeper_than(value: Any, max_depth: int) -> bool:
    """Whether dicts and lists in ``value`` nest deeper than ``max_depth`` (iteratively)."""
    containers = (dict, list, tuple)
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, containers) else []
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, containers):
                stack.append((child, depth + 1))
    return False
