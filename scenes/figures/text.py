"""Words on screen in the film's one font and formulas in its TeX: titles (and one title becoming the next), captions,
pills, formulas coloured by role and their terms, the measured numbers' provenance; and the two moves that keep
words clear of each other and inside the safe area."""

from __future__ import annotations

from manim import (DOWN, LEFT, RIGHT, UL, AnimationGroup, FadeIn, FadeOut, FadeTransform, MathTex, RoundedRectangle,
                   TexTemplate, Text, Transform, VGroup)

from render import formulas
from render.engine.scene import made_once
from scenes.style import (BODY_SIZE, FONT, FORMULA_PREAMBLE, FORMULA_SIZE, LABEL_SIZE, MUTED, ROLE_COLOURS, SAFE_LEFT,
                          SAFE_RIGHT, SAFE_TOP, SMALL_SIZE, TEXT, TITLE_SIZE)


FORMULA_TEMPLATE = TexTemplate(preamble=FORMULA_PREAMBLE)


def tex_text(text: str) -> str:
    r"""A formatted number with its unit ("2.0 TB/s", "13%") as \text{} in a formula."""
    escaped = "".join("\\" + char if char in "%$&#_{}" else char for char in text)
    return rf"\text{{{escaped}}}"


def get_formula(*parts: str | tuple[str, str] | formulas.Formula, size: float = FORMULA_SIZE) -> MathTex:
    """A typeset formula from its parts, each a TeX string or (TeX, colour or role), or the parts of one of
    the film's formulas (render/formulas.py), coloured like the picture it explains (compute warm, memory
    cool, the KV cache in its accent)."""
    parts = [piece for part in parts for piece in (part.parts if isinstance(part, formulas.Formula) else (part,))]
    formula = MathTex(*[part if isinstance(part, str) else part[0] for part in parts], font_size=size, color=TEXT,
                      tex_template=FORMULA_TEMPLATE)
    for index, part in enumerate(parts):
        if not isinstance(part, str) and part[1] != formulas.TEXT:
            formula[index].set_color(ROLE_COLOURS.get(part[1], part[1]))
    return formula


def term(formula: MathTex, *tex: str):
    """The part of a formula written as `tex` (several: a group of them), found by what it says, not where it
    stands."""
    parts = [next(part for part in formula if part.tex_string == each) for each in tex]
    return parts[0] if len(parts) == 1 else VGroup(*parts)


def get_text(text: str, size: float = BODY_SIZE, color: str = TEXT, weight: str = "NORMAL") -> Text:
    # Made once a process (made_once: a copy after that), with Manim's cache of parsed SVGs (off for Text by
    # default) for a render given the build's cache, which keeps them for the next (render/video/shapes.py).
    return made_once(Text, text, font=FONT, font_size=size, color=color, weight=weight, use_svg_cache=True)


def get_title(beat_title: str, context: str = "") -> VGroup:
    """The beat's title in the top-left corner, with what it is about in muted text beneath."""
    title = get_text(beat_title, TITLE_SIZE, weight="BOLD")
    group = VGroup(title)
    if context:
        group.add(get_text(context, SMALL_SIZE, MUTED).next_to(title, DOWN, aligned_edge=LEFT, buff=0.12))
    return group.to_corner(UL, buff=0).move_to([SAFE_LEFT, SAFE_TOP, 0], aligned_edge=UL)


def retitle(old: VGroup, new: VGroup) -> AnimationGroup:
    """One beat's title becoming the next's: each line whose words change cross-fades in place as a whole (no
    letter morphs into another); a line that stays (the deployment) stays."""
    old_lines, new_lines = list(old), list(new)
    changes = [FadeTransform(before, after, stretch=False) if before.original_text != after.original_text
               else Transform(before, after) for before, after in zip(old_lines, new_lines)]
    changes += [FadeOut(line) for line in old_lines[len(new_lines):]]
    changes += [FadeIn(line) for line in new_lines[len(old_lines):]]
    return AnimationGroup(*changes)


