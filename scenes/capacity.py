"""Capacity (the extended cut): the slowest tenth's first token against the arrival rate, flat and then climbing at
a knee, a curve a scheduler; where each crosses the objective is the deployment's capacity, DistServe's split
beside them."""

from __future__ import annotations

from manim import Create, FadeIn, Indicate, LaggedStart, Write

from render.engine.scene import BeatScene
from scenes.figures.text import retitle
from scenes.pictures.under_load import capacity_picture, steps_picture
from scenes.style import HIGHLIGHT


class Capacity(BeatScene):
    """p90 TTFT against the rate for each scheduler; each one's capacity at the objectives."""

    predecessor = "long-prompt"

    def build(self) -> None:
        picture = capacity_picture(self)
        picture.plot.shift(-picture.aside)  # (alone in the middle until the legend comes)
        if self.continues:
            before = steps_picture(self, self.beat.previous_title).title
            self.add(before)
            self.play(retitle(before, picture.title), FadeIn(picture.chart), run_time=0.8)
            self.carry_on_with(picture.title, picture.chart)
        else:
            self.enter(picture.title, picture.chart)
        order = ["continuous", "static", "chunked", "disaggregated"]
        curves = [picture.curves[name] for name in order if name in picture.curves]
        self.at("curve", Create(curves[0]), run_time=1.6)
        self.ambient = lambda: Indicate(curves[0], color=HIGHLIGHT, scale_factor=1.0)
        self.at("knee", Write(picture.slo_line), FadeIn(picture.slo_label),
                LaggedStart(*[Create(curve) for curve in curves[1:3]], lag_ratio=0.4), run_time=1.6)
        knees = [picture.knees[name] for name in order[:3] if name in picture.knees]
        legend_heading, legend = picture.legend
        self.at("capacity", picture.plot.animate.shift(picture.aside), run_time=0.7)
        self.play(FadeIn(legend_heading), LaggedStart(*[FadeIn(line) for line in legend[:3]], lag_ratio=0.3),
                  *[FadeIn(knee, scale=0.5) for knee in knees], run_time=1.2)
        self.ambient = lambda: Indicate(legend, color=HIGHLIGHT, scale_factor=1.0)
        split = [picture.knees["disaggregated"]] if "disaggregated" in picture.knees else []
        self.at("disaggregated", Create(picture.curves["disaggregated"]), FadeIn(legend[3]),
                *[FadeIn(knee, scale=0.5) for knee in split], run_time=1.4)
        self.hold_until("end")
