"""The one list of the beats a film can have and the scene class that draws each.

The storyboard names a beat's scene family; this says which module of scenes/ holds that
family and which class in it draws the beat. It is plain data (no Manim import), so the
storyboard's validation (`make plan`) refuses an unknown family or a beat no class draws
before anything renders, and scenes/__init__.py imports the class from here at render time.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SceneEntry:
    beat: str     # the storyboard's beat id
    family: str   # the storyboard's `scene`
    module: str   # where the class lives
    name: str     # the BeatScene subclass that draws the beat

    @property
    def path(self) -> str:
        return self.module.replace(".", "/") + ".py"


# In film order, each beat's class in the module named by its id. Add a beat here, in its module, and in the
# storyboard.
SCENES = (
    SceneEntry("two-waits", "two-waits", "scenes.two_waits", "TwoWaits"),
    SceneEntry("prefill", "sluice-and-tap", "scenes.prefill", "Prefill"),
    SceneEntry("decode", "sluice-and-tap", "scenes.decode", "Decode"),
    SceneEntry("roofline", "roofline", "scenes.roofline", "Roofline"),
    SceneEntry("batching", "batching", "scenes.batching", "Batching"),
    SceneEntry("wasted-money", "roofline", "scenes.wasted_money", "WastedMoney"),
    SceneEntry("measured", "measured-timings", "scenes.measured", "Measured"),
    SceneEntry("cache-rides-along", "measured-timings", "scenes.cache_rides_along", "CacheRidesAlong"),
    SceneEntry("two-budgets", "two-waits", "scenes.two_budgets", "TwoBudgets"),
)

BEAT_IDS = tuple(entry.beat for entry in SCENES)
FAMILIES = {entry.family: ", ".join(dict.fromkeys(other.module for other in SCENES if other.family == entry.family))
            for entry in SCENES}  # family -> its modules


def scene_entry(beat_id: str) -> SceneEntry | None:
    return next((entry for entry in SCENES if entry.beat == beat_id), None)


def beats_of(family: str) -> list[str]:
    return [entry.beat for entry in SCENES if entry.family == family]
