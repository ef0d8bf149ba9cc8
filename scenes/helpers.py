"""The film's recurring objects, each drawn by exactly one builder so it looks the same in every beat.

get_text / get_title   text in the film's one font
Chip                   the GPU (or several): grids of streaming multiprocessors that light up when busy
WeightsWall            the model's weights as a wall of bricks (split per GPU; a mixture of experts as
                       a grid of expert tiles); a read is a band sweeping across it
KVStack                the KV cache: accent bricks stacked beside the wall, one stack per sequence
RooflineChart          log-log roofline: memory slope, ridge, compute roof, and points on it
Counter                a number that counts to its value, with its unit, via the shared formatter
Bar                    a labelled bar that grows from its base
BudgetCard             a card with a metric and its levers
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from manim import (DOWN, LEFT, PI, RIGHT, UL, UP, Animation, AnimationGroup, DashedLine, Dot, FadeIn, FadeOut,
                   FadeTransform, Line, MathTex, Rectangle, RoundedRectangle, Square, Succession, TexTemplate, Text,
                   Transform, ValueTracker, VGroup, VMobject, interpolate_color, ManimColor, there_and_back)

from render import formatting as fmt, formulas
from scenes.style import (BACKGROUND, BODY_SIZE, COMPUTE, FONT, FORMULA_PREAMBLE, FORMULA_SIZE, HIGHLIGHT, IDLE,
                          KV_CACHE, LABEL_SIZE, MEMORY, MUTED, NUMBER_SIZE, PANEL, ROLE_COLOURS, SAFE_LEFT, SAFE_RIGHT,
                          SAFE_TOP, SMALL_SIZE, TEXT, TITLE_SIZE)

# -- text ----------------------------------------------------------------------------------------


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
    # Manim's cache of parsed SVGs (off for Text by default): the same words are parsed once per process, and
    # a render given the build's cache keeps them for the next (render/video/shapes.py).
    return Text(text, font=FONT, font_size=size, color=color, weight=weight, use_svg_cache=True)


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


# -- the chip ------------------------------------------------------------------------------------


def grid_shape(count: int) -> tuple[int, int]:
    """Rows and columns for `count` cells, a little wider than tall, like a die."""
    rows = max(1, int(math.floor(math.sqrt(count * 0.8))))
    return rows, math.ceil(count / rows)


# Core squares drawn across all chips at most: eight chips of 132 SMs would be a thousand shapes
# for Cairo to fill every frame, so a chip among many draws a coarser grid (its label keeps the count).
MOST_CORES_DRAWN = 320


def core_grid(cores: int, width: float) -> tuple[int, int, float, float]:
    """Rows, columns, a core's side and the gap between cores, for `cores` squares across `width`."""
    rows, cols = grid_shape(cores)
    side = width / cols * 0.8
    return rows, cols, side, side * 0.25


def package_margin(alone: bool) -> float:
    return 0.4 if alone else 0.2


def package_height(cores: int, width: float, alone: bool) -> float:
    rows, _, side, gap = core_grid(cores, width)
    return rows * side + (rows - 1) * gap + package_margin(alone)


