"""Wasted money: two GPUs side by side (buying arithmetic misses decode), then a long prompt's prefill split into
its linear layers and attention. It starts from batching's last picture (`batching_handover`).
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import (DOWN, LEFT, RIGHT, UP, FadeIn, FadeOut, GrowFromEdge,
                   Indicate, LaggedStart, Rectangle, ReplacementTransform, VGroup)

from render import formatting as fmt, formulas
from scenes.base import BeatScene
from scenes.batching import batching_handover
from scenes.helpers import (Bar, blend, get_formula, get_pill, get_text, get_title,
                            inside_safe_area, slide_clear_of, term)
from scenes.style import COMPUTE, HIGHLIGHT, KV_CACHE, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE, TEXT


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


@dataclass
class LongPromptPicture:
    """A long prompt's prefill as one bar split into the linear layers, attention and (on several GPUs) the
    all-reduces, each labelled, over the formula of its work."""

    heading: object
    linear: Rectangle
    attention: Rectangle
    talking: Rectangle          # between GPUs: the all-reduces after the arithmetic (a sliver on one GPU)
    linear_label: object
    attention_label: object
    talking_label: object       # empty on one GPU
    work: object                # operations = 2PN + 2LdN²
    note: object

    def handed_over(self, talking: bool) -> list:
        """What the measured beat takes on: the long prompt's bar becomes its longest prompt's ideal prefill."""
        return [self.linear, self.attention, *([self.talking] if talking else [])]

    @property
    def linear_term(self) -> VGroup:
        """operations = 2PN: what the linear layers do."""
        return term(self.work, r"\text{operations}", "=", "2PN")

    @property
    def attention_terms(self) -> VGroup:
        """+ 2LdN²: attention's square of the prompt."""
        return term(self.work, "+", "2LdN^2")

    @property
    def attention_term(self):
        return term(self.work, "2LdN^2")


def long_prompt_picture(scene: BeatScene, ours: str) -> LongPromptPicture:
    plan, long_prompt = scene.plan, scene.numbers_here.long_prompt
    total, width = long_prompt.seconds, 9.0

    def segment(length: float, color: str) -> Rectangle:
        return Rectangle(width=length, height=0.8, stroke_width=0, fill_color=color, fill_opacity=0.9)

    linear = segment(width * long_prompt.linear_seconds / total, COMPUTE)
    attention = segment(width * long_prompt.attention_seconds / total, KV_CACHE)
    # On several GPUs the all-reduces add their own time, after the arithmetic.
    talking = segment(max(1e-3, width * long_prompt.communication_seconds / total), MUTED)
    stacked = VGroup(linear, attention, talking).arrange(RIGHT, buff=0).move_to(UP * 0.15 + RIGHT * 1.0)
    heading = get_text(f"a {fmt.count(long_prompt.tokens)}-token prompt on {ours}: prefill "
                       f"{fmt.duration(total, short=True)}"
                       + (f" here ({fmt.duration(plan.numbers.long_prompt.seconds, short=True)} at best)"
                          if plan.expected else ""),
                       LABEL_SIZE, TEXT).next_to(stacked, UP, buff=0.35)
    linear_label = get_text(f"linear layers {fmt.duration(long_prompt.linear_seconds, short=True)}",
                            SMALL_SIZE, COMPUTE).next_to(linear, DOWN, buff=0.2)
    attention_label = get_text(
        f"attention {fmt.duration(long_prompt.attention_seconds, short=True)} "
        f"({fmt.percent(long_prompt.attention_share, short=True)})", SMALL_SIZE, KV_CACHE)
    attention_label.next_to(attention, DOWN, buff=0.2).align_to(attention, RIGHT)
    # Under a thin attention segment (the all-reduces after it take much of the bar) it moves right,
    # past the linear layers' label.
    slide_clear_of(attention_label, linear_label, margin=0.3)
    talking_label = VGroup()
    if long_prompt.communication_seconds:
        talking_label = get_text(f"between GPUs {fmt.duration(long_prompt.communication_seconds, short=True)}",
                                 SMALL_SIZE, MUTED).next_to(attention_label, DOWN, buff=0.12).align_to(talking, RIGHT)
    # The work itself: two operations per weight per token, and attention's square of the prompt.
    work = get_formula(formulas.PREFILL_WORK)
    work.next_to(VGroup(linear_label, attention_label, talking_label), DOWN, buff=0.55)
    note = get_text("attention grows with the square of the prompt", SMALL_SIZE, MUTED).next_to(work, DOWN, buff=0.25)
    return LongPromptPicture(heading, linear, attention, talking, linear_label, attention_label, talking_label, work,
                             note)


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
