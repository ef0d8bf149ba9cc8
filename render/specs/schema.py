"""A data file's entry read as its dataclass: its keys, types, ranges and choices checked against the fields
(render/specs/fields.py), each problem named by file, line and key."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from render.errors import FilmError
from render.specs.fields import Bounds, bounds_of, hints, out_of_range, record_type, yaml_fields, yaml_keys
from render.specs.yamlio import YamlMap, check_fields
from render.text import echo


def from_yaml(kind: type, entry: Any, label: str, then: Callable[[YamlMap, str], None] | None = None) -> Any:
    """An entry of a data file as `kind`: its keys and types, then its ranges and choices checked (then `then`'s
    checks of the whole entry), each problem named by file:line and `label` ("GPU 'h100-sxm'"); lists of
    records are read the same way, item by item."""
    must, may = yaml_keys(kind)
    check_fields(entry, label, must, may)
    check_values(kind, entry, label)
    if then is not None:
        then(entry, label)
    values = {}
    for field in yaml_fields(kind):
        if field.name not in entry or entry[field.name] is None and field.name in may:
            continue
        values[field.name] = read_value(hints(kind)[field.name], field, entry[field.name], label)
    for field in dataclasses.fields(kind):
        written = getattr(entry, "written", {}).get(field.metadata.get("text_of", ""))
        if written is not None:
            values[field.name] = written
    return kind(**values)


def read_value(hint: Any, field: dataclasses.Field, value: Any, label: str) -> Any:
    """A checked YAML value as the field holds it: records read as records, lists as tuples; numbers as given
    (an 80 stays 80, as the data file wrote it)."""
    if "read" in field.metadata:
        return field.metadata["read"](value)
    element = record_type(hint)
    if element is not None:
        return tuple(from_yaml(element, item, f"{label}, {field.metadata.get('item', field.name)} {index + 1}")
                     for index, item in enumerate(value))
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def check_values(kind: type, entry: YamlMap, label: str) -> None:
    """Ranges first (a value outside is a typo, not a chip), then the fields that take one of a few words."""
    for name, bounds in bounds_of(kind).items():
        check_range(entry, name, label, bounds)
    for field in yaml_fields(kind):
        if "one_of" not in field.metadata or entry.get(field.name) is None:
            continue
        choices, why, either = field.metadata["one_of"]
        if entry[field.name] not in choices:
            words = " or ".join(choices) if either else f"one of {', '.join(map(str, choices))}"
            raise FilmError(f"{entry.where(field.name)}: {label}: {field.name!r} must be {words}"
                            f"{f' ({why})' if why else ''}, not {echo(entry[field.name])}")


def check_range(mapping: YamlMap, key: str, label: str, bounds: Bounds) -> None:
    """A number must be finite and within its physical bounds; the message says which and why."""
    value = mapping.get(key)
    problem = out_of_range(value, bounds)
    if problem:
        raise FilmError(f"{mapping.where(key)}: {label}: {key!r} is {echo(value)}; {problem}")
