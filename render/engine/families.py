"""Listing an object's family (itself and all its parts, in Manim's order) in one pass.

Manim lists a family with nested generators, so each member costs a step through every generator above
it, and the camera, the animations and the updaters list families many times a frame (a fifth of a frame's
drawing time in the profile). This walk gives the same list: each member once, in the same order, the
last of its places kept where a part belongs to two parents, and a part that contains its own ancestor
not followed back up.
"""

from __future__ import annotations

from manim import Mobject
from manim.utils.iterables import remove_list_redundancies

from render.engine import internals


def get_family(mobject: Mobject, recurse: bool = True) -> list[Mobject]:
    members: list[Mobject] = []
    on_path: set[Mobject] = set()  # (an object hashes by its identity)

    def walk(node: Mobject) -> None:
        if node in on_path:
            return
        on_path.add(node)
        members.append(node)
        for part in node.submobjects:
            walk(part)
        on_path.discard(node)

    walk(mobject)
    return members if len(set(members)) == len(members) else remove_list_redundancies(members)


manims_get_family = Mobject.get_family


def install() -> None:
    """Families listed in one pass, from here on (render/engine/internals.py lists what is replaced)."""
    internals.install(Mobject, "get_family", get_family)
