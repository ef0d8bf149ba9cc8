"""Loads and validates everything in data/: GPUs, models, data types and measured timings."""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from render.errors import FilmError, unknown_name_error
from render.files import DATA_DIR, display_path
from render.specs.architecture import count_parameters
from render.specs.fields import date_text, datum, yaml_keys
from render.specs.schema import from_yaml
from render.specs.types import DataType, Gpu, Model
from render.text import NAME_LENGTH, control_characters, echo
from render.specs.yamlio import YamlList, YamlMap, check_fields, kept_while_unchanged, load_yaml

DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# A config whose counted parameters are further than this from its published total has a typo.
PARAMETER_TOLERANCE = 0.001
TTFT = (1e-4, 600, "seconds")
DECODE_RATE = (0.01, 100_000, "tokens/s")


def record(**metadata) -> object:
    """A figure `film measure` writes beside the medians (their spread, how they were counted), kept as a record:
    the film reads the medians."""
    return datum(default=None, **metadata)


@dataclass(frozen=True, kw_only=True)
class ConcurrencyLevel:
    """So many streams at once against the endpoint: their tokens per second together."""

    streams: int = datum(1, 4096, "streams")
    aggregate_tokens_per_second: float = datum(0.01, 10_000_000, "tokens/s")
    decode_tokens_per_second: float | None = datum(*DECODE_RATE, default=None)  # per stream, median
    decode_spread_tokens_per_second: tuple[float, ...] | None = record()
    ttft_seconds: float | None = datum(*TTFT, default=None)  # per stream, median
    ttft_spread_seconds: tuple[float, ...] | None = record()
    rounds: int | None = record()


@dataclass(frozen=True, kw_only=True)
class MeasuredPrompt:
    prompt_tokens: int = datum(1, 10_000_000, "tokens")
    ttft_seconds: float | None = datum(*TTFT)
    ttft_written: str | None = datum(default=None, yaml=False, text_of="ttft_seconds")  # its precision, as written
    ttft_approximate: bool = False
    ttft_spread_seconds: tuple[float, ...] | None = record()
    decode_tokens_per_second: float | None = datum(*DECODE_RATE)
    decode_written: str | None = datum(default=None, yaml=False, text_of="decode_tokens_per_second")
    decode_spread_tokens_per_second: tuple[float, ...] | None = record()
    inter_token_latency_seconds: dict[str, Any] | None = record()  # p50, p90, p99 of the gaps between tokens
    output_tokens: int | None = record()
    runs: int | None = record()
    token_counts: str | None = record()    # "usage", or "approximate (chunks counted)"
    prompt_tokens_spread: tuple[int, ...] | None = record()
    reasoning_tokens: int = 0              # the first tokens were reasoning: TTFT counts them
    ttfc_seconds: float | None = record()  # time to the first content token, after the reasoning
    concurrency: tuple[ConcurrencyLevel, ...] = datum(default=(), item="concurrency level")


@dataclass(frozen=True, kw_only=True)
class OtherProvider:
    provider: str | None
    precision: str
    decode_tokens_per_second: float = datum(*DECODE_RATE)
    source: str


# every prompt new to the server's cache, or sent once before its runs
PROMPT_CACHE = ("cold", "cached")


@dataclass(frozen=True, kw_only=True)
class MeasuredDataset:
    """Timings from a live endpoint, and which model and GPU they are compared with: its file's schema, read and
    written (by `film measure`) through these fields."""

    id: str
    route: str
    provider: str
    precision: str
    model: str
    compared_gpu: str
    compared_gpu_is_assumption: bool
    measured_on: str | None = datum(default=None, written_as=(str, datetime.date, type(None)), read=date_text)
    label: str | None = None
    source: str
    # the source in a few words, as the film's provenance line and the page's citation say it
    cited_as: str | None = None
    # written by `film measure`
    endpoint_host: str | None = record()
    model_reported: str | None = record()
    runs: int | None = record()
    tool_version: str | None = record()
    # None: the source does not say
    prompt_cache: str | None = datum(one_of=PROMPT_CACHE, either=True, default=None)
    prompt_tokens_counted_by: str | None = record()
    # the server reported no usage, so prompt sizes are estimates
    prompt_tokens_estimated: bool = False
    definitions: str | None = record()
    prompts: tuple[MeasuredPrompt, ...] = datum(item="prompt")
    other_providers: tuple[OtherProvider, ...] = datum(default=(), item="other provider")
    calibration: dict[str, Any] | None = record()  # the fit `film measure` found, a record (the film fits again)
    path: str = datum(default="", yaml=False)

    @property
    def citation(self) -> str | None:
        """Where the timings come from, in words a viewer reads: the source's own short name, or when they were
        measured (a dataset `film measure` wrote); None when neither is known."""
        if self.cited_as:
            return self.cited_as
        return f"measured {self.measured_on}" if self.measured_on else None

    @property
    def reasoning(self) -> bool:
        """Some first tokens were reasoning: TTFT counts them."""
        return any(prompt.reasoning_tokens for prompt in self.prompts)


