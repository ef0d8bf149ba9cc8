"""Frozen dataclasses to JSON and back, guided by their type hints.

The plan is a tree of frozen dataclasses (render/plan/types.py, render/specs/types.py). This
writes it as plain JSON (dataclasses become objects, tuples become lists) and reads it back
into the same types, checking each value against its field's type, so a timed plan read from
disk is the same typed object the narration wrote.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from typing import Any, Union

from render.errors import FilmError
from render.specs.fields import hints  # a dataclass's fields' types, read once


# A field's metadata: the field is left out of the JSON while it holds its default (a later addition that a plan
# without it writes exactly as before: the film as timed keeps its timed plan byte for byte).
OMITTED_WHEN_DEFAULT = {"omitted_when_default": True}


def to_data(value: Any) -> Any:
    """A dataclass tree as JSON-ready data (dicts, lists, numbers, text, null)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: to_data(getattr(value, field.name)) for field in dataclasses.fields(value)
                if not (field.metadata.get("omitted_when_default") and getattr(value, field.name) == field.default)}
    if isinstance(value, (tuple, list)):
        return [to_data(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_data(item) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} cannot be written as JSON")
    return value


def dumps(value: Any) -> str:
    return json.dumps(to_data(value), indent=2, ensure_ascii=False)


def loads(kind: type, text: str, where: str = "the plan") -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise FilmError(f"{where} is not valid JSON (line {error.lineno}): {error.msg}; "
                        f"make it again (make plan or make narration)") from None
    return from_data(kind, data, where)


def from_data(kind: Any, data: Any, where: str = "the plan") -> Any:
    """`data` read as `kind`; a value of the wrong type names where it is."""
    origin = typing.get_origin(kind)
    if kind is Any:
        return data
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(data, dict):
            raise mismatch(where, kind.__name__, data)
        fields = {field.name: field for field in dataclasses.fields(kind)}
        unknown = set(data) - set(fields)
        if unknown:
            raise FilmError(f"{where}: unexpected {', '.join(sorted(unknown))} in {kind.__name__}")
        values = {}
        for name, field in fields.items():
            if name in data:
                values[name] = from_data(hints(kind)[name], data[name], f"{where}.{name}")
            elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise FilmError(f"{where}: {kind.__name__} is missing {name!r}")
        return kind(**values)
    if origin in (Union, types.UnionType):
        options = typing.get_args(kind)
        if data is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return from_data(option, data, where)
            except FilmError:
                continue
        raise mismatch(where, " or ".join(getattr(option, "__name__", str(option)) for option in options), data)
    if origin is tuple:
        if not isinstance(data, list):
            raise mismatch(where, "a list", data)
        arguments = typing.get_args(kind)
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(from_data(arguments[0], item, f"{where}[{index}]") for index, item in enumerate(data))
        if len(arguments) != len(data):
            raise mismatch(where, f"{len(arguments)} values", data)
        return tuple(from_data(argument, item, f"{where}[{index}]")
                     for index, (argument, item) in enumerate(zip(arguments, data)))
    if origin is dict:
        if not isinstance(data, dict):
            raise mismatch(where, "a mapping", data)
        _, value_kind = typing.get_args(kind)
        return {key: from_data(value_kind, item, f"{where}.{key}") for key, item in data.items()}
    if kind is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise mismatch(where, "a number", data)
        return float(data)
    if kind is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise mismatch(where, "a whole number", data)
        return data
    if kind in (str, bool):
        if not isinstance(data, kind):
            raise mismatch(where, kind.__name__, data)
        return data
    raise TypeError(f"{where}: the codec cannot read {kind!r}")


def mismatch(where: str, expected: str, data: Any) -> FilmError:
    return FilmError(f"{where}: expected {expected}, found {json.dumps(data)[:60]}")
