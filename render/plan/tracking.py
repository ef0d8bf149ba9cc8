"""Which values of the plan a scene reads, so a cached beat re-renders only when one of them changes.

A scene sees the plan through `Tracked`: reading `plan.numbers.prefill.ops` records the path
"numbers.prefill.ops". A method called through a view runs on the view, so what it reads is recorded
(`plan.choice.times("H100")` records "choice.gpus"), not the method: a method's value is its object's
whole text, which changes with anything in it (another GPU's bandwidth redrew every beat that named a GPU).
The beat cache (render/video/cache.py) keys a beat's video by the values at the paths its scene read last time,
read back with `value_at`. One definition of a path serves both sides.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

from render.plan import codec


class Tracked:
    """A read-only view of part of the plan that records the path of every value read through it.

    Groups (dataclasses) come back as further views; a leaf value, or a tuple or mapping, is
    recorded whole and returned as it is. A misspelt name is an AttributeError, as on the plan.
    """

    __slots__ = ("_target", "_path", "_reads")

    def __init__(self, target: Any, path: str, reads: set[str]):
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_reads", reads)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if inspect.ismethod(value) and value.__self__ is self._target:
            return functools.partial(value.__func__, self)
        path = f"{self._path}.{name}" if self._path else name
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return Tracked(value, path, self._reads)
        self._reads.add(path)
        return value

    def __bool__(self) -> bool:
        """A group the plan may leave out (None) is false, as itself: `{% if quantised %}` reads it."""
        if self._target is None:
            self._reads.add(self._path)
        return self._target is not None and bool(self._target)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("the plan is read-only")

    def __repr__(self) -> str:
        return f"Tracked({self._path or 'plan'}: {type(self._target).__name__})"


def untracked(value: Any) -> Any:
    """What a view shows (the value itself for anything else): for messages about it."""
    return object.__getattribute__(value, "_target") if isinstance(value, Tracked) else value


def value_at(root: Any, path: str) -> Any:
    """The JSON form of the value at a recorded path ('numbers.prefill.ops'), or '<missing>'."""
    value = root
    for name in path.split("."):
        try:
            value = getattr(value, name)
        except AttributeError:
            return "<missing>"
    return codec.to_data(value)
