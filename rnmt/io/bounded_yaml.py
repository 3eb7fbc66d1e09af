"""YAML as rnmt reads it: PyYAML's safe loader with bounds on what a document may expand to.

Configs come from users, from run directories and from ``--set`` values, and two small
documents defeat ``yaml.safe_load``: a few hundred nested brackets exhaust Python's
recursion limit inside PyYAML's composer (a traceback), and nine aliases of nine aliases
(a "billion laughs") construct a value that repr, copy and validation walk for minutes
while memory grows by gigabytes. A config is a few hundred values a few levels deep, so
`load_yaml` refuses a document longer than `MAX_CHARS` characters before it parses a
character, stops composing one as soon as it holds more than `MAX_VALUES` nodes (so a
list of a million items costs what its first 100,000 cost, not minutes and gigabytes),
refuses one nested deeper than `MAX_DEPTH` or expanding, aliases followed, to more than
`MAX_VALUES` values, a value that contains itself (``&a [*a]``), a
key given twice in one mapping (PyYAML keeps the last), and an integer longer than Python
reads from text (a ValueError inside PyYAML otherwise); each refusal is a
`yaml.MarkedYAMLError`, which callers already turn into one line naming the file and line.
Anchors and aliases within the bounds work as usual.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from rnmt.errors import shown

MAX_DEPTH = 64  # nested sequences and mappings
MAX_VALUES = 100_000  # scalars, sequences and mappings, each alias counted as what it stands for
# The longest document read: the longest built-in config or recipe is under 8 KB, so 1 MiB
# leaves room for any hand-written one while a 50 MB value is refused before it is scanned
# (PyYAML's pure-Python scanner reads about 100 KB/s of a long list).
MAX_CHARS = 1_048_576


class YAMLBoundError(yaml.MarkedYAMLError):
    """A document over `MAX_DEPTH` or `MAX_VALUES`, with a value that contains itself, or
    with a key given twice in one mapping."""

    def __init__(self, problem: str, mark: Any) -> None:
        super().__init__(problem=problem, problem_mark=mark)

    def __str__(self) -> str:  # the line is shown by the caller (its problem_mark)
        return str(self.problem)


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, refusing nesting deeper than `MAX_DEPTH` and more than
    `MAX_VALUES` nodes while it composes (the composer recurses once per level and is
    called once per node; an alias is counted here once, and as what it stands for by
    `check_expansion` afterwards)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YAMLBoundError(f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark)
            if self._nodes > MAX_VALUES:
                raise YAMLBoundError(f"more than {MAX_VALUES:,} values", self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_bounded_int(self, node: ScalarNode) -> int:
        try:
            return self.construct_yaml_int(node)
        except ValueError:  # Python's bound on the digits int() reads from text (4,300)
            raise YAMLBoundError(f"an integer of {len(node.value):,} characters, more digits than Python reads",
                                 node.start_mark) from None


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_bounded_int)


def _children(node: Node) -> List[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_unique_keys(node: MappingNode) -> None:
    """A key written twice in one mapping is refused: PyYAML keeps the last silently, so of
    two ``lr:`` lines the one a user edited may not be the one that counts. (Keys a merge,
    ``<<: *base``, brings in may be overridden: that is what merging is for.)"""
    seen: Dict[str, Any] = {}
    for key, _ in node.value:
        if not isinstance(key, ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        if key.value in seen:
            first = seen[key.value].line + 1
            raise YAMLBoundError(f"key {shown(key.value)} given twice in one mapping, first on line {first}",
                                 key.start_mark)
        seen[key.value] = key.start_mark


def check_expansion(root: Node) -> None:
    """Raise `YAMLBoundError` if ``root``, its aliases followed, holds more than
    `MAX_VALUES` values, nests deeper than `MAX_DEPTH`, or contains itself. Iterative, and
    each node (an anchor used many times) is sized once."""
    sizes: Dict[int, Tuple[int, int]] = {}  # id(node) -> (values, depth) once expanded
    on_path: set = set()  # ids of the nodes whose expansion is under way
    stack: List[Tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if expanded:
            kids = [sizes[id(k)] for k in _children(node)]
            values, depth = 1 + sum(v for v, _ in kids), 1 + max((d for _, d in kids), default=0)
            if values > MAX_VALUES:
                raise YAMLBoundError(f"more than {MAX_VALUES:,} values, aliases expanded", node.start_mark)
            if depth > MAX_DEPTH:
                raise YAMLBoundError(f"aliases nest it deeper than {MAX_DEPTH} levels", node.start_mark)
            sizes[key] = (values, depth)
            on_path.discard(key)
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise YAMLBoundError("a value contains itself: an alias inside its own anchor", node.start_mark)
        on_path.add(key)
        if isinstance(node, MappingNode):
            _check_unique_keys(node)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in sizes)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load(text)`` within the bounds above (None for an empty document)."""
    if len(text) > MAX_CHARS:
        raise YAMLBoundError(f"a document of {len(text):,} characters, more than the {MAX_CHARS:,} a config may "
                             f"hold", None)
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()
