"""Log-log charts: the axes in decades, and the roofline (memory slope, ridge, compute roof, and the jobs as points
on it)."""

from __future__ import annotations

import math
import numpy as np

from manim import DOWN, LEFT, PI, RIGHT, UP, Animation, AnimationGroup, DashedLine, Dot, Line, VGroup, VMobject

from scenes.figures.counters import Labelled
from scenes.figures.text import get_text
from scenes.style import COMPUTE, HIGHLIGHT, LABEL_SIZE, MEMORY, MUTED, SMALL_SIZE, TEXT


# -- the roofline ----------------------------------------------------------------------------------


class LogChart(VGroup):
    """Log-log axes over `x_range` and `y_range` (their extents), ticked where `x_ticks` and
    `y_ticks` say ((value, label) pairs), with a title along each axis."""

    def __init__(self, x_range: tuple[float, float], y_range: tuple[float, float], x_title: str, y_title: str,
                 x_ticks, y_ticks, width: float, height: float, **kwargs):
        super().__init__(**kwargs)
        self.log_x = (math.log10(x_range[0]), math.log10(x_range[1]))
        self.log_y = (math.log10(y_range[0]), math.log10(y_range[1]))
        self.size = (width, height)
        self.origin = np.array([-width / 2, -height / 2, 0.0])
        self.axes = VGroup(Line(self.origin, self.origin + RIGHT * width, color=MUTED),
                           Line(self.origin, self.origin + UP * height, color=MUTED))
        self.ticks = self._ticks(x_ticks, y_ticks)
        self.x_title = get_text(x_title, SMALL_SIZE, MUTED)
        self.x_title.next_to(self.axes[0], DOWN, buff=0.5)
        # Along the axis, left of its tick labels, where no point's label can reach it.
        self.y_title = get_text(y_title, SMALL_SIZE, MUTED).rotate(PI / 2)
        self.y_title.next_to(self.ticks, LEFT, buff=0.15).set_y(self.axes[1].get_center()[1])
        self.add(self.axes, self.ticks, self.x_title, self.y_title)

    @property
    def x_axis(self) -> Line:
        return self.axes[0]

    @property
    def y_axis(self) -> Line:
        return self.axes[1]

    def polyline(self, points, color: str, stroke_width: float = 5) -> VMobject:
        """A curve through (x, y) pairs in the chart's units: a measured sweep's or a fit's."""
        return VMobject(color=color, stroke_width=stroke_width).set_points_as_corners(
            [self.point(x, y) for x, y in points])

    def point(self, x: float, y: float) -> np.ndarray:
        across = (math.log10(x) - self.log_x[0]) / (self.log_x[1] - self.log_x[0]) * self.size[0]
        up = (math.log10(y) - self.log_y[0]) / (self.log_y[1] - self.log_y[0]) * self.size[1]
        return self.get_origin() + np.array([across, up, 0.0])

    def get_origin(self) -> np.ndarray:
        return self.axes[0].get_start()

    def _ticks(self, x_ticks, y_ticks) -> VGroup:
        ticks = VGroup()
        for value, label in x_ticks:
            position = self.point(value, 10 ** self.log_y[0])
            ticks.add(Line(position, position + DOWN * 0.1, color=MUTED))
            ticks.add(get_text(label, SMALL_SIZE, MUTED).next_to(position, DOWN, buff=0.15))
        for value, label in y_ticks:
            position = self.point(10 ** self.log_x[0], value)
            ticks.add(Line(position, position + LEFT * 0.1, color=MUTED))
            ticks.add(get_text(label, SMALL_SIZE, MUTED).next_to(position, LEFT, buff=0.15))
        return ticks


def decades(values) -> tuple[float, float]:
    """The whole powers of ten around `values`: a log axis's extent."""
    return 10 ** math.floor(math.log10(min(values))), 10 ** math.ceil(math.log10(max(values)))


def powers_of_ten(extent: tuple[float, float], label) -> list[tuple[float, str]]:
    """A tick at every power of ten within `extent`, labelled by `label(exponent)`."""
    low, high = math.log10(extent[0]), math.log10(extent[1])
    return [(10 ** exponent, label(exponent)) for exponent in range(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1)]


