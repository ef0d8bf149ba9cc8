"""`film load --sweep`'s chart: p90 TTFT and p90 TPOT against the arrival rate, a line a scheduler, the
objectives dashed, in the film's palette (scenes/style.py) and its sans face; drawn once with Cairo onto a PNG
and an SVG surface alike."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import cairo

from render.files import atomic_path
from render.serving.metrics import Report
from scenes import style

WIDTH, HEIGHT = 1280, 560
LINE_COLOURS = {"static": style.MUTED, "continuous": style.MEMORY, "chunked": style.COMPUTE,
                "disaggregated": style.KV_CACHE}
FONT = "Inter"


def rgb(colour: str) -> tuple[float, float, float]:
    colour = colour.lstrip("#")
    return tuple(int(colour[index:index + 2], 16) / 255 for index in (0, 2, 4))


def draw(context: cairo.Context, rates: tuple[float, ...], reports: dict[str, list[Report]], slo, title: str) -> None:
    context.set_source_rgb(*rgb(style.BACKGROUND))
    context.paint()
    context.select_font_face(FONT, cairo.FONT_SLANT_NORMAL, cairo.FONT_WEIGHT_NORMAL)
    context.set_font_size(22)
    context.set_source_rgb(*rgb(style.TEXT))
    context.move_to(48, 44)
    context.show_text(title)
    panels = (("p90 TTFT", lambda report: report.ttft_seconds.p90, slo.ttft_seconds),
              ("p90 TPOT", lambda report: report.tpot_seconds.p90, slo.tpot_seconds))
    for number, (label, figure, objective) in enumerate(panels):
        values = [figure(report) for found in reports.values() for report in found
                  if math.isfinite(figure(report)) and figure(report) > 0]
        shown = values + ([objective] if objective else []) or [0.01]  # (no TPOT at all: every answer one token)
        low = 10 ** math.floor(math.log10(min(shown)))
        high = max(10 ** math.ceil(math.log10(max(shown))), low * 10)
        panel = Panel(96 + number * 600, 90, 500, 370, rates[-1] * 1.02, low, high)
        draw_axes(context, panel, rates, label)
        if objective is not None:
            draw_objective(context, panel, objective)
        for name, found in reports.items():
            context.set_source_rgb(*rgb(LINE_COLOURS.get(name, style.TEXT)))
            context.set_line_width(3)
            points = [(panel.x(report.rate), panel.y(figure(report))) for report in found
                      if math.isfinite(figure(report))]
            for index, (px, py) in enumerate(points):
                (context.move_to if index == 0 else context.line_to)(px, py)
            context.stroke()
    draw_legend(context, reports)


def draw_axes(context: cairo.Context, panel: Panel, rates: tuple[float, ...], label: str) -> None:
    """A panel's decades of seconds (lines and labels), its rates beneath, and its title above."""
    left, top, width, height, y = panel.left, panel.top, panel.width, panel.height, panel.y
    context.set_line_width(1)
    context.set_font_size(15)
    decade = panel.low
    while decade <= panel.high * 1.0001:
        context.set_source_rgb(*rgb(style.IDLE))
        context.move_to(left, y(decade))
        context.line_to(left + width, y(decade))
        context.stroke()
        context.set_source_rgb(*rgb(style.MUTED))
        text = f"{decade:g} s" if decade >= 1 else (f"{decade * 1e3:g} ms")
        extent = context.text_extents(text)
        context.move_to(left - 10 - extent.width, y(decade) + 5)
        context.show_text(text)
        decade *= 10
    for tick in nice_ticks(rates[-1]):
        context.set_source_rgb(*rgb(style.MUTED))
        text = f"{tick:g}"
        extent = context.text_extents(text)
        context.move_to(panel.x(tick) - extent.width / 2, top + height + 24)
        context.show_text(text)
    context.move_to(left + width / 2 - 80, top + height + 50)
    context.show_text("arrival rate (requests a second)")
    context.set_source_rgb(*rgb(style.TEXT))
    context.set_font_size(18)
    context.move_to(left, top - 14)
    context.show_text(label)


def draw_objective(context: cairo.Context, panel: Panel, objective: float) -> None:
    """The objective as a dashed line across the panel, named."""
    context.set_source_rgb(*rgb(style.HIGHLIGHT))
    context.set_dash([6, 6])
    context.set_line_width(1.5)
    context.move_to(panel.left, panel.y(objective))
    context.line_to(panel.left + panel.width, panel.y(objective))
    context.stroke()
    context.set_dash([])
    context.set_font_size(14)
    context.move_to(panel.left + 8, panel.y(objective) - 6)
    context.show_text(f"objective {objective:g} s")


def draw_legend(context: cairo.Context, reports: dict[str, list[Report]]) -> None:
    context.set_font_size(16)
    legend = 96
    for name in reports:
        context.set_source_rgb(*rgb(LINE_COLOURS.get(name, style.TEXT)))
        context.rectangle(legend, HEIGHT - 34, 22, 6)
        context.fill()
        context.set_source_rgb(*rgb(style.TEXT))
        context.move_to(legend + 30, HEIGHT - 26)
        context.show_text(name)
        legend += 60 + context.text_extents(name).width


@dataclass(frozen=True)
class Panel:
    """Where a panel lies on the page, and its axes: rates from 0 (linear), seconds from `low` to `high` (log)."""

    left: float
    top: float
    width: float
    height: float
    most_rate: float
    low: float
    high: float

    def x(self, rate: float) -> float:
        return self.left + self.width * rate / self.most_rate

    def y(self, seconds: float) -> float:
        seconds = min(max(seconds, self.low), self.high)
        share = (math.log10(seconds) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return self.top + self.height * (1 - share)


def nice_ticks(top: float) -> list[float]:
    step = 10 ** math.floor(math.log10(top / 4))
    for multiple in (1, 2, 5, 10):
        if top / (step * multiple) <= 6:
            step *= multiple
            break
    return [step * index for index in range(0, int(top / step) + 1)]


def write_charts(folder: Path, rates, reports, slo, title: str) -> tuple[Path, Path]:
    """The chart as build/…/load/sweep.png and sweep.svg (each written whole, then renamed)."""
    folder.mkdir(parents=True, exist_ok=True)
    png, svg = folder / "sweep.png", folder / "sweep.svg"
    with atomic_path(svg) as part:
        surface = cairo.SVGSurface(str(part), WIDTH, HEIGHT)
        draw(cairo.Context(surface), rates, reports, slo, title)
        surface.finish()
    surface = cairo.ImageSurface(cairo.FORMAT_RGB24, WIDTH, HEIGHT)
    draw(cairo.Context(surface), rates, reports, slo, title)
    with atomic_path(png) as part:
        surface.write_to_png(str(part))
    return png, svg