def slide_clear_of(mobject, obstacle, margin: float = 0.2):
    """Slide `mobject` right, past `obstacle`, where the two would touch: a label placed for the default
    film beside a title whose context line grows with a long choice ("8× B200 · DeepSeek-V3 · BF16")."""
    touches = (mobject.get_top()[1] > obstacle.get_bottom()[1] - margin
               and mobject.get_bottom()[1] < obstacle.get_top()[1] + margin
               and mobject.get_left()[0] < obstacle.get_right()[0] + margin
               and mobject.get_right()[0] > obstacle.get_left()[0] - margin)
    if touches:
        mobject.shift(RIGHT * (obstacle.get_right()[0] + margin - mobject.get_left()[0]))
    return mobject


def inside_safe_area(mobject):
    """Shift `mobject` sideways back inside the safe area, where text grown with the numbers (a
    four-digit size, a six-digit rate) pushed its edge out."""
    if mobject.get_right()[0] > SAFE_RIGHT:
        mobject.shift(LEFT * (mobject.get_right()[0] - SAFE_RIGHT))
    elif mobject.get_left()[0] < SAFE_LEFT:
        mobject.shift(RIGHT * (SAFE_LEFT - mobject.get_left()[0]))
    return mobject


def get_caption(text: str, color: str = TEXT, size: float = BODY_SIZE, width: float = 11.0) -> Text:
    caption = get_text(text, size, color)
    if caption.width > width:
        caption.scale_to_fit_width(width)
    return caption


def get_pill(text: str, color: str, size: float = LABEL_SIZE) -> VGroup:
    """A label on a rounded, tinted background ('compute-bound')."""
    label = get_text(text, size, color, weight="BOLD")
    box = RoundedRectangle(corner_radius=0.12, width=label.width + 0.35, height=label.height + 0.25,
                           stroke_color=color, stroke_width=2, fill_color=color, fill_opacity=0.12)
    return VGroup(box, label.move_to(box))


PROVENANCE_WIDTH = 12.2


def provenance_lines(measured) -> list[tuple[str, str]]:
    """Where the numbers come from, line by line with each line's colour: route, provider, precision, model, the GPU
    assumed, the source in words (never a file of the project)."""
    dataset = measured.dataset
    assumed = " (assumed: the provider does not publish its hardware)" if dataset.compared_gpu_is_assumption else ""
    how = [f"{dataset.prompt_cache} prompts"] if dataset.prompt_cache else []
    how += ["TTFT counts reasoning tokens"] if dataset.reasoning else []
    how += ["prompt sizes estimated"] if dataset.prompt_tokens_estimated else []
    source = [f"source: {dataset.citation}"] if dataset.citation else []
    lines = [(f"measured: {dataset.route}", TEXT),
             (f"{measured.precision.name} {measured.model.name} · ideal times on {measured.gpu.short_name}{assumed}",
              MUTED)]
    # How it was measured goes beside the source when both fit on one line, else on a line of its own.
    together = " · ".join([*source, *how])
    if together and get_text(together, SMALL_SIZE).width <= PROVENANCE_WIDTH:
        lines.append((together, MUTED))
    elif together:
        lines += [(part, MUTED) for part in (*source, " · ".join(how)) if part]
    return lines


def get_provenance(measured) -> VGroup:
    """The provenance's lines as a footnote at the bottom right."""
    lines = provenance_lines(measured)
    texts = VGroup()
    for line, color in lines:
        text = get_text(line, SMALL_SIZE, color)
        if text.width > PROVENANCE_WIDTH:  # only a very long route or source: narrower, before lining up
            text.scale_to_fit_width(PROVENANCE_WIDTH)
        texts.add(text)
    # A footnote at the bottom right, where it balances the pictures above, which start at the left.
    texts.arrange(DOWN, aligned_edge=LEFT, buff=0.08).to_edge(DOWN, buff=0.45).align_to([SAFE_RIGHT, 0, 0], RIGHT)
    texts.route = texts.submobjects[0]  # "measured: …", the line a beat points at
    return texts
