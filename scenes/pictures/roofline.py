"""The roofline's picture: the chart on the film's GPU (its axes' ranges, the slope, the ridge, the roof, both
points), the GPU's badge and the formulas. The roofline beat draws it; batching starts from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from manim import DOWN, LEFT, RIGHT, UL, UP, VGroup

from render import formatting as fmt, formulas
from render.engine.scene import BeatScene
from scenes.figures.charts import RooflineChart
from scenes.figures.counters import Labelled
from scenes.figures.text import get_formula, get_pill, get_title, inside_safe_area, tex_text
from scenes.style import COMPUTE, HIGHLIGHT, MEMORY, TEXT

CHART_AT = LEFT * 1.3 + DOWN * 0.35
FORMULAS_LEFT = 2.05                    # the column right of the chart: the GPU's badge and the formulas


def axis_ranges(plan) -> tuple[tuple[float, float], tuple[float, float]]:
    """Powers of ten that hold decode, prefill and every GPU the beat shows."""
    gpus = [(plan.spec.peak_flops, plan.spec.memory_bandwidth)]
    gpus += [(pill.peak_flops, pill.memory_bandwidth) for pill in plan.pills]
    # Two whole decades left of decode: room for its label above the slope, clear of the axis.
    low_x = 10 ** (math.floor(math.log10(plan.numbers.decode.ops_per_byte)) - 2)
    ridge = max(plan.spec.ridge_ops_per_byte, *(pill.ridge_ops_per_byte for pill in plan.pills))
    high_x = 10 ** math.ceil(math.log10(max(plan.numbers.prefill.ops_per_byte * 3, ridge * 4)))  # roof past it
    low_y = 10 ** math.floor(math.log10(min(bandwidth * low_x for _, bandwidth in gpus)))
    high_y = 10 ** math.ceil(math.log10(max(peak for peak, _ in gpus) * 1.5))
    return (low_x, high_x), (low_y, high_y)


def get_roofline(plan, width: float = 5.3, height: float = 4.3) -> RooflineChart:
    x_range, y_range = axis_ranges(plan)
    return RooflineChart(plan.spec.peak_flops, plan.spec.memory_bandwidth, x_range, y_range, width=width, height=height)


def intensity_label(ops_per_byte: float) -> str:
    """The intensity as the narration rounds it (two significant figures), in op/byte."""
    return fmt.ops_per_byte(fmt.significant(ops_per_byte, 2), short=True)


def gpu_badge(name: str, ridge: float, chart: RooflineChart) -> VGroup:
    """Which GPU the chart shows, at the head of the formula column."""
    badge = get_pill(f"{name} · ridge {fmt.integer(ridge, short=True)}", TEXT)
    return badge.move_to([FORMULAS_LEFT, chart.y_axis.get_top()[1] + 0.55, 0], aligned_edge=LEFT)


def ridge_formula(peak: float, bandwidth: float, ridge: float) -> VGroup:
    """ridge = peak ÷ bandwidth, and the GPU's own numbers."""
    symbols = get_formula(formulas.RIDGE)
    numbers = get_formula("=", rf"\frac{{{tex_text(fmt.teraflops(peak, short=True))}}}"
                               rf"{{{tex_text(fmt.bandwidth(bandwidth, short=True))}}}",
                          r"\approx", (tex_text(fmt.integer(ridge, short=True)), HIGHLIGHT))
    return VGroup(symbols, numbers).arrange(DOWN, aligned_edge=LEFT, buff=0.3)


def attainable_formula() -> VGroup:
    """attainable FLOP/s = min(peak, intensity × bandwidth)."""
    name = get_formula(formulas.ATTAINABLE)
    rule = get_formula(formulas.ROOFLINE)
    return VGroup(name, rule).arrange(DOWN, aligned_edge=LEFT, buff=0.2)


@dataclass
class RooflineEnding:
    """The roofline beat's last picture: the chart on the film's GPU, both points, the ridge, its formulas."""

    title: object
    chart: RooflineChart
    badge: object
    decode: Labelled
    prefill: Labelled
    ridge: Labelled
    attainable: object
    ridge_sum: VGroup
    achieved: VGroup  # EFFICIENCY=: the roof the deployment reaches (a Labelled), under the datasheet's; else empty

    @property
    def parts(self) -> list:
        return [self.title, self.chart, self.badge, self.decode, self.prefill, self.ridge, self.attainable,
                self.ridge_sum, self.achieved]


def roofline_ending(scene: BeatScene, title: str) -> RooflineEnding:
    plan, spec, n = scene.plan, scene.plan.spec, scene.plan.numbers
    chart = get_roofline(plan).move_to(CHART_AT)
    # Decode's label above the slope, left of its point; prefill's above the roof. The slope's pill
    # sits under the slope further up (until the ridge is drawn), the roof's above prefill's label.
    decode = chart.dot(n.decode.ops_per_byte, MEMORY, f"decode\n{intensity_label(n.decode.ops_per_byte)}", UP)
    decode.label.next_to(decode.mark, UP, buff=0.3).align_to(decode.mark, RIGHT).shift(RIGHT * 0.2)
    prefill = chart.dot(n.prefill.ops_per_byte, COMPUTE, f"prefill\n{intensity_label(n.prefill.ops_per_byte)}", UP)
    overhang = prefill.label.get_right()[0] - chart.x_axis.get_right()[0]
    if overhang > 0:  # no further right than the chart: the formulas stand beside it
        prefill.label.shift(LEFT * overhang)
    ridge = chart.ridge_marker(f"ridge {fmt.integer(spec.ridge_ops_per_byte, short=True)}")
    attainable = attainable_formula()
    attainable.move_to([FORMULAS_LEFT, chart.y_axis.get_top()[1] - 0.45, 0], aligned_edge=UL)
    ridge_sum = ridge_formula(spec.peak_flops, spec.memory_bandwidth, spec.ridge_ops_per_byte)
    ridge_sum.next_to(attainable, DOWN, buff=0.6, aligned_edge=LEFT)
    badge = gpu_badge(plan.choice.gpu.short_name, spec.ridge_ops_per_byte, chart)
    achieved = VGroup()
    if plan.achieved:
        efficiency = plan.choice.efficiency
        achieved = chart.achieved_roof(plan.achieved.peak_flops, plan.achieved.memory_bandwidth,
                                       f"reached here:\n{fmt.percent(efficiency.compute, short=True)} of peak, "
                                       f"{fmt.percent(efficiency.memory, short=True)} of bandwidth")
        inside_safe_area(achieved.label.next_to(ridge_sum, DOWN, buff=0.45, aligned_edge=LEFT))
    return RooflineEnding(get_title(title, plan.choice.label), chart, badge, decode, prefill, ridge, attainable,
                          ridge_sum, achieved)
