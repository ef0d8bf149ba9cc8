"""`film load`: a deployment under a stream of requests, simulated (render/serving/): its latencies, throughput and
goodput; over a sweep of rates, each scheduler's capacity side by side and a chart of p90 TTFT and TPOT.

The command line parses and prints; this builds the simulation from a LoadRequest and returns what it found."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from render import formatting as fmt
from render.errors import FilmError
from render.serving.load import (BLOCK_TOKENS, DEFAULT_SLO, SWEEP_RATES, VLLM_BATCH_DEFAULTS,  # noqa: F401
                                  LoadRequest, SchedulerSettings, Sweep, film_rate, run, saturation_rate,
                                  scheduler_of, schedulers_named, sweep)
from render.serving.metrics import CAPACITY_SHARE, JUDGED_LEAST, SUSTAIN_SHARE, WARMUP_SHARE, Report
from render.serving.simulate import simulate
from render.serving.watch import Watch, heaviest
from render.serving.workload import Lengths
from render.text import echo


def describe(request: LoadRequest) -> str:
    d = request.deployment
    on = f"{d.gpus}× {d.gpu.name}" if d.gpus > 1 else d.gpu.name
    shares = f", at {request.efficiency.shares}" if request.efficiency else ", at the ceilings"
    workload = (f"the trace {request.trace}" if request.trace else
                f"{request.requests:,} requests, Poisson at {{rate}}, prompts {request.prompt} and answers "
                f"{request.answer} tokens, seed {request.seed}")
    return f"{d.model.name} in {d.dtype.name} on {on}{shares}; {workload}; {engine_settings(request)}"


def engine_settings(request: LoadRequest) -> str:
    """The engine's knobs in vLLM's words ("max_num_seqs 1,024, max_num_batched_tokens 8,192 (chunked), block_size
    16")."""
    seqs = sorted({scheduler.max_seqs for scheduler in request.schedulers if scheduler.name != "static"})
    budget = [scheduler.max_batched_tokens for scheduler in request.schedulers if scheduler.name == "chunked"]
    parts = [f"max_num_seqs {seqs[0]:,}"] if len(seqs) == 1 else []
    parts += [f"max_num_batched_tokens {budget[0]:,} (chunked)"] if budget else []
    return ", ".join(parts + [f"block_size {request.block_tokens}"])


def report_table(reports: list[Report]) -> str:
    """A report a column: the figures `--json` gives, as a terminal shows them."""
    rows = [("", *[report.scheduler for report in reports])]
    for label, pick in (("TTFT p50", lambda r: seconds(r.ttft_seconds.p50)),
                        ("TTFT p90", lambda r: seconds(r.ttft_seconds.p90)),
                        ("TTFT p99", lambda r: seconds(r.ttft_seconds.p99)),
                        ("TPOT mean", lambda r: seconds(r.tpot_seconds.mean)),
                        ("TPOT p50", lambda r: seconds(r.tpot_seconds.p50)),
                        ("TPOT p90", lambda r: seconds(r.tpot_seconds.p90)),
                        ("ITL p50", lambda r: seconds(r.itl_seconds.p50)),
                        ("ITL p90", lambda r: seconds(r.itl_seconds.p90)),
                        ("ITL p99", lambda r: seconds(r.itl_seconds.p99)),
                        ("end to end p50", lambda r: seconds(r.e2e_seconds.p50)),
                        ("end to end p90", lambda r: seconds(r.e2e_seconds.p90)),
                        ("throughput", lambda r: f"{r.throughput_tokens_per_second:,.0f} tokens/s, "
                                                 f"{r.throughput_requests_per_second:.3g} requests/s"),
                        ("goodput", lambda r: "—" if r.goodput_requests_per_second is None else
                         f"{r.goodput_requests_per_second:.3g} requests/s ({r.met_share:.0%} meet the objectives)"),
                        ("pre-emptions", lambda r: f"{r.preemptions:,}")):
        rows.append((label, *[pick(report) for report in reports]))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def watch_for(requests: int, answer: Lengths, schedulers: tuple, trace: Path | None, say) -> Watch:
    """film load's simulations seen to: progress past a few seconds, and a bound, naming the flag that asks most."""
    if trace is not None:
        return Watch(f"--trace {trace}", say)
    # (each against film load's default: the class attributes hold the dataclasses' defaults; chunked prefill's budget
    # against vLLM's own default, 2,048 tokens or more)
    budget = min([scheduler.max_batched_tokens for scheduler in schedulers if scheduler.name == "chunked"],
                 default=VLLM_BATCH_DEFAULTS["other"][0])
    return Watch(heaviest({"--requests": (f"{requests:,}", requests / LoadRequest.requests),
                           "--answer-tokens": (str(answer), answer.mean / LoadRequest.answer.mean),
                           "--max-num-batched-tokens": (f"{budget:,}", VLLM_BATCH_DEFAULTS["other"][0] / budget)}),
                 say)


def seconds(value: float) -> str:
    """Seconds as the tables write them; a figure of nothing (TPOT when every answer is one token) as a dash."""
    return "—" if math.isnan(value) else fmt.precise_seconds(value)


def capacity_said(slo) -> str:
    """What the table's capacity is, in a line: what it takes for a rate to count."""
    return (f"capacity: the highest rate a scheduler sustains with {CAPACITY_SHARE:.0%} of requests meeting {slo}, "
            f"each rate decided by a run of at least {JUDGED_LEAST:,} requests (the first {WARMUP_SHARE:.0%} left "
            f"out as warm-up) that serves {SUSTAIN_SHARE:.0%} of what arrives; searched to 1% (not at: the lowest "
            f"rate found beyond it)")


def capacities_over_seeds(request: LoadRequest, result: Sweep, seeds: int) -> dict[str, list[float | None]]:
    """Each scheduler's capacity for `seeds` seeds from the request's (its first the sweep's own), each at the sweep's
    rates: how sure a capacity is (one seed: no spread)."""
    found = {name: [capacity] for name, capacity in result.capacities.items()}
    for seed in range(request.seed + 1, request.seed + seeds):
        again = sweep(replace(request, seed=seed), result.rates)
        for name, capacity in again.capacities.items():
            found[name].append(capacity)
    return found if seeds > 1 else {}


def spread_words(values: list[float | None]) -> str:
    """'17.3–17.6 over 3 seeds' (a seed below the sweep said so)."""
    known = [value for value in values if value is not None]
    below = len(values) - len(known)
    words = f"{min(known):.3g}–{max(known):.3g}" if known else "below the sweep"
    return words + f" over {len(values)} seeds" + (f" ({below} below the sweep)" if below and known else "")


def spread_json(request: LoadRequest, spread: dict[str, list[float | None]]) -> dict:
    if not spread:
        return {}
    count = len(next(iter(spread.values())))
    return {"seeds": list(range(request.seed, request.seed + count)), "capacity_over_seeds_requests_per_second": spread}


def capacity_table(result: Sweep, spread: dict[str, list[float | None]] | None = None) -> str:
    middle = len(result.rates) // 2
    rows = [("scheduler", "GPUs", "capacity", *(["spread"] if spread else []), "per GPU", "not at", "served at most",
             f"p90 TTFT / p90 TPOT at {result.rates[middle]:g}/s")]
    for name, reports in result.reports.items():
        found, above = result.capacities[name], result.above.get(name)
        gpus = result.gpus.get(name, 1)
        at = reports[middle]
        rows.append((name, str(gpus), "below the sweep" if found is None else f"{found:.3g} requests/s",
                     *([spread_words(spread[name])] if spread else []),
                     "" if found is None else f"{found / gpus:.3g}", "" if above is None else f"{above:.3g}",
                     f"{result.served[name]:.3g} requests/s" if name in result.served else "",
                     f"{seconds(at.ttft_seconds.p90)} / {seconds(at.tpot_seconds.p90)}"))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows)