T = TypeVar("T")


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, Gpu]
    models: dict[str, Model]
    dtypes: dict[str, DataType]
    measured_dir: Path
    data_dir: Path

    def gpu(self, gpu_id: str) -> Gpu:
        return self._lookup(self.gpus, gpu_id, "GPU", "gpus.yaml")

    def model(self, model_id: str) -> Model:
        return self._lookup(self.models, model_id, "model", "models.yaml")

    def dtype(self, dtype_id: str) -> DataType:
        return self._lookup(self.dtypes, dtype_id.lower(), "data type", "dtypes.yaml")

    def measured_ids(self) -> list[str]:
        return sorted(path.stem for path in self.measured_dir.glob("*.yaml"))

    def measured(self, dataset_id: str) -> MeasuredDataset:
        if not DATASET_NAME.fullmatch(dataset_id):
            raise FilmError(
                f"measured dataset {echo(dataset_id)}: a dataset is a name, the file name in "
                f"{display_path(self.measured_dir)}/ without .yaml (letters, digits, '.', '_' and '-'), not a path; "
                f"known: {', '.join(self.measured_ids())}")
        path = self.measured_dir / f"{dataset_id}.yaml"
        if not os.path.lexists(path):  # (a FIFO, a device or a link loop there is named as such by load_measured)
            raise unknown_name_error(
                "measured dataset", dataset_id, self.measured_ids(), display_path(self.measured_dir)
            )
        dataset = load_measured(path)
        self.gpu(dataset.compared_gpu)
        self.model(dataset.model)
        self.dtype(dataset.precision)
        return dataset

    def _lookup(self, table: dict[str, T], key: str, kind: str, filename: str) -> T:
        if key not in table:
            raise unknown_name_error(kind, key, table, display_path(self.data_dir / filename))
        return table[key]


CATALOG_FILES = ("gpus.yaml", "models.yaml", "dtypes.yaml")


@kept_while_unchanged(lambda data_dir=DATA_DIR: [Path(data_dir) / name for name in CATALOG_FILES])
def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    data_dir = Path(data_dir)
    gpus = {gpu.id: gpu for gpu in load_entries(data_dir / "gpus.yaml", "gpus", "GPU", Gpu)}
    models = {model.id: model for model in load_entries(data_dir / "models.yaml", "models", "model", Model)}
    dtypes = {dtype.id: dtype for dtype in load_entries(data_dir / "dtypes.yaml", "dtypes", "data type", DataType)}
    return Catalog(gpus, models, dtypes, data_dir / "measured", data_dir)


def load_entries(path: Path, top_key: str, kind: str, make: type[T]) -> list[T]:
    """Every entry of a catalog file, checked against its dataclass's fields (render/specs/types.py)."""
    document = load_yaml(path, f"the catalog's {top_key} (data/{path.name})")
    if not isinstance(document, YamlMap) or top_key not in document:
        raise FilmError(f"{display_path(path)}: expected a top-level '{top_key}:' list")
    check_fields(document, display_path(path), {top_key: list})
    entries: YamlList = document[top_key]
    result, seen = [], {}
    for index, entry in enumerate(entries):
        label = f"{kind} {entry.get('id', index + 1)!r}" if isinstance(entry, dict) else f"{kind} {index + 1}"
        if not isinstance(entry, YamlMap):
            raise FilmError(f"{entries.where(index)}: {label} should be a mapping of keys to values")
        if isinstance(entry.get("id"), str) and entry["id"] in seen:
            raise FilmError(f"{entry.where('id')}: {label} is defined twice (first at line {seen[entry['id']]})")
        check_text(entry, label)
        made = from_yaml(make, entry, label, then=check_model_entry if make is Model else None)
        seen[made.id] = entry.key_lines["id"]
        if make is Model:
            check_parameter_count(made, entry, label)
        result.append(made)
    return result


NAME_FIELDS = ("name", "short_name", "spoken_name", "provider", "label")


