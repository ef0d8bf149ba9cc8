"""Measured timings: a real endpoint's waits and speeds beside the roofline's ideal ones.

The measured dataset names its own model, precision and the GPU it is compared with; the
provenance stays on screen while its numbers are.
"""

from __future__ import annotations

from manim import DOWN, LEFT, RIGHT, UP, DashedLine, FadeIn, GrowFromEdge, Rectangle, VGroup, Write

from render import formatting as fmt
from scenes.base import BeatScene
from scenes.helpers import Bar, WeightsWall, get_pill, get_text, get_title
from scenes.style import SAFE_LEFT, COMPUTE, HIGHLIGHT, KV_CACHE, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE, TEXT

BAR_LENGTH = 6.0


def get_provenance(measured) -> VGroup:
    """Where the numbers come from: route, provider, precision, model, the GPU assumed, the source."""
    dataset = measured.dataset
    assumed = " (assumed: the provider does not publish its hardware)" if dataset.compared_gpu_is_assumption else ""
    lines = VGroup(
        get_text(f"measured: {dataset.route}", SMALL_SIZE, TEXT),
        get_text(f"{measured.precision.name} {measured.model.name} · ideal times on "
                 f"{measured.gpu.short_name}{assumed}", SMALL_SIZE, MUTED),
        get_text(f"source: {dataset.path}", SMALL_SIZE, MUTED),
    ).arrange(DOWN, aligned_edge=LEFT, buff=0.08)
    for line in lines:
        if line.width > 12.2:
            line.scale_to_fit_width(12.2)
    return lines.to_edge(DOWN, buff=0.45).to_edge(LEFT, buff=0.75)


def prompt_name(tokens: float) -> str:
    return f"{fmt.count(tokens)}-token prompt"


class Measured(BeatScene):
    """TTFT on a live endpoint against the ideal prefill time: short prompts wait on the network."""

    def build(self) -> None:
        measured = self.plan.measured
        title = get_title(self.beat.title, "time to first token (request sent → first streamed token) "
                                           "against the ideal prefill")
        provenance = get_provenance(measured)
        self.enter(title)
        self.at("endpoint", FadeIn(provenance, shift=UP * 0.2), run_time=0.8)

        prompts = [prompt for prompt in (measured.short, measured.medium, measured.long)
                   if prompt is not None and prompt.ttft_seconds is not None]
        longest = max(prompt.ttft_seconds for prompt in prompts)
        groups = VGroup()
        for prompt in prompts:
            waited, ideal = prompt.ttft_seconds, prompt.ideal_prefill_seconds
            pair = VGroup(
                Bar("measured", fmt.seconds(waited, short=True), BAR_LENGTH * waited / longest, HIGHLIGHT),
                Bar("ideal prefill", fmt.duration(ideal, short=True), BAR_LENGTH * ideal / longest, COMPUTE),
            ).arrange(DOWN, buff=0.1, aligned_edge=LEFT)
            heading = get_text(prompt_name(prompt.prompt_tokens), LABEL_SIZE, TEXT)
            groups.add(VGroup(heading.next_to(pair, UP, buff=0.12, aligned_edge=LEFT), pair))
        groups.arrange(DOWN, buff=0.3, aligned_edge=LEFT).move_to(UP * 0.25 + LEFT * 1.2)

        # First what the roofline promises: the ideal prefill of each prompt, then what was measured.
        self.play(*[FadeIn(group[0]) for group in groups], *[group[1][1].grow() for group in groups], run_time=1.2)
        short_groups = groups[:-1]
        self.at("short", *[group[1][0].grow() for group in short_groups], run_time=1.2)
        gap_group = short_groups[-1][1]
        network = get_pill(f"{fmt.percent(measured.network_fraction, short=True)} network and queueing",
                           HIGHLIGHT).next_to(gap_group[0].value, RIGHT, buff=0.4)
        self.at("network", FadeIn(network, shift=LEFT * 0.2), run_time=0.8)
        long_group = groups[-1]
        self.at("long", long_group[1][0].grow(), run_time=1.2)


