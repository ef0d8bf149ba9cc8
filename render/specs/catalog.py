"""Loads and validates everything in data/: GPUs, models, data types and measured timings."""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from render.errors import FilmError, unknown_name_error
from render.files import DATA_DIR
from render.specs.architecture import count_parameters
from render.specs.types import DataType, Gpu, Model
from render.text import NAME_LENGTH, control_characters
from render.specs.yamlio import YamlList, YamlMap, check_fields, display_path, kept_while_unchanged, load_yaml

NUMBER = (int, float)
DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAYBE_NUMBER = (int, float, type(None))

GPU_FIELDS = {
    "id": str, "name": str, "short_name": str, "spoken_name": str, "article": str,
    "bf16_flops": NUMBER, "fp8_flops": MAYBE_NUMBER, "bandwidth": NUMBER,
    "memory_gib": NUMBER, "sm_count": int, "source": str,
    "interconnect_bandwidth": NUMBER, "allreduce_latency_seconds": NUMBER, "allreduce_latency_is_assumption": bool,
    "interconnect_source": str,
}
GPU_OPTIONAL = {"compute_unit": str}
COMPUTE_UNITS = ("SM", "CU")  # NVIDIA's streaming multiprocessors, AMD's compute units
MODEL_FIELDS = {
    "id": str, "name": str, "spoken_name": str, "layers": int, "hidden_size": int,
    "attention_heads": int, "kv_heads": int, "head_dim": int, "ffn_size": int,
    "vocab_size": int, "tied_embeddings": bool, "qkv_bias": bool, "parameters": int, "source": str,
}
MODEL_OPTIONAL = {
    "architecture": str, "qk_norm": bool, "experts": int, "experts_per_token": int, "expert_ffn_size": int,
    "shared_experts": int, "dense_layers": int, "router_bias": bool, "q_lora_rank": int, "kv_lora_rank": int,
    "qk_rope_head_dim": int, "v_head_dim": int,
}
# A config whose counted parameters are further than this from its published total has a typo.
PARAMETER_TOLERANCE = 0.001
DTYPE_FIELDS = {
    "id": str, "name": str, "spoken_name": str, "bytes_per_weight": NUMBER, "arithmetic": str,
    "weight_only": bool, "kv_dtype": str, "kv_bytes": NUMBER, "embeddings_in_format": bool, "source": str,
}
ARITHMETIC_FORMATS = ("bf16", "fp8")

MEASURED_FIELDS = {
    "id": str, "route": str, "provider": str, "precision": str, "model": str,
    "compared_gpu": str, "compared_gpu_is_assumption": bool, "source": str, "prompts": list,
}
MEASURED_OPTIONAL = {"measured_on": (str, datetime.date, type(None)), "other_providers": list, "label": str,
                     # written by `film measure`
                     "endpoint_host": str, "model_reported": str, "runs": int, "tool_version": str,
                     "definitions": str, "prompt_cache": str, "prompt_tokens_counted_by": str,
                     "prompt_tokens_estimated": bool,
                     "calibration": dict}  # the fit `film measure` found, kept as a record (it is fitted again)
PROMPT_CACHE = ("cold", "cached")  # every prompt new to the server's cache, or sent once before its runs
MEASURED_PROMPT_FIELDS = {
    "prompt_tokens": int, "ttft_seconds": MAYBE_NUMBER, "decode_tokens_per_second": MAYBE_NUMBER,
}
MEASURED_PROMPT_OPTIONAL = {"ttft_approximate": bool,
                            # written by `film measure`
                            "ttft_spread_seconds": list, "decode_spread_tokens_per_second": (list, type(None)),
                            "inter_token_latency_seconds": (dict, type(None)), "output_tokens": int, "runs": int,
                            "token_counts": str, "prompt_tokens_spread": list, "reasoning_tokens": int,
                            "ttfc_seconds": MAYBE_NUMBER, "concurrency": list}
CONCURRENCY_FIELDS = {"streams": int, "aggregate_tokens_per_second": NUMBER}
CONCURRENCY_OPTIONAL = {"decode_tokens_per_second": MAYBE_NUMBER, "decode_spread_tokens_per_second": (list, type(None)),
                        "ttft_seconds": NUMBER, "ttft_spread_seconds": list, "rounds": int}
