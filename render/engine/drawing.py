"""The plumbing behind a beat, as Manim's renderer is behind its scene's authoring API: every play exactly its
frames, only a part of a beat when a render is split, stills instead of frames when asked, a play's frames drawn by
layers (render/engine/layers.py), and the checks that see the pictures (the safe area, the layout lint). A beat
module never imports this: it writes against render/engine/scene.py, whose BeatScene stands on DrawnScene."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from manim import Scene, config
from manim.utils.exceptions import EndSceneEarlyException
from manim.utils.iterables import list_update

from render.engine import copying, families, internals
from render.engine.camera import KeptPathCamera
from render.engine.cuts import BACKGROUND
from render.engine.layers import Layers
from render.engine.layout_lint import TextMorph, glyph_morphs, layout_problems, outside_safe_area, text_morphs
from render.files import PROJECT_ROOT

Progress = Callable[[int, int], None]  # (frames drawn, frames in the beat)


def shown_counters(mobjects) -> list[tuple[str, str, str, str]]:
    """Each counter on screen (scenes/figures/counters.py's Counter, found through its value, which names it: a play
    splits the groups its objects were added in) as Counter.counter_state says it."""
    found, seen = [], set()
    for mobject in mobjects:
        for part in mobject.get_family():
            counter = part.__dict__.get("counter")
            if counter is not None and id(counter) not in seen:
                seen.add(id(counter))
                state = counter.counter_state()
                if state is not None:
                    found.append(state)
    return found


class DrawnScene(Scene):
    """A scene whose frames are drawn exactly: each play a whole number of frames (`draw_play`), counted in
    `frames_done`, written only where they fall in `part`, or captured as `stills`, with what the checks found."""

    draws_only_changes = True  # see render/engine/layers.py; False draws every frame as Manim does

    def __init__(self, beat_id: str, frames: int, progress: Progress | None = None, checks_layout: bool = True,
                 stills: Iterable[int] = (), part: tuple[int, int] | None = None, **kwargs):
        """`frames`: the beat's whole length. `stills`: frame numbers to capture instead of rendering the beat
        (`make still`, the goldens): the scene runs in Manim's skipping mode, draws just those frames (into
        `self.stills`) and stops after the last, so a still late in a beat costs no more than one early in it.

        `part`: (first, end): render only the beat's frames first..end-1 (a part of a beat split across
        processes): the plays before it are skipped to their ends, as for a still; the play it starts in is
        played frame by frame, drawing from its first frame; the render stops after the play holding its last."""
        self.beat_id, self.frames_total = beat_id, frames
        self.stills_wanted = sorted(set(stills))
        self.stills: dict[int, np.ndarray] = {}
        self.counter_states: dict[int, list[tuple[str, str, str, str]]] = {}  # still frame -> each shown counter's
                                                                               # state (Counter.counter_state)
        self.frames_in_play = 0
        self.part = part
        self.frame_in_play = 0  # frames of the current play handed to the renderer so far
        if self.stills_wanted:
            kwargs["skip_animations"] = True
            checks_layout = False
        self.progress = progress
        self.safe_area_violations: set[str] = set()
        self.layout_problems: set[str] = set()
        self.places: dict[str, str] = {}  # each finding -> the scene's line (file:line) that played it first
        self.text_morphs: list[TextMorph] = []  # each change of words, as played (for the test of its middle frame)
        self.checks_layout = checks_layout
        self.frames_done = 0
        self.layers: Layers | None = None
        self.frames_layered = 0  # frames drawn over the play's still objects, not with them
        super().__init__(camera_class=KeptPathCamera, **kwargs)

    def setup(self) -> None:
        copying.install()   # copies share what never changes
        families.install()  # families listed in one pass
        self.camera.background_color = BACKGROUND
        self.frames_done = 0
        renderer = self.renderer

        def freeze_current_frame(duration: float) -> None:
            # Manim writes int(duration * fps) frames for a still hold; play() asks for
            # k - 0.5 frames' worth, so round to the k it means (see play()).
            frames = int(duration * config.frame_rate + 0.5 + 1e-6)
            kept = self.frames_of_part(self.frames_done, frames)
            if kept:
                renderer.add_frame(renderer.get_frame(), num_frames=kept)

        def render(scene, time, moving_mobjects=None) -> None:
            frame = self.frames_done + self.frame_in_play
            self.frame_in_play += 1
            if not self.frames_of_part(frame, 1):
                return  # before the part (in the play it starts in) or after it
            if scene.layers is None:
                renderer.update_frame(scene, moving_mobjects)
            else:
                scene.layers.draw(renderer, scene)
            renderer.add_frame(renderer.get_frame())

        # A skipped play (a lint, a still, the plays before a part) is not drawn: Manim would still draw its
        # background and its held frames. Nothing is drawn then but the stills (take_still).
        save_static_frame_data, update_frame = renderer.save_static_frame_data, renderer.update_frame

        def save_static_unless_skipping(scene, static):
            if renderer.skip_animations:
                internals.install(renderer, "static_image", None)
                return None
            return save_static_frame_data(scene, static)

        def update_unless_skipping(*args, **kwargs) -> None:
            if not renderer.skip_animations:
                update_frame(*args, **kwargs)

        # (Manim's renderer internals, checked against the tested version: render/engine/internals.py)
        for name, hook in (("freeze_current_frame", freeze_current_frame), ("render", render),
                           ("save_static_frame_data", save_static_unless_skipping),
                           ("update_frame", update_unless_skipping)):
            internals.install(renderer, name, hook)

    def frames_of_part(self, first: int, count: int) -> int:
        """How many of the frames first..first+count-1 this render writes (all of them, unless a part)."""
        if self.part is None:
            return count
        return max(0, min(first + count, self.part[1]) - max(first, self.part[0]))

    def draw_play(self, animations, frames: int, **kwargs) -> None:
        """Play `animations` for exactly `frames` frames.

        Manim draws the frames at times arange(0, run_time, 1/fps); asking for k - 0.5 frames'
        worth always yields exactly k frames, where k/fps could yield k or k + 1.
        """
        asked = 1 if frames == 1 else frames - 0.5  # Manim refuses less than one frame
        self.frames_in_play = frames
        self.frame_in_play = 0
        if self.checks_layout:
            self.layout_problems |= self.placed(glyph_morphs(animations))
        self.text_morphs += text_morphs(animations, self.frames_done, frames)
        if self.part is not None:
            if self.frames_done >= self.part[1]:
                raise EndSceneEarlyException()  # the part is written; Manim closes its file
            # A play wholly before the part jumps to its end, as Manim's skipping does.
            internals.install(self.renderer, "_original_skipping_status", self.frames_done + frames <= self.part[0])
        super().play(*animations, run_time=asked / config.frame_rate, **kwargs)
        if self.stills_wanted:
            # A held frame (a wait with nothing moving) never reaches play_internal: its frames are the picture
            # as it stands.
            for frame in self.stills_within_play():
                self.take_still(frame)
            if len(self.stills) == len(self.stills_wanted):
                raise EndSceneEarlyException()
        self.frames_done += frames
        if self.stills_wanted:
            return
        self.check_safe_area()
        self.check_layout()
        if self.progress is not None:
            self.progress(self.frames_done, self.frames_total)

    def play_internal(self, skip_rendering: bool = False) -> None:
        """Manim's frame loop; when taking stills, first each wanted frame of this play at its own time (Manim
        draws frame i of a play at t = i / fps), then on to the play's end in one step, as skipping does."""
        for frame in self.stills_within_play():
            self.update_to_time((frame - self.frames_done) / config.frame_rate)
            self.take_still(frame)
        super().play_internal(skip_rendering)
        if self.layers is not None:
            self.layers.check_still(self.beat_id)
            self.frames_layered += self.layers.frames_layered
            self.layers = None

    def get_moving_and_static_mobjects(self, animations):
        """Manim's split of a play's picture, and the layers that draw it (when frames are drawn)."""
        moving, static = super().get_moving_and_static_mobjects(animations)
        drawing = self.draws_only_changes and not self.renderer.skip_animations
        self.layers = Layers(self, moving, animations) if drawing else None
        return moving, static

    def stills_within_play(self) -> list[int]:
        return [frame for frame in self.stills_wanted
                if self.frames_done <= frame < self.frames_done + self.frames_in_play and frame not in self.stills]

    def take_still(self, frame: int) -> None:
        """Draw the picture as the Cairo renderer would for this frame: the play's still objects as the
        background, its moving ones over them (all of them again, for a hold, as Manim does)."""
        camera = self.renderer.camera
        camera.reset()
        if self.static_mobjects:
            camera.capture_mobjects(self.static_mobjects, include_submobjects=True)
        moving = self.moving_mobjects or list_update(self.mobjects, self.foreground_mobjects)
        camera.capture_mobjects(moving, include_submobjects=True)
        self.stills[frame] = camera.pixel_array.copy()
        self.counter_states[frame] = shown_counters(self.mobjects)

    def check_safe_area(self) -> None:
        """Note anything visible outside the safe area, for the render's result."""
        self.safe_area_violations |= self.placed(outside_safe_area(self.mobjects))

    def check_layout(self) -> None:
        """Note text that overlaps text, crosses a frame's edge or a line, or is too small, after each play."""
        if self.checks_layout:
            self.layout_problems |= self.placed(layout_problems(self.mobjects))

    def placed(self, findings: set[str]) -> set[str]:
        """`findings`, each new one noted with the line of the scenes that played it (the innermost of scenes/ on the
        stack): the studio shows a finding where it was made."""
        new = findings - set(self.places)
        if new:
            line = scene_line()
            self.places.update({finding: line for finding in new if line})
        return findings


def scene_line() -> str:
    """The innermost line of the scenes on the stack, as file:line from the project's root ('' where none is)."""
    scenes = PROJECT_ROOT / "scenes"
    for frame in reversed(traceback.extract_stack()):
        path = Path(frame.filename)
        if path.is_relative_to(scenes):
            return f"{path.relative_to(PROJECT_ROOT)}:{frame.lineno}"
    return ""
