"""YAML loading that remembers line numbers, and the field checks every data file shares.

Errors name the file and line, so a user can go straight to the mistake.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from render.errors import FilmError, close_matches
from render.files import display_path, read_capped, read_text_capped
from render.text import echo


class Node:
    """Where a YAML value came from: file and 1-based line."""

    def __init__(self, path: Path, line: int):
        self.path = path
        self.line = line

    def where(self) -> str:
        return f"{display_path(self.path)}:{self.line}"


class YamlMap(dict):
    """A mapping that knows its own line and the line of each key."""

    source: Node
    key_lines: dict[str, int]
    written: dict[str, str]  # a scalar value's text as the file writes it ("0.30" where the value is 0.3)

    def where(self, key: str | None = None) -> str:
        line = self.key_lines.get(key, self.source.line) if key is not None else self.source.line
        return f"{display_path(self.source.path)}:{line}"


class YamlList(list):
    source: Node
    item_lines: list[int]

    def where(self, index: int | None = None) -> str:
        line = self.item_lines[index] if index is not None else self.source.line
        return f"{display_path(self.source.path)}:{line}"


def kept_while_unchanged(files: Callable[..., list[Path]], keep: int = 8):
    """A loader whose typed result is kept while the files it reads (`files(*args)`) hold the same bytes: a matrix of
    1,208 choices reads the storyboard and the catalog once, and an edited file is read again. Its results are
    shared, so they must not be changed by those who load them (frozen dataclasses and tables nobody writes). The
    files are read for the key as the loader reads them (read_capped): a FIFO or /dev/zero is refused, not read."""
    def wrap(load):
        kept: dict = {}

        @functools.wraps(load)
        def loader(*args, **kwargs):
            try:
                key = (args, tuple(sorted(kwargs.items())),
                       tuple(hashlib.sha256(read_capped(path, MAX_YAML_BYTES, "a YAML data file")).digest()
                             for path in files(*args, **kwargs)))
            except (OSError, FilmError):
                return load(*args, **kwargs)  # (the loader names what is wrong with the file)
            if key not in kept:
                if len(kept) >= keep:
                    kept.pop(next(iter(kept)))
                kept[key] = load(*args, **kwargs)
            return kept[key]

        return loader
    return wrap


# libyaml's parser when PyYAML has it (its wheels do): the same safe constructors, several times faster.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LineLoader(SAFE_LOADER):
    """SafeLoader that also reads 1e12 and 989.0e12 as numbers (YAML 1.2), not text."""


LineLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


MAX_YAML_BYTES = 2 * 2**20  # the project's data files are a few kilobytes
# Python reads at most this many digits of a whole number from text (sys.get_int_max_str_digits); a longer one is
# refused where it is read, with its place, never by the interpreter's ValueError.
MAX_INT_DIGITS = min(sys.get_int_max_str_digits() or 4300, 4300)


class PlacedLoader(LineLoader):
    """Reads mappings and lists that remember their file and lines (YamlMap, YamlList), keys that are plain and
    once each, and whole numbers short enough for Python to read, each refusal naming the file and line."""

    def __init__(self, text: str, path: Path):
        super().__init__(text)
        self.path = path

    def refused(self, node: yaml.Node, problem: str) -> FilmError:
        return FilmError(f"{display_path(self.path)}:{node.start_mark.line + 1}: {problem}")

    def construct_placed_mapping(self, node: yaml.MappingNode) -> YamlMap:
        result = YamlMap()
        result.source = Node(self.path, node.start_mark.line + 1)
        result.key_lines = {}
        result.written = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise self.refused(key_node, f"a key must be a plain name, not a {type(key).__name__}")
            if key in result:
                raise self.refused(key_node, f"duplicate key {key!r}")
            result[key] = self.construct_object(value_node, deep=True)
            result.key_lines[key] = key_node.start_mark.line + 1
            if isinstance(value_node, yaml.ScalarNode):
                result.written[key] = value_node.value
        return result

    def construct_placed_sequence(self, node: yaml.SequenceNode) -> YamlList:
        result = YamlList(self.construct_object(child, deep=True) for child in node.value)
        result.source = Node(self.path, node.start_mark.line + 1)
        result.item_lines = [child.start_mark.line + 1 for child in node.value]
        return result

    def construct_short_int(self, node: yaml.ScalarNode) -> int:
        digits = sum(char.isdigit() for char in node.value)
        if digits > MAX_INT_DIGITS:  # Python refuses to read it (ValueError); say where, and what to write
            raise self.refused(node, f"a whole number of {digits:,} digits; no value here has more than a few "
                                     f"dozen, so write the number this field means")
        return SAFE_LOADER.construct_yaml_int(self, node)


PlacedLoader.add_constructor("tag:yaml.org,2002:int", PlacedLoader.construct_short_int)
PlacedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, PlacedLoader.construct_placed_mapping)
PlacedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, PlacedLoader.construct_placed_sequence)


def load_yaml(path: Path, what: str = "a YAML data file") -> Any:
    """Parse a YAML file into YamlMap/YamlList values; syntax errors name the file and line. Read through the
    capped reader, and without aliases: a few lines of anchors and aliases ("billion laughs") would expand to
    gigabytes, and the project's files write every value out."""
    path = Path(path)
    text = read_text_capped(path, MAX_YAML_BYTES, what, display_path(path), "file not found", "save the file as UTF-8")
    loader = PlacedLoader(text, path)
    try:
        document = loader.get_single_node()
        if document is None:
            return None
        refuse_aliases(document, path)
        return loader.construct_document(document)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = error.problem or error.context or "invalid YAML"
        if error.context and error.context_mark and mark is not error.context_mark:
            problem += f" ({error.context} that starts on line {error.context_mark.line + 1})"
        raise FilmError(f"{display_path(path)}{line}: malformed YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise FilmError(f"{display_path(path)}: malformed YAML: {error}") from None
    except RecursionError:
        raise FilmError(f"{display_path(path)}: nested too deeply to be a data file") from None
    finally:
        loader.dispose()


def refuse_aliases(root: yaml.Node, path: Path) -> None:
    """A node reached twice is an anchor's value used again by an alias (*name): refused, named by its line. The walk
    stops at the first, so an alias bomb costs the nodes it holds, not what it would expand to."""
    seen: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            raise FilmError(f"{display_path(path)}:{node.start_mark.line + 1}: the value anchored here (&name) is "
                            f"used again by an alias (*name); write each value out in full (aliases are not read, "
                            f"so a few lines cannot expand to gigabytes)")
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            pending += [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            pending += node.value


def check_fields(
    mapping: Any,
    what: str,
    required: dict[str, type | tuple[type, ...]],
    optional: dict[str, type | tuple[type, ...]] | None = None,
) -> None:
    """Every required key present, no unknown key, each value of the expected type.

    `what` describes the mapping for the message ("GPU 'h100-sxm'", "beat 3").
    """
    optional = optional or {}
    if not isinstance(mapping, YamlMap):
        where = mapping.where() if hasattr(mapping, "where") else "?"
        raise FilmError(f"{where}: {what} should be a mapping of keys to values")
    allowed = {**required, **optional}
    for key in mapping:
        if key not in allowed:
            hint = close_matches(str(key), allowed)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise FilmError(
                f"{mapping.where(key)}: {what}: unknown key {key!r}{did_you_mean}; "
                f"allowed keys: {', '.join(allowed)}"
            )
    missing = [key for key in required if key not in mapping]
    if missing:
        raise FilmError(
            f"{mapping.where()}: {what}: missing {', '.join(repr(key) for key in missing)}; "
            f"add {'it' if len(missing) == 1 else 'them'} to the entry"
        )
    for key, expected in allowed.items():
        if key not in mapping or mapping[key] is None and key in optional:
            continue
        value = mapping[key]
        if isinstance(expected, tuple):
            ok = isinstance(value, expected) and not (isinstance(value, bool) and bool not in expected)
        else:
            ok = isinstance(value, expected) and not (isinstance(value, bool) and expected is not bool)
        if not ok:
            raise FilmError(
                f"{mapping.where(key)}: {what}: {key!r} should be {type_words(expected)}, "
                f"not {echo(value)}"
            )


def type_words(expected: type | tuple[type, ...]) -> str:
    names = {str: "text", int: "a whole number", float: "a number", bool: "true or false",
             list: "a list", dict: "a mapping", type(None): "null"}
    options = expected if isinstance(expected, tuple) else (expected,)
    words = []
    for option in options:
        word = names.get(option, option.__name__)
        if word not in words:
            words.append(word)
    return " or ".join(words)
