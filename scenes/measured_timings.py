"""Measured timings: a real endpoint's waits and speeds beside the roofline's ideal ones.

The measured dataset names its own model, precision and the GPU it is compared with; the
provenance stays on screen while its numbers are. The two beats are one shot: the time-to-
first-token bars become the decode-rate bars under the same provenance.
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import (DOWN, LEFT, RIGHT, UP, AnimationGroup, Create, DashedLine, Dot, FadeIn, FadeOut, GrowFromEdge,
                   Indicate, LaggedStart, Rectangle, ReplacementTransform, VGroup, Write)

from render import formatting as fmt, formulas
from scenes.base import BeatScene
from scenes.helpers import (Bar, LogChart, WeightsWall, decades, get_formula, get_pill, get_provenance, get_text,
                            get_title, inside_safe_area, power_label, powers_of_ten, retitle, tex_text)
from scenes.style import COMPUTE, HIGHLIGHT, KV_CACHE, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE, TEXT
from scenes.wasted_money import long_prompt_picture

BAR_LENGTH = 6.0
LABEL_WIDTH = 2.0             # "ideal prefill", the longest of the bars' labels
BESIDE_CHART_BAR_LENGTH = 2.9  # the measured beat's bars when the fit's chart takes the right of the frame
MEASURED_SUBTITLE = "time to first token (request sent → first streamed token) against the ideal prefill"
CACHE_SUBTITLE = "decode rate = 1 ÷ time per output token, against the roofline's ceiling"


def prompt_name(tokens: float, estimated: bool = False) -> str:
    return f"{'≈' if estimated else ''}{fmt.count(tokens)}-token prompt"


class TtftChart(VGroup):
    """The measured waits against prompt length (log-log): the roofline's ideal prefill, the fit through the
    measured points (a fixed overhead, then prefill at the achieved share of peak), and the points themselves."""

    def __init__(self, measured, width: float, height: float, **kwargs):
        super().__init__(**kwargs)
        fit = measured.fit
        curve = fit.ttft_curve
        self.measured = [point for point in fit.points if point.kind == "ttft"]
        values = [value for point in curve for value in (point.ideal_seconds, point.fitted_seconds)]
        values += [point.measured_seconds for point in self.measured]
        x_range = (curve[0].prompt_tokens, curve[-1].prompt_tokens)
        y_range = decades(values)
        self.chart = LogChart(x_range, y_range, "prompt tokens (log)", "time to first token (log)",
                              powers_of_ten(x_range, power_label),
                              powers_of_ten(y_range, lambda exponent: fmt.precise_seconds(10.0 ** exponent)),
                              width, height)

        self.ideal = self.chart.polyline([(point.prompt_tokens, point.ideal_seconds) for point in curve], COMPUTE)
        self.fitted = self.chart.polyline([(point.prompt_tokens, point.fitted_seconds) for point in curve], HIGHLIGHT)
        self.dots = {point.prompt_tokens: Dot(self.chart.point(point.prompt_tokens, point.measured_seconds),
                                              radius=0.09, color=TEXT) for point in self.measured}
        self.fit_legend = get_text(f"fit: {fmt.precise_seconds(fit.overhead_seconds.value)} + prefill at "
                                   f"{fmt.percent(fit.compute_efficiency.value, short=True)} of peak", SMALL_SIZE,
                                   HIGHLIGHT)
        self.ideal_legend = get_text("ideal prefill", SMALL_SIZE, COMPUTE)
        self.legend = VGroup(self.fit_legend, self.ideal_legend).arrange(DOWN, aligned_edge=LEFT, buff=0.08)
        self.legend.next_to(self.chart.axes, UP, buff=0.2).align_to(self.chart.x_axis, LEFT)
        self.add(self.chart, self.ideal, self.fitted, *self.dots.values(), self.legend)


class PromptWaits(VGroup):
    """One prompt's wait for its first token: its heading over the measured bar and the ideal prefill's."""

    def __init__(self, heading, measured: Bar, ideal: Bar):
        super().__init__()
        self.heading, self.measured, self.ideal = heading, measured, ideal
        self.bars = VGroup(measured, ideal).arrange(DOWN, buff=0.1, aligned_edge=LEFT)
        self.add(heading.next_to(self.bars, UP, buff=0.12, aligned_edge=LEFT), self.bars)


@dataclass
class MeasuredEnding:
    """The measured beat's last picture: each wait split into its ideal prefill and the rest."""

    title: object
    provenance: VGroup
    groups: VGroup        # a PromptWaits per prompt, shortest first
    splits: VGroup        # per measured bar: the share that is not prefill
    network: object
    chart: VGroup         # the fit through the measured waits (a TtftChart), or empty when the fit has no prefill

    @property
    def parts(self) -> list:
        return [self.title, self.provenance, self.groups, self.splits, self.network, self.chart]

    @property
    def shorter(self) -> VGroup:
        """Every prompt's waits but the longest's: the ones the network dominates."""
        return self.groups[:-1]

    @property
    def longest(self) -> PromptWaits:
        return self.groups[-1]


