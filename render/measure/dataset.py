"""A measurement as a dataset of data/measured/: written through the same fields the film reads it with
(render/specs/catalog.py's MeasuredDataset), the API key taken out, and only once the file has loaded as the film
loads a dataset."""

from __future__ import annotations

import dataclasses
import datetime
import shlex
import tempfile
from pathlib import Path

import yaml

from render import __version__
from render.errors import FilmError
from render.files import DATA_DIR, display_path, write_atomic
from render.measure.client import Endpoint
from render.measure.timings import COUNTED_BY, Measurement
from render.specs.catalog import MeasuredDataset, load_measured
from render.specs.fields import bounds_of, out_of_range, to_yaml
from render.text import clean_text

DEFINITIONS = (
    "vLLM's benchmark convention. TTFT: request sent to the first streamed token of any kind (reasoning or "
    "content). TTFC: request sent to the first content token. TPOT: (end-to-end - TTFT) / (output tokens - 1), "
    "output tokens including reasoning; decode rate = 1 / TPOT. ITL: gaps between streamed token chunks. "
    "Aggregate throughput: output tokens of all streams of a round / the round's wall time."
)



def redacted(endpoint: Endpoint, value, keep: tuple[str, ...] = ()):
    """Every string in a record (records within it too) with the API key taken out, but the fields in `keep`."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{field.name: redacted(endpoint, getattr(value, field.name))
                                             for field in dataclasses.fields(value)
                                             if field.init and field.name not in keep})
    if isinstance(value, str):
        return endpoint.redact(value)
    if isinstance(value, dict):
        return {key: redacted(endpoint, item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redacted(endpoint, item) for item in value)
    return value


# Fields film measure itself decides (a dataset id, catalog ids, the host it was given, the route it writes with
# the label already redacted): never redacted, so a key can never damage them. Everything else is text that came
# from the server or the user.
OWN_FIELDS = ("id", "route", "precision", "model", "compared_gpu", "endpoint_host", "tool_version", "definitions")


def dataset(name: str, endpoint: Endpoint, measurement: Measurement, label: str | None, provider: str | None,
            precision: str, model: str, compared_gpu: str, runs: int) -> MeasuredDataset:
    host = endpoint.host + (f":{endpoint.port}" if endpoint.port else "")
    label, provider = (clean_text(text, 200) if text else None for text in (label, provider))
    prompts = "cold prompts (each opens with words no other request shares)" if measurement.prompt_cache == "cold" \
        else "cached prompts (--warm-prefix: each length's prompt sent once first)"
    reported = endpoint.reported_model or clean_text(endpoint.model, 200)
    record = MeasuredDataset(
        id=name,
        route=f"direct to {host}" + (f" ({endpoint.redact(label)})" if label else ""),
        provider=provider or label or host,
        precision=precision,
        model=model,
        compared_gpu=compared_gpu,
        compared_gpu_is_assumption=True,
        measured_on=datetime.date.today().isoformat(),
        label=label or host,
        source=f"film measure {__version__}: {runs} streamed runs per prompt against {host}, "
               f"model {reported!r}, {prompts}",
        endpoint_host=host,
        model_reported=reported,
        runs=runs,
        tool_version=__version__,
        prompt_cache=measurement.prompt_cache,
        prompt_tokens_counted_by=COUNTED_BY[measurement.counted_by],
        prompt_tokens_estimated=measurement.counted_by == "estimate",
        definitions=DEFINITIONS,
        prompts=measurement.prompts,
    )
    return redacted(endpoint, record, keep=OWN_FIELDS)


def check_readable(record: MeasuredDataset) -> None:
    """What `measure` found, against the bounds the film reads a dataset with (the fields of MeasuredPrompt and
    ConcurrencyLevel): a server that sends every token at once, or answers before it was asked, gives figures no
    GPU makes."""
    for prompt in record.prompts:
        where = f"{prompt.prompt_tokens:,}-token prompt"
        for entry, what in [(prompt, where), *((level, f"{where}, {level.streams} streams at once")
                                               for level in prompt.concurrency)]:
            for key, bounds in bounds_of(type(entry)).items():
                problem = out_of_range(getattr(entry, key), bounds)
                if problem:
                    raise FilmError(f"{what}: the endpoint's {key.replace('_', ' ')} came out at "
                                    f"{getattr(entry, key):,}, outside what the film reads as a measurement "
                                    f"({problem}); did the server send every token at once, or time something "
                                    f"else? Nothing was written")


def dataset_text(record: MeasuredDataset) -> str:
    header = "# Measured with `film measure`; see docs/measuring.md.\n"
    return header + yaml.safe_dump(to_yaml(record), sort_keys=False, allow_unicode=True)


def checked_dataset(path: Path, record: MeasuredDataset) -> MeasuredDataset:
    """The dataset as the film would load it from `path`, loaded from a copy beside it (nothing is written there)."""
    check_readable(record)
    with tempfile.TemporaryDirectory(prefix=".measure-check-", dir=Path(path).parent) as folder:
        check = Path(folder) / Path(path).name
        check.write_text(dataset_text(record), encoding="utf-8")
        try:
            return load_measured(check)
        except FilmError as error:
            raise FilmError(f"the dataset for {path} would not load in the film ({str(error).split(': ', 1)[-1]}); "
                            f"nothing was written") from None


def write_dataset(path: Path, record: MeasuredDataset) -> None:
    """Written atomically, and only once the very file has loaded as the film loads a dataset."""
    checked_dataset(path, record)
    write_atomic(path, dataset_text(record))


def use_hint(path: Path) -> str:
    """The command that films a dataset just written (quoted), or how to make it one."""
    name = path.stem
    if Path(path).resolve().parent == (DATA_DIR / "measured").resolve():
        return f"use it with make film MEASURED={shlex.quote(name)}"
    return (f"to film it, move it into {display_path(DATA_DIR / 'measured')}/: mv {shlex.quote(str(path))} "
            f"{shlex.quote(display_path(DATA_DIR / 'measured'))}/ && make film MEASURED={shlex.quote(name)}")