OTHER_PROVIDER_FIELDS = {
    "provider": (str, type(None)), "precision": str, "decode_tokens_per_second": NUMBER, "source": str,
}


@dataclass(frozen=True)
class ConcurrencyLevel:
    """So many streams at once against the endpoint: their tokens per second together."""

    streams: int
    aggregate_tokens_per_second: float
    decode_tokens_per_second: float | None = None   # per stream, median
    ttft_seconds: float | None = None               # per stream, median


@dataclass(frozen=True)
class MeasuredPrompt:
    prompt_tokens: int
    ttft_seconds: float | None
    decode_tokens_per_second: float | None
    ttft_approximate: bool = False
    reasoning_tokens: int = 0
    concurrency: tuple[ConcurrencyLevel, ...] = ()


@dataclass(frozen=True)
class OtherProvider:
    provider: str | None
    precision: str
    decode_tokens_per_second: float
    source: str


@dataclass(frozen=True)
class MeasuredDataset:
    """Timings from a live endpoint, and which model and GPU they are compared with."""

    id: str
    route: str
    provider: str
    precision: str
    model: str
    compared_gpu: str
    compared_gpu_is_assumption: bool
    source: str
    prompts: tuple[MeasuredPrompt, ...]
    measured_on: str | None = None
    label: str | None = None
    other_providers: tuple[OtherProvider, ...] = field(default_factory=tuple)
    path: str = ""
    prompt_cache: str | None = None        # "cold" or "cached"; None: the source does not say
    prompt_tokens_estimated: bool = False  # the server reported no usage, so prompt sizes are estimates

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
                f"measured dataset {dataset_id!r}: a dataset is a name, the file name in "
                f"{display_path(self.measured_dir)}/ without .yaml (letters, digits, '.', '_' and '-'), not a path; "
                f"known: {', '.join(self.measured_ids())}")
        path = self.measured_dir / f"{dataset_id}.yaml"
        if not path.is_file():
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
    gpus = {gpu.id: gpu for gpu in load_entries(data_dir / "gpus.yaml", "gpus", "GPU", GPU_FIELDS, Gpu, GPU_OPTIONAL)}
    models = {m.id: m for m in load_entries(data_dir / "models.yaml", "models", "model", MODEL_FIELDS, Model,
                                            MODEL_OPTIONAL)}
    dtypes = {d.id: d for d in load_entries(data_dir / "dtypes.yaml", "dtypes", "data type", DTYPE_FIELDS, DataType)}
    return Catalog(gpus, models, dtypes, data_dir / "measured", data_dir)


def load_entries(path: Path, top_key: str, kind: str, fields: dict, make: type[T],
                 optional: dict | None = None) -> list[T]:
    document = load_yaml(path)
    if not isinstance(document, YamlMap) or top_key not in document:
        raise FilmError(f"{display_path(path)}: expected a top-level '{top_key}:' list")
    check_fields(document, display_path(path), {top_key: list})
    entries: YamlList = document[top_key]
    result, seen = [], {}
    for index, entry in enumerate(entries):
        label = f"{kind} {entry.get('id', index + 1)!r}" if isinstance(entry, dict) else f"{kind} {index + 1}"
        if not isinstance(entry, YamlMap):
            raise FilmError(f"{entries.where(index)}: {label} should be a mapping of keys to values")
        check_fields(entry, label, fields, optional)
        if entry["id"] in seen:
            raise FilmError(f"{entry.where('id')}: {label} is defined twice (first at line {seen[entry['id']]})")
        seen[entry["id"]] = entry.key_lines["id"]
        check_text(entry, label)
        check_entry(entry, kind, label)
        given = {key: entry[key] for key in optional or {} if entry.get(key) is not None}
        made = make(**{key: entry[key] for key in fields}, **given)
        if kind == "model":
            check_parameter_count(made, entry, label)
        result.append(made)
    return result


