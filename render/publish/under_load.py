"""The film's page's "Under load" section: the deployment answering a stream of requests, at every rate, scheduler
and pair of objectives a reader can choose, computed at page build by the serving simulator (render/serving/load.py's
grid: the numbers `film load --json` gives at the same settings) and written by render/formatting.py, so the page's
script only looks them up. The extended cut's page uses its plan's stream and rates; any other film's, film load's
defaults over the rates the extended cut would use."""

from __future__ import annotations

import math
from dataclasses import dataclass

from render import formatting as fmt
from render.errors import FilmError
from render.plan.load import chunk_budget, film_rates, load_request
from render.plan.types import LoadParameters, Plan
from render.serving.costs import CacheTooSmall
from render.serving.load import Grid, curve_at, film_rate, grid
from render.serving.metrics import CAPACITY_SHARE, JUDGED_LEAST, SUSTAIN_SHARE, WARMUP_SHARE, Slo
from render.serving.schedulers import LABELS
from scenes import style

SLO_TTFT = (0.25, 0.5, 1.0, 2.0)   # the objectives a reader may choose (with the film's own)
SLO_TPOT = (0.025, 0.05, 0.1)
SCHEDULER_COLOURS = style.SCHEDULER_COLOURS  # as the film's capacity chart draws them
# The chart (SVG units): p90 TTFT on a log scale against the rate, from zero; drawn twice, wide and for a phone (where
# the wide one's type would be under 11 px), CSS showing the one that fits.
CHARTS = {"wide": {"width": 640, "height": 360, "left": 64, "right": 20, "top": 34, "bottom": 52},
          "narrow": {"width": 340, "height": 300, "left": 56, "right": 12, "top": 34, "bottom": 48}}


class Chart:
    """One drawing of the chart: where a rate and a time lie, its ticks and its polylines."""

    def __init__(self, geometry: dict, top_rate: float, decades: tuple[int, int]):
        self.geometry, self.top_rate, self.decades = geometry, top_rate, decades
        g = geometry
        self.plot = [g["left"], g["top"], g["width"] - g["right"], g["height"] - g["bottom"]]

    def x(self, rate: float) -> float:
        left, _, right, _ = self.plot
        return round(left + (right - left) * rate / self.top_rate, 1)

    def y(self, seconds: float) -> float:
        low, high = self.decades
        _, top, _, bottom = self.plot
        share = (math.log10(max(seconds, 10 ** low)) - low) / (high - low)
        return round(bottom - (bottom - top) * min(1.0, share), 1)

    def knee(self, rates, curve: list[float], capacity: float | None) -> list[float] | None:
        """Where a capacity's marker sits: on its scheduler's curve at that rate (whichever objective binds); None
        where there is none, or it lies past the chart's rates."""
        if capacity is None or capacity > self.top_rate:
            return None
        seconds = curve_at(rates, curve, capacity, log_rates=False)
        return None if math.isnan(seconds) else [self.x(capacity), self.y(seconds)]

    def points(self, rates, values) -> str:
        return " ".join(f"{self.x(rate)},{self.y(value)}" for rate, value in zip(rates, values) if value > 0)

    def x_ticks(self) -> list[dict]:
        count = 6 if self.geometry["width"] > 400 else 4
        return [{"at": self.x(rate), "label": f"{rate:g}"} for rate in nice_rates(self.top_rate, count)]

    def y_ticks(self) -> list[dict]:
        return [{"at": self.y(10 ** exponent), "label": fmt.precise_seconds(10 ** exponent)}
                for exponent in range(self.decades[0], self.decades[1] + 1)]


def rate_words(rate: float) -> str:
    return f"{rate:g} requests/s"


def seconds_words(seconds: float) -> str:
    return "—" if math.isnan(seconds) else fmt.precise_seconds(seconds)


