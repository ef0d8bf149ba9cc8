"""Wasted money: two GPUs side by side (buying arithmetic misses decode), then a long prompt's prefill split into
its linear layers and attention. It starts from batching's last picture (`batching_handover`).
"""

from __future__ import annotations

from manim import (DOWN, LEFT, RIGHT, UP, FadeIn, FadeOut, GrowFromEdge, Indicate, LaggedStart, ReplacementTransform,
                   VGroup)

from render import formatting as fmt
from render.engine.scene import BeatScene
from scenes.figures.counters import Bar, blend
from scenes.figures.text import get_pill, get_text, get_title, inside_safe_area
from scenes.pictures.batching import batching_handover
from scenes.pictures.wasted_money import long_prompt_picture
from scenes.style import COMPUTE, HIGHLIGHT, LABEL_SIZE, MEMORY, MUTED


class ComparisonRow(VGroup):
    """One question of the comparison: its heading, the two GPUs' bars and the ratio between them."""

    def __init__(self, caption: str, names: tuple[str, str], values: tuple[float, float], formatter, color: str,
                 ratio: float):
        super().__init__()
        longest = max(values)
        # The names are short ("H100", "2× A100"): the bars start just after them.
        self.ours = Bar(names[0], formatter(values[0]), 5.2 * values[0] / longest, color, label_width=1.4)
        self.other = Bar(names[1], formatter(values[1]), 5.2 * values[1] / longest, blend(color, MUTED, 0.55),
                         label_width=1.4)
        self.bars = VGroup(self.ours, self.other).arrange(DOWN, buff=0.14, aligned_edge=LEFT)
        self.heading = get_text(caption, LABEL_SIZE, MUTED).next_to(self.bars, UP, buff=0.14, aligned_edge=LEFT)
        self.ratio = get_pill(fmt.times(ratio, short=True), color).next_to(self.bars, RIGHT, buff=0.5)
        self.add(self.heading, self.bars, self.ratio)

    @property
    def answer(self) -> VGroup:
        """What the voice answers the heading with: the bars and their ratio."""
        return VGroup(self.bars, self.ratio)

    def answered(self, ours_drawn: bool = False) -> tuple:
        """The answer shown: both bars grown (or, where ours came across the cut, its words), then the ratio."""
        return (Indicate(self.heading, scale_factor=1.05), self.ours.grow(ours_drawn), self.other.grow(),
                FadeIn(self.ratio, shift=LEFT * 0.2))


def comparison_rows(scene: BeatScene) -> VGroup:
    """Peak arithmetic, memory bandwidth and one user's decode, the film's GPU against the comparison's, the ratios
    in one column."""
    plan, spec, compare, choice = scene.plan, scene.plan.spec, scene.plan.numbers.compare, scene.plan.choice
    here = scene.numbers_here  # what the deployment gives (EFFICIENCY=), as the narration says
    per_gpu = (choice.gpu.short_name, compare.gpu.short_name)  # a chip's own figures are per GPU ...
    whole = (choice.times(choice.gpu.short_name), choice.times(compare.gpu.short_name))  # ... decode the deployment's
    rows = VGroup(
        ComparisonRow("peak arithmetic", per_gpu, (spec.peak_flops, compare.peak_flops),
                      lambda v: fmt.teraflops(v, short=True), COMPUTE, compare.flops_ratio),
        ComparisonRow("memory bandwidth", per_gpu, (spec.memory_bandwidth, compare.memory_bandwidth),
                      lambda v: fmt.bandwidth(v, short=True), MEMORY, compare.bandwidth_ratio),
        ComparisonRow("one user's decode" + (" here" if plan.expected else ""), whole,
                      (here.decode.tokens_per_second, here.compare.decode_tokens_per_second),
                      lambda v: fmt.tokens_per_second(v, short=True), HIGHLIGHT, compare.decode_speedup))
    rows.arrange(DOWN, buff=0.42, aligned_edge=LEFT)
    right_edge = max(row.bars.get_right()[0] for row in rows)
    for row in rows:
        row.ratio.move_to([right_edge + 0.4, row.bars.get_y(), 0], aligned_edge=LEFT)
    # Right of centre: the bars run right from their GPUs' names, so their weight sits left of their middle.
    return inside_safe_area(rows.move_to(DOWN * 0.35 + RIGHT * 1.2))


