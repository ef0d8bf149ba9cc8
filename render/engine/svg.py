"""Manim's own cache of parsed SVGs, as the renderer's kept shapes (render/video/shapes.py) use it: its key for an
SVG mobject and its dictionary of parsed shapes for this process, neither of them in svg_mobject's `__all__`, both
listed in render/engine/internals.py's PATCHED and reached only here."""

from __future__ import annotations

from render.engine.internals import install


def manim_key(mobject) -> int:
    """Manim's own key for the shape an SVG mobject parses to (what its in-memory cache is keyed by)."""
    from manim.mobject.svg import svg_mobject

    return svg_mobject.hash_obj(mobject.hash_seed)


def parsed(key: int):
    """The shape Manim parsed for `key` in this process, or None."""
    from manim.mobject.svg import svg_mobject

    return svg_mobject.SVG_HASH_TO_MOB_MAP.get(key)


def remember(key: int, shape) -> None:
    """`shape` put in Manim's cache for `key`, as its own parse would put it."""
    from manim.mobject.svg import svg_mobject

    svg_mobject.SVG_HASH_TO_MOB_MAP[key] = shape


def forget_source(part) -> None:
    """What a piece of a parsed SVG was made from (svgelements' path, its `path_obj`): not needed once its points
    are made, and not worth keeping in a kept shape."""
    if hasattr(part, "path_obj"):
        install(part, "path_obj", None)
