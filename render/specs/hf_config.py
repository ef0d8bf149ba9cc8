"""A Hugging Face config.json (a file on disk; nothing is downloaded) -> a model entry.

    film model import path/to/config.json [--id ID --name NAME]   adds it to data/models.yaml
    make film MODEL=path/to/config.json                             uses it directly

The parameters are counted from the architecture (render/specs/architecture.py); a published
total, where one exists, belongs in the entry instead, and the catalog checks the two agree.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import hashlib
import json
import math
import re
from pathlib import Path

from render import formatting as fmt
from render.errors import FilmError
from render.specs.architecture import count_parameters
from render.specs.catalog import PARAMETER_TOLERANCE, load_entries
from render.specs.fields import bounds_of, out_of_range, to_yaml
from render.specs.roofline import active_parameters
from render.specs.types import Model
from render.files import display_path, read_text_capped, write_atomic
from render.specs.yamlio import MAX_INT_DIGITS
from render.text import NAME_LENGTH, control_characters, echo

SUPPORTED = ("llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", "deepseek_v3", "opt")
MOE_TYPES = ("mixtral", "qwen3_moe", "deepseek_v3")
REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
FFN_KEY = {"opt": "ffn_dim"}  # the MLP's width, where a config names it otherwise
REQUIRED_BY_TYPE = {
    "mixtral": ("num_local_experts", "num_experts_per_tok"),
    "qwen3_moe": ("num_experts", "num_experts_per_tok", "moe_intermediate_size"),
    "deepseek_v3": ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "kv_lora_rank",
                    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"),
}
MODEL_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,79}")


MAX_CONFIG_BYTES = 1 << 20  # a config.json is a few kilobytes; DeepSeek-V3's, among the largest, is 1.7 kB
MAX_CONFIG_DEPTH = 32       # configs nest three or four levels (rope_scaling, quantization_config)


def load_config(path: Path) -> dict:
    path = Path(path)
    where = display_path(path)
    if path.is_dir():
        path = path / "config.json"
        where = display_path(path)
    text = read_text_capped(path, MAX_CONFIG_BYTES, "a Hugging Face config.json", where,
                            "no such file; give the path of a Hugging Face config.json on disk (nothing is downloaded)",
                            "a config.json is UTF-8 JSON")
    depth = nesting_depth(text)
    if depth > MAX_CONFIG_DEPTH:
        raise FilmError(f"{where}: nested {depth:,} levels deep; a model's config.json nests a few (at most "
                        f"{MAX_CONFIG_DEPTH} are read)")
    try:
        config = json.loads(text, parse_int=whole_number)
    except TooManyDigits as error:
        found = re.search(r"\d{%d,}" % (MAX_INT_DIGITS + 1), text)
        line = text.count("\n", 0, found.start()) + 1 if found else 1
        raise FilmError(f"{where}: line {line}: a whole number of {error.digits:,} digits; no field of a model's "
                        f"config has more than a few dozen, so write the number the field means") from None
    except json.JSONDecodeError as error:
        raise FilmError(f"{where}: line {error.lineno}, column {error.colno}: not valid JSON ({error.msg})") from None
    if not isinstance(config, dict):
        raise FilmError(f"{where}: expected a JSON object (a model's config.json), got {type(config).__name__}")
    return config


class TooManyDigits(ValueError):
    def __init__(self, digits: int):
        super().__init__(digits)
        self.digits = digits


def whole_number(text: str) -> int:
    """A JSON integer, refused (with its length) beyond what Python reads from text, before Python's own ValueError."""
    if len(text) > MAX_INT_DIGITS:
        raise TooManyDigits(len(text.lstrip("-")))
    return int(text)


JSON_SYNTAX = re.compile(r'[\[\]{}"\\]')


def nesting_depth(text: str) -> int:
    """How deep a JSON text's arrays and objects nest, found in one pass before parsing (the parser
    recurses, and a text nested 100,000 deep would exhaust its stack)."""
    depth = deepest = 0
    in_string = escaped = False
    last = -2
    for match in JSON_SYNTAX.finditer(text):
        char, position = match.group(), match.start()
        if escaped and position == last + 1:  # the character after a backslash is taken literally
            escaped = False
            last = position
            continue
        escaped = False
        if in_string:
            if char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
        last = position
    return deepest


@dataclass(frozen=True)
class ConfigReader:
    """A config's values read with their checks, each refusal naming the file and the key."""

    config: dict
    where: str

    def whole(self, key: str, default: int | None = None, low: int = 1) -> int:
        value = self.config.get(key, default)
        if value is None:
            value = default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000_000:
            raise FilmError(f"{self.where}: {key} is {echo(value)}; it must be a whole number from {low} to "
                            f"10,000,000")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.config.get(key, default)
        if not isinstance(value, bool):
            raise FilmError(f"{self.where}: {key} is {echo(value)}; it must be true or false")
        return value

    def text(self, key: str) -> str | None:
        value = self.config.get(key)
        if value is not None and not isinstance(value, str):
            raise FilmError(f"{self.where}: {key} is {str(value)[:60]!r}; it must be text")
        return value


