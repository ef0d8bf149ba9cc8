"""Copying a picture's objects without copying what never changes.

Manim copies objects whenever an animation begins (its start, its target, the parts of a transform), and a
copy is a deep copy, attribute by attribute: each number and string of each part went through
`copy.deepcopy`, and each colour was rebuilt from its pickled form. Numbers, strings and colours are values
(Manim makes a new colour rather than change one; so are its enums), so a copy shares them; arrays of numbers are
copied at once; everything else is deep-copied as before. What a copy holds is what `copy.deepcopy` gave it.
"""

from __future__ import annotations

import copy

import numpy as np
import svgelements
from manim import ManimColor, Mobject
from manim.constants import CapStyleType, LineJointType

from render.engine import internals

SHARED = frozenset({int, float, bool, str, bytes, complex, type(None), np.float64, np.int64, np.bool_, ManimColor,
                    LineJointType, CapStyleType})


def copy_mobject(mobject: Mobject, memo: dict) -> Mobject:
    cls = mobject.__class__
    result = cls.__new__(cls)
    memo[id(mobject)] = result
    for key, value in mobject.__dict__.items():
        kind = type(value)
        if kind in SHARED:
            pass
        elif kind is np.ndarray and value.dtype != object:
            copied = memo.get(id(value))
            if copied is None:  # one array held twice is one array in the copy, as deepcopy has it
                copied = memo[id(value)] = value.copy()
            value = copied
        else:
            value = copy.deepcopy(value, memo)
        setattr(result, key, value)
    result.original_id = str(id(mobject))
    return result


def itself(value, memo):
    """A value's copy: the value (a colour is never changed in place; nor is a glyph's parsed path)."""
    return value


def install() -> None:
    """Copies share what never changes, from here on (render/engine/internals.py lists what is replaced)."""
    internals.install(Mobject, "__deepcopy__", copy_mobject)
    internals.install(ManimColor, "__deepcopy__", itself)
    # A glyph keeps the SVG path its points were made from, read once and never changed: its copies share it.
    # Deep-copying it was nine tenths of copying a text.
    internals.install(svgelements.Path, "__deepcopy__", itself)
