"""What a load test reports: latency percentiles, throughput, goodput at service-level objectives, and a
scheduler's capacity (the highest rate it sustains with 90% of requests meeting them).

A run starts with an empty engine, so its first requests meet a queue shorter than the rate will build: a Poisson
run's figures are read from its requests after a warm-up (the first tenth of its arrivals), and a run long enough to
judge (JUDGED_LEAST requests) is said to sustain its rate when, over that window, it serves (finishes) at least 98% of
the requests that arrive in it. A run whose queue keeps growing serves less than arrives, whatever share of its
requests happen to meet the objectives before the run ends. (A shorter run is not judged: the requests still in the
engine as its arrivals end, some 2% of a thousand at half the deployment's saturation, are more than the tolerance.)"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from render.errors import FilmError
from render.serving import simulate as simulating
from render.serving.simulate import Served
from render.text import echo

CAPACITY_SHARE = 0.9  # a rate is within capacity while this share of requests meets every objective
WARMUP_SHARE = 0.1     # a Poisson run's first arrivals, filling the engine from empty: left out of its figures
SUSTAIN_SHARE = 0.98   # a run sustains its rate when it serves this share of the requests arriving after its warm-up
WINDOWED_LEAST = 20    # a run of fewer requests is read whole
JUDGED_LEAST = 4000    # a run of fewer requests is not judged sustained or not (and decides no capacity)
LADDER = 230           # a capacity is searched on rates 1% apart: 230 a decade (10^(1/230) = 1.0100)


ITL_PERCENTILES = (50, 90, 99)  # the inter-token latency objectives a request can be held to: its own gaps' pNN


@dataclass(frozen=True)
class Slo:
    """Service-level objectives: a request meets them when its TTFT, its TPOT ((end to end − TTFT) ÷ (tokens − 1),
    as vLLM's benchmark defines it) and each given percentile of its own inter-token gaps are within these."""

    ttft_seconds: float | None = None
    tpot_seconds: float | None = None
    itl_p50_seconds: float | None = None
    itl_p90_seconds: float | None = None
    itl_p99_seconds: float | None = None

    @property
    def itl(self) -> tuple[tuple[int, float], ...]:
        """(percentile, seconds) for each inter-token latency objective given."""
        return tuple((at, limit) for at in ITL_PERCENTILES
                     if (limit := getattr(self, f"itl_p{at}_seconds")) is not None)

    def __str__(self) -> str:
        parts = [f"{name}={value:g}" for name, value in (("ttft", self.ttft_seconds), ("tpot", self.tpot_seconds),
                                                          *((f"itl_p{at}", limit) for at, limit in self.itl))
                 if value is not None]
        return ",".join(parts)


SLO_NAMES = ("ttft", "tpot", *(f"itl_p{at}" for at in ITL_PERCENTILES))


def parse_slo(text: str) -> Slo:
    """'ttft=0.5,tpot=0.05' or 'ttft=2,itl_p99=0.1' (seconds; any may be left out)."""
    given = {}
    for part in text.split(","):
        name, equals, value = part.strip().partition("=")
        if not equals or name not in SLO_NAMES:
            raise FilmError(f"--slo {echo(text)}: give any of ttft=, tpot=, itl_p50=, itl_p90= and itl_p99= in "
                            f"seconds, e.g. --slo ttft=0.5,tpot=0.05 or --slo ttft=2,itl_p99=0.1")
        if name in given:
            raise FilmError(f"--slo {echo(text)}: {name}= is given twice")
        try:
            number = float(value)
        except ValueError:
            raise FilmError(f"--slo {echo(text)}: {name}={echo(value)} is not a number of seconds") from None
        if not (math.isfinite(number) and 1e-6 <= number <= 3600):
            raise FilmError(f"--slo {echo(text)}: {name}={echo(value)} must be from 0.000001 to 3600 seconds")
        given[name] = number
    return Slo(given.get("ttft"), given.get("tpot"), *(given.get(f"itl_p{at}") for at in ITL_PERCENTILES))


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
    served_requests_per_second: float | None = None  # finished a second over the window after the warm-up
    sustained: bool | None = None    # it served SUSTAIN_SHARE of what arrived in that window (None: not judged)
    measured: int | None = None      # the requests its figures are read from (after the warm-up)
    itl_seconds: Spread | None = None  # every gap between two streamed tokens of those requests, pooled

    @property
    def within(self) -> bool:
        """Whether the rate is within capacity: sustained, and CAPACITY_SHARE of requests meeting the objectives."""
        return self.sustained is not False and self.met_share is not None and self.met_share >= CAPACITY_SHARE

    def as_json(self) -> dict:
        def spread(figure: Spread, names=("p50", "p90", "p99", "mean")) -> dict:
            # (a spread of nothing, such as TPOT when every answer is one token, is null: JSON has no NaN)
            return {name: finite_or_none(getattr(figure, name)) for name in names}

        return {"scheduler": self.scheduler, "rate": self.rate,
                "arrivals": "the trace's (rate: its mean)" if self.traced else "Poisson", "requests": self.requests,
                "ttft_seconds": spread(self.ttft_seconds), "tpot_seconds": spread(self.tpot_seconds),
                "itl_seconds": None if self.itl_seconds is None else spread(self.itl_seconds),
                "e2e_seconds": spread(self.e2e_seconds),
                "throughput_tokens_per_second": self.throughput_tokens_per_second,
                "throughput_requests_per_second": self.throughput_requests_per_second,
                "goodput_requests_per_second": self.goodput_requests_per_second, "slo_met_share": self.met_share,
                "slo_attainment": self.met_share,
                "served_requests_per_second": self.served_requests_per_second, "sustained": self.sustained,
                "measured_requests": self.measured, "warmup_requests": self.requests - (self.measured or 0)
                if self.measured is not None else 0,
                "preemptions": self.preemptions, "generated_tokens": self.generated_tokens}


def meets(served: Served, slo: Slo) -> np.ndarray:
    """For each request, whether it met every objective (a one-token answer has no TPOT or gap to miss)."""
    ok = np.ones(len(served.arrival), dtype=bool)
    if slo.ttft_seconds is not None:
        ok &= served.ttft <= slo.ttft_seconds
    if slo.tpot_seconds is not None:
        many = served.answer_tokens > 1
        tpot = np.zeros(len(ok))
        tpot[many] = served.tpot
        ok &= tpot <= slo.tpot_seconds
    if slo.itl and not served.itl_kept:
        raise FilmError(f"--slo {slo}: this run's {int(np.sum(served.generated)):,} tokens are more than the "
                        f"{simulating.TOKENS_KEPT:,} whose times the simulator keeps, so it has no gaps between "
                        f"tokens to hold to itl_p…=; give fewer --requests or shorter --answer-tokens, or "
                        f"objectives on ttft and tpot")
    for at, limit in slo.itl:
        own = kept(served, f"itl p{at}", lambda at=at: request_percentiles(served, at))
        ok &= np.isnan(own) | (own <= limit)
    return ok


def kept(served: Served, name: str, make: Callable[[], object]):
    """A figure of a run made once for it (a sweep reads each run against many objectives): kept on the run."""
    figures = served.__dict__.setdefault("_figures", {})
    if name not in figures:
        figures[name] = make()
    return figures[name]


def request_percentiles(served: Served, at: float) -> np.ndarray:
    """Each request's own `at`-th percentile of the gaps between its tokens (numpy's linear rule), NaN where it has
    none; all at once: the gaps sorted within each request, then each one's two neighbours of the rank read."""
    counts = served.itl_counts
    owner = np.repeat(np.arange(len(counts)), counts)
    ordered = served.itl[np.lexsort((served.itl, owner))]
    starts = served.itl_starts
    position = (np.maximum(counts, 1) - 1) * at / 100
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, np.maximum(counts - 1, 0))
    found = np.full(len(counts), math.nan)
    some = counts > 0
    below, above = ordered[(starts + low)[some]], ordered[(starts + high)[some]]
    found[some] = below + (above - below) * (position - low)[some]
    return found


