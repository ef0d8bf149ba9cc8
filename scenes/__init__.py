"""The film's pictures: one module per scene family, drawing only what the timed plan says.

Each beat is a BeatScene subclass (scenes/base.py), registered with its beat and family in
render/plan/registry.py. Scenes compose the shared objects of scenes/helpers.py in the
palette of scenes/style.py and write every number with render/formatting.py; they read the
plan's attributes and never read YAML or compute physics.
"""

from importlib import import_module

from render.errors import FilmError
from render.plan.registry import scene_entry


def scene_class(beat_id: str):
    """The BeatScene subclass that draws `beat_id`."""
    entry = scene_entry(beat_id)
    if entry is None:
        raise FilmError(f"no scene draws beat {beat_id!r}; register one in render/plan/registry.py")
    return getattr(import_module(entry.module), entry.name)