def measured_ending(scene: BeatScene, title: str) -> MeasuredEnding:
    measured = scene.plan.measured
    prompts = [prompt for prompt in (measured.short, measured.medium, measured.long)
               if prompt is not None and prompt.ttft_seconds is not None]
    longest = max(prompt.ttft_seconds for prompt in prompts)
    charted = bool(measured.fit and measured.fit.ttft_curve)
    length = BESIDE_CHART_BAR_LENGTH if charted else BAR_LENGTH
    groups, splits = VGroup(), VGroup()
    for prompt in prompts:
        waited, ideal = prompt.ttft_seconds, prompt.ideal_prefill_seconds
        measured_bar = Bar("measured", fmt.seconds(waited, short=True), length * waited / longest, HIGHLIGHT,
                           label_width=LABEL_WIDTH)
        ideal_bar = Bar("ideal prefill", fmt.duration(ideal, short=True), length * ideal / longest, COMPUTE,
                        label_width=LABEL_WIDTH)
        heading = get_text(prompt_name(prompt.prompt_tokens, measured.dataset.prompt_tokens_estimated),
                           LABEL_SIZE, TEXT)
        groups.add(PromptWaits(heading, measured_bar, ideal_bar))
    groups.arrange(DOWN, buff=0.3, aligned_edge=LEFT).move_to(UP * 0.35)
    if charted:
        groups.align_to([-0.25, 0, 0], LEFT)  # right of the chart: the prompts' words balance the chart's axes
    for group, prompt in zip(groups, prompts):
        measured_bar = group.measured
        # The measured wait, split: the ideal prefill's share in its colour, the rest left as network.
        share = min(1.0, prompt.ideal_prefill_seconds / prompt.ttft_seconds)
        prefill_part = Rectangle(width=max(0.02, measured_bar.rect.width * share), height=measured_bar.rect.height,
                                 stroke_width=0, fill_color=COMPUTE, fill_opacity=0.95)
        splits.add(prefill_part.move_to(measured_bar.rect, aligned_edge=LEFT))
    network = get_pill(f"{fmt.percent(measured.network_fraction, short=True)} network and queueing", HIGHLIGHT)
    chart = VGroup()
    if charted:  # left of the bars: the fit through the waits, the pill above it
        chart = TtftChart(measured, width=3.4, height=2.4)
        chart.move_to([-4.1, 0.05, 0]).shift(DOWN * (chart.legend.height / 2))
        network.next_to(chart.legend, UP, buff=0.2).set_x(chart.chart.axes.get_x())
        inside_safe_area(VGroup(chart, network))
    else:
        network.next_to(groups[:-1], RIGHT, buff=0.5)  # beside the shorter prompts' waits
    provenance = get_provenance(measured)
    return MeasuredEnding(get_title(title, MEASURED_SUBTITLE), provenance, groups, splits, network, chart)