def load_answer(request: LoadRequest, sweep_text: str | None = None, compare_with: Path | None = None,
                as_json: bool = False, folder: Path = Path("build/load"), seeds: int = 1) -> str:
    """`film load`'s whole answer, as text: a measured load dataset compared with its prediction, a sweep of rates
    (each scheduler's capacity, over `seeds` seeds where more than one, and its chart written into `folder`), or one
    rate (half the deployment's saturation when none is given)."""
    import json

    if compare_with is not None:
        from render.measure.load import read_load

        dataset = read_load(compare_with)
        tables = {scheduler.name: compare(dataset, request, scheduler) for scheduler in request.schedulers}
        if as_json:
            found = {name: {figure: {"predicted": p, "measured": m, "error": e} for figure, p, m, e in rows}
                     for name, rows in tables.items()}
            return json.dumps(found[request.schedulers[0].name] if len(found) == 1 else found, indent=2,
                              allow_nan=False)
        return "\n\n".join(compare_table(rows, name) for name, rows in tables.items())
    if sweep_text is not None:
        result = sweep(request, sweep_rates(sweep_text), progress=progress_bar())
        spread = capacities_over_seeds(request, result, seeds)
        png, svg = write_sweep_chart(folder, request, result)
        if as_json:
            return json.dumps({**sweep_json(result), **spread_json(request, spread)}, indent=2, allow_nan=False)
        return "\n".join((describe(request).replace(" at {rate}", " at each rate"),
                          capacity_said(result.slo),
                          capacity_table(result, spread), f"chart: {png}, {svg}"))
    if request.rate is None and request.trace is None:
        request = replace(request, rate=film_rate(request))
    reports = run(request)
    if as_json:
        return json.dumps(reports[0].as_json() if len(reports) == 1 else [r.as_json() for r in reports], indent=2,
                          allow_nan=False)
    if request.trace is None:
        said = describe(request).replace("{rate}", f"{request.rate:g} a second")
    else:
        rate = reports[0].rate
        said = describe(request) + (f", its mean arrival rate {rate:.3g} a second" if rate is not None else
                                    ", one arrival time")
    return said + "\n" + report_table(reports)


