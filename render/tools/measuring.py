"""`film measure`'s whole run, as a library call: the endpoint timed at every prompt length (and concurrency level),
the timings written as a data/measured/ dataset with the fit the film will make of them, and a report of both.
The command line parses and checks its arguments into a MeasureRequest; nothing here reads a Namespace."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from render.files import DATA_DIR
from render.plan.resolve import resolve_choice
from render.plan.storyboard import load_storyboard
from render.plan.types import FilmRequest
from render.specs.catalog import load_catalog
from render.specs.yamlio import display_path
from render.text import table


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
