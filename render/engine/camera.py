"""Manim's camera, keeping the outline it traced for each object while the object's points stay the same.

Before filling or stroking an object, Manim's Cairo camera splits its points into sub-paths and traces them
curve by curve, in Python, every frame: most of the drawing time of a frame full of text and bricks. An
object drawn again with the same points (a counter holding its value, a label next to something moving)
gets the outline Cairo made for it last time. Cairo keeps a path in device space, in 1/256ths of a pixel,
and hands it back in the units it was traced in, so appending it again gives the same path: the same pixels.
"""

from __future__ import annotations

import weakref

import numpy as np
from manim import Camera


class KeptPathCamera(Camera):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # object -> (its points when traced, the context's matrix then, Cairo's path); an entry goes with its object
        self.outlines: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def set_cairo_context_path(self, ctx, vmobject):
        points = vmobject.points
        kept = self.outlines.get(vmobject)
        if kept is not None and kept[1] == ctx.get_matrix() and np.array_equal(kept[0], points):
            ctx.new_path()
            ctx.append_path(kept[2])
            return self
        super().set_cairo_context_path(ctx, vmobject)
        if len(points):  # Manim leaves the context's path alone for an object with no points
            self.outlines[vmobject] = (points.copy(), ctx.get_matrix(), ctx.copy_path())
        return self