def check_text(entry: YamlMap, label: str) -> None:
    """Text that reaches the screen, subtitles, the description, MP4 tags and terminals: plain text. A name is
    one line of at most NAME_LENGTH characters; no field holds a control character (an ESC sequence, a NUL),
    though a folded source may break lines."""
    for key, value in entry.items():
        if not isinstance(value, str):
            continue
        found = control_characters(value.replace("\n", "").replace("\t", "") if key not in NAME_FIELDS else value)
        if found:
            raise FilmError(f"{entry.where(key)}: {label}: {key!r} holds control characters ({', '.join(found)}); "
                            f"write it as plain text")
        if key in NAME_FIELDS and len(value) > NAME_LENGTH:
            raise FilmError(f"{entry.where(key)}: {label}: {key!r} is {len(value):,} characters long; a name is at "
                            f"most {NAME_LENGTH}")


def check_model_entry(entry: YamlMap, label: str) -> None:
    """What makes an architecture impossible: heads that do not group, experts that do not add up."""
    if entry["attention_heads"] % entry["kv_heads"]:
        raise FilmError(f"{entry.where('kv_heads')}: {label}: attention_heads must be a multiple of kv_heads")
    experts = entry.get("experts") or 0
    if experts:
        per_token = entry.get("experts_per_token") or 0
        if not 1 <= per_token <= experts:
            raise FilmError(f"{entry.where('experts_per_token' if 'experts_per_token' in entry else 'experts')}: "
                            f"{label}: a mixture of experts needs experts_per_token from 1 to its {experts} experts")
        if not entry.get("expert_ffn_size"):
            raise FilmError(f"{entry.where('experts')}: {label}: a mixture of experts needs expert_ffn_size "
                            f"(the config's moe_intermediate_size, or intermediate_size for Mixtral)")
        if (entry.get("dense_layers") or 0) >= entry["layers"]:
            raise FilmError(f"{entry.where('dense_layers')}: {label}: dense_layers must be fewer than its "
                            f"{entry['layers']} layers")
    else:
        moe_keys = [key for key in ("experts_per_token", "expert_ffn_size", "shared_experts", "dense_layers")
                    if entry.get(key)]
        if moe_keys:
            raise FilmError(f"{entry.where(moe_keys[0])}: {label}: {moe_keys[0]} is set but experts is not; "
                            f"a dense model has neither")
    if entry.get("kv_lora_rank"):
        rope, head = entry.get("qk_rope_head_dim") or 0, entry["head_dim"]
        if not 0 < rope < head or not entry.get("v_head_dim"):
            raise FilmError(f"{entry.where('kv_lora_rank')}: {label}: latent attention (kv_lora_rank) needs "
                            f"qk_rope_head_dim below head_dim (the no-position plus the rotary width) and v_head_dim")


def check_parameter_count(model: Model, entry: YamlMap, label: str) -> None:
    """The published total must be what the architecture implies: a mistyped size shows up here."""
    counted = count_parameters(model).total
    if abs(counted - model.parameters) > PARAMETER_TOLERANCE * model.parameters:
        raise FilmError(
            f"{entry.where('parameters')}: {label}: its architecture has {counted:,} parameters but "
            f"'parameters' says {model.parameters:,} ({(counted / model.parameters - 1) * 100:+.2f}%); check the "
            f"sizes against the model's config.json (or import it: film model import config.json)")


@kept_while_unchanged(lambda path: [path])
def load_measured(path: Path) -> MeasuredDataset:
    document = load_yaml(path, "a measured dataset's YAML file (film measure writes one)")
    label = f"measured dataset {path.stem!r}"
    check_fields(document, label, *yaml_keys(MeasuredDataset))
    check_text(document, label)
    if document["id"] != path.stem:
        raise FilmError(
            f"{document.where('id')}: {label}: id {document['id']!r} should match the file name {path.stem!r}"
        )
    dataset = from_yaml(MeasuredDataset, document, label)
    if len(dataset.prompts) < 2:
        raise FilmError(f"{document.where('prompts')}: {label}: needs at least two prompt lengths, "
                        f"has {len(dataset.prompts)}")
    lengths = [prompt.prompt_tokens for prompt in dataset.prompts]
    if lengths != sorted(set(lengths)):
        raise FilmError(f"{document.where('prompts')}: {label}: prompt lengths must increase, got {lengths}")
    for index, (entry, prompt) in enumerate(zip(document["prompts"], dataset.prompts)):
        streams = [level.streams for level in prompt.concurrency]
        if streams and (streams != sorted(set(streams)) or streams[0] != 1):
            raise FilmError(f"{entry.where('concurrency')}: {label}, prompt {index + 1}: concurrency levels must "
                            f"start at 1 stream and increase, got {streams}")
    return dataclasses.replace(dataset, path=display_path(path))
