"""The plan's `load` group (the extended cut): the film's deployment answering a stream of requests, from the serving
simulator (render/serving/) through `film load`'s own runs (render/serving/load.py), so the film speaks the numbers
`film load --json` prints at the same settings. Seeded: a plan is the same every time."""

from __future__ import annotations

import functools
import math

import numpy as np

from render.plan.types import Choice, LoadNumbers, LoadParameters, SchedulerLoad
from render.serving.costs import BLOCK_TOKENS, kv_blocks
from render.serving.load import (SWEEP_RATES, LoadRequest, SchedulerSettings, run, saturation_rate, scheduler_of,
                                 sweep)
from render.serving.metrics import Slo
from render.serving.schedulers import SCHEDULERS
from render.serving.simulate import simulate
from render.serving.workload import Lengths

ARRIVALS_SHOWN = 24  # the first requests of the stream, as the queue's picture draws them
KNEE_ROOM = 1.25     # the film's rates go this far past the highest capacity


def load_request(choice: Choice, prompt_tokens: int, load: LoadParameters, rate: float | None = None) -> LoadRequest:
    """The film's stream as `film load` takes it: each scheduler with the cut's batch and chunk."""
    deployment = choice.deployment
    settings = SchedulerSettings(batch=load.static_batch, max_wait=load.static_wait_seconds,
                                 chunk_tokens=load.chunk_tokens)
    return LoadRequest(deployment, tuple(scheduler_of(name, settings, deployment) for name in SCHEDULERS),
                       rate=rate, requests=load.requests, prompt=Lengths(prompt_tokens),
                       answer=Lengths(load.answer_tokens), seed=load.seed,
                       slo=Slo(load.slo_ttft_seconds, load.slo_tpot_seconds), efficiency=choice.efficiency)


def rates_past_the_knees(rates: tuple[float, ...], capacities: dict) -> tuple[float, ...]:
    """The chart shows each curve's knee: where a capacity lies near or past film load's default rates' end, as many
    rates up to a quarter past the highest (else the rates as they are)."""
    known = [found for found in capacities.values() if found is not None]
    if not known or max(known) * KNEE_ROOM <= rates[-1]:
        return rates
    top = max(known) * KNEE_ROOM
    return tuple(float(f"{top * (index + 1) / SWEEP_RATES:.3g}") for index in range(SWEEP_RATES))


@functools.lru_cache(maxsize=32)
def load_numbers(choice: Choice, prompt_tokens: int, long_prompt_tokens: int, load: LoadParameters) -> LoadNumbers:
    """The stream at half the deployment's saturation (film load's rate when none is given) under every scheduler,
    every scheduler over film load --sweep auto's rates (or, where a capacity lies near or past their end, as many
    rates up to a quarter past the highest), and one long prompt's step, whole and chunked."""
    asked = load_request(choice, prompt_tokens, load)
    rate = float(f"{saturation_rate(asked) / 2:.3g}")
    request = load_request(choice, prompt_tokens, load, rate)
    at_rate = run(request)
    swept = sweep(request)
    rates = rates_past_the_knees(swept.rates, swept.capacities)
    if rates != swept.rates:
        swept = sweep(request, rates)
    schedulers = tuple(
        SchedulerLoad(report.scheduler, swept.gpus[report.scheduler], swept.capacities[report.scheduler],
                      report.ttft_seconds.p50, report.ttft_seconds.p90, report.tpot_seconds.p50,
                      report.tpot_seconds.p90, report.goodput_requests_per_second or 0.0,
                      tuple(found.ttft_seconds.p90 for found in swept.reports[report.scheduler]))
        for report in at_rate)

    costs, continuous = request.costs, request.schedulers[1]
    served = simulate(request.workload(), costs, continuous, request.capacity_blocks)
    # The sequences decoding at once, on average (Little's law: arrivals a second x seconds each spends decoding).
    batch = max(1, round(rate * float(np.mean(served.finish - served.first_token))))
    context = batch * (prompt_tokens + load.answer_tokens / 2)
    piece = max(1, load.chunk_tokens - batch)
    chunks = math.ceil(long_prompt_tokens / piece)
    blocks = kv_blocks(choice.deployment)
    return LoadNumbers(
        parameters=load, prompt_tokens=prompt_tokens, rate=rate, rates=swept.rates, schedulers=schedulers,
        arrivals=tuple(request.workload()[index].arrival for index in range(min(ARRIVALS_SHOWN, load.requests))),
        kv_blocks=blocks, block_tokens=BLOCK_TOKENS, fits=blocks * BLOCK_TOKENS // (prompt_tokens + load.answer_tokens),
        decode_step_seconds=costs.step(batch, context), batch=batch, long_prompt_tokens=long_prompt_tokens,
        stall_seconds=costs.step(batch, context, ((long_prompt_tokens, 0),)), chunks=chunks, piece_tokens=piece,
        # the longest of those steps: the last piece, over all the prompt's cache before it
        chunked_step_seconds=costs.step(batch, context, ((min(piece, long_prompt_tokens),
                                                          max(0, long_prompt_tokens - piece)),)))
