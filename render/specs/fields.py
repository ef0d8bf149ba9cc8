"""What a data file may hold, written once beside the dataclass field it fills.

A field made with `datum` carries its physical range and unit and the values it may take; its type hint says
what YAML may write there, and a field without a default is required. render/specs/schema.py checks a data
file's entry against them, `film measure` writes a dataset through them (`to_yaml`), an imported Hugging Face
config is held to the same ranges (`bounds_of`) and the pages write a figure in its field's unit. Pure: the
standard library only (the spec sheets in types.py are made of these fields, and stay pure maths's data).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import math
import types
import typing
from typing import Any, Union

Bounds = tuple[float, float, str]  # low, high, and the unit the message names ("GiB", "bytes/s (10 GB/s to …)")


def datum(low: float | None = None, high: float | None = None, unit: str = "", *, note: str = "", one_of: tuple = (),
          why: str = "", either: bool = False, default: Any = dataclasses.MISSING, yaml: bool = True,
          read: Any = None, written_as: tuple[type, ...] | None = None, item: str = "",
          text_of: str = "") -> Any:
    """A dataclass field with what its data file may say: `low`..`high` in `unit` (`note` adds to the unit in a
    message: "(10 GB/s to 100 TB/s)"; the pages write the value in `unit`), or one of `one_of` (`why`
    says what the choice means; `either`: the message says "a or b"); `yaml=False` for a field the loader fills
    itself. `written_as` widens what
    YAML may give (a date for text), `read` turns it into the field's value, and `item` names one element of
    a list of records for messages ("prompt 2"). `text_of` (with yaml=False): the field holds that key's value as the
    file writes it ("0.30", whose precision its float 0.3 has lost)."""
    metadata = {"yaml": yaml, "unit": unit}
    if low is not None:
        metadata["bounds"] = (low, high, f"{unit} {note}".strip())
    if one_of:
        metadata["one_of"] = (tuple(one_of), why, either)
    if read is not None:
        metadata["read"] = read
    if written_as is not None:
        metadata["written_as"] = written_as
    if item:
        metadata["item"] = item
    if text_of:
        metadata["text_of"] = text_of
    return dataclasses.field(default=default, metadata=metadata)


@functools.lru_cache(maxsize=None)
def hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def yaml_fields(kind: type) -> tuple[dataclasses.Field, ...]:
    return tuple(field for field in dataclasses.fields(kind) if field.metadata.get("yaml", True))


def required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


@functools.lru_cache(maxsize=None)
def yaml_keys(kind: type) -> tuple[dict[str, tuple[type, ...]], dict[str, tuple[type, ...]]]:
    """The keys a data file must and may give for `kind`, each with the YAML types it accepts."""
    must, may = {}, {}
    for field in yaml_fields(kind):
        accepted = field.metadata.get("written_as") or yaml_types(hints(kind)[field.name])
        (must if required(field) else may)[field.name] = accepted
    return must, may


def yaml_types(hint: Any) -> tuple[type, ...]:
    """What YAML may write for a type hint: any number for a float, a list for a tuple."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        found: list[type] = []
        for option in typing.get_args(hint):
            found += [kind for kind in yaml_types(option) if kind not in found]
        return tuple(found)
    if hint is float:
        return (int, float)
    if origin in (tuple, list) or hint in (tuple, list):
        return (list,)
    if origin is dict or hint is dict:
        return (dict,)
    return (hint,)


@functools.lru_cache(maxsize=None)
def bounds_of(kind: type) -> dict[str, Bounds]:
    """Every ranged field of `kind`, in field order."""
    return {field.name: field.metadata["bounds"] for field in dataclasses.fields(kind) if "bounds" in field.metadata}


def choices_of(kind: type, name: str) -> tuple:
    return next(field.metadata["one_of"][0] for field in dataclasses.fields(kind) if field.name == name)


def record_type(hint: Any) -> type | None:
    """X for tuple[X, ...] where X is a dataclass."""
    if typing.get_origin(hint) is tuple:
        arguments = typing.get_args(hint)
        if len(arguments) == 2 and arguments[1] is Ellipsis and dataclasses.is_dataclass(arguments[0]):
            return arguments[0]
    return None


def out_of_range(value: Any, bounds: Bounds) -> str | None:
    """'it must be between 64 and 1,000,000 values' for a number outside its bounds; None within them
    (or for what is not a number: the type checks say that)."""
    low, high, unit = bounds
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if math.isfinite(as_float(value)) and low <= value <= high:
        return None
    return f"it must be between {bound_text(low)} and {bound_text(high)} {unit}".rstrip()


def as_float(value: int | float) -> float:
    """A YAML or JSON number as a float: a whole number too large for one (309 digits and more, where float() raises
    OverflowError) is an infinity of its sign, which every range check then refuses with its own message."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def bound_text(value: float) -> str:
    """1e+10 for the very large, 10,000,000 for counts, 0.0001 for the small."""
    return f"{value:,.0f}" if 1 <= value < 1e9 and value == int(value) else f"{value:g}"


def to_yaml(record: Any) -> dict[str, Any]:
    """A record as its data file writes it, in field order: every required key, and each optional one that
    differs from its default (a record of records likewise); tuples as lists."""
    data = {}
    for field in yaml_fields(type(record)):
        value = getattr(record, field.name)
        if not required(field) and value == field.default:
            continue
        data[field.name] = plain(value)
    return data


def plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_yaml(value)
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def date_text(value: str | datetime.date) -> str:
    """YAML reads an unquoted 2026-09-11 as a date; the dataset keeps it as written."""
    return str(value)
