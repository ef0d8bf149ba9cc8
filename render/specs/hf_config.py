"""A Hugging Face config.json (a file on disk; nothing is downloaded) -> a model entry.

    film model import path/to/config.json [--id ID --name NAME]   adds it to data/models.yaml
    make film MODEL=path/to/config.json                             uses it directly

The parameters are counted from the architecture (render/specs/architecture.py); a published
total, where one exists, belongs in the entry instead, and the catalog checks the two agree.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

from render.errors import FilmError
from render.specs.architecture import count_parameters
from render.specs.types import Model
from render.specs.yamlio import display_path

SUPPORTED = ("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", "deepseek_v3")
MOE_TYPES = ("mixtral", "qwen3_moe", "deepseek_v3")
REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
REQUIRED_BY_TYPE = {
    "mixtral": ("num_local_experts", "num_experts_per_tok"),
    "qwen3_moe": ("num_experts", "num_experts_per_tok", "moe_intermediate_size"),
    "deepseek_v3": ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "kv_lora_rank",
                    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"),
}
MODEL_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")


def load_config(path: Path) -> dict:
    path = Path(path)
    where = display_path(path)
    if path.is_dir():
        path = path / "config.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FilmError(f"{where}: no such file; give the path of a Hugging Face config.json on disk "
                        f"(nothing is downloaded)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise FilmError(f"{where}: cannot read it ({error})") from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise FilmError(f"{where}: line {error.lineno}, column {error.colno}: not valid JSON ({error.msg})") from None
    if not isinstance(config, dict):
        raise FilmError(f"{where}: expected a JSON object (a model's config.json), got {type(config).__name__}")
    return config


def model_from_config(config: dict, where: str, model_id: str | None = None, name: str | None = None) -> Model:
    """The config's architecture as a `Model`, its parameters counted."""
    model_type = config.get("model_type")
    if model_type not in SUPPORTED:
        raise FilmError(f"{where}: model_type {model_type!r} is not supported; supported: {', '.join(SUPPORTED)}")
    missing = [key for key in (*REQUIRED, *REQUIRED_BY_TYPE.get(model_type, ())) if config.get(key) is None]
    if missing:
        raise FilmError(f"{where}: a {model_type} config needs {', '.join(missing)}; "
                        f"{'it is' if len(missing) == 1 else 'they are'} missing")

    def whole(key: str, default: int | None = None, low: int = 1) -> int:
        value = config.get(key, default)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000_000:
            raise FilmError(f"{where}: {key} is {value!r}; it must be a whole number from {low} to 10,000,000")
        return value

    def flag(key: str, default: bool) -> bool:
        value = config.get(key, default)
        if not isinstance(value, bool):
            raise FilmError(f"{where}: {key} is {value!r}; it must be true or false")
        return value

    if flag("mlp_bias", False):
        raise FilmError(f"{where}: mlp_bias is true; MLP biases are not supported")
    layers, hidden, heads = whole("num_hidden_layers"), whole("hidden_size"), whole("num_attention_heads")
    fields: dict = dict(
        layers=layers, hidden_size=hidden, attention_heads=heads,
        kv_heads=whole("num_key_value_heads", heads), head_dim=whole("head_dim", hidden // heads),
        ffn_size=whole("intermediate_size"), vocab_size=whole("vocab_size"),
        tied_embeddings=flag("tie_word_embeddings", False),
        # Qwen2 always adds biases to q, k and v; the others only when attention_bias says so.
        qkv_bias=True if model_type == "qwen2" else flag("attention_bias", False),
        architecture=model_type, qk_norm=model_type in ("qwen3", "qwen3_moe"),
    )
    if model_type == "mixtral":
        fields.update(experts=whole("num_local_experts"), experts_per_token=whole("num_experts_per_tok"),
                      expert_ffn_size=fields["ffn_size"])
    elif model_type == "qwen3_moe":
        step = whole("decoder_sparse_step", 1)
        dense_only = config.get("mlp_only_layers") or []
        dense = sum(1 for layer in range(layers) if layer in dense_only or (layer + 1) % step)
        fields.update(experts=whole("num_experts"), experts_per_token=whole("num_experts_per_tok"),
                      expert_ffn_size=whole("moe_intermediate_size"), dense_layers=dense)
    elif model_type == "deepseek_v3":
        first, every = whole("first_k_dense_replace", 0, low=0), whole("moe_layer_freq", 1)
        dense = sum(1 for layer in range(layers) if not (layer >= first and layer % every == 0))
        rope = whole("qk_rope_head_dim")
        fields.update(
            experts=whole("n_routed_experts"), experts_per_token=whole("num_experts_per_tok"),
            expert_ffn_size=whole("moe_intermediate_size"), shared_experts=whole("n_shared_experts", 0, low=0),
            dense_layers=dense, router_bias=config.get("topk_method") == "noaux_tc",
            q_lora_rank=whole("q_lora_rank", 0, low=0), kv_lora_rank=whole("kv_lora_rank"),
            qk_rope_head_dim=rope, head_dim=whole("qk_nope_head_dim") + rope, v_head_dim=whole("v_head_dim"),
            kv_heads=heads,  # latent attention caches one shared latent, not per-head keys and values
        )
    if heads % fields["kv_heads"]:
        raise FilmError(f"{where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads "
                        f"({fields['kv_heads']})")
    if fields.get("experts") and not 1 <= fields["experts_per_token"] <= fields["experts"]:
        raise FilmError(f"{where}: num_experts_per_tok ({fields['experts_per_token']}) must be from 1 to the "
                        f"number of experts ({fields['experts']})")

    the_id = model_id or default_id(config, where)
    if not MODEL_ID.fullmatch(the_id):
        raise FilmError(f"model id {the_id!r}: use lower-case letters, digits, '.', '_' and '-' (e.g. qwen3-8b)")
    the_name = name or default_name(the_id)
    draft = Model(id=the_id, name=the_name, spoken_name=the_name, parameters=1, source=where, **fields)
    total = count_parameters(draft).total
    return Model(**{**draft.__dict__, "parameters": total,
                    "source": f"{where} (imported; {total:,} parameters counted from the architecture)"})


def default_id(config: dict, where: str) -> str:
    """'Qwen/Qwen3-8B' -> 'qwen3-8b'; else the config's folder name."""
    named = str(config.get("_name_or_path") or "").rstrip("/").split("/")[-1]
    if not named:
        parts = Path(where).parts
        named = parts[-2] if len(parts) >= 2 and parts[-1] == "config.json" else Path(where).stem
    return re.sub(r"[^a-z0-9._-]+", "-", named.lower()).strip("-.") or "imported-model"


def default_name(model_id: str) -> str:
    """'qwen3-30b-a3b' -> 'Qwen3 30B A3B'."""
    words = []
    for word in model_id.replace("_", "-").split("-"):
        if re.fullmatch(r"[0-9.]+[bmk]|a[0-9.]+b|[0-9]+x[0-9.]+b|v[0-9.]+", word):
            words.append(word.upper())
        else:
            words.append(word[:1].upper() + word[1:])
    return " ".join(words)


def model_from_file(path: Path, model_id: str | None = None, name: str | None = None) -> Model:
    return model_from_config(load_config(path), display_path(Path(path)), model_id, name)


PLAIN_SCALAR = re.compile(r"[A-Za-z][A-Za-z0-9 ._()/-]*[A-Za-z0-9)]")


def model_entry_yaml(model: Model) -> str:
    """The entry as data/models.yaml writes one (fields at their default left out)."""
    lines = []
    for entry_field in dataclasses.fields(Model):
        key, value = entry_field.name, getattr(model, entry_field.name)
        if entry_field.default is not dataclasses.MISSING and value == entry_field.default:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)) and not (isinstance(value, float) and not math.isfinite(value)):
            text = str(value)
        elif PLAIN_SCALAR.fullmatch(str(value)) and str(value).lower() not in ("true", "false", "null", "yes", "no"):
            text = str(value)
        else:
            text = json.dumps(str(value), ensure_ascii=False)  # a JSON string is a valid YAML scalar
        lines.append(f"    {key}: {text}" if lines else f"  - {key}: {text}")
    return "\n".join(lines) + "\n"