def model_from_config(config: dict, where: str, model_id: str | None = None, name: str | None = None) -> Model:
    """The config's architecture as a `Model`, its parameters counted."""
    model_type = config.get("model_type")
    if model_type not in SUPPORTED:
        raise FilmError(f"{where}: model_type {model_type!r} is not supported; supported: {', '.join(SUPPORTED)}")
    required = [FFN_KEY.get(model_type, key) if key == "intermediate_size" else key for key in REQUIRED]
    if model_type == "opt":
        required.append("max_position_embeddings")
    missing = [key for key in (*required, *REQUIRED_BY_TYPE.get(model_type, ())) if config.get(key) is None]
    if missing:
        article = "an" if model_type[0] in "aeiou" else "a"
        raise FilmError(f"{where}: {article} {model_type} config needs {', '.join(missing)}; "
                        f"{'it is' if len(missing) == 1 else 'they are'} missing")
    read = ConfigReader(config, where)
    read.text("_name_or_path")
    if read.flag("mlp_bias", False):
        raise FilmError(f"{where}: mlp_bias is true; MLP biases are not supported")
    fields = dense_fields(read, model_type)
    fields.update(expert_fields(read, model_type, fields["layers"], fields["attention_heads"], fields["ffn_size"]))
    heads = fields["attention_heads"]
    if heads % fields["kv_heads"]:
        raise FilmError(f"{where}: num_attention_heads ({heads}) must be a multiple of num_key_value_heads "
                        f"({fields['kv_heads']})")
    if fields.get("experts") and not 1 <= fields["experts_per_token"] <= fields["experts"]:
        raise FilmError(f"{where}: num_experts_per_tok ({fields['experts_per_token']}) must be from 1 to the "
                        f"number of experts ({fields['experts']})")
    check_model_bounds(fields, where, model_type)
    the_id = model_id or default_id(config, where)
    if not MODEL_ID.fullmatch(the_id):
        raise FilmError(f"model id {the_id!r}: use lower-case letters, digits, '.', '_' and '-' (e.g. qwen3-8b)")
    the_name = name or default_name(the_id)
    draft = Model(id=the_id, name=the_name, spoken_name=the_name, parameters=1, source=where, **fields)
    total = count_parameters(draft).total
    problem = out_of_range(total, bounds_of(Model)["parameters"])
    if problem:
        raise FilmError(f"{where}: its architecture has {total:,} parameters; {problem}: is it a real model's config?")
    return Model(**{**draft.__dict__, "parameters": total,
                    "source": f"{where} (imported; {total:,} parameters counted from the architecture)"})


