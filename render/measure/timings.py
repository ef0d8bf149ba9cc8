"""Every prompt length at every concurrency level, timed, and each summarised as the dataset records it: medians,
their spread and how they were counted (render/specs/catalog.py's MeasuredPrompt and ConcurrencyLevel)."""

from __future__ import annotations

import math
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from render.errors import FilmError
from render.measure.client import Endpoint, Run, RunFailed
from render.measure.prompts import Calibrated, Prompts, calibrate
from render.specs.catalog import ConcurrencyLevel, MeasuredPrompt

MAX_CONCURRENCY = 256
COUNTED_BY = {
    "stream": "usage in the stream",
    "request": "usage of a non-streamed request for the same prompt (the stream carried none)",
    "estimate": "estimated at one token per word: the server reported no usage",
}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))
    return ordered[index]


def spread(values: list[float], digits: int) -> tuple[float, float]:
    return round(min(values), digits), round(max(values), digits)


@dataclass
class Level:
    """One concurrency level of one prompt length: `rounds` rounds of `streams` streams at once."""

    streams: int
    rounds: list[list[Run]]      # each round's good runs

    @property
    def runs(self) -> list[Run]:
        return [run for runs in self.rounds for run in runs]

    @property
    def aggregate_tokens_per_second(self) -> float:
        """Every round's output tokens over its wall time (first request sent to last stream done), median."""
        rates = [sum(run.output_tokens for run in runs) / (max(run.ended for run in runs)
                                                            - min(run.started for run in runs))
                 for runs in self.rounds]
        return statistics.median(rates)

    def summary(self) -> ConcurrencyLevel:
        ttfts = [run.ttft for run in self.runs]
        rates = [1 / run.tpot for run in self.runs if run.tpot]
        return ConcurrencyLevel(
            streams=self.streams,
            aggregate_tokens_per_second=round(self.aggregate_tokens_per_second, 2),
            decode_tokens_per_second=round(statistics.median(rates), 2) if rates else None,
            decode_spread_tokens_per_second=spread(rates, 2) if rates else None,
            ttft_seconds=round(statistics.median(ttfts), 4),
            ttft_spread_seconds=spread(ttfts, 4),
            rounds=len(self.rounds),
        )


def summarise(tokens: int, counts: list[int], levels: list[Level]) -> MeasuredPrompt:
    """A prompt length's entry: the single-stream figures, then every concurrency level's."""
    runs = levels[0].runs
    ttfts = [run.ttft for run in runs]
    rates = [1 / run.tpot for run in runs if run.tpot]
    gaps = [gap for run in runs for gap in run.gaps]
    content = [run.ttfc for run in runs if run.ttfc is not None]
    reasoning = any(run.reasoning_tokens for run in runs)
    return MeasuredPrompt(
        prompt_tokens=int(statistics.median(counts)) if counts else tokens,
        ttft_seconds=round(statistics.median(ttfts), 4),
        ttft_spread_seconds=spread(ttfts, 4),
        decode_tokens_per_second=round(statistics.median(rates), 2) if rates else None,
        decode_spread_tokens_per_second=spread(rates, 2) if rates else None,
        inter_token_latency_seconds={f"p{p}": round(percentile(gaps, p / 100), 5) for p in (50, 90, 99)}
        if gaps else None,
        output_tokens=int(statistics.median(run.output_tokens for run in runs)),
        runs=len(runs),
        token_counts="usage" if all(run.usage_reported for run in runs) else "approximate (chunks counted)",
        prompt_tokens_spread=(min(counts), max(counts)) if counts and min(counts) != max(counts) else None,
        reasoning_tokens=int(statistics.median(run.reasoning_tokens for run in runs)) if reasoning else 0,
        ttfc_seconds=round(statistics.median(content), 4) if reasoning and content else None,
        concurrency=tuple(level.summary() for level in levels) if len(levels) > 1 else (),
    )


@dataclass
class Measurement:
    """What `measure` found: an entry per prompt length, and how it was measured."""

    prompts: tuple[MeasuredPrompt, ...]
    prompt_cache: str          # "cold" or "cached"
    counted_by: str            # a key of COUNTED_BY


