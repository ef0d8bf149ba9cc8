"""The layout lint: what a beat's picture gets wrong after each animation, from Manim's bounding boxes alone (no frame
is drawn): text over text, text too small, text over a frame's edge or crossed by a line it does not label, and
anything visible outside the safe area. BeatScene runs it after every play; `render/video/beats.py` reports it."""

from __future__ import annotations

from dataclasses import dataclass

from manim import config

from render.engine.layers import extent


# Text at font size 1 is this many pixels tall (ascender to descender) at 1080p; the brief asks for 28.
PIXELS_PER_FONT_SIZE = 1.835
MIN_TEXT_PIXELS = 28
FRAME_OVERLAP = 0.002  # square units of a text inside a frame before its edge counts as crossed


def visible_texts(mobjects) -> list:
    """The visible words and formulas on screen (each as a whole, not its letters)."""
    from manim import MathTex, Text

    found, seen = [], set()

    def visit(mobject) -> None:
        if id(mobject) in seen:
            return
        seen.add(id(mobject))
        if isinstance(mobject, (Text, MathTex)):
            if not is_invisible(mobject) and mobject.width > 0:
                found.append(mobject)
            return
        for child in mobject.submobjects:
            visit(child)

    for mobject in mobjects:
        visit(mobject)
    return found


def visible_lines(mobjects) -> list:
    from manim import Line

    return [mobject for top in mobjects for mobject in top.get_family()
            if isinstance(mobject, Line) and not is_invisible(mobject) and mobject.get_stroke_opacity() > 0]


def visible_frames(mobjects) -> list:
    """The outlined boxes text sits in: pills, cards, chip packages, windows."""
    from manim import RoundedRectangle

    return [mobject for top in mobjects for mobject in top.get_family()
            if isinstance(mobject, RoundedRectangle) and mobject.get_stroke_opacity() > 0
            and mobject.get_stroke_width() > 0 and not is_invisible(mobject)]


def texts_over_frame_edges(texts: list, mobjects) -> set[str]:
    """Text partly inside a frame and partly out (a card's number grown a digit): each as a problem.
    `texts` are (text, bounding box) pairs."""
    problems = set()
    for frame in visible_frames(mobjects):
        frame_box = bounding_box(frame)
        for text, box in texts:
            if overlap_area(box, frame_box) > FRAME_OVERLAP and not within(box, frame_box) \
                    and not within(frame_box, box):
                problems.add(f"{describe(text)} runs over the edge of a {type(frame).__name__} "
                             f"(x {frame_box[0]:.2f}..{frame_box[1]:.2f}, y {frame_box[2]:.2f}..{frame_box[3]:.2f})")
    return problems


def parent_map(mobjects) -> dict[int, set[int]]:
    """The groups each mobject belongs to directly (ids; a mobject can be in several)."""
    parents: dict[int, set[int]] = {}
    for top in mobjects:
        for mobject in top.get_family():
            for child in mobject.submobjects:
                parents.setdefault(id(child), set()).add(id(mobject))
    return parents


def shrink(box, margin: float):
    return box[0] + margin, box[1] - margin, box[2] + margin, box[3] - margin