def package_of(cores: int, width: float, alone: bool) -> VGroup:
    """One chip: its package outline (submobject 0) around a grid of `cores` squares (submobject 1), row by row
    from the top left, centred on the origin (where Manim's arrange_in_grid puts them: one square copied into
    place, as a chip of a hundred cores is built many times a beat)."""
    rows, cols, side, gap = core_grid(cores, width)
    square = Square(side, stroke_width=0, fill_color=IDLE, fill_opacity=1)
    pitch = side + gap
    corner = np.array([-(cols - 1) * pitch / 2, (rows - 1) * pitch / 2, 0.0])
    grid = VGroup(*[square.copy().shift(corner + np.array([(index % cols) * pitch, -(index // cols) * pitch, 0.0]))
                    for index in range(cores)])
    margin = package_margin(alone)
    package = RoundedRectangle(corner_radius=0.15 if alone else 0.08, width=grid.width + margin,
                               height=grid.height + margin, stroke_color=MUTED, stroke_width=2,
                               fill_color=PANEL, fill_opacity=1).move_to(grid)
    return VGroup(package, grid)


class Chip(VGroup):
    """A GPU, or `count` of them side by side: one small square per streaming multiprocessor
    inside a package outline each. Lighting a share lights that share of every chip (tensor
    parallelism gives each GPU the same slice of every layer)."""

    def __init__(self, cores: int, label: str = "", width: float = 3.4, count: int = 1, **kwargs):
        super().__init__(**kwargs)
        per_chip = min(cores, max(8, MOST_CORES_DRAWN // count))
        columns = 1 if count == 1 else 2 if count <= 4 else 4
        chip_width = width / columns * (1 if count == 1 else 0.9)
        chip = package_of(per_chip, chip_width, alone=count == 1)
        self.chips = VGroup(chip, *[chip.copy() for _ in range(count - 1)])
        if count > 1:
            self.chips.arrange_in_grid(math.ceil(count / columns), columns, buff=0.18)
            # No taller than the one chip would be, so the stage keeps its layout.
            most = 0.88 * package_height(cores, width, alone=True)
            if self.chips.height > most:
                self.chips.scale_to_fit_height(most)
        self.package = VGroup(*[chip[0] for chip in self.chips]) if count > 1 else self.chips[0][0]
        self.cores = VGroup(*[core for chip in self.chips for core in chip[1]])
        self.per_chip = per_chip
        self.add(self.chips)
        if label:
            self.label = get_text(label, LABEL_SIZE, MUTED).next_to(self.chips, DOWN, buff=0.15)
            self.add(self.label)

    idle_color = IDLE

    def busy_cores(self, fraction: float) -> int:
        """The first share of each chip's cores (at least one when any work is done)."""
        return 0 if fraction <= 0 else max(1, round(fraction * self.per_chip))

    def is_busy(self, index: int, fraction: float) -> bool:
        return index % self.per_chip < self.busy_cores(fraction)

    def light(self, fraction: float, color: str = COMPUTE) -> Animation:
        """Light the busy share of cores; the rest go idle."""
        return AnimationGroup(*[core.animate.set_fill(color if self.is_busy(index, fraction) else IDLE)
                                for index, core in enumerate(self.cores)], lag_ratio=0.002)

    def light_now(self, fraction: float, color: str = COMPUTE) -> "Chip":
        """The same lighting, at once (for a picture a beat ends on)."""
        for index, core in enumerate(self.cores):
            core.set_fill(color if self.is_busy(index, fraction) else IDLE)
        return self

    def idle(self) -> Animation:
        return self.light(0)


# -- the weights wall and the KV cache -------------------------------------------------------------


class WeightsWall(VGroup):
    """The model's weights as bricks; `sweep()` is one read of them.

    `shares` > 1 splits the wall into that many vertical bands, one per GPU holding its slice.
    `experts` > 0 draws a mixture of experts: a thin row of shared weights (attention, embeddings,
    routers) over a grid of expert tiles, one per routed expert; a read lights the shared row and
    only the experts its tokens touch."""

    def __init__(self, label: str, width: float = 3.6, height: float = 3.0, rows: int = 9, cols: int = 8,
                 shares: int = 1, experts: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.experts = experts
        self.reads = 0  # which experts a read touches rotates from read to read, deterministically
        if experts:
            self.bricks, self.tiles = self._experts_wall(width, height, experts)
        else:
            self.bricks, self.tiles = self._brick_wall(width, height, rows, cols), VGroup()
        self.add(self.bricks)
        self.dividers = VGroup()
        for share in range(1, shares):
            x = self.bricks.get_left()[0] + self.bricks.width * share / shares
            self.dividers.add(Line([x, self.bricks.get_bottom()[1] - 0.06, 0], [x, self.bricks.get_top()[1] + 0.06, 0],
                                   stroke_color=TEXT, stroke_width=3))
        self.add(self.dividers)
        self.label = get_text(label, LABEL_SIZE, MEMORY).next_to(self.bricks, UP, buff=0.15)
        self.add(self.label)
        order = np.random.default_rng(experts).permutation(experts) if experts else []
        self.order = [int(index) for index in order]

    @staticmethod
    def _brick_wall(width: float, height: float, rows: int, cols: int) -> VGroup:
        brick_w, brick_h = width / cols, height / rows
        bricks = []
        for row in range(rows):
            offset = brick_w / 2 if row % 2 else 0
            for col in range(cols):
                x = -width / 2 + brick_w / 2 + col * brick_w + offset
                if x + brick_w / 2 > width / 2 + 1e-6:
                    x -= width  # wrap the half brick to the row's start
                brick = Rectangle(width=brick_w * 0.92, height=brick_h * 0.84, stroke_width=0,
                                  fill_color=MEMORY, fill_opacity=0.55)
                brick.move_to([x, height / 2 - brick_h / 2 - row * brick_h, 0])
                bricks.append(brick)
        return VGroup(*bricks)

    @staticmethod
    def _experts_wall(width: float, height: float, experts: int) -> tuple[VGroup, VGroup]:
        shared = Rectangle(width=width, height=height * 0.1, stroke_width=0, fill_color=MEMORY, fill_opacity=0.55)
        shared.move_to([0, height / 2 - height * 0.05, 0])
        rows, cols = grid_shape(experts)
        cols, rows = max(rows, cols), min(rows, cols)  # wider than tall, like the wall
        tile_w, tile_h = width / cols, height * 0.86 / rows
        tiles = VGroup(*[Rectangle(width=tile_w * 0.86, height=tile_h * 0.86, stroke_width=0, fill_color=MEMORY,
                                   fill_opacity=0.3) for _ in range(experts)])
        tiles.arrange_in_grid(rows, cols, buff=(tile_w * 0.14, tile_h * 0.14))
        tiles.next_to(shared, DOWN, buff=height * 0.04)
        return VGroup(shared, *tiles), tiles

    def touched(self, count: float) -> VGroup:
        """`count` of the experts (rounded, at least one), a different set on each read."""
        chosen = max(1, min(self.experts, round(count)))
        start = (self.reads * chosen) % self.experts
        self.reads += 1
        indices = [self.order[(start + offset) % self.experts] for offset in range(chosen)]
        return VGroup(*[self.tiles[index] for index in indices])

    def sweep(self, run_time: float = 1.0, color: str = HIGHLIGHT, extra: VGroup | None = None,
              experts: float | None = None) -> Animation:
        """A band of light crossing the wall (and any KV stacks beside it) once; on a mixture of
        experts, the `experts` a read touches (per layer, as the plan counts them) light up with it."""
        covered = VGroup(self.bricks, *([extra] if extra is not None else []))
        band = Rectangle(width=covered.width * 0.08, height=covered.height + 0.2, stroke_width=0,
                         fill_color=color, fill_opacity=0.45)
        band.move_to(covered.get_left() + RIGHT * band.width / 2)
        travel = covered.width - band.width
        crossing = Succession(FadeIn(band, run_time=run_time * 0.1),
                              band.animate(run_time=run_time * 0.8).shift(RIGHT * travel),
                              FadeOut(band, run_time=run_time * 0.1))
        if not self.experts or experts is None:
            return crossing
        lit = self.touched(experts)
        return AnimationGroup(crossing, *[tile.animate(run_time=run_time, rate_func=there_and_back)
                                          .set_fill(color, opacity=0.95) for tile in lit])


class KVStack(VGroup):
    """One sequence's KV cache: accent bricks, as many as its bytes are worth beside the wall."""

    def __init__(self, bricks: int, brick_width: float = 0.3, brick_height: float = 0.1, **kwargs):
        super().__init__(**kwargs)
        for _ in range(max(1, bricks)):
            self.add(Rectangle(width=brick_width, height=brick_height * 0.8, stroke_width=0,
                               fill_color=KV_CACHE, fill_opacity=0.85))
        self.arrange(UP, buff=brick_height * 0.2)


# -- counters and bars ---------------------------------------------------------------------------


class Counter(VGroup):
    """A value that counts up to its number, formatted by the shared formatter, under a caption.

    The value is redrawn every frame; `appear()` fades it in (an ordinary FadeIn cannot
    follow an object that is rebuilt each frame).
    """

    def __init__(self, caption: str, formatter: Callable[[float], str], start: float = 0.0,
                 color: str = TEXT, size: float = NUMBER_SIZE, **kwargs):
        super().__init__(**kwargs)
        self.tracker = ValueTracker(start)
        self.target = start  # the value it counts to (what it shows once its count has landed)
        self.counted_from = start  # the value its latest count began from
        self.caption_words = caption
        self.shown = ValueTracker(0.0)
        self.formatter = formatter
        self.caption = get_text(caption, SMALL_SIZE, MUTED).set_opacity(0)
        self.color = color
        self.size = size
        # Redrawn every frame, but each value's text is laid out once (Pango and the SVG parse were most of a
        # counting beat's time): the frame's value becomes a copy of it, placed and faded as the frame needs.
        self.laid_out: dict[str, Text] = {}
        self.value = self._value_text().copy()
        self.value.counter = self
        self.shows: tuple = ()  # what the value was last made to show, and the arrays it was drawn from
        self.value.add_updater(self._follow)
        self.add(self.caption, self.value)

    def _value_text(self) -> Text:
        words = self.formatter(self.tracker.get_value())
        if words not in self.laid_out:
            self.laid_out[words] = get_text(words, self.size, self.color, weight="BOLD")
        return self.laid_out[words].set_opacity(self.shown.get_value()).next_to(self.caption, DOWN, buff=0.1)

    def _follow(self, value: Text) -> None:
        # A counter holds its value most of its beat: rebuilt only when the words, their opacity or the caption's
        # place change, or when something else (an animation) has set the value's points or colours since.
        wanted = (self.formatter(self.tracker.get_value()), self.shown.get_value(), tuple(self.caption.get_bottom()))
        drawn = [(part.points, part.fill_rgbas, part.stroke_rgbas) for part in value.family_members_with_points()]
        if self.shows and self.shows[0] == wanted and len(drawn) == len(self.shows[1]) and all(
                now is then for arrays, kept in zip(drawn, self.shows[1]) for now, then in zip(arrays, kept)):
            return
        value.become(self._value_text())
        value.original_text = wanted[0]  # become() takes the shapes only; the words go with them
        value.counter = self  # (a play splits the group the value was added in: its counter is found through it)
        self.shows = (wanted, [(part.points, part.fill_rgbas, part.stroke_rgbas)
                               for part in value.family_members_with_points()])

    def appear(self) -> Animation:
        return AnimationGroup(self.caption.animate.set_opacity(1), self.shown.animate.set_value(1))

    def count_to(self, value: float) -> Animation:
        return CountTo(self, value)

    def counter_state(self) -> tuple[str, str, str, str] | None:
        """(its caption, the words it shows, the words of its target, the words it counted from) while it is shown;
        None while hidden. Settled: it shows its target, or (its count not yet under way) what it counts from."""
        if self.shown.get_value() < 0.99:
            return None
        return (self.caption_words, self.formatter(self.tracker.get_value()), self.formatter(self.target),
                self.formatter(self.counted_from))

    def final_width(self, value: float) -> float:
        """How wide the value will be once it shows `value`."""
        return get_text(self.formatter(value), self.size, self.color, weight="BOLD").width

    def showing(self, value: float) -> "Counter":
        """Its value set (without animating) to `value`: to lay it out at the width it will have."""
        self.tracker.set_value(value)
        self.target = self.counted_from = value
        self.value.update()
        return self

    def settled(self, value: float) -> "Counter":
        """Already showing `value`, as it is when its beat hands over to the next."""
        self.shown.set_value(1)
        self.caption.set_opacity(1)
        return self.showing(value)


class CountTo(Animation):
    """A counter's count to `value`, eased as the scene's moves are. Its target is set as the count begins, not when
    the animation is made (a scene makes it before waiting for its cue): a still taken before it shows the counter
    settled on its last value, one taken during it a count in flight."""

    def __init__(self, counter: Counter, value: float, **kwargs):
        self.counter, self.value, self.start = counter, value, counter.tracker.get_value()
        super().__init__(counter.tracker, **kwargs)

    def begin(self) -> None:
        self.start = self.counter.tracker.get_value()
        self.counter.target, self.counter.counted_from = self.value, self.start
        super().begin()

    def interpolate_mobject(self, alpha: float) -> None:
        self.counter.tracker.set_value(self.start + (self.value - self.start) * self.rate_func(alpha))


class Labelled(VGroup):
    """A mark (a chart's point, the ridge's line, a dashed roof) and its label, reached by name."""

    def __init__(self, mark, label, **kwargs):
        super().__init__(mark, label, **kwargs)
        self.mark, self.label = mark, label


class Bar(VGroup):
    """A horizontal bar of length proportional to its value, with a label before and a value after."""

    def __init__(self, label: str, value_text: str, length: float, color: str, height: float = 0.42,
                 label_width: float = 2.6, value_inside: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.label = get_text(label, LABEL_SIZE, TEXT)
        if self.label.width > label_width:
            self.label.scale_to_fit_width(label_width)
        self.rect = Rectangle(width=max(length, 0.02), height=height, stroke_width=0, fill_color=color,
                              fill_opacity=0.9)
        self.rect.next_to(self.label, RIGHT, buff=0.25).align_to(self.label, LEFT).shift(RIGHT * (label_width + 0.25))
        self.value = get_text(value_text, LABEL_SIZE, color, weight="BOLD").next_to(self.rect, RIGHT, buff=0.15)
        if value_inside and self.value.width + 0.3 < self.rect.width:
            # Inside the bar's end, in the background's colour: the space right of it belongs to a marker.
            self.value.set_color(BACKGROUND).move_to(self.rect.get_right() + LEFT * 0.15, aligned_edge=RIGHT)
        self.add(self.label, self.rect, self.value)

    def grow(self, drawn: bool = False) -> Animation:
        """The bar grows from its left end, its words fading in; `drawn`: the bar is on screen already (it came
        across a cut), and only its words come in."""
        from manim import GrowFromEdge
        if drawn:
            return AnimationGroup(FadeIn(self.label), FadeIn(self.value))
        return AnimationGroup(FadeIn(self.label), GrowFromEdge(self.rect, LEFT), FadeIn(self.value), lag_ratio=0.3)


# -- the roofline ----------------------------------------------------------------------------------


class LogChart(VGroup):
    """Log-log axes over `x_range` and `y_range` (their extents), ticked where `x_ticks` and
    `y_ticks` say ((value, label) pairs), with a title along each axis."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], x_title: str, y_title: str,
                 x_ticks, y_ticks, width: float, height: float, **kwargs):
        super().__init__(**kwargs)
        self.log_x = (math.log10(x_range[0]), math.log10(x_range[1]))
        self.log_y = (math.log10(y_range[0]), math.log10(y_range[1]))
        self.size = (width, height)
        self.origin = np.array([-width / 2, -height / 2, 0.0])
        self.axes = VGroup(Line(self.origin, self.origin + RIGHT * width, color=MUTED),
                           Line(self.origin, self.origin + UP * height, color=MUTED))
        self.ticks = self._ticks(x_ticks, y_ticks)
        self.x_title = get_text(x_title, SMALL_SIZE, MUTED)
        self.x_title.next_to(self.axes[0], DOWN, buff=0.5)
        # Along the axis, left of its tick labels, where no point's label can reach it.
        self.y_title = get_text(y_title, SMALL_SIZE, MUTED).rotate(PI / 2)
        self.y_title.next_to(self.ticks, LEFT, buff=0.15).set_y(self.axes[1].get_center()[1])
        self.add(self.axes, self.ticks, self.x_title, self.y_title)

    @property
    def x_axis(self) -> Line:
        return self.axes[0]

    @property
    def y_axis(self) -> Line:
        return self.axes[1]

    def polyline(self, points, color: str, stroke_width: float = 5) -> VMobject:
        """A curve through (x, y) pairs in the chart's units: a measured sweep's or a fit's."""
        return VMobject(color=color, stroke_width=stroke_width).set_points_as_corners(
            [self.point(x, y) for x, y in points])

    def point(self, x: float, y: float) -> np.ndarray:
        across = (math.log10(x) - self.log_x[0]) / (self.log_x[1] - self.log_x[0]) * self.size[0]
        up = (math.log10(y) - self.log_y[0]) / (self.log_y[1] - self.log_y[0]) * self.size[1]
        return self.get_origin() + np.array([across, up, 0.0])

    def get_origin(self) -> np.ndarray:
        return self.axes[0].get_start()

    def _ticks(self, x_ticks, y_ticks) -> VGroup:
        ticks = VGroup()
        for value, label in x_ticks:
            position = self.point(value, 10 ** self.log_y[0])
            ticks.add(Line(position, position + DOWN * 0.1, color=MUTED))
            ticks.add(get_text(label, SMALL_SIZE, MUTED).next_to(position, DOWN, buff=0.15))
        for value, label in y_ticks:
            position = self.point(10 ** self.log_x[0], value)
            ticks.add(Line(position, position + LEFT * 0.1, color=MUTED))
            ticks.add(get_text(label, SMALL_SIZE, MUTED).next_to(position, LEFT, buff=0.15))
        return ticks


def decades(values) -> tuple[float, float]:
    """The whole powers of ten around `values`: a log axis's extent."""
    return 10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values)))


def powers_of_ten(extent: tuple[float, float], label) -> list[tuple[float, str]]:
    """A tick at every power of ten within `extent`, labelled by `label(exponent)`."""
    low, high = math.log10(extent[0]), math.log10(extent[1])
    return [(10 ** exponent, label(exponent)) for exponent in range(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1)]


class RooflineChart(LogChart):
    """Log-log axes of attainable FLOP/s against operations per byte, with one GPU's roofline.

    `intensity_range` and `flops_range` are the axes' extents (powers of ten); the line is
    min(peak, bandwidth x intensity): the memory slope, the ridge, then the flat compute roof.
    """

    def __init__(self, peak: float, bandwidth: float, intensity_range: tuple[float, float],
                 flops_range: tuple[float, float], width: float = 7.5, height: float = 4.6, **kwargs):
        super().__init__(intensity_range, flops_range, "operations per byte (log scale)",
                         "attainable FLOP/s (log scale)", powers_of_ten(intensity_range, power_label),
                         powers_of_ten(flops_range, flops_label), width, height, **kwargs)
        self.peak, self.bandwidth = peak, bandwidth
        self.slope, self.roof = self.roofline_lines(peak, bandwidth)
        self.add(self.slope, self.roof)

    def attainable(self, intensity: float, peak: float | None = None, bandwidth: float | None = None) -> float:
        return min(peak or self.peak, (bandwidth or self.bandwidth) * intensity)

    def roofline_lines(self, peak: float, bandwidth: float) -> tuple[Line, Line]:
        ridge = peak / bandwidth
        left = 10 ** self.log_x[0]
        slope = Line(self.point(left, bandwidth * left), self.point(ridge, peak), color=MEMORY, stroke_width=6)
        roof = Line(self.point(ridge, peak), self.point(10 ** self.log_x[1], peak), color=COMPUTE, stroke_width=6)
        return slope, roof

    def morph_to(self, peak: float, bandwidth: float) -> Animation:
        """The same chart for another GPU: the slope and the roof move to its numbers."""
        slope, roof = self.roofline_lines(peak, bandwidth)
        self.peak, self.bandwidth = peak, bandwidth
        return AnimationGroup(self.slope.animate.put_start_and_end_on(slope.get_start(), slope.get_end()),
                              self.roof.animate.put_start_and_end_on(roof.get_start(), roof.get_end()))

    def achieved_roof(self, peak: float, bandwidth: float, label: str) -> Labelled:
        """What a deployment reaches under the datasheet's line (EFFICIENCY=): its slope and roof dashed, and a legend
        (a dash and `label`) for the caller to place."""
        slope, roof = self.roofline_lines(peak, bandwidth)
        lines = VGroup(*[DashedLine(line.get_start(), line.get_end(), color=line.get_color(), stroke_width=4,
                                    dash_length=0.12) for line in (slope, roof)])
        legend = VGroup(DashedLine(LEFT * 0.3, RIGHT * 0.3, color=TEXT, stroke_width=4, dash_length=0.12),
                        get_text(label, SMALL_SIZE, TEXT)).arrange(RIGHT, buff=0.15)
        return Labelled(lines, legend)

    def ridge_marker(self, label: str) -> Labelled:
        ridge = self.peak / self.bandwidth
        top = self.point(ridge, self.peak)
        line = DashedLine(top, [top[0], self.get_origin()[1], 0], color=HIGHLIGHT, stroke_width=3)
        # At the foot of the line, right of it: points left of the ridge label themselves up and left.
        # A ridge near the axis's end (FP8 arithmetic on a chart sized for it) is labelled on its left.
        text = get_text(label, LABEL_SIZE, HIGHLIGHT, weight="BOLD").next_to(line.get_end(), UP + RIGHT, buff=0.12)
        if text.get_right()[0] > self.axes[0].get_right()[0]:
            text.next_to(line.get_end(), UP + LEFT, buff=0.12)
        return Labelled(line, text)

    def dot(self, intensity: float, color: str, label: str, label_direction=UP) -> Labelled:
        position = self.point(intensity, self.attainable(intensity))
        dot = Dot(position, radius=0.11, color=color)
        text = get_text(label, LABEL_SIZE, color, weight="BOLD").next_to(dot, label_direction, buff=0.25)
        return Labelled(dot, text)


def power_label(exponent: int) -> str:
    """10^3 -> '1k': tick labels for the intensity axis."""
    value = 10 ** exponent
    if value >= 1000:
        return f"{value // 1000:g}k"
    return f"{value:g}"


def flops_label(exponent: int) -> str:
    """10^15 -> '1P': tick labels for the FLOP/s axis, in SI prefixes."""
    prefixes = {9: "1G", 10: "10G", 11: "100G", 12: "1T", 13: "10T", 14: "100T", 15: "1P", 16: "10P", 17: "100P"}
    return prefixes.get(exponent, f"1e{exponent}")


# -- cards -----------------------------------------------------------------------------------------


class Lever(VGroup):
    """One lever of a budget: its bullet, its words and (optionally) the figure it moves."""

    def __init__(self, bullet, words, detail=None):
        super().__init__(bullet, words)
        self.bullet, self.words, self.detail = bullet, words, detail


class BudgetCard(VGroup):
    """A budget: its name, its metric and the levers that move it."""

    def __init__(self, name: str, metric: str, color: str, width: float = 5.6, height: float = 5.0, **kwargs):
        super().__init__(**kwargs)
        self.box = RoundedRectangle(corner_radius=0.2, width=width, height=height, stroke_color=color,
                                    stroke_width=3, fill_color=PANEL, fill_opacity=1)
        self.name = get_text(name, BODY_SIZE, color, weight="BOLD")
        self.metric = get_text(metric, SMALL_SIZE, MUTED)
        self.header = VGroup(self.name, self.metric).arrange(DOWN, buff=0.12)
        self.header.move_to(self.box.get_top() + DOWN * (self.header.height / 2 + 0.3))
        self.levers = VGroup()
        self.color = color
        self.add(self.box, self.header, self.levers)

    def lever(self, text: str, detail: str = "") -> Lever:
        """A lever line, placed under the previous one (not yet added to the scene)."""
        line = Lever(Dot(radius=0.06, color=self.color), get_text(text, LABEL_SIZE, TEXT)).arrange(RIGHT, buff=0.18)
        if detail:
            line.detail = get_text(detail, SMALL_SIZE, HIGHLIGHT).next_to(line.words, DOWN, aligned_edge=LEFT,
                                                                          buff=0.08)
            line.add(line.detail)
        # Text that grows with the numbers stays inside the card (the layout lint still checks its size).
        room = self.box.width - 0.4 - (line.words.get_left()[0] - line.get_left()[0]) - 0.3
        for words in (line.words, line.detail):
            if words is not None and words.width > room:
                words.scale_to_fit_width(room).align_to(line.words, LEFT)
        anchor = self.levers[-1] if len(self.levers) else self.header
        line.next_to(anchor, DOWN, buff=0.26 if len(self.levers) else 0.4)
        line.align_to(self.box, LEFT).shift(RIGHT * 0.4)
        self.levers.add(line)
        return line


def blend(color_a: str, color_b: str, share: float) -> ManimColor:
    return interpolate_color(ManimColor(color_a), ManimColor(color_b), share)


# -- pieces more than one beat shows --------------------------------------------------------------


def wall_label(scene) -> str:
    """The weights' size; on several GPUs, each one's share; for a mixture of experts, its experts."""
    spec = scene.plan.spec
    lines = [f"{fmt.gigabytes(spec.weight_bytes, short=True)} of weights"]
    if spec.experts:
        lines[0] += f" · {fmt.count(spec.experts)} experts"
    if spec.gpus > 1:
        lines.append(f"{fmt.gigabytes(spec.weight_bytes_per_gpu, short=True)} on each GPU")
    return "\n".join(lines)


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
