"""Which scene draws a beat: its id names it. Beat `my-new-beat` is drawn by class `MyNewBeat` in
`scenes/my_new_beat.py`, so there is nothing to register. Plain data and the standard library (no Manim):
the storyboard's validation (`make plan`) reads the module's source to refuse a beat no class draws before
anything renders, and scenes/__init__.py imports the class at render time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from render.code import top_classes
from render.files import PROJECT_ROOT

# Lower-case words joined by hyphens, at most 60 characters: a module's name (a longer one no file system takes).
BEAT_ID = re.compile(r"(?=[a-z0-9-]{1,60}\Z)[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class SceneLocation:
    """Where a beat's scene class lives (the class itself, render/engine/scene.py's BeatScene, draws the beat)."""

    beat: str    # the storyboard's beat id
    module: str  # scenes.<id with underscores>
    name: str    # the CamelCase of the id

    @property
    def path(self) -> str:
        return self.module.replace(".", "/") + ".py"


def scene_of(beat_id: str) -> SceneLocation:
    """The scene that draws `beat_id` (an id BEAT_ID matches; the storyboard refuses others)."""
    return SceneLocation(beat_id, "scenes." + beat_id.replace("-", "_"),
                     "".join(word[:1].upper() + word[1:] for word in beat_id.split("-")))


def scene_problem(beat_id: str, root: Path = PROJECT_ROOT) -> str:
    """Why no class draws `beat_id` ('' when one does): its module is missing or lacks the class. A module that does
    not parse is left to the cue check and the render, which name its file and line."""
    scene = scene_of(beat_id)
    path = root / scene.path
    if not path.is_file():
        return f"there is no {scene.path}: write class {scene.name}(BeatScene) there"
    classes = top_classes(path)
    if classes is None:
        return ""
    if scene.name not in classes:
        return f"{scene.path} has no class {scene.name}: a beat's class is the CamelCase of its id"
    return ""