def segment_crosses_box(start, end, box) -> bool:
    """Whether the segment from `start` to `end` passes through the box (Liang-Barsky clipping)."""
    left, right, bottom, top = box
    if left >= right or bottom >= top:
        return False
    x0, y0, dx, dy = start[0], start[1], end[0] - start[0], end[1] - start[1]
    low, high = 0.0, 1.0
    for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - bottom), (dy, top - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return True


def bounding_box(mobject) -> tuple[float, float, float, float]:
    """(left, right, bottom, top), from the points once."""
    return extent(mobject.get_all_points())


def within(inner, outer, tolerance: float = 0.01) -> bool:
    return inner[0] >= outer[0] - tolerance and inner[1] <= outer[1] + tolerance \
        and inner[2] >= outer[2] - tolerance and inner[3] <= outer[3] + tolerance


def box_area(box) -> float:
    return (box[1] - box[0]) * (box[3] - box[2])


def overlap_area(first, second) -> float:
    width = min(first[1], second[1]) - max(first[0], second[0])
    height = min(first[3], second[3]) - max(first[2], second[2])
    return max(0.0, width) * max(0.0, height)


def describe(text) -> str:
    words = getattr(text, "original_text", None) or getattr(text, "text", None) or getattr(text, "tex_string", "") \
        or type(text).__name__  # Text keeps its spaces only in original_text
    return f"{type(text).__name__} {words[:40]!r}"


def is_invisible(mobject) -> bool:
    """True when no part of it would show (faded out, or a tracker with no looks)."""
    from manim import VMobject

    parts = [part for part in mobject.get_family() if isinstance(part, VMobject) and part.has_points()]
    return all(part.get_fill_opacity() == 0 and part.get_stroke_opacity() == 0 for part in parts)


def outside_safe_area(mobjects) -> set[str]:
    """Anything visible outside the safe area (5% from each edge)."""
    half_width, half_height = config.frame_width * 0.45, config.frame_height * 0.45
    problems = set()
    for mobject in mobjects:
        if not len(mobject.get_all_points()):
            continue
        left, right, bottom, top = bounding_box(mobject)  # the points once, not four times
        if left == right and bottom == top:
            continue
        if left < -half_width - 0.01 or right > half_width + 0.01 or bottom < -half_height - 0.01 \
                or top > half_height + 0.01:
            if not is_invisible(mobject):
                problems.add(f"{type(mobject).__name__} at x {left:.2f}..{right:.2f}, y {bottom:.2f}..{top:.2f}")
    return problems


def layout_problems(mobjects) -> set[str]:
    """Text that overlaps other text, is smaller than ~28 px at 1080p, runs over a frame's edge, or is crossed by a
    line it does not label."""
    problems = set()
    texts = [(text, bounding_box(text)) for text in visible_texts(mobjects)]
    for text, _ in texts:
        pixels = text.font_size * PIXELS_PER_FONT_SIZE
        if pixels < MIN_TEXT_PIXELS - 0.5:
            problems.add(f"{describe(text)} is {pixels:.0f} px tall at 1080p (at least {MIN_TEXT_PIXELS} px)")
    for index, (first, first_box) in enumerate(texts):
        for second, second_box in texts[index + 1:]:
            overlap = overlap_area(first_box, second_box)
            if overlap > 0.02 and overlap > 0.1 * min(box_area(first_box), box_area(second_box)):
                problems.add(f"{describe(first)} overlaps {describe(second)}")
    problems |= texts_over_frame_edges(texts, mobjects)
    # A line (an axis, the slope, the roof, an arrow) through a text it does not label: the text
    # and its own line (a ridge marker, a struck lever) are siblings in one group.
    parents = parent_map(mobjects)
    for line in visible_lines(mobjects):
        start, end = line.get_start(), line.get_end()
        for text, box in texts:
            if parents.get(id(line), set()) & parents.get(id(text), set()):
                continue
            if segment_crosses_box(start, end, shrink(box, 0.04)):
                problems.add(f"{type(line).__name__} crosses {describe(text)}")
    return problems


def words_of(mobject) -> list[str]:
    """The words and formulas (or a formula's parts) in a mobject, in order."""
    from manim import MathTex, Text
    from manim.mobject.text.tex_mobject import MathTexPart

    if isinstance(mobject, Text):
        return [mobject.original_text]
    if isinstance(mobject, (MathTex, MathTexPart)):
        return [mobject.tex_string]
    return [words for part in mobject.submobjects for words in words_of(part)]


def each_animation(animations):
    """The animations played, those inside groups (LaggedStart, Succession) included."""
    from manim import AnimationGroup

    for animation in animations:
        if isinstance(animation, AnimationGroup):
            yield from each_animation(animation.animations)
        else:
            yield animation


def glyph_morphs(animations) -> set[str]:
    """Morphs that interpolate one text's outlines into another's: Manim's Transform between different words
    pairs their glyphs' points one by one, so halfway the screen shows broken letters ("3 3 t…lion"). Text
    changes as whole tokens instead: a cross-fade (FadeTransform) or matched shapes (TransformMatchingShapes)."""
    from manim import FadeTransform, Transform

    problems = set()
    for animation in each_animation(animations):
        if isinstance(animation, Transform) and not isinstance(animation, FadeTransform):
            before, after = words_of(animation.mobject), words_of(animation.target_mobject)
            if before and after and before != after:  # (FadeIn and FadeOut are Transforms from or to nothing)
                problems.add(f"{type(animation).__name__} morphs the glyphs of {' '.join(before)!r} into "
                             f"{' '.join(after)!r}: cross-fade whole words (FadeTransform)")
    return problems


@dataclass(frozen=True)
class TextMorph:
    """One change of words as played: copies of what it starts from and ends as, and its frames in the beat."""

    stretch: bool       # FadeTransform's own settings, to play it again as the beat did
    dim_to_match: int
    start: object
    end: object
    first_frame: int
    frames: int


def text_morphs(animations, first_frame: int, frames: int) -> list[TextMorph]:
    """The cross-fades between different words among `animations`, copied before they play."""
    from manim import FadeTransform

    return [TextMorph(animation.stretch, animation.dim_to_match, animation.mobject[0].copy(),
                      animation.to_add_on_completion.copy(), first_frame, frames)
            for animation in each_animation(animations) if isinstance(animation, FadeTransform)
            and words_of(animation.mobject[0]) != words_of(animation.to_add_on_completion)]
