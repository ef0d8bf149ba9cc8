"""The film's pictures: one module per scene family, drawing only what the timed plan says.

Each beat is a BeatScene subclass; `SCENES` maps a beat id to its class. Scenes import the
shared helpers (scenes/helpers.py), the palette (scenes/style.py) and the one number
formatter (render/formatting.py); they never read YAML or compute physics.
"""

from importlib import import_module

# Scene family (the storyboard's `scene`) -> module in this package.
FAMILIES = {
    "two-waits": "scenes.two_waits",
    "sluice-and-tap": "scenes.sluice_and_tap",
    "roofline": "scenes.roofline",
    "batching": "scenes.batching",
    "measured-timings": "scenes.measured_timings",
}


def scene_class(family: str, beat_id: str):
    """The BeatScene subclass that draws `beat_id`, from its family's module."""
    module = import_module(FAMILIES[family])
    return module.BEATS[beat_id]