def load_view(plan: Plan, parameters: LoadParameters | None = None) -> dict:
    """Everything the section shows and its script looks up: the stops of each control, and at each stop its
    readouts (text) and the chart's marks (SVG coordinates). `parameters`: another stream than the film's (tests
    that read only the section's words). A deployment that cannot take the stream (a request larger than its KV
    cache) gets the reason instead ({"refused": …})."""
    try:
        return view_of(plan, load_grid(plan, parameters))
    except CacheTooSmall as error:  # (said in a reader's words: the command's own names its flags)
        return {"refused": f"one request of {error.prompt:,} prompt and {error.answer:,} answer tokens needs more KV "
                           f"cache than it holds beside its weights ({error.held:,} tokens)"}
    except FilmError as error:
        return {"refused": str(error)}


@dataclass(frozen=True)
class LoadGrid:
    """What the section simulates: its stream, the rate it opens on, its objectives and the grid over its rates."""
    parameters: LoadParameters
    rate: float
    ttfts: tuple[float, ...]
    tpots: tuple[float, ...]
    found: Grid
    chunk_tokens: int             # chunked prefill's tokens a step (the stream's, or vLLM's default on the GPU)

    @property
    def slos(self) -> tuple[Slo, ...]:
        return objectives(self.ttfts, self.tpots)

    @property
    def own(self) -> Slo:
        return Slo(self.parameters.slo_ttft_seconds, self.parameters.slo_tpot_seconds)


def load_grid(plan: Plan, parameters: LoadParameters | None = None) -> LoadGrid:
    """The section's simulation (render/serving/load.py's grid), kept between processes by everything it reads."""
    from render.code import computed

    inputs = (plan.choice, plan.parameters.prompt_tokens, plan.load, parameters)  # everything simulated_grid reads
    return computed("under-load", __name__, inputs, lambda: simulated_grid(plan, parameters))


def simulated_grid(plan: Plan, parameters: LoadParameters | None) -> LoadGrid:
    parameters = parameters or (plan.load.parameters if plan.load else LoadParameters())
    request = load_request(plan.choice, plan.parameters.prompt_tokens, parameters)
    ttfts = tuple(sorted({*SLO_TTFT, parameters.slo_ttft_seconds}))
    tpots = tuple(sorted({*SLO_TPOT, parameters.slo_tpot_seconds}))
    same = plan.load is not None and parameters == plan.load.parameters
    rate = plan.load.rate if same else film_rate(request)
    runs: dict = {}
    found = grid(request, plan.load.rates if same else film_rates(request, rate, runs), objectives(ttfts, tpots),
                 runs=runs)
    return LoadGrid(parameters, rate, ttfts, tpots, found, chunk_budget(request))


def objectives(ttfts: tuple[float, ...], tpots: tuple[float, ...]) -> tuple[Slo, ...]:
    """Every pair of the section's objectives, TTFT's major (the order of its script's lookups)."""
    return tuple(Slo(ttft, tpot) for ttft in ttfts for tpot in tpots)


