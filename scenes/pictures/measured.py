"""The measured beat's last picture: each measured first-token wait beside its ideal prefill, split into the prefill
and the rest, the fit through them, and the provenance. The measured beat draws it; the cache beat starts from it
(and sizes its bars the same).
"""

from __future__ import annotations

from dataclasses import dataclass

from manim import DOWN, LEFT, RIGHT, UP, Dot, Rectangle, VGroup

from render import formatting as fmt
from render.engine.scene import BeatScene
from scenes.figures.charts import LogChart, decades, power_label, powers_of_ten
from scenes.figures.counters import Bar
from scenes.figures.text import get_pill, get_provenance, get_text, get_title, inside_safe_area
from scenes.style import COMPUTE, HIGHLIGHT, LABEL_SIZE, SMALL_SIZE, TEXT

BAR_LENGTH = 6.0
LABEL_WIDTH = 2.0             # "ideal prefill", the longest of the bars' labels
BESIDE_CHART_BAR_LENGTH = 2.9  # the measured beat's bars when the fit's chart takes the right of the frame
MEASURED_SUBTITLE = "time to first token (request sent → first streamed token) against the ideal prefill"


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
