"""Draw only what changes: what a play leaves still is drawn once, what it moves is drawn each frame.

Manim's Cairo renderer draws once, as a background, the objects that come before the first one that
moves, and every frame all the others: once a counter or one brick of the wall moves, everything after it
in the picture (the rest of the wall, the cores, the labels) is drawn again sixty times a second. A play's
`Layers` also draws once, into a second background, the objects after that first mover that do not move
themselves, and a frame starts from it whenever nothing that moves comes near any of them; otherwise the
frame is drawn as Manim draws it. The pixels are the same either way: objects that share no pixel can be
drawn in any order.
"""

from __future__ import annotations

import numpy as np
from manim import VMobject, config

from render.errors import FilmError

MITER_REACH = 5.0     # a corner's miter reaches out up to 5 line widths (Cairo's miter limit is 10 half-widths)
SMOOTHING_PIXELS = 2  # anti-aliasing touches a pixel or so beyond a shape's edge
LOOKAHEAD = 0.3       # scene units: a still object this close to a moving one is drawn each frame from then
                      # on, so the background is drawn again seldom, not each time a mover edges closer


def changing_mobjects(scene, animations) -> list:
    """The objects a play changes, each with its family: what its animations move, whatever has an updater,
    and the scene's foreground (the same tests Manim's `get_moving_mobjects` applies, to each object alone)."""
    tops = []

    def collect(animation) -> None:
        tops.append(animation.mobject)
        for inner in getattr(animation, "animations", None) or ():
            collect(inner)

    for animation in animations:
        collect(animation)
    tops += [mobject for mobject in scene.get_mobject_family_members() if mobject.updaters]
    tops += list(scene.foreground_mobjects)
    return list(dict.fromkeys(tops))


def stroke_reach(mobject) -> float:
    """How far, in scene units, its stroke can reach beyond its points (Manim draws width w as w / 100)."""
    if not isinstance(mobject, VMobject):
        return 0.0
    return max(mobject.get_stroke_width(), mobject.get_stroke_width(background=True)) * 0.01 * MITER_REACH


def boxes(mobjects, whole_family: bool) -> np.ndarray:
    """(left, right, bottom, top) of each (with its family, or alone), widened by how far strokes and
    smoothing reach; a row of NaN for one with no points (it is drawn nowhere)."""
    smoothing = SMOOTHING_PIXELS * config.frame_width / config.pixel_width
    rows = []
    for mobject in mobjects:
        parts = mobject.get_family() if whole_family else [mobject]
        points = mobject.get_all_points() if whole_family else mobject.points
        if not len(points):
            rows.append((np.nan,) * 4)
            continue
        reach = max(stroke_reach(part) for part in parts) + smoothing
        left, right, bottom, top = extent(points)
        rows.append((left - reach, right + reach, bottom - reach, top + reach))
    return np.array(rows, dtype=float).reshape(-1, 4)


def extent(points: np.ndarray) -> tuple[float, float, float, float]:
    """(left, right, bottom, top) of some points."""
    return points[:, 0].min(), points[:, 0].max(), points[:, 1].min(), points[:, 1].max()


def looks(mobjects) -> list:
    """What decides how each object is drawn, to tell whether a still object stayed still."""
    found = []
    for mobject in mobjects:
        parts = [mobject.points.tobytes()]
        for name in ("fill_rgbas", "stroke_rgbas", "background_stroke_rgbas", "stroke_width",
                     "background_stroke_width"):
            value = getattr(mobject, name, None)
            if value is not None:
                parts.append(np.asarray(value).tobytes())
        found.append(hash(tuple(parts)))
    return found


class Layers:
    """One play's picture in layers: Manim's background (`static_image`); over it, once, the still objects
    after the first mover that nothing moving has come near; each frame, the rest in Manim's order."""

    def __init__(self, scene, moving: list, animations):
        camera = scene.renderer.camera
        self.changing_tops = [top for top in changing_mobjects(scene, animations) if top.get_family()]
        changed = {id(part) for top in self.changing_tops for part in top.get_family()}
        self.still = [mobject for mobject in camera.get_mobjects_to_display(moving) if id(mobject) not in changed]
        self.still_boxes: np.ndarray | None = None
        self.covers: np.ndarray | None = None  # covers[i, j]: still j is drawn after still i and overlaps it
        self.near = np.zeros(len(self.still), dtype=bool)  # drawn each frame: something moving came near
        self.baked: set[int] = set()                        # ids drawn into the background
        self.background: np.ndarray | None = None
        self.still_looks: list | None = None
        self.frames_layered = 0

    def find_near(self) -> bool:
        """Mark the still objects that something moving is close to now (and those drawn over them);
        whether any is newly marked."""
        if self.still_boxes is None:
            self.still_boxes = boxes(self.still, whole_family=False)
            still = self.still_boxes
            self.covers = np.triu(touching(still, still), k=1)
        moving = boxes(self.changing_tops, whole_family=True)
        moving[:, [0, 2]] -= LOOKAHEAD
        moving[:, [1, 3]] += LOOKAHEAD
        fresh = touching(moving, self.still_boxes).any(axis=0) & ~self.near
        if not fresh.any():
            return False
        while fresh.any():  # a still object drawn over one that is now drawn each frame is drawn each frame too
            self.near |= fresh
            fresh = self.covers[fresh].any(axis=0) & ~self.near
        return True

    def draw(self, renderer, scene) -> None:
        """Draw this frame into the renderer's camera."""
        if not self.still:
            renderer.update_frame(scene, scene.moving_mobjects)
            return
        camera = renderer.camera
        if self.find_near() or self.background is None:
            kept = [mobject for mobject, near in zip(self.still, self.near) if not near]
            if renderer.static_image is not None:
                camera.set_frame_to_background(renderer.static_image)
            else:
                camera.reset()
            camera.capture_mobjects(kept, include_submobjects=False)
            self.background = camera.pixel_array.copy()
            self.baked = {id(mobject) for mobject in kept}
            if self.still_looks is None:  # as they were first drawn, for check_still
                self.still_looks = looks(self.still)
        camera.set_frame_to_background(self.background)
        # Manim's order for this frame's moving list, less what the background holds.
        in_order = camera.get_mobjects_to_display(scene.moving_mobjects)
        camera.capture_mobjects([mobject for mobject in in_order if id(mobject) not in self.baked],
                                include_submobjects=False)
        self.frames_layered += bool(self.baked)

    def check_still(self, beat_id: str) -> None:
        """At the play's end: the objects drawn once must not have changed (an updater on one object that
        moves another would leave the other's old picture in the background)."""
        if self.still_looks is None:
            return
        for mobject, before, after in zip(self.still, self.still_looks, looks(self.still)):
            if before != after:
                raise FilmError(f"beat {beat_id!r}: a {type(mobject).__name__} changed during a play although "
                                f"nothing animates it and it has no updater of its own (another object's updater "
                                f"changed it); give it the updater, or animate it")


def touching(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """[i, j]: box i of `first` and box j of `second` overlap (a box of NaN, nothing drawn, touches nothing)."""
    return (first[:, None, 0] <= second[None, :, 1]) & (second[None, :, 0] <= first[:, None, 1]) \
        & (first[:, None, 2] <= second[None, :, 3]) & (second[None, :, 2] <= first[:, None, 3])
