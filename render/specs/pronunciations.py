"""Written text -> the text the voice reads, from the pronunciation table in data/."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from render.errors import FilmError
from render.files import display_path
from render.specs.yamlio import YamlMap, check_fields, load_yaml

Pronunciations = Sequence[tuple[str, str]]


def load_pronunciations(path: Path, named: Iterable[tuple[str, str]] = (),
                        countable: Iterable[tuple[str, str]] = ()) -> tuple[tuple[str, str], ...]:
    """The table's entries plus the names the data gives spoken forms (GPUs, models, data types).

    Each name also gets its possessive ("H100's" -> "H one hundred's"): hibari reads the
    bare "H100's" as "H one hundreds". Countable names (GPUs) also get their plural and its
    possessive ("four H100s", "four H100s'").
    """
    countable = list(countable)
    named = [*named, *countable]
    path = Path(path)
    document = load_yaml(path, "the pronunciation table (data/pronunciations.yaml)")
    if not isinstance(document, YamlMap):
        raise FilmError(f"{display_path(path)}: expected a top-level 'pronunciations:' list")
    check_fields(document, display_path(path), {"pronunciations": list})
    pairs: dict[str, str] = {}
    for index, entry in enumerate(document["pronunciations"]):
        check_fields(entry, f"pronunciation {index + 1}", {"written": str, "spoken": str}, {"why": str})
        if entry["written"] in pairs:
            raise FilmError(f"{entry.where('written')}: {entry['written']!r} is listed twice")
        pairs[entry["written"]] = entry["spoken"]
    for written, spoken in named:
        if written != spoken:
            pairs.setdefault(written, spoken)
    for written, spoken in list(pairs.items()):
        pairs.setdefault(f"{written}'s", f"{spoken}'s")
    for written, spoken in countable:
        if written != spoken:
            pairs.setdefault(f"{written}s", f"{spoken}s")
            pairs.setdefault(f"{written}s'", f"{spoken}s'")
    return tuple(sorted(pairs.items(), key=lambda pair: (-len(pair[0]), pair[0])))


def spoken_form(text: str, pronunciations: Pronunciations) -> str:
    """Replace each written form, whole words only, longest first, in one pass."""
    if not pronunciations:
        return text
    table = dict(pronunciations)
    pattern = compiled_pattern(tuple(table))
    return pattern.sub(lambda match: table[match.group(0)], text)


_PATTERNS: dict[tuple[str, ...], re.Pattern] = {}


def compiled_pattern(written: tuple[str, ...]) -> re.Pattern:
    if written not in _PATTERNS:
        alternatives = "|".join(re.escape(form) for form in sorted(written, key=len, reverse=True))
        _PATTERNS[written] = re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])")
    return _PATTERNS[written]
