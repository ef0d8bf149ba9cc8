"""The roofline: where decode and prefill sit on one GPU's limits, and why buying arithmetic misses.

Beats: the roofline itself (with the GPU pills), and wasted money (two GPUs side by side, then a
long prompt's prefill split into its linear layers and attention).
"""

from __future__ import annotations

import math

from manim import (DOWN, LEFT, RIGHT, UP, Create, FadeIn, FadeOut, Indicate, Rectangle,
                   ReplacementTransform, VGroup, Write)

from render import formatting as fmt
from scenes.base import BeatScene
from scenes.helpers import Bar, RooflineChart, blend, get_pill, get_text, get_title
from scenes.style import SAFE_LEFT, COMPUTE, HIGHLIGHT, KV_CACHE, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE, TEXT


def axis_ranges(plan) -> tuple[tuple[float, float], tuple[float, float]]:
    """Powers of ten that hold decode, prefill and every GPU the beat shows."""
    gpus = [(plan.spec.peak_flops, plan.spec.memory_bandwidth)]
    gpus += [(pill.peak_flops, pill.memory_bandwidth) for pill in plan.pills]
    low_x = 10 ** math.floor(math.log10(plan.numbers.decode.ops_per_byte / 3))
    high_x = 10 ** math.ceil(math.log10(plan.numbers.prefill.ops_per_byte * 3))
    low_y = 10 ** math.floor(math.log10(min(bandwidth * low_x for _, bandwidth in gpus)))
    high_y = 10 ** math.ceil(math.log10(max(peak for peak, _ in gpus) * 1.5))
    return (low_x, high_x), (low_y, high_y)


def get_roofline(plan) -> RooflineChart:
    x_range, y_range = axis_ranges(plan)
    chart = RooflineChart(plan.spec.peak_flops, plan.spec.memory_bandwidth, x_range, y_range)
    return chart.move_to(RIGHT * 0.4 + DOWN * 0.35)


def intensity_label(ops_per_byte: float) -> str:
    """The intensity as the narration rounds it (two significant figures), in op/byte."""
    return fmt.ops_per_byte(fmt.significant(ops_per_byte, 2), short=True)


def gpu_badge(name: str, ridge: float, chart: RooflineChart) -> VGroup:
    badge = get_pill(f"{name} · ridge {fmt.integer(ridge)}", TEXT)
    return badge.next_to(chart.axes, UP, buff=0.25).align_to(chart.axes, RIGHT)


class Roofline(BeatScene):
    """The roofline is drawn; decode lands low on the slope, prefill on the roof, past the ridge."""

    def build(self) -> None:
        plan, spec, n = self.plan, self.plan.spec, self.plan.numbers
        title = get_title(self.beat.title, plan.choice.label)
        chart = get_roofline(plan)
        frame = VGroup(chart.axes, chart.ticks, chart.x_title, chart.y_title)
        self.enter(title, frame)
        badge = gpu_badge(plan.choice.gpu.short_name, spec.ridge_ops_per_byte, chart)
        self.play(Create(chart.slope), run_time=0.8)
        self.play(Create(chart.roof), FadeIn(badge), run_time=0.6)

        decode = chart.dot(n.decode.ops_per_byte, MEMORY, f"decode · {intensity_label(n.decode.ops_per_byte)}",
                           DOWN + RIGHT * 0.8)
        self.at("decode", FadeIn(decode, scale=1.4), run_time=0.7)
        slope_label = get_pill("memory-bound", MEMORY).move_to(chart.slope.point_from_proportion(0.5) + DOWN * 0.55 + RIGHT * 0.9)
        self.at("slope", Indicate(chart.slope, color=HIGHLIGHT, scale_factor=1.0), FadeIn(slope_label), run_time=0.8)
        prefill = chart.dot(n.prefill.ops_per_byte, COMPUTE, f"prefill · {intensity_label(n.prefill.ops_per_byte)}",
                            DOWN)
        self.at("prefill", FadeIn(prefill, scale=1.4), run_time=0.7)
        roof_label = get_pill("compute-bound", COMPUTE).next_to(chart.roof, UP, buff=0.2).align_to(chart.roof, RIGHT)
        self.at("roof", Indicate(chart.roof, color=HIGHLIGHT, scale_factor=1.0), FadeIn(roof_label), run_time=0.8)
        ridge = chart.ridge_marker(f"ridge {fmt.integer(spec.ridge_ops_per_byte)}")
        self.at("ridge", Create(ridge[0]), Write(ridge[1]), run_time=0.8)

        # The GPU pills: the same model on other GPUs moves the ridge and both points; then back.
        self.hold_until("speech-end", offset=0.2)
        pills = [(pill.name, pill.peak_flops, pill.memory_bandwidth, pill.ridge_ops_per_byte) for pill in plan.pills]
        home = (plan.choice.gpu.short_name, spec.peak_flops, spec.memory_bandwidth, spec.ridge_ops_per_byte)
        if pills and self.seconds_until("end") > 1.1:
            self.play(FadeOut(slope_label), FadeOut(roof_label), run_time=0.3)
            step = (self.seconds_until("end") - 0.1) / (len(pills) + 1)
            for name, peak, bandwidth, ridge_value in [*pills, home]:
                new_badge = gpu_badge(name, ridge_value, chart)
                moves = [point.animate.shift(chart.point(intensity, min(peak, bandwidth * intensity))
                                             - point[0].get_center())
                         for point, intensity in ((decode, n.decode.ops_per_byte), (prefill, n.prefill.ops_per_byte))]
                self.play(chart.morph_to(peak, bandwidth), ReplacementTransform(badge, new_badge),
                          ridge.animate.become(chart.ridge_marker(f"ridge {fmt.integer(ridge_value)}")),
                          *moves, run_time=step * 0.75)
                badge = new_badge
                self.wait_for(step * 0.25)