class Measured(BeatScene):
    """TTFT on a live endpoint against the ideal prefill time: short prompts wait on the network."""

    predecessor, successor = "wasted-money", "cache-rides-along"

    def build(self) -> None:
        plan = self.plan
        ending = measured_ending(self, self.beat.title)
        groups, chart = ending.groups, ending.chart
        long_dot = chart.dots.get(plan.measured.long.prompt_tokens) if chart else None
        if self.continues:
            # One shot with the wasted-money beat: its long prompt's prefill bar becomes the longest measured
            # prompt's ideal prefill.
            before = long_prompt_picture(self, plan.choice.times(plan.choice.gpu.short_name))
            carried = VGroup(*before.handed_over(bool(self.numbers_here.long_prompt.communication_seconds)))
            self.add(carried)
            self.play(ReplacementTransform(carried, ending.longest.ideal.rect), FadeIn(ending.title), run_time=0.9)
        else:
            self.enter(ending.title)
        self.at("endpoint", FadeIn(ending.provenance, shift=UP * 0.2), run_time=0.8)
        self.ambient = lambda: Indicate(ending.provenance.route, scale_factor=1.02)

        # First what the roofline promises, prompt by prompt: the ideal prefill of each (and, charted, for every
        # prompt length); then what was measured, each wait growing as long as it took, each a point on the chart.
        ideal_line = [FadeIn(chart.chart), Create(chart.ideal), FadeIn(chart.ideal_legend)] if chart else []
        self.play(LaggedStart(*[AnimationGroup(FadeIn(group.heading),
                                               group.ideal.grow(drawn=self.continues and group is ending.longest))
                                for group in groups], lag_ratio=0.8), *ideal_line,
                  run_time=min(3.6, max(1.2, self.seconds_until("short") - 0.6)))
        short_dots = [FadeIn(dot, scale=1.5) for dot in chart.dots.values() if dot is not long_dot] if chart else []
        self.at("short", LaggedStart(*[group.measured.grow() for group in ending.shorter], *short_dots,
                                     lag_ratio=0.7), until="network")
        # The fit: flat at the overhead until prefill's arithmetic takes over, through the points.
        fitted = [Create(chart.fitted), FadeIn(chart.fit_legend)] if chart else []
        self.at("network", FadeIn(ending.network, shift=LEFT * 0.2), *fitted, run_time=0.8)
        self.ambient = lambda: Indicate(ending.network, scale_factor=1.08)
        self.at("long", ending.longest.measured.grow(), *([FadeIn(long_dot, scale=1.5)] if long_dot else []),
                run_time=1.2)

        # The payoff: each measured wait resolves into its ideal prefill and the rest, network and queueing.
        self.hold_for_payoff(0.6 * len(ending.splits))
        for group, split in zip(groups, ending.splits):
            # The measured wait lights as its ideal share is drawn into it: a 5 ms share alone is a sliver
            # that barely moves the picture.
            self.play(ReplacementTransform(group.ideal.rect.copy(), split),
                      Indicate(group.measured.rect, color=TEXT, scale_factor=1.0), run_time=0.6)
        self.repeat_until("end", lambda: (Indicate(ending.network, scale_factor=1.08),
                                          *[Indicate(group.measured.rect, color=HIGHLIGHT, scale_factor=1.0)
                                            for group in ending.shorter]), run_time=1.0, leaving=1.1)


@dataclass
class CachePicture:
    """Everything the cache beat shows: the two decode rates under the ceiling, the slowdown, the wall of weights
    with the long prompt's KV cache stacked on it to scale, what the cache adds to a step, and the fit."""

    title: object
    provenance: VGroup
    short: Bar
    long: Bar
    limit: DashedLine
    limit_label: object
    share: object           # the short prompt's rate as a share of the ceiling
    slower: object
    wall: WeightsWall
    kv: Rectangle
    kv_label: object
    more: object            # + the cache's share of a step's bytes
    ratio: object           # cache ÷ weights ≈ that share
    fitted: VGroup          # the fit's share of bandwidth and KV slope, a line each (empty without a fit)

    def read_once(self, with_cache: bool = True):
        """One decode step's read: the weights, and the cache riding on them."""
        return self.wall.sweep(run_time=1.2, extra=VGroup(self.kv)) if with_cache else self.wall.sweep(run_time=1.2)

    @property
    def handed_over(self) -> list:
        """What the two budgets take on: the two decode rates' bars become the frames of the budgets' cards."""
        return [self.short.rect, self.long.rect]


