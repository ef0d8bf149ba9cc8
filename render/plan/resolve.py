"""The resolve step: data/ + the storyboard -> the typed plan, every number and every narration line.

Everything downstream (narration, scenes, the film) reads the plan and nothing else, so a
film is a pure function of (storyboard, data, GPU, model, data type, measured dataset).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from render.errors import FilmError
from render.files import DATA_DIR, PROJECT_ROOT, STORYBOARD_PATH
from render.formatting import with_article
from render.plan import numbers as compute
from render.plan.storyboard import Storyboard, load_storyboard
from render.plan.templating import extract_cues, fill
from render.plan.types import Beat, Choice, NarrationSettings, Plan, parse_voice
from render.specs import roofline as rl
from render.specs.catalog import Catalog, load_catalog
from render.specs.pronunciations import load_pronunciations
from render.specs.types import DataType, Gpu, Model


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
    params = storyboard.parameters
    choice = resolve_choice(catalog, storyboard, gpu, model, dtype, compare_gpu, measured)
    dataset = catalog.measured(choice.measured_id)
    measured_model, measured_gpu = catalog.model(dataset.model), catalog.gpu(dataset.compared_gpu)
    measured_dtype = catalog.dtype(dataset.precision)

    kv_tokens = max(params.batch_size * params.batch_context_tokens, params.long_prompt_tokens, params.prompt_tokens)
    check_fits(catalog, choice.gpu, choice.model, choice.dtype, kv_tokens, purpose_of(storyboard, kv_tokens))
    longest = dataset.prompts[-1].prompt_tokens
    check_fits(catalog, measured_gpu, measured_model, measured_dtype, longest,
               f"the measured dataset's {longest:,}-token prompt ({dataset.path})")

    spec = compute.spec_sheet(choice.gpu, choice.model, choice.dtype)
    numbers = compute.film_numbers(choice.gpu, choice.model, choice.dtype, choice.compare_gpu, params,
                                   {lever: catalog.dtype(lever) for lever in ("int8", "int4")})
    measured_numbers = compute.measured_numbers(dataset, measured_gpu, measured_model, measured_dtype)
    pills = tuple(compute.pill(catalog.gpu(gpu_id), choice.dtype) for gpu_id in params.roofline_pills
                  if gpu_id != choice.gpu.id)

    notes = []
    if choice.arithmetic != choice.dtype.arithmetic:
        notes.append(f"{choice.gpu.name} has no FP8 tensor cores: {choice.dtype.name} weights are "
                     f"multiplied in BF16 (weight-only), at its BF16 peak.")
    if dataset.compared_gpu_is_assumption:
        notes.append(f"The measured timings ({dataset.id}) are compared with {with_article(measured_gpu)}: "
                     f"an assumption, since the provider does not publish its hardware.")

    # What a narration template may name: the plan's groups, and the choice's GPU, model and data type.
    context = {"choice": choice, "gpu": choice.gpu, "model": choice.model, "dtype": choice.dtype, "spec": spec,
               "measured": measured_numbers, "parameters": params,
               **{group: getattr(numbers, group) for group in numbers.__dataclass_fields__}}
    beats = []
    for beat in storyboard.beats:
        where, what = beat.where["narration"], f"beat {beat.id!r} narration"
        narration, cues = extract_cues(fill(beat.narration, context, where, what), where, what)
        captions = {name: fill(template, context, beat.where[name], f"beat {beat.id!r} caption {name!r}")
                    for name, template in beat.captions.items()}
        beats.append(Beat(beat.id, beat.title, beat.start, beat.end, beat.scene, narration, captions, cues, where,
                          holds=beat.holds))

    narration = resolve_narration(storyboard, voice, recordings)
    for beat in beats:
        check_speakable(beat, narration)

    named = [(g.short_name, g.spoken_name) for g in catalog.gpus.values()]
    named += [(m.name, m.spoken_name) for m in catalog.models.values()]
    named += [(d.name, d.spoken_name) for d in catalog.dtypes.values()]
    return Plan(
        title=storyboard.title, duration=storyboard.end, source=storyboard.source,
        choice=choice, spec=spec, numbers=numbers, measured=measured_numbers, pills=pills,
        parameters=params, narration=narration,
        pronunciations=load_pronunciations(data_dir / "pronunciations.yaml", named),
        beats=tuple(beats), notes=tuple(notes),
    )


# No narrator (ours speak about three words a second) says more than this in a second, even sped up.
MAX_WORDS_PER_SECOND = 4.0


def check_speakable(beat: Beat, narration: NarrationSettings) -> None:
    """Refuse, before anything is synthesised, a beat with far more words than its slot can hold."""
    available = beat.duration - narration.lead_in - narration.gap
    words = len(beat.narration.split())
    most = max(0, int(available * MAX_WORDS_PER_SECOND * narration.max_tempo))
    if words > most:
        raise FilmError(
            f"{beat.location}: beat {beat.id!r} has {words:,} words, but its slot leaves {available:.2f} s: no voice "
            f"says more than about {most} words in that (at most {MAX_WORDS_PER_SECOND:g} a second at tempo "
            f"{narration.max_tempo:.2f}). Shorten its narration, or give the beat more time.")


def resolve_choice(catalog: Catalog, storyboard: Storyboard, gpu: str | None = None, model: str | None = None,
                   dtype: str | None = None, compare_gpu: str | None = None, measured: str | None = None) -> Choice:
    """The one place a choice left out becomes the storyboard's default."""
    defaults = storyboard.defaults
    the_gpu = catalog.gpu(gpu or defaults["gpu"])
    the_model = catalog.model(model or defaults["model"])
    the_dtype = catalog.dtype(dtype or defaults["dtype"])
    dataset = measured or defaults["measured"]
    return Choice(
        gpu=the_gpu, model=the_model, dtype=the_dtype, arithmetic=rl.arithmetic_format(the_gpu, the_dtype),
        compare_gpu=choose_compare_gpu(catalog, storyboard, the_gpu, compare_gpu), measured_id=dataset,
        is_default=(the_gpu.id, the_model.id, the_dtype.id) == (defaults["gpu"], defaults["model"], defaults["dtype"]),
    )