class WastedMoney(BeatScene):
    """Two GPUs side by side: arithmetic, bandwidth and one user's decode; then a long prompt."""

    def build(self) -> None:
        plan, spec, n = self.plan, self.plan.spec, self.plan.numbers
        compare, choice = n.compare, plan.choice
        ours, other = choice.gpu.short_name, compare.gpu.short_name
        title = get_title(self.beat.title, f"{ours} against {other} · {choice.model.name} · {choice.dtype.name}")
        self.enter(title)

        metrics = [
            ("peak arithmetic", spec.peak_flops, compare.peak_flops,
             lambda v: fmt.teraflops(v, short=True), COMPUTE, compare.flops_ratio),
            ("memory bandwidth", spec.memory_bandwidth, compare.memory_bandwidth,
             lambda v: fmt.bandwidth(v, short=True), MEMORY, compare.bandwidth_ratio),
            ("one user's decode", n.decode.tokens_per_second, compare.decode_tokens_per_second,
             lambda v: fmt.tokens_per_second(v, short=True), HIGHLIGHT, compare.decode_speedup),
        ]
        groups = VGroup()
        for caption, value, compare_value, formatter, color, ratio in metrics:
            longest = max(value, compare_value)
            bars = VGroup(Bar(ours, formatter(value), 5.2 * value / longest, color),
                          Bar(other, formatter(compare_value), 5.2 * compare_value / longest, blend(color, MUTED, 0.55)))
            bars.arrange(DOWN, buff=0.14, aligned_edge=LEFT)
            heading = get_text(caption, LABEL_SIZE, MUTED).next_to(bars, UP, buff=0.14, aligned_edge=LEFT)
            ratio_pill = get_pill(fmt.times(ratio, short=True), color).next_to(bars, RIGHT, buff=0.5)
            groups.add(VGroup(heading, bars, ratio_pill))
        groups.arrange(DOWN, buff=0.42, aligned_edge=LEFT).move_to(DOWN * 0.35)
        groups.align_to([SAFE_LEFT + 0.3, 0, 0], LEFT)
        right_edge = max(group[1].get_right()[0] for group in groups)
        for group in groups:
            group[2].move_to([right_edge + 0.4, group[1].get_y(), 0], aligned_edge=LEFT)

        flops, bandwidth, decode = (
            (FadeIn(heading), bars[0].grow(), bars[1].grow(), FadeIn(ratio_pill, shift=LEFT * 0.2))
            for heading, bars, ratio_pill in groups)
        self.at("flops", *flops, run_time=1.0)
        self.at("bandwidth", *bandwidth, run_time=1.0)
        self.at("decode", *decode, run_time=1.0)

        # A long prompt: prefill time split into the linear layers and attention.
        long_prompt = n.long_prompt
        total = long_prompt.seconds
        width = 9.0
        linear = Rectangle(width=width * long_prompt.linear_seconds / total, height=0.8, stroke_width=0,
                           fill_color=COMPUTE, fill_opacity=0.9)
        attention = Rectangle(width=width * long_prompt.attention_seconds / total, height=0.8, stroke_width=0,
                              fill_color=KV_CACHE, fill_opacity=0.9)
        stacked = VGroup(linear, attention).arrange(RIGHT, buff=0).move_to(DOWN * 0.3)
        heading = get_text(f"a {fmt.count(long_prompt.tokens)}-token prompt on {ours}: prefill "
                           f"{fmt.duration(total, short=True)}", LABEL_SIZE, TEXT).next_to(stacked, UP, buff=0.35)
        linear_label = get_text(f"linear layers {fmt.duration(long_prompt.linear_seconds, short=True)}",
                                SMALL_SIZE, COMPUTE).next_to(linear, DOWN, buff=0.2)
        attention_label = get_text(
            f"attention {fmt.duration(long_prompt.attention_seconds, short=True)} "
            f"({fmt.percent(long_prompt.attention_fraction, short=True)})", SMALL_SIZE, KV_CACHE)
        attention_label.next_to(attention, DOWN, buff=0.2).align_to(attention, RIGHT)
        note = get_text("attention grows with the square of the prompt", SMALL_SIZE, MUTED)
        note.next_to(VGroup(linear_label, attention_label), DOWN, buff=0.35)

        from manim import GrowFromEdge
        self.at("long-prompt", FadeOut(groups, shift=UP * 0.3), FadeIn(heading), GrowFromEdge(linear, LEFT),
                FadeIn(linear_label), run_time=1.0)
        self.at("attention", GrowFromEdge(attention, LEFT), FadeIn(attention_label), FadeIn(note), run_time=0.9)