def cache_picture(scene: BeatScene) -> CachePicture:
    measured = scene.plan.measured
    ceiling = measured.ceiling_tokens_per_second
    scale = BAR_LENGTH / ceiling
    short_rate, long_rate = measured.short.decode_tokens_per_second, measured.long.decode_tokens_per_second
    # The values inside the bars: right of them runs the ceiling line.
    estimated = measured.dataset.prompt_tokens_estimated
    short = Bar(prompt_name(measured.short.prompt_tokens, estimated), fmt.tokens_per_second(short_rate, short=True),
                scale * short_rate, MEMORY, value_inside=True)
    long = Bar(prompt_name(measured.long.prompt_tokens, estimated), fmt.tokens_per_second(long_rate, short=True),
               scale * long_rate, KV_CACHE, value_inside=True)
    bars = VGroup(short, long).arrange(DOWN, buff=0.35, aligned_edge=LEFT).move_to(UP * 0.85)
    bars.align_to([-4.75, 0, 0], LEFT)  # labels, bars and the ceiling's marks across the frame, right of its title
    limit_x = short.rect.get_left()[0] + BAR_LENGTH
    limit = DashedLine([limit_x, bars.get_top()[1] + 0.35, 0], [limit_x, bars.get_bottom()[1] - 0.2, 0],
                       color=HIGHLIGHT)
    limit_label = get_text(f"ceiling {fmt.tokens_per_second(ceiling, short=True)}", SMALL_SIZE, HIGHLIGHT)
    limit_label.next_to(limit, UP, buff=0.1)
    share = get_text(f"{fmt.integer(short_rate, short=True)} is "
                     f"{fmt.percent(measured.ceiling_fraction, short=True)} of the ceiling", SMALL_SIZE, MUTED)
    share.next_to(limit_label, UP, buff=0.08)
    slower = get_pill(f"−{fmt.percent(measured.slowdown, short=True)}", KV_CACHE)
    slower.next_to(limit, RIGHT, buff=0.3).set_y(long.get_y())

    # The wall of weights, and the long prompt's KV cache stacked onto it, to scale.
    wall = WeightsWall(f"{fmt.gigabytes(measured.weight_bytes, short=True)} of weights",
                       width=3.0, height=1.6, rows=6, cols=8).move_to(DOWN * 1.05 + LEFT * 0.8)
    kv_height = 1.6 * measured.long_kv_ratio
    kv = Rectangle(width=3.0, height=max(0.04, kv_height), stroke_width=0, fill_color=KV_CACHE, fill_opacity=0.9)
    kv.next_to(wall.bricks, UP, buff=0.04)
    wall.label.next_to(wall.bricks, LEFT, buff=0.3)
    kv_label = get_text(f"+ {fmt.gigabytes(measured.long_kv_bytes, short=True)} of KV cache",
                        SMALL_SIZE, KV_CACHE).next_to(kv, RIGHT, buff=0.3)
    ratio = get_formula(formulas.CACHE_SHARE, "=",
                        rf"\frac{{{tex_text(fmt.gigabytes(measured.long_kv_bytes, short=True))}}}"
                        rf"{{{tex_text(fmt.gigabytes(measured.weight_bytes, short=True))}}}",
                        r"\approx", (tex_text(fmt.percent(measured.long_kv_ratio, short=True)), KV_CACHE), size=30)
    more = get_pill(f"+{fmt.percent(measured.long_kv_ratio, short=True)} bytes per step", KV_CACHE)
    more.next_to(kv_label, DOWN, buff=0.2, aligned_edge=LEFT)
    ratio.next_to(more, DOWN, buff=0.25, aligned_edge=LEFT)
    # The fit of every decode rate: the share of bandwidth reached, and what each cached token adds to a step
    # against what its KV bytes would at that share.
    fit, fitted = measured.fit, VGroup()
    if fit and fit.memory_efficiency:
        # (the bandwidth reached, not its share: a second percentage beside "156 is 75% of the ceiling" reads as
        # the same figure)
        lines = [(f"fit: {fmt.bandwidth(fit.achieved_bandwidth, short=True)} of the "
                  f"{fmt.bandwidth(measured.gpu.bandwidth, short=True)} reached", MEMORY)]
        if fit.kv_slope_seconds_per_token:
            slope = fit.kv_slope_seconds_per_token
            lines += [(f"each cached token: +{fmt.nanoseconds(slope.value, slope.uncertainty)} a step", KV_CACHE),
                      (f"its KV bytes alone: {fmt.nanoseconds(fit.kv_slope_predicted_seconds_per_token)}", MUTED)]
        fitted = VGroup(*[get_text(line, SMALL_SIZE, color) for line, color in lines])
        # Above the bars it explains, left of the ceiling's words.
        fitted.arrange(DOWN, aligned_edge=LEFT, buff=0.08).next_to(short, UP, buff=0.3).align_to(short, LEFT)
    return CachePicture(get_title(scene.beat.title, CACHE_SUBTITLE), get_provenance(measured), short, long, limit,
                        limit_label, share, slower, wall, kv, kv_label, more, ratio, fitted)


