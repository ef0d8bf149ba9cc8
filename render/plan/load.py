"""The plan's `load` group (the extended cut): the film's deployment answering a stream of requests, from the serving
simulator (render/serving/) through `film load`'s own runs (render/serving/load.py), so the film speaks the numbers
`film load --json` prints at the same settings. Seeded: a plan is the same every time."""

from __future__ import annotations

import functools
import logging
import math

import numpy as np

from render.plan.types import Choice, LoadNumbers, LoadParameters, SchedulerLoad
from render.serving.costs import kv_blocks
from render.errors import FilmError
from render.serving.load import (VLLM_BATCH_DEFAULTS, LoadRequest, SchedulerSettings, even_rates, film_rate,
                                 scheduler_of, served_runs, sweep)
from render.serving.metrics import Slo, summarise
from render.serving.schedulers import SCHEDULERS
from render.serving.watch import Watch, heaviest
from render.serving.workload import Lengths

log = logging.getLogger("film")

ARRIVALS_SHOWN = 24  # the first requests of the stream, as the queue's picture draws them
KNEE_ROOM = 1.25     # the film's rates go this far past the highest capacity


def load_request(choice: Choice, prompt_tokens: int, load: LoadParameters, rate: float | None = None,
                 watch: Watch | None = None) -> LoadRequest:
    """The film's stream as `film load` takes it: each scheduler with the cut's batch and chunk."""
    deployment = choice.deployment
    settings = SchedulerSettings(batch=load.static_batch, max_wait=load.static_wait_seconds,
                                 max_num_batched_tokens=load.max_num_batched_tokens)
    return LoadRequest(deployment, tuple(scheduler_of(name, settings, deployment) for name in SCHEDULERS),
                       rate=rate, requests=load.requests, prompt=Lengths(prompt_tokens),
                       answer=Lengths(load.answer_tokens), seed=load.seed,
                       slo=Slo(load.slo_ttft_seconds, load.slo_tpot_seconds), efficiency=choice.efficiency,
                       watch=watch)


def heaviest_setting(load: LoadParameters, budget: int) -> str:
    """The cut's load setting that asks for the most simulation (against its default), as the storyboard writes it
    (`budget`: chunked prefill's tokens a step, as the load gives it or vLLM's default, against vLLM's smaller one)."""
    default = LoadParameters()
    return heaviest({"requests": (f"{load.requests:,}", load.requests / default.requests),
                     "answer_tokens": (f"{load.answer_tokens:,}", load.answer_tokens / default.answer_tokens),
                     "max_num_batched_tokens": (f"{budget:,}", VLLM_BATCH_DEFAULTS["other"][0] / budget)})


def chunk_budget(request: LoadRequest) -> int:
    """Chunked prefill's tokens a step in this load (the storyboard's max_num_batched_tokens, or vLLM's default)."""
    return next(scheduler.max_batched_tokens for scheduler in request.schedulers if scheduler.name == "chunked")


def rates_past_the_knees(rates: tuple[float, ...], capacities: dict) -> tuple[float, ...]:
    """The chart shows each curve's knee: where a capacity lies near or past film load's default rates' end, as many
    rates up to a quarter past the highest (else the rates as they are)."""
    known = [found for found in capacities.values() if found is not None]
    if not known or max(known) * KNEE_ROOM <= rates[-1]:
        return rates
    return even_rates(max(known) * KNEE_ROOM)


def film_rates(request: LoadRequest, rate: float, runs: dict | None = None) -> tuple[float, ...]:
    """The rates the film and its page sweep: film load --sweep auto's, taken on past the highest knee, with the film's
    own rate among them (so that the page can open on the stream the narration speaks of). `runs`: as grid's."""
    swept = sweep(request, runs=runs)
    return tuple(sorted({*rates_past_the_knees(swept.rates, swept.capacities), rate}))


@functools.lru_cache(maxsize=32)
def load_numbers(choice: Choice, prompt_tokens: int, long_prompt_tokens: int, load: LoadParameters,
                 where: str = "the storyboard's cuts") -> LoadNumbers:
    """The stream at half the deployment's saturation (film load's rate when none is given) under every scheduler,
    every scheduler over the film's rates (film_rates), and one long prompt's step, whole and chunked. `where` names
    the cut's load for a message."""
    from render.code import computed

    try:
        return computed("load-numbers", __name__, (choice, prompt_tokens, long_prompt_tokens, load),
                        lambda: simulated(choice, prompt_tokens, long_prompt_tokens, load))
    except FilmError as error:
        raise error.with_prefix(f"{where}: the extended cut's stream: ") from None


def simulated(choice: Choice, prompt_tokens: int, long_prompt_tokens: int, load: LoadParameters) -> LoadNumbers:
    plain = load_request(choice, prompt_tokens, load)
    rate, budget = film_rate(plain), chunk_budget(plain)
    request = load_request(choice, prompt_tokens, load, rate, Watch(heaviest_setting(load, budget), log.info))
    served = served_runs(request)
    continuous, costs = served["continuous"], request.costs
    # The sequences decoding at once, on average (Little's law: arrivals a second x seconds each spends decoding).
    batch = max(1, round(rate * float(np.mean(continuous.finish - continuous.first_token))))
    piece = budget - batch
    if piece < 1:  # (said before the sweeps: it needs only the stream's own run)
        raise FilmError(f"max_num_batched_tokens {budget:,}: at {rate:g} requests a second about {batch:,} sequences "
                        f"decode at once, a token each, which leaves a step of {budget:,} tokens no room for a "
                        f"prompt's piece; give more than {batch:,}")
    runs = {(name, rate): run for name, run in served.items()}  # (a sweep's run at a rate is the same run)
    swept = sweep(request, film_rates(request, rate, runs), runs=runs)
    slo = request.slo
    schedulers = []
    for name, run in served.items():
        report = summarise(run, rate, slo)
        schedulers.append(SchedulerLoad(name, swept.gpus[name], swept.capacities[name], report.ttft_seconds.p50,
                                        report.ttft_seconds.p90, report.tpot_seconds.p90,
                                        report.goodput_requests_per_second or 0.0,
                                        tuple(found.ttft_seconds.p90 for found in swept.reports[name])))
    context = batch * (prompt_tokens + load.answer_tokens / 2)
    arrivals = request.workload()[:ARRIVALS_SHOWN]
    return LoadNumbers(
        parameters=load, prompt_tokens=prompt_tokens, rate=rate, rates=swept.rates, schedulers=tuple(schedulers),
        arrivals=tuple(arrival.arrival for arrival in arrivals),
        kv_blocks=kv_blocks(choice.deployment, request.block_tokens), block_tokens=request.block_tokens,
        decode_step_seconds=costs.step(batch, context), batch=batch,
        long_prompt_tokens=long_prompt_tokens, stall_seconds=costs.step(batch, context, ((long_prompt_tokens, 0),)),
        chunks=math.ceil(long_prompt_tokens / piece), piece_tokens=piece,
        # the longest of those steps: the last piece, over all the prompt's cache before it
        chunked_step_seconds=costs.step(batch, context, ((min(piece, long_prompt_tokens),
                                                          max(0, long_prompt_tokens - piece)),)))
