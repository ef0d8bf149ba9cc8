"""What a load test reports: latency percentiles, throughput, goodput at service-level objectives, and a
scheduler's capacity (the highest rate at which 90% of requests meet them)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from render.errors import FilmError
from render.serving.simulate import Served
from render.text import echo

CAPACITY_SHARE = 0.9  # a rate is within capacity while this share of requests meets every objective


@dataclass(frozen=True)
class Slo:
    """Service-level objectives: a request meets them when its TTFT and its TPOT are both within these."""

    ttft_seconds: float | None = None
    tpot_seconds: float | None = None

    def __str__(self) -> str:
        parts = [f"{name}={value:g}" for name, value in (("ttft", self.ttft_seconds), ("tpot", self.tpot_seconds))
                 if value is not None]
        return ",".join(parts)


def parse_slo(text: str) -> Slo:
    """'ttft=0.5,tpot=0.05' (seconds; either may be left out)."""
    given = {}
    for part in text.split(","):
        name, equals, value = part.strip().partition("=")
        if not equals or name not in ("ttft", "tpot"):
            raise FilmError(f"--slo {echo(text)}: give ttft=SECONDS and/or tpot=SECONDS, e.g. --slo ttft=0.5,tpot=0.05")
        if name in given:
            raise FilmError(f"--slo {echo(text)}: {name}= is given twice")
        try:
            number = float(value)
        except ValueError:
            raise FilmError(f"--slo {echo(text)}: {name}={echo(value)} is not a number of seconds") from None
        if not (math.isfinite(number) and 1e-6 <= number <= 3600):
            raise FilmError(f"--slo {echo(text)}: {name}={echo(value)} must be from 0.000001 to 3600 seconds")
        given[name] = number
    return Slo(given.get("ttft"), given.get("tpot"))


@dataclass(frozen=True)
class Spread:
    mean: float
    p50: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values: np.ndarray) -> "Spread":
        if len(values) == 0:
            return cls(math.nan, math.nan, math.nan, math.nan)
        p50, p90, p99 = np.percentile(values, [50, 90, 99])
        return cls(float(np.mean(values)), float(p50), float(p90), float(p99))


@dataclass(frozen=True)
class Report:
    scheduler: str
    rate: float | None               # the workload's Poisson rate, or a trace's mean arrival rate (None: one request)
    requests: int
    ttft_seconds: Spread
    tpot_seconds: Spread
    e2e_seconds: Spread
    throughput_tokens_per_second: float   # answer tokens a second, over the run (first arrival to last token)
    throughput_requests_per_second: float
    goodput_requests_per_second: float | None  # requests a second meeting every objective
    met_share: float | None                     # of the requests, the share meeting every objective
    preemptions: int
    generated_tokens: int
    traced: bool = False             # the arrivals are a trace's (its rate is its mean, not a Poisson rate given)

    def as_json(self) -> dict:
        def spread(figure: Spread, names=("p50", "p90", "p99", "mean")) -> dict:
            # (a spread of nothing, such as TPOT when every answer is one token, is null: JSON has no NaN)
            return {name: finite_or_none(getattr(figure, name)) for name in names}

        return {"scheduler": self.scheduler, "rate": self.rate,
                "arrivals": "the trace's (rate: its mean)" if self.traced else "Poisson", "requests": self.requests,
                "ttft_seconds": spread(self.ttft_seconds), "tpot_seconds": spread(self.tpot_seconds),
                "e2e_seconds": spread(self.e2e_seconds),
                "throughput_tokens_per_second": self.throughput_tokens_per_second,
                "throughput_requests_per_second": self.throughput_requests_per_second,
                "goodput_requests_per_second": self.goodput_requests_per_second, "slo_met_share": self.met_share,
                "preemptions": self.preemptions, "generated_tokens": self.generated_tokens}


def meets(served: Served, slo: Slo) -> np.ndarray:
    """For each request, whether it met every objective (a one-token answer has no TPOT to miss)."""
    ok = np.ones(len(served.arrival), dtype=bool)
    if slo.ttft_seconds is not None:
        ok &= served.ttft <= slo.ttft_seconds
    if slo.tpot_seconds is not None:
        many = served.answer_tokens > 1
        tpot = np.zeros(len(ok))
        tpot[many] = served.tpot
        ok &= tpot <= slo.tpot_seconds
    return ok


def finite_or_none(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def summarise(served: Served, rate: float | None = None, slo: Slo | None = None, start: float = 0.0,
              traced: bool = False) -> Report:
    """The run's figures; its throughput over the span from `start` (0 for a workload drawn from time 0; a trace's
    first arrival, wherever its clock began) to the last token."""
    span = float(np.max(served.finish) - start)
    span = span if span > 0 else math.inf
    met = meets(served, slo) if slo is not None else None
    tokens = int(np.sum(served.answer_tokens))
    return Report(served.scheduler, rate, len(served.arrival), Spread.of(served.ttft), Spread.of(served.tpot),
                  Spread.of(served.e2e), tokens / span, len(served.arrival) / span,
                  float(np.sum(met)) / span if met is not None else None,
                  float(np.mean(met)) if met is not None else None, int(np.sum(served.preemptions)), tokens, traced)


def capacity(met_share_at: Callable[[float], float], low: float, high: float, steps: int = 14) -> float | None:
    """The highest rate at which CAPACITY_SHARE of requests meet the objectives, by bisection between `low` (where
    they must) and `high` (where they must not); None where even `low` misses."""
    if met_share_at(low) < CAPACITY_SHARE:
        return None
    while met_share_at(high) >= CAPACITY_SHARE:
        low, high = high, high * 2
        if high > 1e6:
            return low
    for _ in range(steps):
        middle = math.sqrt(low * high)
        if met_share_at(middle) >= CAPACITY_SHARE:
            low = middle
        else:
            high = middle
    return low