class CacheRidesAlong(BeatScene):
    """Decode on the endpoint: slower with a long prompt, by as much as its KV cache adds to every step."""

    predecessor, successor = "measured", "two-budgets"

    def build(self) -> None:
        picture = cache_picture(self)
        title, short, long, limit = picture.title, picture.short, picture.long, picture.limit
        self.hand_over(*picture.handed_over)
        if self.continues:
            # One shot with the measured beat: the provenance stays, the waits become speeds.
            before = measured_ending(self, self.beat.previous_title)
            self.add(*before.parts)
            # The bars' shapes move on their own, under the splits that lie over them (a play brings what it
            # animates to the front unless it is on screen already); their words cross-fade where they stand.
            rects = VGroup()
            for group in before.groups:
                for bar in group.bars:
                    rects.add(bar.rect)
                    bar.remove(bar.rect)
            self.add(rects)
            self.bring_to_front(before.splits, before.network)
            self.play(ReplacementTransform(rects, VGroup(short.rect, long.rect)), FadeOut(before.splits),
                      FadeOut(before.network), FadeOut(before.chart), *[FadeOut(group) for group in before.groups],
                      *[FadeIn(words) for bar in (short, long) for words in (bar.label, bar.value)],
                      retitle(before.title, title), run_time=1.0)
            self.carry_on_with(title, before.provenance, short, long)
            self.at("rate", Write(limit), FadeIn(picture.limit_label), Indicate(short.rect, scale_factor=1.0),
                    run_time=1.0)
        else:
            self.enter(title, picture.provenance)
            self.at("rate", short.grow(), Write(limit), FadeIn(picture.limit_label), run_time=1.0)
        self.play(FadeIn(picture.share), run_time=0.4)
        self.ambient = lambda: Indicate(short.rect, color=HIGHLIGHT, scale_factor=1.0)
        long_in = Indicate(long.rect, scale_factor=1.0) if self.continues else long.grow()
        self.at("slower", long_in, FadeIn(picture.slower, shift=LEFT * 0.2), run_time=1.0)

        self.play(FadeIn(picture.wall), run_time=0.5)
        self.ambient = lambda: picture.read_once(with_cache=False)  # each decode step reads the weights again
        self.at("kv", GrowFromEdge(picture.kv, DOWN), FadeIn(picture.kv_label), run_time=0.9)
        self.ambient = picture.read_once  # ... and the cache riding on them
        self.at("ratio", FadeIn(picture.more, shift=UP * 0.2), Write(picture.ratio), run_time=0.8)
        if len(picture.fitted):
            self.play(LaggedStart(*[FadeIn(line, shift=LEFT * 0.2) for line in picture.fitted], lag_ratio=0.5),
                      run_time=1.0)
        # The payoff: every decode step sweeps the weights and the cache riding on them.
        self.repeat_until("end", lambda: (picture.read_once(), Indicate(long.rect, color=HIGHLIGHT, scale_factor=1.0)),
                          run_time=1.2, leaving=1.3)