class RooflineChart(LogChart):
    """Log-log axes of attainable FLOP/s against operations per byte, with one GPU's roofline.

    `intensity_range` and `flops_range` are the axes' extents (powers of ten); the line is
    min(peak, bandwidth x intensity): the memory slope, the ridge, then the flat compute roof.
    """

    def __init__(self, peak: float, bandwidth: float, intensity_range: tuple[float, float],
                 flops_range: tuple[float, float], width: float = 7.5, height: float = 4.6, **kwargs):
        super().__init__(intensity_range, flops_range, "operations per byte (log scale)",
                         "attainable FLOP/s (log scale)", powers_of_ten(intensity_range, power_label),
                         powers_of_ten(flops_range, flops_label), width, height, **kwargs)
        self.peak, self.bandwidth = peak, bandwidth
        self.slope, self.roof = self.roofline_lines(peak, bandwidth)
        self.add(self.slope, self.roof)

    def attainable(self, intensity: float, peak: float | None = None, bandwidth: float | None = None) -> float:
        return min(peak or self.peak, (bandwidth or self.bandwidth) * intensity)

    def roofline_lines(self, peak: float, bandwidth: float) -> tuple[Line, Line]:
        ridge = peak / bandwidth
        left = 10 ** self.log_x[0]
        slope = Line(self.point(left, bandwidth * left), self.point(ridge, peak), color=MEMORY, stroke_width=6)
        roof = Line(self.point(ridge, peak), self.point(10 ** self.log_x[1], peak), color=COMPUTE, stroke_width=6)
        return slope, roof

    def morph_to(self, peak: float, bandwidth: float) -> Animation:
        """The same chart for another GPU: the slope and the roof move to its numbers."""
        slope, roof = self.roofline_lines(peak, bandwidth)
        self.peak, self.bandwidth = peak, bandwidth
        return AnimationGroup(self.slope.animate.put_start_and_end_on(slope.get_start(), slope.get_end()),
                              self.roof.animate.put_start_and_end_on(roof.get_start(), roof.get_end()))

    def achieved_roof(self, peak: float, bandwidth: float, label: str) -> Labelled:
        """What a deployment reaches under the datasheet's line (EFFICIENCY=): its slope and roof dashed, and a legend
        (a dash and `label`) for the caller to place."""
        slope, roof = self.roofline_lines(peak, bandwidth)
        lines = VGroup(*[DashedLine(line.get_start(), line.get_end(), color=line.get_color(), stroke_width=4,
                                    dash_length=0.12) for line in (slope, roof)])
        legend = VGroup(DashedLine(LEFT * 0.3, RIGHT * 0.3, color=TEXT, stroke_width=4, dash_length=0.12),
                        get_text(label, SMALL_SIZE, TEXT)).arrange(RIGHT, buff=0.15)
        return Labelled(lines, legend)

    def ridge_marker(self, label: str) -> Labelled:
        ridge = self.peak / self.bandwidth
        top = self.point(ridge, self.peak)
        line = DashedLine(top, [top[0], self.get_origin()[1], 0], color=HIGHLIGHT, stroke_width=3)
        # At the foot of the line, right of it: points left of the ridge label themselves up and left.
        # A ridge near the axis's end (FP8 arithmetic on a chart sized for it) is labelled on its left.
        text = get_text(label, LABEL_SIZE, HIGHLIGHT, weight="BOLD").next_to(line.get_end(), UP + RIGHT, buff=0.12)
        if text.get_right()[0] > self.axes[0].get_right()[0]:
            text.next_to(line.get_end(), UP + LEFT, buff=0.12)
        return Labelled(line, text)

    def dot(self, intensity: float, color: str, label: str, label_direction=UP) -> Labelled:
        position = self.point(intensity, self.attainable(intensity))
        dot = Dot(position, radius=0.11, color=color)
        text = get_text(label, LABEL_SIZE, color, weight="BOLD").next_to(dot, label_direction, buff=0.25)
        return Labelled(dot, text)


def power_label(exponent: int) -> str:
    """10^3 -> '1k': tick labels for the intensity axis."""
    value = 10 ** exponent
    if value >= 1000:
        return f"{value // 1000:g}k"
    return f"{value:g}"


def flops_label(exponent: int) -> str:
    """10^15 -> '1P': tick labels for the FLOP/s axis, in SI prefixes."""
    prefixes = {9: "1G", 10: "10G", 11: "100G", 12: "1T", 13: "10T", 14: "100T", 15: "1P", 16: "10P", 17: "100P"}
    return prefixes.get(exponent, f"1e{exponent}")