def view_of(plan: Plan, simulated: LoadGrid) -> dict:
    parameters, rate, ttfts, tpots, found = (simulated.parameters, simulated.rate, simulated.ttfts, simulated.tpots,
                                             simulated.found)
    prompt = plan.parameters.prompt_tokens
    slos, own = simulated.slos, simulated.own
    rates, names = found.rates, list(found.reports)
    curves = {name: [report.ttft_seconds.p90 for report in found.reports[name][own]] for name in names}
    values = [value for curve in curves.values() for value in curve if value > 0] + list(ttfts)
    decades = (math.floor(math.log10(min(values))), math.ceil(math.log10(max(values))))
    charts = {name: Chart(geometry, rates[-1], decades) for name, geometry in CHARTS.items()}
    schedulers = []
    for name in names:
        by_slo = found.reports[name]
        capacities = [found.capacities[name][slo] for slo in slos]
        schedulers.append({
            "name": name, "label": LABELS[name].capitalize(), "gpus": found.gpus[name],
            "points": {view: chart.points(rates, curves[name]) for view, chart in charts.items()},
            # at each rate: p50 and p90 TTFT, p50 and p90 TPOT, throughput (the objectives do not change them)
            "cells": [[seconds_words(report.ttft_seconds.p50), seconds_words(report.ttft_seconds.p90),
                       seconds_words(report.tpot_seconds.p50), seconds_words(report.tpot_seconds.p90),
                       f"{fmt.approx(report.throughput_requests_per_second)} requests/s"]
                      for report in by_slo[own]],
            # at each pair of objectives: the goodput at each rate, and the capacity (and its place on each chart)
            "goodput": [[f"{fmt.approx(report.goodput_requests_per_second)} requests/s "
                         f"({fmt.percent(report.met_share, short=True)} meet both)" for report in by_slo[slo]]
                        for slo in slos],
            "capacity": [capacity_words(capacity, rates[0], found.gpus[name]) for capacity in capacities],
            "knee": {view: [chart.knee(rates, curves[name], capacity) for capacity in capacities]
                     for view, chart in charts.items()},
        })
    # Each text once (a readout is its index in "strings": the goodputs and capacities repeat a lot)
    strings: dict[str, int] = {}

    def interned(text: str) -> int:
        return strings.setdefault(text, len(strings))

    for scheduler in schedulers:
        scheduler["cells"] = [[interned(text) for text in row] for row in scheduler["cells"]]
        scheduler["goodput"] = [[interned(text) for text in row] for row in scheduler["goodput"]]
        scheduler["capacity"] = [interned(text) for text in scheduler["capacity"]]
    return {
        "strings": list(strings),
        "rates": [rate_words(rate) for rate in rates],
        "ttft": [fmt.precise_seconds(value) for value in ttfts],
        "tpot": [fmt.precise_seconds(value) for value in tpots],
        "schedulers": schedulers,
        "start": {"rate": rates.index(rate),
                  "scheduler": names.index("continuous"), "ttft": ttfts.index(own.ttft_seconds),
                  "tpot": tpots.index(own.tpot_seconds)},
        # each chart's marks: where each rate and objective lies, its ticks and plot (wide, and on a phone)
        "charts": {view: {**chart.geometry, "plot": chart.plot, "x": [chart.x(rate) for rate in rates],
                          "ttft_y": [chart.y(value) for value in ttfts], "x_ticks": chart.x_ticks(),
                          "y_ticks": chart.y_ticks()} for view, chart in charts.items()},
        "settings": {"prompt": prompt, "answer": parameters.answer_tokens, "requests": parameters.requests,
                     "seed": parameters.seed, "batch": parameters.static_batch,
                     "wait": parameters.static_wait_seconds, "chunk": simulated.chunk_tokens},
        "share": fmt.percent(CAPACITY_SHARE, short=True),
        "judged": f"{JUDGED_LEAST:,}", "warmup": fmt.percent(WARMUP_SHARE, short=True),
        "sustain": fmt.percent(SUSTAIN_SHARE, short=True),
    }


def capacity_words(capacity: float | None, lowest: float, gpus: int) -> str:
    """"25 requests/s", and on several GPUs each GPU's share beside it ("28 requests/s on 2 GPUs, 14 a GPU"): a
    scheduler that takes more GPUs is compared a GPU at a time."""
    on = f" on {gpus} GPUs" if gpus > 1 else ""
    if capacity is None:
        return f"fewer than {lowest:g} requests/s{on}"
    return f"{fmt.approx(capacity)} requests/s{on}" + (f", {fmt.approx(capacity / gpus)} a GPU" if gpus > 1 else "")


def nice_rates(top: float, most: int = 6) -> list[float]:
    """Round rates from zero to `top` (a step of 1, 2 or 5 times a power of ten), at most `most` past zero."""
    step = 10 ** math.floor(math.log10(top / most))
    while True:
        for multiple in (1, 2, 5):
            if int(top / (step * multiple)) <= most:
                step *= multiple
                return [step * index for index in range(int(top / step) + 1)]
        step *= 10
