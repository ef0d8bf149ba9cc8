"""`film measure`'s whole run, as a library call: the endpoint timed at every prompt length (and concurrency level),
the timings written as a data/measured/ dataset with the fit the film will make of them, and a report of both.
The command line parses its arguments into a MeasureRequest (or, for --load, a LoadMeasureRequest), which checks
them; nothing here reads a Namespace."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from render.errors import FilmError
from render.files import DATA_DIR, display_path
from render.plan.resolve import resolve_choice
from render.plan.storyboard import load_storyboard
from render.plan.types import FilmRequest
from render.serving.workload import Lengths, check_rate
from render.specs.catalog import DATASET_NAME, load_catalog
from render.text import echo, table, whole_number_in

MAX_MEASURED_PROMPT = 2_000_000


@dataclass(frozen=True)
class MeasureRequest:
    """What to time and where to write it (each value already checked by whoever asks)."""

    base_url: str
    model: str                  # the model's name at the endpoint
    api_key_env: str | None     # the environment variable holding the key (never the key)
    lengths: tuple[int, ...]    # prompt lengths, increasing
    runs: int
    max_tokens: int
    max_requests: int
    timeout: float
    levels: tuple[int, ...]     # concurrency levels, from 1
    warm_prefix: bool
    label: str | None
    provider: str | None
    out: Path                   # data/measured/<id>.yaml
    request: FilmRequest        # the catalog's GPU, model and precision the timings are compared with

    @classmethod
    def checked(cls, prompt_tokens: str, concurrency: str, **settings) -> MeasureRequest:
        """From the command line's text: the lengths and levels read, the dataset's name and the run's size checked
        (one message naming the option and the fix)."""
        from render.measure.timings import MAX_CONCURRENCY, planned_requests

        lengths = whole_numbers(prompt_tokens, "--prompt-tokens", 1, MAX_MEASURED_PROMPT)
        if list(lengths) != sorted(set(lengths)) or len(lengths) < 2:
            raise FilmError(f"--prompt-tokens {echo(prompt_tokens)}: give at least two increasing lengths")
        out = settings["out"]
        if out.suffix != ".yaml" or not DATASET_NAME.fullmatch(out.stem):
            raise FilmError(f"--out {out}: the dataset must be a .yaml file whose name is its id: letters, digits, "
                            f"'.', '_' and '-', e.g. data/measured/my-endpoint.yaml")
        levels = whole_numbers(concurrency, "--concurrency", 1, MAX_CONCURRENCY)
        if list(levels) != sorted(set(levels)) or levels[0] != 1:
            raise FilmError(f"--concurrency {echo(concurrency)}: give increasing numbers of streams starting with 1 "
                            f"(the single-stream figures the measured beats use), e.g. 1,8,32")
        planned = planned_requests(len(lengths), settings["runs"], levels)
        if planned > settings["max_requests"]:
            raise FilmError(f"this run needs {planned:,} timed requests ({len(lengths)} prompt lengths x "
                            f"{settings['runs']} runs x {sum(levels)} streams over --concurrency {concurrency}), more "
                            f"than --max-requests {settings['max_requests']:,}; raise --max-requests or lower --runs "
                            f"or --concurrency")
        return cls(lengths=lengths, levels=levels, **settings)


def whole_numbers(text: str, option: str, low: int, high: int) -> tuple[int, ...]:
    """'34,2081,16361' as whole numbers, each from `low` to `high`."""
    try:
        return tuple(whole_number_in(part, low, high) for part in text.split(","))
    except ValueError as error:
        raise FilmError(f"{option} {echo(text)}: {error}") from None


@dataclass(frozen=True)
class LoadMeasureRequest:
    """`film measure --load`: an open-loop stream of Poisson arrivals, every request timed, written as a load
    dataset (each value checked on the way in)."""

    base_url: str
    model: str
    api_key_env: str | None
    timeout: float
    rate: float                 # requests a second
    requests: int
    prompt: Lengths
    answer: Lengths
    seed: int
    max_seconds: float          # no request is sent after this
    out: Path                   # a .yaml load dataset

    def __post_init__(self):
        from render.measure.prompts import CALIBRATION_ROUNDS, MAX_OPENINGS

        check_rate(self.rate)
        most = MAX_OPENINGS - CALIBRATION_ROUNDS
        if self.requests > most:
            raise FilmError(f"--requests {self.requests:,}: film measure --load sends at most {most:,} requests in "
                            f"one run, each opening with words no other shares (so no cache serves it); lower "
                            f"--requests, or measure in several runs with other --seed values")
        if not (1 <= self.max_seconds <= 86_400):
            raise FilmError(f"--max-seconds {self.max_seconds:g}: give from 1 to 86,400 seconds")
        if self.out.suffix != ".yaml":
            raise FilmError(f"--out {self.out}: a load dataset is a .yaml file, e.g. build/load/mine.yaml")


def measure_load_endpoint(asked: LoadMeasureRequest, say: Callable[[str], None] = print) -> Path:
    """Send the stream, time every request, write the load dataset and say how to compare it; returns its path."""
    from render.measure import client
    from render.measure.load import measure_load, write_load

    endpoint = client.Endpoint(asked.base_url, asked.model, client.api_key_from(asked.api_key_env),
                               timeout=asked.timeout, max_requests=asked.requests + 64)
    record = measure_load(endpoint, asked.rate, asked.requests, asked.prompt, asked.answer, asked.seed,
                          asked.max_seconds, say=say)
    write_load(asked.out, record)
    say(f"wrote {display_path(asked.out)}: {len(record.requests):,} requests timed ({record.failed} failed); compare "
        f"it with film load --compare {shlex.quote(str(asked.out))}")
    return asked.out


def measure_endpoint(asked: MeasureRequest, say: Callable[[str], None] = print) -> Path:
    """Time the endpoint, write the dataset (with its fit as a record) and say what was found; returns its path."""
    from render.measure import client, dataset as datasets, timings
    from render.specs import calibration
    from render.specs.calibration import deployment_of
    from render.tools.calibrate import as_data as calibration_data, report

    catalog = load_catalog(DATA_DIR)
    choice = resolve_choice(catalog, load_storyboard(), asked.request)
    model, precision, gpu = choice.model.id, choice.dtype.id, choice.gpu.id
    endpoint = client.Endpoint(asked.base_url, asked.model, client.api_key_from(asked.api_key_env),
                               timeout=asked.timeout, max_requests=asked.max_requests)
    say(f"measuring {asked.model} at {endpoint.host}: prompts {', '.join(f'{n:,}' for n in asked.lengths)} tokens "
        f"({'cached' if asked.warm_prefix else 'cold'}), {asked.runs} runs each"
        + (f" at {', '.join(map(str, asked.levels))} streams at once" if len(asked.levels) > 1 else "")
        + f", {asked.max_tokens} tokens out")
    measurement = timings.measure(endpoint, list(asked.lengths), asked.max_tokens, asked.runs, say=say,
                                  concurrency=asked.levels, warm_prefix=asked.warm_prefix)
    record = datasets.dataset(asked.out.stem, endpoint, measurement, asked.label, asked.provider, precision, model,
                              gpu, asked.runs)
    fit = calibration.calibrate(dataset := datasets.checked_dataset(asked.out, record),
                                deployment_of(dataset, catalog, embedding_rows=choice.embedding_rows))
    # a record beside the timings: the film fits them again
    datasets.write_dataset(asked.out, dataclasses.replace(record, calibration=calibration_data(fit)))
    say(measured_tables(record.prompts))
    say(f"prompts: {measurement.prompt_cache}; prompt tokens: {record.prompt_tokens_counted_by}")
    say(report(fit))
    say(f"wrote {display_path(asked.out)}; {datasets.use_hint(asked.out)}")
    return asked.out


def measured_tables(prompts) -> str:
    """Each prompt length's medians, then (with more than one stream) each concurrency level's."""
    reasoning = any(p.reasoning_tokens for p in prompts)  # then the first content token comes later
    text = table(("prompt tokens", "TTFT (median)", *(("TTFC (median)", "reasoning tokens") if reasoning else ()),
                  "decode tok/s (median)", "runs", "token counts"),
                 [(f"{p.prompt_tokens:,}", f"{p.ttft_seconds * 1000:.1f} ms",
                   *((f"{p.ttfc_seconds * 1000:.1f} ms" if p.ttfc_seconds else "-",
                      str(p.reasoning_tokens)) if reasoning else ()),
                   f"{p.decode_tokens_per_second:.1f}" if p.decode_tokens_per_second else "-",
                   str(p.runs), p.token_counts) for p in prompts])
    if any(p.concurrency for p in prompts):
        text += "\n" + table(("prompt tokens", "streams", "aggregate tok/s", "per-stream tok/s", "TTFT (median)"),
                             [(f"{p.prompt_tokens:,}", str(level.streams), f"{level.aggregate_tokens_per_second:.1f}",
                               f"{level.decode_tokens_per_second:.1f}" if level.decode_tokens_per_second else "-",
                               f"{level.ttft_seconds * 1000:.1f} ms") for p in prompts for level in p.concurrency])
    return text