def sweep_rates(text: str) -> tuple[float, ...] | None:
    """'auto' (None: up to past saturation), 'LOW:HIGH[:COUNT]' (evenly), or a list '1,2,4'."""
    from render.serving.workload import check_rate

    if text == "auto":
        return None
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) not in (2, 3):
                raise ValueError(text)
            low, high = float(parts[0]), float(parts[1])
            count = int(parts[2]) if len(parts) == 3 else SWEEP_RATES
            if not 2 <= count <= 200:
                raise FilmError(f"--sweep {echo(text)}: give from 2 to 200 rates")
            rates = tuple(low + (high - low) * index / (count - 1) for index in range(count))
        else:
            rates = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise FilmError(f"--sweep {echo(text)}: give LOW:HIGH[:COUNT] (e.g. 1:40:20) or rates with commas "
                        f"(1,2,4,8)") from None
    for rate in rates:
        check_rate(rate, "--sweep")
    if list(rates) != sorted(set(rates)):
        raise FilmError(f"--sweep {echo(text)}: give increasing rates")
    return rates


def progress_bar(width: int = 30):
    """A progress bar on standard error for a long sweep (only where it is a terminal)."""
    import sys

    def show(done: int, total: int) -> None:
        if not sys.stderr.isatty():
            return
        filled = round(width * done / total)
        end = "\n" if done >= total else ""
        print(f"\rload: [{'#' * filled}{'.' * (width - filled)}] {done}/{total} runs", end=end, file=sys.stderr,
              flush=True)

    return show


def write_sweep_chart(folder: Path, request: LoadRequest, result: Sweep) -> tuple[Path, Path]:
    from render.publish.load_chart import write_charts

    d = request.deployment
    title = (f"{d.model.name} in {d.dtype.name} on {d.gpus}× {d.gpu.name}" if d.gpus > 1 else
             f"{d.model.name} in {d.dtype.name} on {d.gpu.name}") + \
        f": prompts {request.prompt}, answers {request.answer} tokens"
    return write_charts(folder, result.rates, result.reports, result.slo, title)


def sweep_json(result: Sweep) -> dict:
    return {"rates": list(result.rates), "slo": str(result.slo),
            "capacity_requests_per_second": result.capacities, "gpus": result.gpus,
            "capacity_per_gpu_requests_per_second": {name: None if found is None else found / result.gpus.get(name, 1)
                                                     for name, found in result.capacities.items()},
            "capacity_not_at_requests_per_second": result.above,
            "served_at_most_requests_per_second": result.served,
            "reports": {name: [report.as_json() for report in reports] for name, reports in result.reports.items()}}


def compare(dataset, request: LoadRequest, scheduler) -> list[tuple[str, float | None, float | None, float | None]]:
    """A load dataset's arrivals and lengths through the simulator under `scheduler`: (figure, predicted, measured,
    relative error). A figure of nothing on either side (TPOT where every answer is one token) is None, and so is
    an error against a measured 0."""
    served = simulate(dataset.trace(), request.costs, scheduler, request.capacity_blocks, watch=request.watch)
    ttft = np.array([timed.ttft_seconds for timed in dataset.requests])
    e2e = np.array([timed.e2e_seconds for timed in dataset.requests])
    tpot = np.array([timed.tpot_seconds for timed in dataset.requests if timed.tpot_seconds is not None])
    def figure(values: np.ndarray, at: float | None) -> float | None:
        if len(values) == 0:
            return None
        return float(np.mean(values) if at is None else np.percentile(values, at))

    rows = []
    for name, simulated, timed, at in (
            ("TTFT p50 (s)", served.ttft, ttft, 50), ("TTFT p90 (s)", served.ttft, ttft, 90),
            ("TTFT p99 (s)", served.ttft, ttft, 99), ("TPOT mean (s)", served.tpot, tpot, None),
            ("TPOT p50 (s)", served.tpot, tpot, 50), ("TPOT p90 (s)", served.tpot, tpot, 90),
            ("end to end p50 (s)", served.e2e, e2e, 50), ("end to end p90 (s)", served.e2e, e2e, 90)):
        predicted, measured = figure(simulated, at), figure(timed, at)
        error = predicted / measured - 1 if predicted is not None and measured else None
        rows.append((name, predicted, measured, error))
    return rows


def compare_table(rows, scheduler: str) -> str:
    """The figures predicted (under `scheduler`) beside those measured; a figure of nothing as a dash."""
    def cell(value: float | None) -> str:
        return "—" if value is None else f"{value:.4g}"

    lines = [f"{'figure':<20}{'predicted':>12}{'measured':>12}{'error':>10}   (replayed under {scheduler})"]
    lines += [f"{name:<20}{cell(predicted):>12}{cell(measured):>12}"
              f"{'—' if error is None else fmt.signed_percent(error):>10}"
              for name, predicted, measured, error in rows]
    if any(measured is None for name, _, measured, _ in rows if name.startswith("TPOT")):
        lines.append("(no TPOT: every answer measured is one token, which has no time between tokens)")
    return "\n".join(lines)