class WastedMoney(BeatScene):
    """Two GPUs side by side: arithmetic, bandwidth and one user's decode; then a long prompt."""

    predecessor, successor = "batching", "measured"

    def build(self) -> None:
        choice, compare = self.plan.choice, self.plan.numbers.compare
        ours, other = choice.times(choice.gpu.short_name), choice.times(compare.gpu.short_name)  # as many of each
        title = get_title(self.beat.title, f"{ours} against {other} · {choice.model.name} · {choice.dtype.name}")
        rows = comparison_rows(self)
        flops, bandwidth, decode = rows
        long_prompt = long_prompt_picture(self, ours)
        self.hand_over(*long_prompt.handed_over(bool(self.numbers_here.long_prompt.communication_seconds)))
        drawn = set()  # the rows whose bar for our GPU came across the cut
        if self.continues:
            # One shot with batching: the roofline's roof (its arithmetic) and slope (its bandwidth) become our
            # GPU's bars for them; after a measured sweep, the wall becomes the bandwidth's.
            carried = batching_handover(self)
            self.add(*carried)
            targets = [bandwidth] if len(carried) == 1 else [flops, bandwidth]
            self.play(*[ReplacementTransform(shape, row.ours.rect) for shape, row in zip(carried, targets)],
                      FadeIn(title), run_time=1.0)
            drawn = {id(row) for row in targets}
        else:
            self.enter(title)

        # The three questions first, one after another, then each answered as the voice names it.
        self.play(LaggedStart(*[FadeIn(row.heading, shift=RIGHT * 0.2) for row in rows], lag_ratio=0.9),
                  run_time=max(0.5, min(2.4, self.seconds_until("flops") - 0.3)))
        self.at("flops", *flops.answered(id(flops) in drawn), run_time=1.0)
        self.ambient = lambda: Indicate(flops.answer, scale_factor=1.04)
        self.at("bandwidth", *bandwidth.answered(id(bandwidth) in drawn), run_time=1.0)
        self.ambient = lambda: Indicate(bandwidth.answer, scale_factor=1.04)
        self.at("decode", *decode.answered(), run_time=1.0)
        self.ambient = lambda: Indicate(decode.answer, scale_factor=1.04)

        # A long prompt: prefill time split into the linear layers and attention.
        self.at("long-prompt", FadeOut(rows, shift=UP * 0.3), FadeIn(long_prompt.heading), run_time=0.6)
        self.ambient = None  # the bars it pulsed are gone
        # The linear layers' time fills in while the voice gets to attention.
        self.play(GrowFromEdge(long_prompt.linear, LEFT), FadeIn(long_prompt.linear_label),
                  FadeIn(long_prompt.linear_term), run_time=max(0.6, self.seconds_until("attention") - 0.3))
        talking_in = ([GrowFromEdge(long_prompt.talking, LEFT), FadeIn(long_prompt.talking_label)]
                      if self.numbers_here.long_prompt.communication_seconds else [])
        self.at("attention", GrowFromEdge(long_prompt.attention, LEFT), FadeIn(long_prompt.attention_label),
                FadeIn(long_prompt.attention_terms), FadeIn(long_prompt.note), *talking_in, run_time=0.9)
        # The payoff: attention's share and its term in the sum light up together, again and again.
        self.repeat_until("end", lambda: (Indicate(long_prompt.attention, color=HIGHLIGHT, scale_factor=1.06),
                                          Indicate(long_prompt.attention_term, scale_factor=1.3)),
                          run_time=1.1, leaving=1.2)