def finite_or_none(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def window(served: Served, windowed: bool) -> tuple[np.ndarray, float | None, bool | None]:
    """The requests a run's figures are read from (a mask), its throughput over them, and whether it sustained its
    rate: after the warm-up (WARMUP_SHARE of its arrivals), the requests finished between the first measured arrival
    and the last arrival, a second, against those that arrived then. Read whole (all, None, None) where not
    `windowed` (a trace, whose arrivals need not be steady) or the run is shorter than WINDOWED_LEAST; not judged
    sustained or not (None) below JUDGED_LEAST."""
    count = len(served.arrival)
    if not windowed or count < WINDOWED_LEAST:
        return np.ones(count, dtype=bool), None, None
    order = np.argsort(served.arrival, kind="stable")
    skipped = int(count * WARMUP_SHARE)
    mask = np.zeros(count, dtype=bool)
    mask[order[skipped:]] = True
    first, last = float(served.arrival[order[skipped]]), float(served.arrival[order[-1]])
    if last <= first:
        return mask, None, None
    finished = np.sort(served.finish)
    done = int(np.searchsorted(finished, last, "right") - np.searchsorted(finished, first, "right"))
    arrived = count - skipped - 1  # (arrivals after the window's first, up to its last)
    return mask, done / (last - first), done >= SUSTAIN_SHARE * arrived if count >= JUDGED_LEAST else None


def summarise(served: Served, rate: float | None = None, slo: Slo | None = None, start: float = 0.0,
              traced: bool = False) -> Report:
    """The run's figures, from its requests after the warm-up (window); its throughput over the span from `start` (0
    for a workload drawn from time 0; a trace's first arrival, wherever its clock began) to the last token."""
    span = float(np.max(served.finish) - start)
    span = span if span > 0 else math.inf
    mask, served_rate, sustained = kept(served, f"window {not traced}", lambda: window(served, not traced))
    many = served.answer_tokens > 1
    met = meets(served, slo)[mask] if slo is not None else None
    met_share = float(np.mean(met)) if met is not None else None
    if met is None:
        goodput = None
    elif served_rate is not None:
        goodput = met_share * served_rate  # over the window: the requests served a second that met every objective
    else:
        goodput = float(np.sum(met)) / span
    tokens = int(np.sum(served.answer_tokens))
    read = f" {not traced}"  # (each spread once a run: a sweep reads it against every objective)
    return Report(served.scheduler, rate, len(served.arrival), kept(served, "ttft" + read, lambda: Spread.of(
                      served.ttft[mask])), kept(served, "tpot" + read, lambda: Spread.of(served.tpot[mask[many]])),
                  kept(served, "e2e" + read, lambda: Spread.of(served.e2e[mask])), tokens / span,
                  len(served.arrival) / span, goodput, met_share,
                  int(np.sum(served.preemptions)), tokens, traced, served_rate, sustained,
                  int(np.sum(mask)) if served_rate is not None else None,
                  kept(served, f"itl {not traced}", lambda: Spread.of(served.itl[np.repeat(mask, served.itl_counts)])))


def capacity(within: Callable[[float], bool], low: float, high: float | None = None) -> tuple[float, float] | None:
    """The highest rate within capacity (`within`: sustained, with CAPACITY_SHARE of requests meeting the
    objectives), searched on rates 1% apart (LADDER): `low` must be within and `high` (default: twice `low`) not;
    where `high` is, rates double until one is not (a run that cannot keep up is not sustained, so this ends at the
    deployment's throughput). Returns (the capacity, the lowest rate found not within): the capacity is known to 1%.
    None where `low` is not within."""
    if not within(low):
        return None
    high = high or low * 2
    for _ in range(64):
        if not within(high):
            break
        low, high = high, high * 2
    else:
        raise FilmError(f"every rate up to {high:g} requests a second is sustained: the capacity search has no end")
    lower, upper = math.log10(low) * LADDER, math.log10(high) * LADDER
    while True:
        middle = round((lower + upper) / 2)
        if not lower < middle < upper:
            return low, high
        rate = float(f"{10 ** (middle / LADDER):.4g}")
        if within(rate):
            low, lower = rate, middle
        else:
            high, upper = rate, middle