def dense_fields(read: ConfigReader, model_type: str) -> dict:
    """What every supported architecture has: layers, widths, heads, vocabulary, biases and norms."""
    layers, hidden = read.whole("num_hidden_layers"), read.whole("hidden_size")
    heads = read.whole("num_attention_heads")
    if model_type == "opt":
        return opt_fields(read, layers, hidden, heads)
    return dict(
        layers=layers, hidden_size=hidden, attention_heads=heads,
        kv_heads=read.whole("num_key_value_heads", heads), head_dim=read.whole("head_dim", hidden // heads),
        ffn_size=read.whole("intermediate_size"), vocab_size=read.whole("vocab_size"),
        tied_embeddings=read.flag("tie_word_embeddings", False),
        # Qwen2 always adds biases to q, k and v; the others only when attention_bias says so.
        qkv_bias=True if model_type == "qwen2" else read.flag("attention_bias", False),
        architecture=model_type, qk_norm=model_type in ("qwen3", "qwen3_moe"),
    )


def opt_fields(read: ConfigReader, layers: int, hidden: int, heads: int) -> dict:
    """OPT's older shape (Meta's OPT-125M to -175B): multi-head attention, an MLP of two matrices (ffn_dim wide), a
    bias on every projection (enable_bias), LayerNorms, the output head tied to the embeddings, and a table of learned
    positions of max_position_embeddings + 2 rows (OPT's offset of two)."""
    projected = read.whole("word_embed_proj_dim", hidden)
    if projected != hidden:
        raise FilmError(f"{read.where}: word_embed_proj_dim ({projected}) differs from hidden_size ({hidden}); OPT's "
                        f"projected embeddings (OPT-350M's) are not supported")
    bias = read.flag("enable_bias", True)
    return dict(
        layers=layers, hidden_size=hidden, attention_heads=heads, kv_heads=heads, head_dim=hidden // heads,
        ffn_size=read.whole("ffn_dim"), vocab_size=read.whole("vocab_size"),
        tied_embeddings=read.flag("tie_word_embeddings", True), qkv_bias=bias, architecture="opt",
        mlp="plain", linear_bias=bias, norm="layer", learned_positions=read.whole("max_position_embeddings") + 2,
    )


def expert_fields(read: ConfigReader, model_type: str, layers: int, heads: int, ffn_size: int) -> dict:
    """A mixture of experts' experts, the layers left dense, and DeepSeek-V3's latent attention (none for a dense
    model)."""
    if model_type == "mixtral":
        return dict(experts=read.whole("num_local_experts"), experts_per_token=read.whole("num_experts_per_tok"),
                    expert_ffn_size=ffn_size)
    if model_type == "qwen3_moe":
        step = read.whole("decoder_sparse_step", 1)
        dense_only = read.config.get("mlp_only_layers") or []
        if not isinstance(dense_only, list) or not all(isinstance(layer, int) and not isinstance(layer, bool)
                                                       for layer in dense_only):
            raise FilmError(f"{read.where}: mlp_only_layers is {str(dense_only)[:60]!r}; it must be a list of layer "
                            f"numbers, e.g. [0, 1]")
        dense = sum(1 for layer in range(layers) if layer in dense_only or (layer + 1) % step)
        return dict(experts=read.whole("num_experts"), experts_per_token=read.whole("num_experts_per_tok"),
                    expert_ffn_size=read.whole("moe_intermediate_size"), dense_layers=dense)
    if model_type == "deepseek_v3":
        first, every = read.whole("first_k_dense_replace", 0, low=0), read.whole("moe_layer_freq", 1)
        dense = sum(1 for layer in range(layers) if not (layer >= first and layer % every == 0))
        rope = read.whole("qk_rope_head_dim")
        return dict(
            experts=read.whole("n_routed_experts"), experts_per_token=read.whole("num_experts_per_tok"),
            expert_ffn_size=read.whole("moe_intermediate_size"),
            shared_experts=read.whole("n_shared_experts", 0, low=0),
            dense_layers=dense, router_bias=read.text("topk_method") == "noaux_tc",
            q_lora_rank=read.whole("q_lora_rank", 0, low=0), kv_lora_rank=read.whole("kv_lora_rank"),
            qk_rope_head_dim=rope, head_dim=read.whole("qk_nope_head_dim") + rope,
            v_head_dim=read.whole("v_head_dim"),
            kv_heads=heads,  # latent attention caches one shared latent, not per-head keys and values
        )
    return {}


# The config's key for each Model field, for messages that name what the user can find in the file.
CONFIG_KEYS = {"layers": "num_hidden_layers", "attention_heads": "num_attention_heads",
               "kv_heads": "num_key_value_heads", "ffn_size": "intermediate_size",
               "expert_ffn_size": "moe_intermediate_size", "experts_per_token": "num_experts_per_tok",
               "shared_experts": "n_shared_experts", "head_dim": "head_dim (or qk_nope_head_dim + qk_rope_head_dim)"}
EXPERT_KEYS = {"mixtral": "num_local_experts", "qwen3_moe": "num_experts", "deepseek_v3": "n_routed_experts"}


def check_model_bounds(fields: dict, where: str, model_type: str) -> None:
    """The catalog's ranges (the Model's fields, render/specs/types.py), applied to a config exactly as to a
    catalog entry."""
    for name, bounds in bounds_of(Model).items():
        if name not in fields:
            continue
        problem = out_of_range(fields[name], bounds)
        if problem:
            key = EXPERT_KEYS[model_type] if name == "experts" else CONFIG_KEYS.get(name, name)
            key = FFN_KEY.get(model_type, key) if name == "ffn_size" else key
            raise FilmError(f"{where}: {key} is {echo(fields[name])}; {problem}")
    if fields.get("dense_layers", 0) >= fields["layers"]:
        raise FilmError(f"{where}: every one of its {fields['layers']} layers is dense (mlp_only_layers, "
                        f"decoder_sparse_step or first_k_dense_replace); a mixture of experts needs an expert layer")
    if fields.get("kv_lora_rank") and not 0 < fields["qk_rope_head_dim"] < fields["head_dim"]:
        raise FilmError(f"{where}: qk_rope_head_dim must be above 0 and below qk_nope_head_dim + qk_rope_head_dim")


def default_id(config: dict, where: str) -> str:
    """'Qwen/Qwen3-8B' -> 'qwen3-8b'; else the config's folder name."""
    named = str(config.get("_name_or_path") or "").rstrip("/").split("/")[-1]
    if not named:
        parts = Path(where).parts
        named = parts[-2] if len(parts) >= 2 and parts[-1] == "config.json" else Path(where).stem
    return re.sub(r"[^a-z0-9._-]+", "-", named.lower()).strip("-.") or "imported-model"


ACRONYMS = ("opt",)  # model families written in capitals


def default_name(model_id: str) -> str:
    """'qwen3-30b-a3b' -> 'Qwen3 30B A3B'; 'opt-13b' -> 'OPT 13B' (an acronym's family)."""
    words = []
    for word in model_id.replace("_", "-").split("-"):
        if re.fullmatch(r"[0-9.]+[bmk]|a[0-9.]+b|[0-9]+x[0-9.]+b|v[0-9.]+", word) or word in ACRONYMS:
            words.append(word.upper())
        else:
            words.append(word[:1].upper() + word[1:])
    return " ".join(words)


def model_from_file(path: Path, model_id: str | None = None, name: str | None = None) -> Model:
    if name is not None:
        check_name(name)
    return model_from_config(load_config(path), display_path(Path(path)), model_id, name)


def check_name(name: str) -> None:
    """--name: one line of plain text, short enough for a title and a file name."""
    found = control_characters(name)
    if found or not name.strip() or len(name) > NAME_LENGTH:
        raise FilmError(f"--name: a name is one line of plain text, 1 to {NAME_LENGTH} characters"
                        + (f"; this one holds control characters ({', '.join(found)})" if found else
                           f"; this one is {len(name):,} characters long" if name.strip() else ""))


def parameter_summary(model: Model) -> str:
    """'8.03 billion parameters', and for a mixture of experts those active per token beside them."""
    active = active_parameters(model)
    total = f"{fmt.large(model.parameters)} parameters"
    return f"{total}, {fmt.large(active)} active per token" if active != model.parameters else total


FAMILY_NAMES = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2", "qwen3": "Qwen3", "mixtral": "Mixtral",
                "qwen3_moe": "Qwen3 MoE", "deepseek_v3": "DeepSeek-V3"}


