"""The resolve step: data/ + storyboard -> the plan, every number and every narration line.

Everything downstream (narration, scenes, the film) reads the plan and nothing else, so a
film is a pure function of (storyboard, data, GPU, model, data type, measured dataset).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from render import roofline as rl
from render.catalog import DATA_DIR, PROJECT_ROOT, Catalog, MeasuredDataset, MeasuredPrompt, load_catalog
from render.errors import FilmError
from render.formatting import with_article
from render.specs import DataType, Gpu, Model
from render.storyboard import STORYBOARD_PATH, Storyboard, load_storyboard
from render.pronunciation import load_pronunciations
from render.speech import parse_voice
from render.templating import extract_cues, fill

# The beats other stages rely on, in film order.
BEAT_IDS = ("two-waits", "prefill", "decode", "roofline", "batching", "wasted-money",
            "measured", "cache-rides-along", "two-budgets")

# Ratios within this of 1 are "the same" in the comparison framing.
SAME_RATIO = 0.05


@dataclass(frozen=True)
class PlannedBeat:
    id: str
    title: str
    start: float
    end: float
    scene: str
    narration: str
    captions: dict[str, str]
    cues: dict[str, int]  # cue name -> character offset in the narration
    location: str         # file:line of the beat's narration in the storyboard

    @property
    def duration(self) -> float:
        return self.end - self.start

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "start": self.start, "end": self.end,
                "duration": self.duration, "scene": self.scene, "narration": self.narration,
                "captions": self.captions, "cues": self.cues, "location": self.location}


@dataclass(frozen=True)
class Plan:
    title: str
    duration: float
    source: str
    gpu: Gpu
    model: Model
    dtype: DataType
    arithmetic: str
    compare_gpu: Gpu
    comparison: dict
    roofline_pills: tuple[dict, ...]
    measured: MeasuredDataset
    measured_model: Model
    measured_gpu: Gpu
    measured_dtype: DataType
    parameters: dict
    narration: dict
    pronunciations: tuple[tuple[str, str], ...]
    numbers: dict[str, float | None]
    beats: tuple[PlannedBeat, ...]
    notes: tuple[str, ...]
    is_default_choice: bool  # the storyboard's own GPU, model and data type

    @property
    def choice(self) -> tuple[str, str, str]:
        return self.gpu.id, self.model.id, self.dtype.id

    @property
    def choice_name(self) -> str:
        """'a100-sxm-80gb-llama-3.1-70b-int8': the folder a regenerated film goes to."""
        return "-".join(self.choice)

    def beat(self, beat_id: str) -> PlannedBeat:
        for beat in self.beats:
            if beat.id == beat_id:
                return beat
        raise KeyError(beat_id)

    def to_dict(self) -> dict:
        measured = self.measured
        return {
            "title": self.title,
            "duration": self.duration,
            "source": self.source,
            "gpu": self.gpu.to_dict(),
            "model": self.model.to_dict(),
            "dtype": {**self.dtype.to_dict(), "arithmetic_on_gpu": self.arithmetic},
            "compare_gpu": self.compare_gpu.to_dict(),
            "comparison": {key: (value.id if isinstance(value, Gpu) else value)
                           for key, value in self.comparison.items()},
            "roofline_pills": list(self.roofline_pills),
            "measured": {
                "id": measured.id, "path": measured.path, "route": measured.route,
                "provider": measured.provider, "precision": measured.precision,
                "model": measured.model, "model_name": self.measured_model.name,
                "compared_gpu": measured.compared_gpu, "compared_gpu_name": self.measured_gpu.short_name,
                "precision_name": self.measured_dtype.name,
                "compared_gpu_is_assumption": measured.compared_gpu_is_assumption,
                "measured_on": measured.measured_on, "label": measured.label, "source": measured.source,
                "prompts": [vars(prompt) for prompt in measured.prompts],
                "other_providers": [vars(other) for other in measured.other_providers],
            },
            "parameters": self.parameters,
            "narration": self.narration,
            "pronunciations": [list(pair) for pair in self.pronunciations],
            "numbers": self.numbers,
            "beats": [beat.to_dict() for beat in self.beats],
            "notes": list(self.notes),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


def resolve_plan(
    gpu: str | None = None,
    model: str | None = None,
    dtype: str | None = None,
    compare_gpu: str | None = None,
    measured: str | None = None,
    voice: str | None = None,
    recordings: Path | None = None,
    storyboard_path: Path = STORYBOARD_PATH,
    data_dir: Path = DATA_DIR,
) -> Plan:
    """Resolve the storyboard for one choice of GPU, model and data type (defaults: the storyboard's)."""
    storyboard = load_storyboard(storyboard_path)
    catalog = load_catalog(data_dir)
    defaults = storyboard.defaults
    params = storyboard.parameters

    the_gpu = catalog.gpu(gpu or defaults["gpu"])
    the_model = catalog.model(model or defaults["model"])
    the_dtype = catalog.dtype(dtype or defaults["dtype"])
    the_compare = choose_compare_gpu(catalog, storyboard, the_gpu, compare_gpu)
    pills = [catalog.gpu(pill) for pill in params["roofline_pills"] if pill != the_gpu.id]
    dataset = catalog.measured(measured or defaults["measured"])
    measured_model, measured_gpu = catalog.model(dataset.model), catalog.gpu(dataset.compared_gpu)
    measured_dtype = catalog.dtype(dataset.precision)

    kv_tokens = max(params["batch_size"] * params["batch_context_tokens"], params["long_prompt_tokens"],
                    params["prompt_tokens"])
    check_fits(catalog, the_gpu, the_model, the_dtype, kv_tokens, purpose_of(params, kv_tokens))
    check_fits(catalog, measured_gpu, measured_model, measured_dtype, dataset.prompts[-1].prompt_tokens,
               f"the measured dataset's {dataset.prompts[-1].prompt_tokens:,}-token prompt ({dataset.path})")

    numbers = film_numbers(the_gpu, the_model, the_dtype, the_compare, catalog, params)
    numbers.update(measured_numbers(dataset, measured_gpu, measured_model, measured_dtype))
    comparison = comparison_framing(the_gpu, the_compare, numbers)

    notes = []
    arithmetic = rl.arithmetic_format(the_gpu, the_dtype)
    if arithmetic != the_dtype.arithmetic:
        notes.append(f"{the_gpu.name} has no FP8 tensor cores: {the_dtype.name} weights are "
                     f"multiplied in BF16 (weight-only), at its BF16 peak.")
    if dataset.compared_gpu_is_assumption:
        notes.append(f"The measured timings ({dataset.id}) are compared with {with_article(measured_gpu)}: "
                     f"an assumption, since the provider does not publish its hardware.")

    context = template_context(numbers, the_gpu, the_model, the_dtype, the_compare, comparison,
                               dataset, measured_model, measured_gpu, measured_dtype)
    beats = []
    for beat in storyboard.beats:
        where, what = beat.where["narration"], f"beat {beat.id!r} narration"
        narration, cues = extract_cues(fill(beat.narration, context, where, what), where, what)
        captions = {name: fill(template, context, beat.where[name], f"beat {beat.id!r} caption {name!r}")
                    for name, template in beat.captions.items()}
        beats.append(PlannedBeat(beat.id, beat.title, beat.start, beat.end, beat.scene, narration, captions,
                                 cues, where))

    named = [(g.short_name, g.spoken_name) for g in catalog.gpus.values()]
    named += [(m.name, m.spoken_name) for m in catalog.models.values()]
    named += [(d.name, d.spoken_name) for d in catalog.dtypes.values()]
    pronunciations = load_pronunciations(data_dir / "pronunciations.yaml", named)
    narration = resolve_narration(storyboard, voice, recordings)
    return Plan(
        title=storyboard.title, duration=storyboard.end, source=storyboard.source,
        gpu=the_gpu, model=the_model, dtype=the_dtype, arithmetic=arithmetic,
        compare_gpu=the_compare, comparison=comparison,
        roofline_pills=tuple({"gpu": pill.id, "name": pill.short_name,
                              "peak_flops": rl.peak_flops(pill, the_dtype), "memory_bandwidth": pill.bandwidth,
                              "ridge_ops_per_byte": rl.ridge_ops_per_byte(pill, the_dtype)} for pill in pills),
        measured=dataset, measured_model=measured_model, measured_gpu=measured_gpu, measured_dtype=measured_dtype,
        parameters=dict(params), narration=narration, pronunciations=pronunciations,
        numbers=numbers, beats=tuple(beats), notes=tuple(notes),
        is_default_choice=(the_gpu.id, the_model.id, the_dtype.id) == (defaults["gpu"], defaults["model"], defaults["dtype"]),
    )


def resolve_narration(storyboard: Storyboard, voice: str | None, recordings: Path | None) -> dict:
    """The storyboard's narration settings, with the command line's voice and recordings folder."""
    settings = dict(storyboard.narration)
    settings["voice"] = voice or settings["voice"]
    parse_voice(settings["voice"])  # an unknown engine fails here, before anything is synthesised
    folder = Path(recordings) if recordings is not None else Path(settings["recordings"])
    settings["recordings"] = str(folder if folder.is_absolute() else PROJECT_ROOT / folder)
    return settings


def choose_compare_gpu(catalog: Catalog, storyboard: Storyboard, gpu: Gpu, explicit: str | None) -> Gpu:
    """The wasted-money beat's other GPU: the storyboard's choice, or its fallback when that is the film's own."""
    if explicit:
        other = catalog.gpu(explicit)
        if other.id == gpu.id:
            raise FilmError(
                f"the comparison GPU is the film's own GPU ({gpu.id}); a comparison needs two different "
                f"GPUs: choose another with --compare-gpu, or leave it out to use the storyboard's "
                f"({storyboard.parameters['compare_gpu']})"
            )
        return other
    choice = storyboard.parameters["compare_gpu"]
    if choice == gpu.id:
        choice = storyboard.parameters["compare_gpu_when_same"]
        if choice == gpu.id:
            raise FilmError(
                f"{storyboard.where('compare_gpu_when_same')}: parameters: compare_gpu and "
                f"compare_gpu_when_same are both {gpu.id}, the film's own GPU; make compare_gpu_when_same "
                f"a different GPU"
            )
    return catalog.gpu(choice)


def purpose_of(params: dict, kv_tokens: int) -> str:
    if kv_tokens == params["batch_size"] * params["batch_context_tokens"]:
        return f"{params['batch_size']} sequences of {params['batch_context_tokens']:,} cached tokens"
    if kv_tokens == params["long_prompt_tokens"]:
        return f"the {kv_tokens:,}-token long prompt"
    return f"the {kv_tokens:,}-token prompt"


def check_fits(catalog: Catalog, gpu: Gpu, model: Model, dtype: DataType, kv_tokens: int, purpose: str) -> None:
    """The roofline's fit check, plus the choices that would fit, so the user knows the fix."""
    try:
        rl.check_fits(gpu, model, dtype, kv_tokens, purpose)
    except FilmError as error:
        gpus = [g.id for g in catalog.gpus.values()
                if rl.memory_needed(model, dtype, kv_tokens) <= g.memory_bytes]
        dtypes = [d.id for d in catalog.dtypes.values()
                  if rl.memory_needed(model, d, kv_tokens) <= gpu.memory_bytes]
        fixes = []
        if dtypes:
            fixes.append(f"a smaller data type (DTYPE={' or '.join(dtypes)})")
        if gpus:
            fixes.append(f"a GPU with more memory (GPU={' or '.join(gpus)})")
        fixes.append("a smaller model")
        raise FilmError(f"{error}\nTry {', or '.join(fixes)}.") from None


def film_numbers(gpu: Gpu, model: Model, dtype: DataType, compare_gpu: Gpu, catalog: Catalog, params: dict) -> dict:
    """Every number of beats 1-6 and 9, for the film's own GPU, model and data type."""
    prompt, long_prompt = params["prompt_tokens"], params["long_prompt_tokens"]
    batch, context = params["batch_size"], params["batch_context_tokens"]
    ridge = rl.ridge_ops_per_byte(gpu, dtype)
    peak = rl.peak_flops(gpu, dtype)

    prefill = rl.time_on(gpu, dtype, rl.prefill(model, dtype, prompt))
    decode = rl.time_on(gpu, dtype, rl.decode_step(model, dtype))
    batched = rl.time_on(gpu, dtype, rl.decode_step(model, dtype, batch, context))
    long = rl.time_on(gpu, dtype, rl.prefill(model, dtype, long_prompt))
    long_attention_fraction = rl.prefill_attention_fraction(model, long_prompt)
    ridge_value_batch = max(1, round(ridge))
    limit = rl.decode_intensity_limit(model, dtype, context)
    compared = rl.compare(gpu, compare_gpu, model, dtype, prompt)

    numbers = {
        "peak_flops": peak,
        "memory_bandwidth": gpu.bandwidth,
        "memory_bytes": gpu.memory_bytes,
        "sm_count": gpu.sm_count,
        "ridge_ops_per_byte": ridge,
        "parameters": model.parameters,
        "weight_bytes": rl.weight_bytes(model, dtype),
        "kv_bytes_per_token": rl.kv_bytes_per_token(model, dtype),

        "prefill_tokens": prompt,
        "prefill_ops": prefill.step.operations,
        "prefill_linear_ops": rl.prefill_linear_operations(model, prompt),
        "prefill_attention_ops": rl.prefill_attention_operations(model, prompt),
        "prefill_bytes": prefill.step.bytes,
        "prefill_seconds": prefill.seconds,
        "prefill_compute_seconds": prefill.compute_seconds,
        "prefill_memory_seconds": prefill.memory_seconds,
        "prefill_attention_fraction": rl.prefill_attention_fraction(model, prompt),
        "prefill_ops_per_byte": prefill.step.ops_per_byte,
        "prefill_compute_utilisation": prefill.compute_seconds / prefill.seconds,

        "decode_ops_per_token": decode.step.operations,
        "decode_bytes_per_token": decode.step.bytes,
        "decode_step_seconds": decode.seconds,
        "decode_compute_seconds": decode.compute_seconds,
        "decode_tokens_per_second": 1 / decode.seconds,
        "decode_ops_per_byte": decode.step.ops_per_byte,
        "decode_compute_utilisation": decode.compute_seconds / decode.seconds,

        "batch_size": batch,
        "batch_context_tokens": context,
        "batch_kv_bytes": batch * rl.kv_cache_bytes(model, dtype, context),
        "batch_kv_ratio": batch * rl.kv_cache_bytes(model, dtype, context) / rl.weight_bytes(model, dtype),
        "batch_step_bytes": batched.step.bytes,
        "batch_step_seconds": batched.seconds,
        "batch_tokens_per_second": batch / batched.seconds,
        "batch_ops_per_byte": batched.step.ops_per_byte,
        "batch_compute_utilisation": batched.compute_seconds / batched.seconds,
        "batch_size_at_ridge": rl.batch_size_at_ridge(gpu, model, dtype, context),
        "decode_ops_per_byte_limit": None if math.isinf(limit) else limit,
        "ridge_value_batch_size": ridge_value_batch,
        "ridge_value_batch_ops_per_byte": rl.decode_step(model, dtype, ridge_value_batch, context).ops_per_byte,

        "long_prompt_tokens": long_prompt,
        "long_prompt_ops": long.step.operations,
        "long_prompt_seconds": long.seconds,
        "long_prompt_attention_fraction": long_attention_fraction,
        "long_prompt_attention_seconds": long.seconds * long_attention_fraction,
        "long_prompt_linear_seconds": long.seconds * (1 - long_attention_fraction),
        "long_prompt_kv_bytes": rl.kv_cache_bytes(model, dtype, long_prompt),

        "compare_peak_flops": rl.peak_flops(compare_gpu, dtype),
        "compare_memory_bandwidth": compare_gpu.bandwidth,
        "compare_ridge_ops_per_byte": rl.ridge_ops_per_byte(compare_gpu, dtype),
        "compare_flops_ratio": compared.flops_ratio,
        "compare_bandwidth_ratio": compared.bandwidth_ratio,
        "compare_decode_speedup": compared.decode_speedup,
        "compare_prefill_speedup": compared.prefill_speedup,
        "compare_decode_tokens_per_second": rl.decode_tokens_per_second(compare_gpu, model, dtype),
        "compare_prefill_seconds": rl.time_on(compare_gpu, dtype, rl.prefill(model, dtype, prompt)).seconds,
        "compare_long_prompt_seconds": rl.time_on(compare_gpu, dtype, rl.prefill(model, dtype, long_prompt)).seconds,
    }
    # The budget card's quantisation lever: batch-1 decode with weight-only INT8 and INT4.
    for lever in ("int8", "int4"):
        quantised = catalog.dtype(lever)
        numbers[f"{lever}_weight_bytes"] = rl.weight_bytes(model, quantised)
        numbers[f"{lever}_decode_tokens_per_second"] = rl.decode_tokens_per_second(gpu, model, quantised)
        numbers[f"{lever}_decode_speedup"] = numbers[f"{lever}_decode_tokens_per_second"] / numbers["decode_tokens_per_second"]
    return numbers


def measured_roles(dataset: MeasuredDataset) -> tuple[MeasuredPrompt, MeasuredPrompt | None, MeasuredPrompt]:
    """The shortest, the middle (when there are three or more and it has a TTFT) and the longest prompt."""
    prompts = dataset.prompts
    middle = prompts[len(prompts) // 2] if len(prompts) > 2 else None
    return prompts[0], middle if middle is not None and middle.ttft_seconds is not None else None, prompts[-1]


def measured_numbers(dataset: MeasuredDataset, gpu: Gpu, model: Model, dtype: DataType) -> dict:
    """The measured beats' numbers: the dataset's own figures beside its model's roofline on its GPU."""
    short, medium, long = measured_roles(dataset)
    for role, prompt in (("shortest", short), ("longest", long)):
        missing = [name for name in ("ttft_seconds", "decode_tokens_per_second") if getattr(prompt, name) is None]
        if missing:
            raise FilmError(
                f"{dataset.path}: the {role} prompt ({prompt.prompt_tokens:,} tokens) has no "
                f"{' or '.join(missing)}; the measured beats need the TTFT and decode rate of the "
                f"shortest and the longest prompt"
            )

    ceiling = rl.decode_tokens_per_second(gpu, model, dtype)
    weights = rl.weight_bytes(model, dtype)
    long_kv = rl.kv_cache_bytes(model, dtype, long.prompt_tokens)

    def ideal_prefill(prompt: MeasuredPrompt) -> float:
        return rl.time_on(gpu, dtype, rl.prefill(model, dtype, prompt.prompt_tokens)).seconds

    network_prompt = medium or short  # the longest prompt whose wait is still mostly not prefill
    numbers = {
        "measured_weight_bytes": weights,
        "measured_kv_bytes_per_token": rl.kv_bytes_per_token(model, dtype),
        "measured_ceiling_tokens_per_second": ceiling,
        "measured_ridge_ops_per_byte": rl.ridge_ops_per_byte(gpu, dtype),
        "measured_short_decode_tokens_per_second": short.decode_tokens_per_second,
        "measured_long_decode_tokens_per_second": long.decode_tokens_per_second,
        "measured_ceiling_fraction": short.decode_tokens_per_second / ceiling,
        "measured_long_kv_bytes": long_kv,
        "measured_long_kv_ratio": long_kv / weights,
        "measured_slowdown": 1 - long.decode_tokens_per_second / short.decode_tokens_per_second,
        "measured_network_fraction": 1 - ideal_prefill(network_prompt) / network_prompt.ttft_seconds,
        "measured_other_decode_tokens_per_second":
            dataset.other_providers[0].decode_tokens_per_second if dataset.other_providers else None,
    }
    for role, prompt in (("short", short), ("medium", medium), ("long", long)):
        numbers[f"measured_{role}_prompt_tokens"] = prompt.prompt_tokens if prompt else None
        numbers[f"measured_{role}_ttft_seconds"] = prompt.ttft_seconds if prompt else None
        numbers[f"measured_{role}_ideal_prefill_seconds"] = ideal_prefill(prompt) if prompt else None
    return numbers


def comparison_framing(gpu: Gpu, other: Gpu, numbers: dict) -> dict:
    """Who the wasted-money sentence is about: the GPU with more arithmetic (on a tie, more bandwidth).

    Ratios are from that GPU's side, so the sentence always reads "X has N times Y's teraflops".
    """
    flops, bandwidth, speedup = (numbers["compare_flops_ratio"], numbers["compare_bandwidth_ratio"],
                                 numbers["compare_decode_speedup"])
    if abs(flops - 1) < SAME_RATIO:
        film_gpu_first = bandwidth >= 1
    else:
        film_gpu_first = flops > 1
    if film_gpu_first:
        return {"subject": gpu, "other": other, "flops_ratio": flops, "bandwidth_ratio": bandwidth,
                "decode_speedup": speedup}
    return {"subject": other, "other": gpu, "flops_ratio": 1 / flops, "bandwidth_ratio": 1 / bandwidth,
            "decode_speedup": 1 / speedup}


def template_context(numbers: dict, gpu: Gpu, model: Model, dtype: DataType, compare_gpu: Gpu,
                     comparison: dict, dataset: MeasuredDataset, measured_model: Model,
                     measured_gpu: Gpu, measured_dtype: DataType) -> dict:
    """What a narration template may name: the numbers, and the objects it describes."""
    short, medium, long = measured_roles(dataset)
    measured = {
        "id": dataset.id, "provider": dataset.provider, "route": dataset.route,
        "model": measured_model, "gpu": measured_gpu, "precision": measured_dtype,
        "gpu_is_assumption": dataset.compared_gpu_is_assumption,
        "short": short, "medium": medium, "long": long,
    }
    return {**numbers, "gpu": gpu, "model": model, "dtype": dtype, "compare_gpu": compare_gpu,
            "comparison": comparison, "measured": measured}
