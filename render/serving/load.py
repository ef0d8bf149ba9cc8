"""A load: a deployment, its schedulers and a stream of requests (LoadRequest); the stream once under each scheduler
(run), and every scheduler over a sweep of rates with each one's capacity at the objectives (sweep). `film load`
(render/tools/load.py) prints what these return; the extended cut's plan (render/plan/load.py) speaks it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from render.errors import FilmError
from render.serving.costs import BLOCK_TOKENS, CacheTooSmall, Costs, kv_blocks
from render.serving.metrics import JUDGED_LEAST, Report, Slo, capacity, summarise
from render.serving.schedulers import SCHEDULERS, Scheduler
from render.serving.simulate import Served, simulate
from render.serving.watch import Watch
from render.serving.workload import Lengths, Request, at_rate, poisson, read_trace, trace_rate
from render.specs.types import Deployment, Gpu
from render.text import echo


class Shares(Protocol):
    """What a load takes of an efficiency (the plan's Efficiency): each ceiling's share, and the fixed waits."""

    compute: float
    memory: float
    overhead_seconds: float
    overlap: float
    decode_overlap: float | None
    step_overhead_seconds: float


DEFAULT_SLO = Slo(0.5, 0.05)
SWEEP_RATES = 20


@dataclass(frozen=True)
class LoadRequest:
    deployment: Deployment
    schedulers: tuple[Scheduler, ...]
    rate: float | None = None             # requests a second (None with a trace)
    requests: int = 1000
    prompt: Lengths = Lengths(2000)
    answer: Lengths = Lengths(200)
    seed: int = 0
    trace: Path | None = None
    slo: Slo | None = None
    efficiency: Shares | None = None
    kv_tokens: int | None = None          # the KV cache's capacity as the real server holds it (None: from memory)
    block_tokens: int = BLOCK_TOKENS      # a KV block's tokens (vLLM's --block-size)
    watch: Watch | None = field(default=None, compare=False)  # told of every step simulated (progress, a bound)

    @property
    def capacity_blocks(self) -> int | None:
        return None if self.kv_tokens is None else self.kv_tokens // self.block_tokens

    @property
    def costs(self) -> Costs:
        if self.efficiency is None:
            return Costs.of(self.deployment)
        e = self.efficiency
        return Costs.of(self.deployment, e.compute, e.memory, e.overhead_seconds, e.step_overhead_seconds, e.overlap,
                        e.decode_overlap)

    def workload(self, rate: float | None = None) -> tuple[Request, ...]:
        if self.trace is not None:
            return read_trace(self.trace)
        return poisson(rate or self.rate, self.requests, self.prompt, self.answer, self.seed)

    def gpus(self, scheduler: Scheduler) -> int:
        if scheduler.name == "disaggregated":
            return scheduler.prefill_gpus + scheduler.decode_gpus
        return self.deployment.gpus


def served_runs(request: LoadRequest, requests: tuple[Request, ...] | None = None) -> dict[str, Served]:
    """The workload (or `requests`, read from it already) once, under each scheduler: what happened to each one."""
    costs, requests = request.costs, requests or request.workload()
    return {scheduler.name: simulate(requests, costs, scheduler, request.capacity_blocks, request.block_tokens,
                                     watch=request.watch)
            for scheduler in request.schedulers}


def run(request: LoadRequest) -> list[Report]:
    """The workload once, under each scheduler, summarised (a trace's at its own mean rate, its throughput from its
    first arrival)."""
    requests = request.workload()
    if request.trace is not None:
        rate, start = trace_rate(requests), requests[0].arrival
    else:
        rate, start = request.rate, 0.0
    return [summarise(served, rate, request.slo, start, request.trace is not None)
            for served in served_runs(request, requests).values()]


def film_rate(request: LoadRequest) -> float:
    """film load's rate when none is given: half the deployment's saturation, to three figures."""
    return float(f"{saturation_rate(request) / 2:.3g}")


def curve_at(rates: tuple[float, ...], values: list[float], rate: float, log_rates: bool) -> float:
    """A curve of figures over rates read at `rate` between its stops, as a chart with a log scale of figures draws
    it: straight between the two neighbours, on a log scale of rates too where `log_rates` (the end stop's figure past
    either end). Where a capacity marker sits on its scheduler's curve, whichever objective binds."""
    known = [(at, value) for at, value in zip(rates, values) if value > 0]
    if not known:
        return math.nan
    if rate <= known[0][0]:
        return known[0][1]
    for (low, below), (high, above) in zip(known, known[1:]):
        if rate <= high:
            share = math.log(rate / low) / math.log(high / low) if log_rates else (rate - low) / (high - low)
            return math.exp(math.log(below) + share * math.log(above / below))
    return known[-1][1]


ROUND_STEPS = (1, 2, 2.5, 5)  # a sweep's step between rates: one of these times a power of ten


def even_rates(top: float, count: int = SWEEP_RATES) -> tuple[float, ...]:
    """A sweep's rates: a round step apart (ROUND_STEPS: the smallest that needs at most `count` stops), from the step
    up to `top` or the first stop past it, so that a reader moves through 2, 4, 6 … rather than 1.74, 3.47 …"""
    power = math.floor(math.log10(top / count))
    for step in (mantissa * 10.0 ** exponent for exponent in (power, power + 1) for mantissa in ROUND_STEPS):
        stops = math.ceil(top / step - 1e-9)
        if stops <= count:
            return tuple(float(f"{step * index:.6g}") for index in range(1, stops + 1))
    raise AssertionError("a step of ten times the power below top / count takes fewer than count stops")


@dataclass(frozen=True)
class Sweep:
    rates: tuple[float, ...]
    reports: dict[str, list[Report]]            # scheduler -> a report a rate
    capacities: dict[str, float | None]         # scheduler -> the highest rate it sustains meeting the objectives
    slo: Slo
    gpus: dict[str, int] = field(default_factory=dict)
    above: dict[str, float | None] = field(default_factory=dict)   # scheduler -> the lowest rate found not within
    served: dict[str, float] = field(default_factory=dict)  # scheduler -> the most requests a second any run served


def saturation_rate(request: LoadRequest) -> float:
    """About the most requests a second one instance can take (its decodes at the batch its slots or cache allow,
    plus each prefill), by the roofline: where a sweep's default rates end."""
    costs = request.costs
    scheduler = request.schedulers[0]
    prompt, answer = request.prompt.mean, request.answer.mean
    size = request.block_tokens
    blocks = request.capacity_blocks if request.capacity_blocks is not None else kv_blocks(costs.deployment, size)
    if prompt + answer + 1 > blocks * size:
        raise CacheTooSmall(f"--prompt-tokens {request.prompt} with --answer-tokens {request.answer}: a request of "
                            f"{prompt:,.0f} prompt and {answer:,.0f} answer tokens needs more KV cache than the "
                            f"deployment holds ({blocks * size:,} tokens after the weights): give shorter lengths, "
                            f"more GPUS= or a KV_DTYPE= that takes less", round(prompt), round(answer), blocks * size)
    batch = max(1, min(scheduler.max_seqs, blocks * size // int(prompt + answer)))
    step = costs.decode_run(batch, batch * (prompt + answer / 2), 1)
    demand = costs.step(chunks=((int(prompt), 0),)) + answer * step / batch
    return 1 / demand


def default_rates(request: LoadRequest) -> tuple[float, ...]:
    """film load --sweep auto's rates: SWEEP_RATES of them, evenly up to 1.3 times the deployment's saturation."""
    return even_rates(1.3 * saturation_rate(request))


def capacity_over(reports: list[Report], rates: tuple[float, ...], within: Callable[[float], bool],
                  most_served: Callable[[], float]) -> tuple[float, float] | None:
    """A scheduler's capacity, and the lowest rate found beyond it: the highest of `rates` whose run is within
    capacity and that a long run confirms (`within`: a run of JUDGED_LEAST requests at any rate), bisected on rates 1%
    apart against the next; never above the most requests a second any of the scheduler's runs served. None where no
    rate of the sweep is within."""
    candidates = sorted((report.rate for report in reports if report.within), reverse=True)
    for low in candidates:
        higher = [rate for rate in rates if rate > low]
        found = capacity(within, low, min(higher) if higher else None)
        if found is not None:
            rate, above = found
            return min(rate, most_served()), above
    return None


def sweep(request: LoadRequest, rates: tuple[float, ...] | None = None,
          progress: Callable[[int, int], None] = lambda done, total: None, runs: dict | None = None) -> Sweep:
    """Every scheduler at every rate (the same arrivals, scaled), and each one's capacity at the objectives."""
    slo = request.slo or DEFAULT_SLO
    found = grid(request, rates, (slo,), progress, runs)
    return Sweep(found.rates, {name: by_slo[slo] for name, by_slo in found.reports.items()},
                 {name: by_slo[slo] for name, by_slo in found.capacities.items()}, slo, found.gpus,
                 {name: by_slo[slo] for name, by_slo in found.above.items()}, found.served)


@dataclass(frozen=True)
class Grid:
    """Every scheduler at every rate, each run read against each of several objectives (the page's Under load)."""

    rates: tuple[float, ...]
    slos: tuple[Slo, ...]
    reports: dict[str, dict[Slo, list[Report]]]         # scheduler -> objectives -> a report a rate
    capacities: dict[str, dict[Slo, float | None]]      # scheduler -> objectives -> its capacity
    gpus: dict[str, int]
    above: dict[str, dict[Slo, float | None]]           # scheduler -> objectives -> the lowest rate found not within
    served: dict[str, float]                            # scheduler -> the most requests a second any run served


def grid(request: LoadRequest, rates: tuple[float, ...] | None, slos: tuple[Slo, ...],
         progress: Callable[[int, int], None] = lambda done, total: None, runs: dict | None = None) -> Grid:
    """Each scheduler at each rate once, summarised against each of `slos`, and its capacity at each: the numbers
    `film load --sweep` gives at the same rates and objectives (a sweep is a grid of one). `runs`: what earlier
    grids of this request simulated, (scheduler, rate) -> Served, kept and added to (a rate's arrivals are the same
    in every grid: the same unit gaps, scaled)."""
    rates = default_rates(request) if rates is None else rates
    base, costs = request.workload(rates[0]), request.costs
    long = replace(request, requests=max(request.requests, JUDGED_LEAST)).workload(rates[0])
    total, done = len(request.schedulers) * (len(rates) + 4), 0
    reports, capacities, above, gpus, served = {}, {}, {}, {}, {}
    runs = {} if runs is None else runs
    for scheduler in request.schedulers:

        def run_at(rate: float, scheduler=scheduler, workload=base):
            key = (scheduler.name, rate) if workload is base else (scheduler.name, rate, len(workload))
            if key not in runs:
                runs[key] = simulate(at_rate(workload, rate, request.seed), costs, scheduler, request.capacity_blocks,
                                     request.block_tokens, watch=request.watch)
            return runs[key]

        searched: dict[Slo, list[float]] = {slo: [] for slo in slos}  # the long runs each search made

        def within(rate: float, slo: Slo, scheduler=scheduler, searched=searched) -> bool:  # (a long run decides)
            searched[slo].append(rate)
            return summarise(run_at(rate, scheduler, long), rate, slo).within

        def most_served(slo: Slo, scheduler=scheduler, searched=searched) -> float:
            # (of the sweep's runs and the search's own: the same for the same rates and objectives, whatever else
            # a grid of several objectives ran)
            return max([summarise(run_at(rate, scheduler)).served_requests_per_second or 0.0 for rate in rates]
                       + [summarise(run_at(rate, scheduler, long)).served_requests_per_second or 0.0
                          for rate in searched[slo]])

        by_slo = {slo: [] for slo in slos}
        for rate in rates:
            for slo in slos:
                by_slo[slo].append(summarise(run_at(rate), rate, slo))
            done += 1
            progress(done, total)
        reports[scheduler.name] = by_slo
        gpus[scheduler.name] = request.gpus(scheduler)
        found = {slo: capacity_over(by_slo[slo], rates, lambda rate, slo=slo: within(rate, slo),
                                    lambda slo=slo: most_served(slo)) for slo in slos}
        capacities[scheduler.name] = {slo: None if pair is None else pair[0] for slo, pair in found.items()}
        above[scheduler.name] = {slo: None if pair is None else pair[1] for slo, pair in found.items()}
        served[scheduler.name] = max(most_served(slo) for slo in slos)
        done += 4
        progress(done, total)
    return Grid(tuple(rates), tuple(slos), reports, capacities, gpus, above, served)


# vLLM's `vllm serve` defaults where neither is given (EngineArgs.get_batch_defaults): a GPU of 70 GiB or more that
# is not an A100 takes a larger token budget and more sequences (an A100 lost throughput with the larger budget).
LARGE_GPU_GIB = 70
VLLM_BATCH_DEFAULTS = {"large": (8192, 1024), "other": (2048, 256)}  # (max_num_batched_tokens, max_num_seqs)
BLOCK_SIZES = (8, 16, 32, 64, 128)  # vLLM's --block-size choices on CUDA (16 its default: BLOCK_TOKENS)


def vllm_batch_defaults(gpu: Gpu) -> tuple[int, int]:
    """`vllm serve`'s max_num_batched_tokens and max_num_seqs on this GPU when the command line gives neither."""
    large = gpu.memory_gib >= LARGE_GPU_GIB and "a100" not in gpu.id
    return VLLM_BATCH_DEFAULTS["large" if large else "other"]


@dataclass(frozen=True)
class SchedulerSettings:
    """What the command line sets for the schedulers, in vLLM's words where vLLM has the knob (each scheduler takes
    its own; None: vLLM's default on the deployment's GPU, vllm_batch_defaults)."""

    max_num_seqs: int | None = None            # sequences running at once (vLLM's --max-num-seqs)
    batch: int = 8                             # static batching's batch
    max_wait: float = 0.5                      # static batching: seconds before a short batch goes
    max_num_batched_tokens: int | None = None  # tokens a step (vLLM's --max-num-batched-tokens): chunked prefill's
    prefill_gpus: int | None = None            # disaggregation's (None: the deployment's)
    decode_gpus: int | None = None

    def __post_init__(self):
        if not (0 <= self.max_wait <= 3600):
            raise FilmError(f"--max-wait {self.max_wait:g}: give seconds from 0 to 3600")


def scheduler_of(name: str, settings: SchedulerSettings, deployment: Deployment) -> Scheduler:
    """A scheduler by name with its settings. Chunked prefill is vLLM's current engine as `vllm serve` runs it: every
    running sequence's token first, then prompt pieces, within max_num_batched_tokens a step; continuous batching
    (vLLM's earlier engine) prefills whole prompts in steps of their own, up to the same budget where one is given."""
    if name not in SCHEDULERS:
        raise FilmError(f"--scheduler {echo(name)}: give one of {', '.join(SCHEDULERS)}, or several with commas")
    kind = SCHEDULERS[name]
    tokens, seqs = vllm_batch_defaults(deployment.gpu)
    own = {"max_seqs": settings.max_num_seqs or seqs}
    if settings.max_num_batched_tokens is not None:
        own["max_batched_tokens"] = settings.max_num_batched_tokens
    if name == "static":
        own.update(batch=settings.batch, max_wait=settings.max_wait)
    elif name == "chunked":
        own["max_batched_tokens"] = settings.max_num_batched_tokens or tokens
    elif name == "disaggregated":
        own.update(prefill_gpus=settings.prefill_gpus or deployment.gpus,
                   decode_gpus=settings.decode_gpus or deployment.gpus)
    return kind(**own)


def schedulers_named(names: str | None, sweeping: bool, settings: SchedulerSettings,
                     deployment: Deployment) -> tuple[Scheduler, ...]:
    """--scheduler's names (default: continuous batching, or all four for a sweep)."""
    if names:
        chosen = [name.strip() for name in names.split(",")]
    else:
        chosen = list(SCHEDULERS) if sweeping else ["continuous"]
    return tuple(scheduler_of(name, settings, deployment) for name in chosen)


