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
from render.specs.types import DataType, Gpu, Model
from render.specs.yamlio import YamlList, YamlMap, check_fields, display_path, load_yaml

NUMBER = (int, float)
DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
MAYBE_NUMBER = (int, float, type(None))

GPU_FIELDS = {
    "id": str, "name": str, "short_name": str, "spoken_name": str, "article": str,
    "bf16_flops": NUMBER, "fp8_flops": MAYBE_NUMBER, "bandwidth": NUMBER,
    "memory_gib": NUMBER, "sm_count": int, "source": str,
}
MODEL_FIELDS = {
    "id": str, "name": str, "spoken_name": str, "layers": int, "hidden_size": int,
    "attention_heads": int, "kv_heads": int, "head_dim": int, "ffn_size": int,
    "vocab_size": int, "tied_embeddings": bool, "qkv_bias": bool, "parameters": int, "source": str,
}
DTYPE_FIELDS = {
    "id": str, "name": str, "spoken_name": str, "bytes_per_weight": NUMBER, "arithmetic": str,
    "weight_only": bool, "kv_dtype": str, "kv_bytes": NUMBER, "source": str,
}
ARITHMETIC_FORMATS = ("bf16", "fp8")

MEASURED_FIELDS = {
    "id": str, "route": str, "provider": str, "precision": str, "model": str,
    "compared_gpu": str, "compared_gpu_is_assumption": bool, "source": str, "prompts": list,
}
MEASURED_OPTIONAL = {"measured_on": (str, datetime.date, type(None)), "other_providers": list, "label": str,
                     # written by `film measure`
                     "endpoint_host": str, "model_reported": str, "runs": int, "tool_version": str,
                     "definitions": str}
MEASURED_PROMPT_FIELDS = {
    "prompt_tokens": int, "ttft_seconds": MAYBE_NUMBER, "decode_tokens_per_second": MAYBE_NUMBER,
}
MEASURED_PROMPT_OPTIONAL = {"ttft_approximate": bool,
                            # written by `film measure`
                            "ttft_spread_seconds": list, "decode_spread_tokens_per_second": (list, type(None)),
                            "inter_token_latency_seconds": (dict, type(None)), "output_tokens": int, "runs": int,
                            "token_counts": str}
OTHER_PROVIDER_FIELDS = {
    "provider": (str, type(None)), "precision": str, "decode_tokens_per_second": NUMBER, "source": str,
}


@dataclass(frozen=True)
class MeasuredPrompt:
    prompt_tokens: int
    ttft_seconds: float | None
    decode_tokens_per_second: float | None
    ttft_approximate: bool = False


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


def load_catalog(data_dir: Path = DATA_DIR) -> Catalog:
    data_dir = Path(data_dir)
    gpus = {gpu.id: gpu for gpu in load_entries(data_dir / "gpus.yaml", "gpus", "GPU", GPU_FIELDS, Gpu)}
    models = {m.id: m for m in load_entries(data_dir / "models.yaml", "models", "model", MODEL_FIELDS, Model)}
    dtypes = {d.id: d for d in load_entries(data_dir / "dtypes.yaml", "dtypes", "data type", DTYPE_FIELDS, DataType)}
    return Catalog(gpus, models, dtypes, data_dir / "measured", data_dir)


def load_entries(path: Path, top_key: str, kind: str, fields: dict, make: type[T]) -> list[T]:
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
        check_fields(entry, label, fields)
        if entry["id"] in seen:
            raise FilmError(f"{entry.where('id')}: {label} is defined twice (first at line {seen[entry['id']]})")
        seen[entry["id"]] = entry.key_lines["id"]
        check_entry(entry, kind, label)
        result.append(make(**{key: entry[key] for key in fields}))
    return result


# What a real entry can hold, in the data's own units: a value outside is a typo, not a chip.
BOUNDS = {
    "GPU": {
        "bf16_flops": (1e12, 1e17, "FLOP/s (1 TFLOP/s to 100 PFLOP/s, dense)"),
        "fp8_flops": (1e12, 1e17, "FLOP/s (1 TFLOP/s to 100 PFLOP/s, dense)"),
        "bandwidth": (1e10, 1e14, "bytes/s (10 GB/s to 100 TB/s)"),
        "memory_gib": (1, 100_000, "GiB"),
        "sm_count": (1, 10_000, "streaming multiprocessors"),
    },
    "model": {
        "layers": (1, 1_000, "layers"), "hidden_size": (64, 1_000_000, "values"),
        "attention_heads": (1, 10_000, "heads"), "kv_heads": (1, 10_000, "heads"),
        "head_dim": (8, 4_096, "values"), "ffn_size": (64, 10_000_000, "values"),
        "vocab_size": (100, 10_000_000, "tokens"), "parameters": (1e6, 1e14, "parameters"),
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


def check_range(mapping: YamlMap, key: str, label: str, bounds: tuple[float, float, str]) -> None:
    """A number must be finite and within its physical bounds; the message says which and why."""
    low, high, unit = bounds
    value = mapping[key]
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if not math.isfinite(value) or not low <= value <= high:
        raise FilmError(f"{mapping.where(key)}: {label}: {key!r} is {value!r}; it must be between "
                        f"{bound_text(low)} and {bound_text(high)} {unit}")


def bound_text(value: float) -> str:
    """1e+10 for the very large, 10,000,000 for counts, 0.0001 for the small."""
    return f"{value:,.0f}" if 1 <= value < 1e9 and value == int(value) else f"{value:g}"


def check_entry(entry: YamlMap, kind: str, label: str) -> None:
    """Value checks beyond types: what would make the roofline meaningless."""
    for key, bounds in BOUNDS[kind].items():
        check_range(entry, key, label, bounds)
    if kind == "GPU" and entry["article"] not in ("a", "an"):
        raise FilmError(f"{entry.where('article')}: {label}: 'article' must be 'a' or 'an', not {entry['article']!r}")
    if kind == "data type" and entry["arithmetic"] not in ARITHMETIC_FORMATS:
        raise FilmError(
            f"{entry.where('arithmetic')}: {label}: 'arithmetic' must be one of "
            f"{', '.join(ARITHMETIC_FORMATS)}, not {entry['arithmetic']!r}"
        )
    if kind == "model" and entry["attention_heads"] % entry["kv_heads"]:
        raise FilmError(f"{entry.where('kv_heads')}: {label}: attention_heads must be a multiple of kv_heads")


def load_measured(path: Path) -> MeasuredDataset:
    document = load_yaml(path)
    label = f"measured dataset {path.stem!r}"
    check_fields(document, label, MEASURED_FIELDS, MEASURED_OPTIONAL)
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
                                         if key in entry}))
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
    )
