"""The stage prefill and decode share: the chip, the weights wall and the bus between them, where each beat's
counters stand and how a time becomes the division that made it.

Both beats are one shot: prefill ends on its picture, and decode starts from it, turns the lights off and opens
the tap. Each beat's last picture is built by one function beside this one (`prefill_ending` in prefill.py,
`decode_ending` in decode.py), which the beat itself animates towards and the next beat starts from.
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, LEFT, RIGHT, UP, Arrow, VGroup

from render import formatting as fmt
from render.engine.scene import BeatScene
from scenes.figures.chip import Chip, WeightsWall, wall_label
from scenes.figures.counters import Counter
from scenes.figures.text import get_formula, get_title, inside_safe_area, slide_clear_of, tex_text
from scenes.style import MEMORY, MUTED

CHIP_AT = LEFT * 1.9 + UP * 0.5
WALL_AT = RIGHT * 3.9 + UP * 0.35
TOKENS_AT = LEFT * 5.3 + UP * 0.5
COUNTERS_AT = RIGHT * 3.3 + DOWN * 2.55
FORMULA_AT = LEFT * 1.9 + DOWN * 2.95  # the beat's formula, under the chip ...
FORMULA_WIDTH = 4.4                     # ... and clear of the counters
DIVISION_WIDTH = 5.8                    # the sum the counters become
# Decode has no tokens left of the chip and its counters under the wall: its picture stands further left,
# so its weight sits near the frame's centre (the stage slides there as prefill hands over). Not with EFFICIENCY=,
# whose note of the ceilings stands left of the chip.
DECODE_SHIFT = LEFT * 0.8


@dataclass
class Stage:
    """What both beats show: the title, the chip, the weights wall and the bus between them."""

    title: object
    chip: Chip
    wall: WeightsWall
    link: Arrow

    @property
    def parts(self) -> list:
        return [self.title, self.chip, self.wall, self.link]

    def above_chips(self, label, end: float | None = None):
        """`label` just above the chips (its right edge at `end`, if given), slid right of the title's
        context line where a long one would touch it."""
        label.next_to(self.chip.package, UP, buff=0.2)
        if end is not None:
            label.set_x(end - label.width / 2)
        return slide_clear_of(label, self.title)


def get_stage(scene: BeatScene, title: str) -> Stage:
    plan, spec = scene.plan, scene.plan.spec
    gpus = spec.gpus
    gpu = plan.choice.gpu  # its cores in the vendor's own term: "132 SMs", "304 CUs"
    chip_label = (f"{plan.choice.times(gpu.short_name)} · {fmt.count(spec.sm_count)} {gpu.compute_unit}s"
                  + (" each" if gpus > 1 else ""))
    chip = Chip(spec.sm_count, chip_label, count=gpus)
    chip.move_to(CHIP_AT)
    wall = WeightsWall(wall_label(scene), shares=gpus, experts=spec.experts).move_to(WALL_AT)
    inside_safe_area(wall.label)  # "1,342 GB of weights · 256 experts" is wider than the wall
    link = Arrow(wall.bricks.get_left(), chip.package.get_right(), buff=0.15, color=MEMORY, stroke_width=5)
    return Stage(get_title(title, plan.choice.label), chip, wall, link)


def at_best(scene: BeatScene, caption: str, best: str) -> str:
    """A counter's caption: with EFFICIENCY= its value is what the deployment gives here, and the ceiling follows."""
    return f"{caption} here\n{best} at best" if scene.plan.expected else caption


def times_gpus(scene: BeatScene, text: str) -> str:
    """A per-GPU figure as the deployment has it: itself on one GPU, 'T × it' on T of them."""
    gpus = scene.plan.spec.gpus
    return text if gpus == 1 else f"{gpus} × {text}"


@dataclass
class Division:
    """A time as the division that made it (plus the all-reduces on several GPUs), then its result:
    operations ÷ peak ≈ time (⇒ what follows it, for decode the rate). `value` indexes the result in `formula`."""

    formula: object
    value: int

    @property
    def numerator(self):
        return self.formula[0]

    @property
    def result(self):
        return self.formula[self.value]

    @property
    def outcome(self):
        """The last part: the rate a decode step's time gives (the result itself where nothing follows)."""
        return self.formula[len(self.formula) - 1]

    def rest(self, *named) -> list:
        """The parts that are none of `named` (by default, the numerator and the result)."""
        named = named or (self.numerator, self.result)
        return [part for part in self.formula if all(part is not other for other in named)]


def get_division(scene: BeatScene, numerator: str, denominator: str, communication: float, result: str,
                 color: str, then: tuple = (), share: float | None = None) -> Division:
    """With `share` (EFFICIENCY=), the denominator is the part of the ceiling the deployment reaches."""
    gpus = scene.plan.spec.gpus
    below = tex_text(denominator) if gpus == 1 else rf"{gpus} \times {tex_text(denominator)}"
    if share is not None:
        below = rf"{tex_text(fmt.percent(share, short=True))} \times {below}"
    parts: list = [rf"\frac{{{tex_text(numerator)}}}{{{below}}}"]
    if scene.plan.spec.gpus > 1:
        parts += ["+", (tex_text(fmt.milliseconds(communication, short=True)), MUTED)]
    parts += [r"\approx", (tex_text(result), color)]
    value = len(parts) - 1
    parts += list(then)
    formula = get_formula(*parts)
    if formula.width > DIVISION_WIDTH and then:  # what follows goes on a second line
        VGroup(*formula[value + 1:]).next_to(VGroup(*formula[:value + 1]), DOWN, buff=0.2)
    if formula.width > DIVISION_WIDTH:  # a fast choice's numbers run long: keep the sum inside the frame
        formula.scale_to_fit_width(DIVISION_WIDTH)
    return Division(formula.move_to(COUNTERS_AT), value)


def get_counter_row(*counters: tuple[Counter, float]) -> VGroup:
    """Counters side by side under the wall (two per row when there are more than two), each
    with the value it will reach: a long final value moves the row right, clear of the formula."""
    row = VGroup(*[counter for counter, _ in counters])
    if len(counters) > 2:
        row.arrange_in_grid(rows=2, buff=(0.5, 0.3))
    else:
        row.arrange(RIGHT, buff=0.8)
    row.move_to(COUNTERS_AT)
    left = min(counter.caption.get_x() - counter.final_width(value) / 2 for counter, value in counters)
    clear_of_formula = FORMULA_AT[0] + FORMULA_WIDTH / 2 + 0.3
    if left < clear_of_formula:
        row.shift(RIGHT * (clear_of_formula - left))
    return row