# What a real entry can hold, in the data's own units: a value outside is a typo, not a chip.
BOUNDS = {
    "GPU": {
        "bf16_flops": (1e12, 1e17, "FLOP/s (1 TFLOP/s to 100 PFLOP/s, dense)"),
        "fp8_flops": (1e12, 1e17, "FLOP/s (1 TFLOP/s to 100 PFLOP/s, dense)"),
        "bandwidth": (1e10, 1e14, "bytes/s (10 GB/s to 100 TB/s)"),
        "memory_gib": (1, 100_000, "GiB"),
        "sm_count": (1, 10_000, "streaming multiprocessors"),
        "interconnect_bandwidth": (1e9, 1e14, "bytes/s per GPU and direction (1 GB/s to 100 TB/s)"),
        "allreduce_latency_seconds": (1e-7, 1e-2, "seconds (0.1 µs to 10 ms)"),
    },
    "model": {
        "layers": (1, 1_000, "layers"), "hidden_size": (64, 1_000_000, "values"),
        "attention_heads": (1, 10_000, "heads"), "kv_heads": (1, 10_000, "heads"),
        "head_dim": (8, 4_096, "values"), "ffn_size": (64, 10_000_000, "values"),
        "vocab_size": (100, 10_000_000, "tokens"), "parameters": (1e6, 1e14, "parameters"),
        "experts": (0, 100_000, "experts"), "experts_per_token": (0, 1_000, "experts"),
        "expert_ffn_size": (0, 10_000_000, "values"), "shared_experts": (0, 1_000, "experts"),
        "dense_layers": (0, 1_000, "layers"), "q_lora_rank": (0, 1_000_000, "values"),
        "kv_lora_rank": (0, 1_000_000, "values"), "qk_rope_head_dim": (0, 4_096, "values"),
        "v_head_dim": (0, 4_096, "values"),
    },
    "data type": {
        "bytes_per_weight": (0.0625, 8, "bytes"), "kv_bytes": (0.0625, 8, "bytes"),
    },
}
MEASURED_BOUNDS = {
    "prompt_tokens": (1, 10_000_000, "tokens"),
    "ttft_seconds": (1e-4, 600, "seconds"),
    "decode_tokens_per_second": (0.01, 100_000, "tokens/s"),
}
CONCURRENCY_BOUNDS = {
    "streams": (1, 4096, "streams"),
    "aggregate_tokens_per_second": (0.01, 10_000_000, "tokens/s"),
    "decode_tokens_per_second": (0.01, 100_000, "tokens/s"),
    "ttft_seconds": (1e-4, 600, "seconds"),
}


def check_range(mapping: YamlMap, key: str, label: str, bounds: tuple[float, float, str]) -> None:
    """A number must be finite and within its physical bounds; the message says which and why."""
    value = mapping.get(key)
    problem = out_of_range(value, bounds)
    if problem:
        raise FilmError(f"{mapping.where(key)}: {label}: {key!r} is {value!r}; {problem}")


def out_of_range(value, bounds: tuple[float, float, str]) -> str | None:
    """'it must be between 64 and 1,000,000 values' for a number outside its bounds; None within them
    (or for what is not a number: the type checks say that)."""
    low, high, unit = bounds
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if math.isfinite(value) and low <= value <= high:
        return None
    return f"it must be between {bound_text(low)} and {bound_text(high)} {unit}"


def bound_text(value: float) -> str:
    """1e+10 for the very large, 10,000,000 for counts, 0.0001 for the small."""
    return f"{value:,.0f}" if 1 <= value < 1e9 and value == int(value) else f"{value:g}"


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


