"""The GPU and what it reads: the chip (grids of streaming multiprocessors that light up when busy; several for
tensor parallelism), the weights wall (bricks, split per GPU; a mixture of experts as expert tiles; a read is a band
sweeping across it) and the KV cache's stacks beside it, one per sequence."""

from __future__ import annotations

import math
import numpy as np

from manim import (DOWN, RIGHT, UP, Animation, AnimationGroup, FadeIn, FadeOut, Line, Rectangle, RoundedRectangle,
                   Square, Succession, VGroup, there_and_back)

from render import formatting as fmt
from scenes.figures.text import get_text
from scenes.style import COMPUTE, HIGHLIGHT, IDLE, KV_CACHE, LABEL_SIZE, MEMORY, MUTED, PANEL, TEXT


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


# -- the weights' label ----------------------------------------------------------------------


def wall_label(scene) -> str:
    """The weights' size; on several GPUs, each one's share; for a mixture of experts, its experts."""
    spec = scene.plan.spec
    lines = [f"{fmt.gigabytes(spec.weight_bytes, short=True)} of weights"]
    if spec.experts:
        lines[0] += f" · {fmt.count(spec.experts)} experts"
    if spec.gpus > 1:
        lines.append(f"{fmt.gigabytes(spec.weight_bytes_per_gpu, short=True)} on each GPU")
    return "\n".join(lines)