class CacheRidesAlong(BeatScene):
    """Decode on the endpoint: slower with a long prompt, by as much as its KV cache adds to every step."""

    def build(self) -> None:
        measured = self.plan.measured
        title = get_title(self.beat.title, "decode rate = 1 ÷ time per output token, against the roofline's ceiling")
        provenance = get_provenance(measured)
        self.enter(title, provenance)

        ceiling = measured.ceiling_tokens_per_second
        scale = BAR_LENGTH / ceiling
        short_rate, long_rate = measured.short.decode_tokens_per_second, measured.long.decode_tokens_per_second
        short = Bar(prompt_name(measured.short.prompt_tokens), fmt.tokens_per_second(short_rate, short=True),
                    scale * short_rate, MEMORY)
        long = Bar(prompt_name(measured.long.prompt_tokens), fmt.tokens_per_second(long_rate, short=True),
                   scale * long_rate, KV_CACHE)
        bars = VGroup(short, long).arrange(DOWN, buff=0.35, aligned_edge=LEFT).move_to(UP * 1.0)
        bars.align_to([SAFE_LEFT + 0.3, 0, 0], LEFT)
        limit_x = short.rect.get_left()[0] + BAR_LENGTH
        limit = DashedLine([limit_x, bars.get_top()[1] + 0.35, 0], [limit_x, bars.get_bottom()[1] - 0.2, 0],
                           color=HIGHLIGHT)
        limit_label = get_text(f"ceiling {fmt.tokens_per_second(ceiling, short=True)}", SMALL_SIZE, HIGHLIGHT)
        limit_label.next_to(limit, UP, buff=0.1)
        share = get_text(f"{fmt.integer(short_rate)} is "
                         f"{fmt.percent(measured.ceiling_fraction, short=True)} of the ceiling",
                         SMALL_SIZE, MUTED).next_to(limit_label, UP, buff=0.08)

        self.at("rate", short.grow(), Write(limit), FadeIn(limit_label), run_time=1.0)
        self.play(FadeIn(share), run_time=0.4)
        slower = get_pill(f"−{fmt.percent(measured.slowdown, short=True)}", KV_CACHE)
        slower.next_to(long, RIGHT, buff=0.3)
        self.at("slower", long.grow(), FadeIn(slower, shift=LEFT * 0.2), run_time=1.0)

        # The wall of weights, and the long prompt's KV cache stacked onto it, to scale.
        wall = WeightsWall(f"{fmt.gigabytes(measured.weight_bytes, short=True)} of weights",
                           width=3.0, height=1.6, rows=6, cols=8).move_to(DOWN * 1.05 + RIGHT * 0.2)
        kv_height = 1.6 * measured.long_kv_ratio
        kv = Rectangle(width=3.0, height=max(0.04, kv_height), stroke_width=0, fill_color=KV_CACHE, fill_opacity=0.9)
        kv.next_to(wall.bricks, UP, buff=0.04)
        wall.label.next_to(wall.bricks, LEFT, buff=0.3)
        kv_label = get_text(f"+ {fmt.gigabytes(measured.long_kv_bytes, short=True)} of KV cache",
                            SMALL_SIZE, KV_CACHE).next_to(kv, RIGHT, buff=0.3)
        self.play(FadeIn(wall), run_time=0.5)
        self.at("kv", GrowFromEdge(kv, DOWN), FadeIn(kv_label), run_time=0.9)
        more = get_pill(f"+{fmt.percent(measured.long_kv_ratio, short=True)} bytes per step", KV_CACHE)
        more.next_to(kv_label, DOWN, buff=0.25).align_to(kv_label, LEFT)
        self.at("ratio", FadeIn(more, shift=UP * 0.2), run_time=0.8)