def check_entry(entry: YamlMap, kind: str, label: str) -> None:
    """Value checks beyond types: what would make the roofline meaningless."""
    for key, bounds in BOUNDS[kind].items():
        check_range(entry, key, label, bounds)
    if kind == "GPU" and entry.get("compute_unit", "SM") not in COMPUTE_UNITS:
        raise FilmError(f"{entry.where('compute_unit')}: {label}: 'compute_unit' must be one of "
                        f"{', '.join(COMPUTE_UNITS)} (what sm_count counts), not {entry['compute_unit']!r}")
    if kind == "GPU" and entry["article"] not in ("a", "an"):
        raise FilmError(f"{entry.where('article')}: {label}: 'article' must be 'a' or 'an', not {entry['article']!r}")
    if kind == "data type" and entry["arithmetic"] not in ARITHMETIC_FORMATS:
        raise FilmError(
            f"{entry.where('arithmetic')}: {label}: 'arithmetic' must be one of "
            f"{', '.join(ARITHMETIC_FORMATS)}, not {entry['arithmetic']!r}"
        )
    if kind == "model":
        check_model_entry(entry, label)


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
    document = load_yaml(path)
    label = f"measured dataset {path.stem!r}"
    check_fields(document, label, MEASURED_FIELDS, MEASURED_OPTIONAL)
    check_text(document, label)
    if document["id"] != path.stem:
        raise FilmError(
            f"{document.where('id')}: {label}: id {document['id']!r} should match the file name {path.stem!r}"
        )
    prompts = []
    for index, entry in enumerate(document["prompts"]):
        what = f"{label}, prompt {index + 1}"
        check_fields(entry, what, MEASURED_PROMPT_FIELDS, MEASURED_PROMPT_OPTIONAL)
        for key, bounds in MEASURED_BOUNDS.items():
            check_range(entry, key, what, bounds)
        prompts.append(MeasuredPrompt(**{key: entry[key] for key in (*MEASURED_PROMPT_FIELDS, "ttft_approximate")
                                         if key in entry},
                                      reasoning_tokens=entry.get("reasoning_tokens") or 0,
                                      concurrency=concurrency_levels(entry, what)))
    if len(prompts) < 2:
        raise FilmError(f"{document.where('prompts')}: {label}: needs at least two prompt lengths, has {len(prompts)}")
    lengths = [prompt.prompt_tokens for prompt in prompts]
    if lengths != sorted(set(lengths)):
        raise FilmError(f"{document.where('prompts')}: {label}: prompt lengths must increase, got {lengths}")
    others = []
    for index, entry in enumerate(document.get("other_providers") or []):
        check_fields(entry, f"{label}, other provider {index + 1}", OTHER_PROVIDER_FIELDS)
        check_range(entry, "decode_tokens_per_second", f"{label}, other provider {index + 1}",
                    MEASURED_BOUNDS["decode_tokens_per_second"])
        others.append(OtherProvider(**entry))
    return MeasuredDataset(
        **{key: document[key] for key in MEASURED_FIELDS if key != "prompts"},
        prompts=tuple(prompts),
        measured_on=str(document["measured_on"]) if document.get("measured_on") is not None else None,
        label=document.get("label"),
        other_providers=tuple(others),
        path=display_path(path),
        prompt_cache=prompt_cache(document, label),
        prompt_tokens_estimated=bool(document.get("prompt_tokens_estimated")),
    )


def prompt_cache(document: YamlMap, label: str) -> str | None:
    value = document.get("prompt_cache")
    if value is not None and value not in PROMPT_CACHE:
        raise FilmError(f"{document.where('prompt_cache')}: {label}: 'prompt_cache' must be "
                        f"{' or '.join(PROMPT_CACHE)}, not {value!r}")
    return value


def concurrency_levels(entry: YamlMap, what: str) -> tuple[ConcurrencyLevel, ...]:
    """A prompt's concurrency sweep: levels of increasing streams, the first a single stream."""
    levels = []
    for index, level in enumerate(entry.get("concurrency") or []):
        where = f"{what}, concurrency level {index + 1}"
        check_fields(level, where, CONCURRENCY_FIELDS, CONCURRENCY_OPTIONAL)
        for key, bounds in CONCURRENCY_BOUNDS.items():
            check_range(level, key, where, bounds)
        levels.append(ConcurrencyLevel(level["streams"], level["aggregate_tokens_per_second"],
                                       level.get("decode_tokens_per_second"), level.get("ttft_seconds")))
    streams = [level.streams for level in levels]
    if levels and (streams != sorted(set(streams)) or streams[0] != 1):
        raise FilmError(f"{entry.where('concurrency')}: {what}: concurrency levels must start at 1 stream and "
                        f"increase, got {streams}")
    return tuple(levels)