def resolve_narration(storyboard: Storyboard, voice: str | None, recordings: Path | None) -> NarrationSettings:
    """The storyboard's narration settings, with the command line's voice and recordings folder."""
    settings = storyboard.narration
    chosen = voice or settings.voice
    parse_voice(chosen)  # an unknown engine fails here, before anything is synthesised
    folder = Path(recordings) if recordings is not None else Path(settings.recordings)
    return replace(settings, voice=chosen, recordings=str(folder if folder.is_absolute() else PROJECT_ROOT / folder))


def choose_compare_gpu(catalog: Catalog, storyboard: Storyboard, gpu: Gpu, explicit: str | None) -> Gpu:
    """The wasted-money beat's other GPU: the storyboard's choice, or its fallback when that is the film's own."""
    params = storyboard.parameters
    if explicit:
        other = catalog.gpu(explicit)
        if other.id == gpu.id:
            raise FilmError(
                f"the comparison GPU is the film's own GPU ({gpu.id}); a comparison needs two different "
                f"GPUs: choose another with --compare-gpu, or leave it out to use the storyboard's "
                f"({params.compare_gpu})"
            )
        return other
    choice = params.compare_gpu
    if choice == gpu.id:
        choice = params.compare_gpu_when_same
        if choice == gpu.id:
            raise FilmError(
                f"{storyboard.where('compare_gpu_when_same')}: parameters: compare_gpu and "
                f"compare_gpu_when_same are both {gpu.id}, the film's own GPU; make compare_gpu_when_same "
                f"a different GPU"
            )
    return catalog.gpu(choice)


def purpose_of(storyboard: Storyboard, kv_tokens: int) -> str:
    params = storyboard.parameters
    if kv_tokens == params.batch_size * params.batch_context_tokens:
        return f"{params.batch_size} sequences of {params.batch_context_tokens:,} cached tokens"
    if kv_tokens == params.long_prompt_tokens:
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