def measure(endpoint: Endpoint, prompt_tokens: list[int], max_tokens: int, runs: int, say=print,
            concurrency: tuple[int, ...] = (1,), warm_prefix: bool = False, seed: int | None = None) -> Measurement:
    """Every prompt length at every concurrency level, `runs` rounds each; failed runs reported and left out."""
    if concurrency[0] != 1:
        raise FilmError(f"--concurrency {','.join(map(str, concurrency))}: start with 1, the single-stream "
                        f"figures the measured beats use")
    prompts = Prompts(seed)
    results, how = [], set()
    needed = max(1, math.ceil(runs / 2))
    for tokens in prompt_tokens:
        try:
            calibrated = calibrate(endpoint, prompts, tokens)
            # --warm-prefix: one prompt for every run of this length, counted (and so cached) first.
            shared = prompts.make(calibrated.chars) if warm_prefix else None
            if shared is not None:
                endpoint.prompt_tokens(shared)
        except RunFailed as failure:
            raise FilmError(f"{tokens:,}-token prompt: {failure}; nothing was written") from None
        levels, counts = [], []
        for streams in concurrency:
            level = Level(streams, [])
            failed = []
            for number in range(1, runs + 1):
                texts = [shared or prompts.make(calibrated.chars) for _ in range(streams)]
                done = run_round(endpoint, texts, max_tokens)
                good = [run for run in done if isinstance(run, Run)]
                failed += [str(failure) for failure in done if not isinstance(failure, Run)]
                if streams == 1:  # the prompt's size is the single-stream runs'; the others are built alike
                    counts += [count_of(endpoint, text, run, calibrated, how)
                               for text, run in zip(texts, done) if isinstance(run, Run)]
                if good:
                    level.rounds.append(good)
                say(round_line(tokens, streams, number, runs, done))
            if len(level.rounds) < needed:
                raise FilmError(f"{tokens:,}-token prompt{f', {streams} streams at once' if streams > 1 else ''}: "
                                f"only {len(level.rounds)} of {runs} runs succeeded (need {needed}); failures: "
                                f"{'; '.join(sorted(set(failed)))}. Nothing was written")
            levels.append(level)
        results.append(summarise(tokens, counts, levels))
    counted_by = "estimate" if "estimate" in how else "request" if "request" in how else "stream"
    return Measurement(tuple(results), "cached" if warm_prefix else "cold", counted_by)


def run_round(endpoint: Endpoint, texts: list[str], max_tokens: int) -> list[Run | RunFailed]:
    """The streams of one round, all sent at once; each a Run or the failure that stopped it."""
    def one(text: str) -> Run | RunFailed:
        try:
            return endpoint.stream(text, max_tokens)
        except RunFailed as failure:
            return failure

    if len(texts) == 1:
        return [one(texts[0])]
    with ThreadPoolExecutor(len(texts)) as pool:
        return list(pool.map(one, texts))


def count_of(endpoint: Endpoint, text: str, run: Run, calibrated: Calibrated, how: set[str]) -> int:
    """A run's prompt size from the server: its stream's usage, else a non-streamed request (sent after
    the timed one, so it cannot warm the cache for it), else the calibration's estimate."""
    if run.prompt_tokens is not None:
        how.add("stream")
        return run.prompt_tokens
    if calibrated.tokens is None:
        how.add("estimate")
        return len(text.split())
    counted = endpoint.prompt_tokens(text)
    how.add("request" if counted is not None else "estimate")
    run.prompt_tokens = counted if counted is not None else len(text.split())
    return run.prompt_tokens


def round_line(tokens: int, streams: int, number: int, runs: int, done: list[Run | RunFailed]) -> str:
    where = f"  {tokens:>7,} tokens  " + (f"x{streams:<3} " if streams > 1 else "") + f"run {number}/{runs}: "
    good = [run for run in done if isinstance(run, Run)]
    failures = [str(failure) for failure in done if not isinstance(failure, Run)]
    if not good:
        return where + f"failed: {failures[0]}"
    ttft = statistics.median(run.ttft for run in good)
    rates = [1 / run.tpot for run in good if run.tpot]
    rate = f"{statistics.median(rates):7.1f} tok/s" if rates else "   (one token)"
    line = where + f"TTFT {ttft * 1000:7.1f} ms  {rate}  {good[0].output_tokens} tokens"
    if streams > 1:
        line += f"  ({len(good)}/{streams} streams" + (f"; failed: {failures[0]})" if failures else ")")
    return line


def planned_requests(lengths: int, runs: int, concurrency: tuple[int, ...]) -> int:
    """Timed requests a run will make (calibration and counting come on top)."""
    return lengths * runs * sum(concurrency)