def own_identity(model: Model, catalog_models: dict[str, Model], where: str) -> tuple[Model, str | None]:
    """A model read from a config path, as the film knows it: the catalog's entry when it is that model
    (the catalog's id and the same shape), else an id of its own that its contents decide, so that it
    never takes a catalog model's id, name or build folder, and two different configs never share one.
    Returns the model and, when its id or name was not the config's, why (for a message)."""
    same = catalog_models.get(model.id)
    if same is not None and same.shape == model.shape and \
            abs(same.parameters - model.parameters) <= PARAMETER_TOLERANCE * same.parameters:
        return same, f"{where} is the catalog's {same.id} (the same architecture); using its entry"
    digest = hashlib.sha256(repr((model.shape, model.parameters)).encode()).hexdigest()[:8]
    taken = model.id in catalog_models or model.name.lower() in {m.name.lower() for m in catalog_models.values()}
    if not taken:
        return dataclasses.replace(model, id=f"{model.id[:71]}-{digest}"), None
    # It claims a catalog model's name with another architecture: it is named for what it is instead.
    size = f"{model.parameters / 1e9:.3g}B"
    name = f"{FAMILY_NAMES[model.architecture]} {size}"
    model_id = re.sub(r"[^a-z0-9._-]+", "-", f"{model.architecture}-{size}".lower()) + f"-{digest}"
    claimed = catalog_models.get(model.id)
    differs = (f"{model.parameters:,} parameters against its {claimed.parameters:,}" if claimed
               else "another architecture")
    why = (f"{where} is named {model.id!r} like the catalog's {model.name}, but it is not that "
           f"model ({differs}); it is {model_id!r} ({name}) here")
    return dataclasses.replace(model, id=model_id, name=name, spoken_name=name), why


PLAIN_SCALAR = re.compile(r"[A-Za-z][A-Za-z0-9 ._()/-]*[A-Za-z0-9)]")


def model_entry_yaml(model: Model) -> str:
    """The entry as data/models.yaml writes one: the keys schema.to_yaml writes (fields at their default left
    out), each value a plain YAML scalar where it can be one."""
    lines = []
    for key, value in to_yaml(model).items():
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


def add_model(models_path: Path, model: Model) -> None:
    """The model's entry appended to the catalog's models file, atomically, once the very text has loaded as the
    catalog loads it; a model of the same id is refused."""
    known = {entry.id for entry in load_entries(models_path, "models", "model", Model)}
    if model.id in known:
        raise FilmError(f"{display_path(models_path)} already has a model {model.id!r}; choose another with --id, "
                        f"or edit that entry")
    text = models_path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + model_entry_yaml(model)
    check = models_path.with_name(f".{models_path.name}.check")
    try:
        write_atomic(check, text)
        load_entries(check, "models", "model", Model)  # what is written must load
    finally:
        check.unlink(missing_ok=True)
    write_atomic(models_path, text)
