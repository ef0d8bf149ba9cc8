"""Measured: a real endpoint's first-token waits beside the roofline's ideal prefill, and the fit through them.

The measured dataset names its own model, precision and the GPU it is compared with; the provenance stays on
screen while its numbers are. This beat and the next (the cache rides along) are one shot: the time-to-first-token
bars become the decode-rate bars under the same provenance.
"""

from __future__ import annotations

from manim import LEFT, UP, AnimationGroup, Create, FadeIn, Indicate, LaggedStart, ReplacementTransform, VGroup

from render.engine.scene import BeatScene
from scenes.pictures.measured import measured_ending
from scenes.pictures.wasted_money import long_prompt_picture
from scenes.style import HIGHLIGHT, TEXT


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
