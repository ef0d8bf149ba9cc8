"""The roofline: where decode and prefill sit on one GPU's limits.

Decode's operating point flies in from the decode beat's chip; the GPU pills morph the chart; it ends on the
picture the batching beat starts from (`roofline_ending`). Wasted money, which shares its family, is drawn in
wasted_money.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from manim import DOWN, LEFT, RIGHT, UL, UP, Create, FadeIn, FadeOut, FadeTransform, Indicate, Transform, VGroup, Write

from render import formatting as fmt, formulas
from scenes.base import BeatScene
from scenes.decode import decode_ending
from scenes.helpers import (Labelled, RooflineChart, get_formula, get_pill, get_title,
                            inside_safe_area, retitle, slide_clear_of, tex_text)
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


class Roofline(BeatScene):
    """The roofline is drawn; decode lands low on the slope, prefill on the roof, past the ridge."""

    predecessor, successor = "decode", "batching"

    def build(self) -> None:
        plan, spec, n = self.plan, self.plan.spec, self.plan.numbers
        ending = roofline_ending(self, self.beat.title)
        chart = ending.chart
        frame = VGroup(chart.axes, chart.ticks, chart.x_title, chart.y_title)
        decode_dot, decode_label = ending.decode.mark, ending.decode.label
        if self.continues:
            # One shot with decode: its picture fades, and its operating point flies into the chart.
            before = decode_ending(self, self.beat.previous_title)
            self.add(*before.parts)
            flying = before.lit_core.copy()
            self.add(flying)
            self.play(retitle(before.stage.title, ending.title), FadeIn(frame),
                      *[FadeOut(part) for part in before.parts[1:]],
                      Transform(flying, decode_dot.copy()), run_time=1.2)
            self.carry_on_with(ending.title, frame, decode_dot)
        else:
            self.enter(ending.title, frame)
        self.play(Create(chart.slope), run_time=0.8)
        # The roofline's rule beside it as it is drawn: the roof, the slope and the min that joins them.
        self.play(Create(chart.roof), FadeIn(ending.badge), Write(ending.attainable), run_time=0.8)

        decode_dot_in = [] if self.continues else [FadeIn(decode_dot, scale=1.4)]
        self.at("decode", *decode_dot_in, FadeIn(decode_label), Indicate(decode_dot, scale_factor=1.6), run_time=0.7)
        self.ambient = lambda: Indicate(decode_dot, scale_factor=1.6)  # the operating point waits on the slope
        slope_label = get_pill("memory-bound", MEMORY).next_to(chart.slope.point_from_proportion(0.5), DOWN + RIGHT,
                                                                buff=0.1)
        self.at("slope", Indicate(chart.slope, color=HIGHLIGHT, scale_factor=1.0), FadeIn(slope_label), run_time=0.8)
        self.at("prefill", FadeIn(ending.prefill, scale=1.4), run_time=0.7)
        on_roof = plan.numbers.prefill.ops_per_byte >= spec.ridge_ops_per_byte
        roof_label = get_pill("compute-bound" if on_roof else "still memory-bound", COMPUTE if on_roof else MEMORY)
        # Above prefill's label, ending where it ends: the GPU's badge stands right of it.
        roof_label.next_to(ending.prefill.label, UP, buff=0.15).align_to(ending.prefill.label, RIGHT)
        slide_clear_of(roof_label, ending.title)
        where = chart.roof if on_roof else chart.slope  # the narration says which it sits on
        self.at("roof", Indicate(where, color=HIGHLIGHT, scale_factor=1.0), FadeIn(roof_label),
                Indicate(ending.attainable, scale_factor=1.05), run_time=0.9)
        if plan.achieved:  # what this deployment reaches, under the datasheet's line
            self.play(Create(ending.achieved.mark), FadeIn(ending.achieved.label), run_time=0.8)
        self.at("ridge", Create(ending.ridge.mark), Write(ending.ridge.label), Write(ending.ridge_sum),
                FadeOut(slope_label), run_time=1.0)

        # The GPU pills: the same model on other GPUs moves the ridge, both points and the sum; then home.
        self.hold_for_payoff(0.4)
        self.play(FadeOut(roof_label), Indicate(decode_dot, scale_factor=1.6), run_time=0.4)
        home = (plan.choice.gpu.short_name, spec.peak_flops, spec.memory_bandwidth, spec.ridge_ops_per_byte)
        stops = [(pill.name, pill.peak_flops, pill.memory_bandwidth, pill.ridge_ops_per_byte) for pill in plan.pills]
        if not stops or self.seconds_until("end") < 1.2:
            # No pills: the decode point pulses on its slope.
            self.repeat_until("end", lambda: (Indicate(decode_dot, scale_factor=1.8), Indicate(ending.ridge.label)),
                              run_time=0.9, leaving=1.0)
            return
        step = (self.seconds_until("end") - 0.05) / (len(stops) + 1)
        badge, ridge, ridge_sum = ending.badge, ending.ridge, ending.ridge_sum
        for index, (name, peak, bandwidth, ridge_value) in enumerate([*stops, home]):
            # The reached roof is this GPU's (its shares were measured here): it leaves with the first pill, returns
            # home.
            achieved = ([FadeOut(ending.achieved)] if index == 0 else
                        [FadeIn(ending.achieved)] if index == len(stops) else []) if plan.achieved else []
            moves = [point.animate.shift(chart.point(intensity, min(peak, bandwidth * intensity))
                                         - point.mark.get_center())
                     for point, intensity in ((ending.decode, n.decode.ops_per_byte),
                                              (ending.prefill, n.prefill.ops_per_byte))]
            new_sum = ridge_formula(peak, bandwidth, ridge_value).move_to(ridge_sum, aligned_edge=LEFT)
            new_badge = gpu_badge(name, ridge_value, chart)
            morph = chart.morph_to(peak, bandwidth)
            new_ridge = chart.ridge_marker(f"ridge {fmt.integer(ridge_value, short=True)}")
            # Lines move; words cross-fade (a morph between two numbers reads as noise).
            self.play(morph, FadeTransform(badge, new_badge), Transform(ridge.mark, new_ridge.mark),
                      FadeTransform(ridge.label, new_ridge.label), FadeTransform(ridge_sum, new_sum), *moves, *achieved,
                      run_time=step * 0.8)
            badge, ridge_sum = new_badge, new_sum
            ridge = Labelled(ridge.mark, new_ridge.label)
            self.wait_for(step * 0.2)
