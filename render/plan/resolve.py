"""The resolve step: data/ + the storyboard -> the typed plan, every number and every narration line.

Everything downstream (narration, scenes, the film) reads the plan and nothing else, so a
film is a pure function of (storyboard, data, GPU, model, data type, measured dataset).
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from render import formatting as fmt
from render.errors import DoesNotFit, FilmError
from render.files import DATA_DIR, PAGE_SCRIPT_PATH, PROJECT_ROOT, STORYBOARD_PATH, display_path
from render.formatting import with_article
from render.plan.prose import fill_prose, load_prose
from render.plan.load import load_numbers
from render.plan.storyboard import Storyboard, load_storyboard
from render.plan.templating import extract_cues, fill, one_budget
from render.plan.tracking import Tracked, value_at
from render.plan.types import (Beat, Choice, Efficiency, FilmRequest, NarrationSettings, Note, Numbers, PageStep, Plan,
                               SpecSheet, parse_voice)
from render.plan import numbers as compute
from render.specs.catalog import Catalog, load_catalog
from render.specs.hf_config import model_from_file, own_identity
from render.specs.pronunciations import load_pronunciations
from render.specs.types import DataType, Deployment, Gpu, Model, kv_cache_in
from render.specs import roofline as rl
from render.text import echo

log = logging.getLogger("film")


def resolve_plan(request: FilmRequest | None = None, storyboard_path: Path = STORYBOARD_PATH,
                 data_dir: Path = DATA_DIR, prose_path: Path = PAGE_SCRIPT_PATH, **asked) -> Plan:
    """Resolve the storyboard (and the page's words, script/page.yaml) for what a film is asked for (`request`, or
    its fields given by name: resolve_plan(gpu="a100-sxm-80gb")); what is not asked for is the storyboard's default,
    on one GPU."""
    request = replace(request or FilmRequest(), **asked)
    storyboard = load_storyboard(storyboard_path).with_cut(request.cut)
    prose_script = load_prose(prose_path)
    catalog = load_catalog(data_dir)
    params = storyboard.parameters
    choice = resolve_choice(catalog, storyboard, request)
    dataset = catalog.measured(choice.measured_id)
    measured_model, measured_gpu = catalog.model(dataset.model), catalog.gpu(dataset.compared_gpu)
    measured_dtype = catalog.dtype(dataset.precision)

    kv_tokens = film_kv_tokens(params)
    check_fits(catalog, choice.deployment, kv_tokens, purpose_of(storyboard, kv_tokens))
    longest = dataset.prompts[-1].prompt_tokens
    check_fits(catalog, Deployment(measured_gpu, measured_model, measured_dtype), longest,
               f"the measured dataset's {longest:,}-token prompt ({dataset.path})")

    spec = compute.spec_sheet(choice.deployment)
    lever = quantisation_lever(catalog, choice.dtype)
    numbers = compute.film_numbers(choice.deployment, choice.compare_gpu, params, lever)
    measured_numbers = compute.measured_numbers(dataset, measured_gpu, measured_model, measured_dtype,
                                                choice.embedding_rows)
    pills = tuple(compute.pill(catalog.gpu(gpu_id), choice.dtype) for gpu_id in params.roofline_pills
                  if gpu_id != choice.gpu.id)
    achieved, expected = expected_numbers(choice, params, lever)
    notes = plan_notes(choice, spec, catalog, dataset, measured_gpu)
    load = None
    if storyboard.cut is not None:
        load = load_numbers(choice, params.prompt_tokens, params.long_prompt_tokens, storyboard.cut.load,
                            storyboard.cut.load_where)
    groups = template_groups(choice, spec, measured_numbers, params, numbers, achieved, expected)
    groups["load"] = (load, "load")
    with one_budget():  # the storyboard's templates share one budget of work (render/plan/templating.py)
        beats, summary = fill_storyboard(storyboard, groups, prose_script)
    prose = fill_prose(prose_script, {name: Tracked(value, path, set()) for name, (value, path) in groups.items()})
    narration = resolve_narration(storyboard, request.voice, request.recordings)
    for beat in beats:
        check_speakable(beat, narration)

    return Plan(
        title=storyboard.title, duration=storyboard.end, source=storyboard.source,
        choice=choice, spec=spec, numbers=numbers, measured=measured_numbers, pills=pills,
        parameters=params, narration=narration, pronunciations=pronunciations_of(catalog, choice, data_dir),
        beats=tuple(beats), notes=tuple(notes), summary=summary, achieved=achieved, expected=expected, prose=prose,
        load=load,
    )


def expected_numbers(choice: Choice, params, lever) -> tuple[SpecSheet | None, Numbers | None]:
    """With EFFICIENCY=: the spec sheet as the deployment reaches it and the film's numbers from the same formulas on
    it (the comparison GPU at the same shares); else None, None."""
    if not choice.efficiency:
        return None, None
    efficiency = choice.efficiency
    shares = (efficiency.compute, efficiency.memory, efficiency.overlap, efficiency.decode_overlap)
    reached = choice.deployment.on(rl.achieved(choice.gpu, *shares))
    return (compute.spec_sheet(reached),
            compute.film_numbers(reached, rl.achieved(choice.compare_gpu, *shares), params, lever))


def template_groups(choice: Choice, spec, measured_numbers, params, numbers, achieved, expected) -> dict:
    """What a narration template may name: the plan's groups, and the choice's GPU, model and data type, each with
    its path in the plan. Seen through Tracked views, so each beat records the plan paths its words read (the review
    page's "numbers this beat speaks")."""
    return {"choice": (choice, "choice"), "gpu": (choice.hardware, "choice.hardware"),
            "model": (choice.model, "choice.model"), "dtype": (choice.dtype, "choice.dtype"), "spec": (spec, "spec"),
            "measured": (measured_numbers, "measured"), "parameters": (params, "parameters"),
            "efficiency": (choice.efficiency, "choice.efficiency"), "achieved": (achieved, "achieved"),
            "expected": (expected, "expected"), "numbers": (numbers, "numbers"),
            # what the film says here: the expected numbers with EFFICIENCY=, else the ceilings
            "here": (expected or numbers, "expected" if expected else "numbers"),
            **{group: (getattr(numbers, group), f"numbers.{group}") for group in numbers.__dataclass_fields__}}


def pronunciations_of(catalog: Catalog, choice: Choice, data_dir: Path):
    """How the voice says every name the film may speak: the GPUs', models' (the choice's own, imported from a
    config, among them) and data types'."""
    gpu_names = [(g.short_name, g.spoken_name) for g in catalog.gpus.values()]
    named = []
    if choice.model.id not in catalog.models:
        named.append((choice.model.name, choice.model.spoken_name))
    named += [(m.name, m.spoken_name) for m in catalog.models.values()]
    named += [(d.name, d.spoken_name) for d in catalog.dtypes.values()]
    return load_pronunciations(data_dir / "pronunciations.yaml", named, gpu_names)


def fill_storyboard(storyboard, groups: dict[str, tuple[object, str]], page) -> tuple[list[Beat], str]:
    """Each beat's narration and captions, and the film's summary, filled from the plan's groups (name -> (value, its
    path)), and its step on the film's page (`page`: the page's words as written, script/page.yaml; a step for a
    beat this storyboard lacks is left unused: a misspelt one leaves its beat without a step). Seen through
    Tracked views, so each beat records the plan paths its words read (the review page's "numbers this beat
    speaks")."""
    beats = []
    for beat in storyboard.beats:
        reads: set[str] = set()
        context = {name: Tracked(value, path, reads) for name, (value, path) in groups.items()}
        where, what = beat.where["narration"], f"beat {beat.id!r} narration"
        narration, cues = extract_cues(fill(beat.narration, context, where, what), where, what)
        captions = {name: fill(template, context, beat.where[name], f"beat {beat.id!r} caption {name!r}")
                    for name, template in beat.captions.items()}
        beats.append(Beat(beat.id, beat.title, beat.start, beat.end, narration, captions, cues, where,
                          holds=beat.holds, reads=tuple(sorted(reads)), step=page_step(beat, page, groups)))
    summary = fill(storyboard.summary, {name: Tracked(value, path, set()) for name, (value, path) in groups.items()},
                   storyboard.where("film.summary"), "film summary")
    return beats, summary


def page_step(beat, page, groups: dict[str, tuple[object, str]]) -> PageStep:
    """The beat's step on the film's page, its sliders' opening values read from the plan; a beat without one is
    refused where the storyboard names it (the page would show it no maths)."""
    written = page.steps.get(beat.id)
    if written is None:
        raise FilmError(f"{beat.where['id']}: beat {beat.id!r} has no step on the film's page: add one to the page's "
                        f"steps (its formula, controls and readout; docs/adding.md)")
    opens, root = [], SimpleNamespace(**{name: value for name, (value, _) in groups.items()})
    for control, path, where in written.opens_at:
        value = value_at(root, path)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise FilmError(f"{where}: steps: beat {beat.id!r}: opens_at: {control}: {echo(path)} is no whole number "
                            f"of the plan; give a plan path, e.g. parameters.prompt_tokens (make plan lists them)")
        opens.append((control, int(value)))
    return replace(written.step, opens_at=tuple(opens))


def plan_notes(choice: Choice, spec, catalog: Catalog, dataset, measured_gpu: Gpu) -> list[Note]:
    """What the film assumes beyond the datasheets, said on both pages: weight-only FP8, the all-reduces, how the
    embedding table and a narrow format are counted, a film of expected numbers, an assumed GPU. Each in words any
    reader follows, with the setting that decides it beside (the public page leaves that out)."""
    notes = []
    if choice.arithmetic != choice.dtype.arithmetic:
        notes.append(Note(f"{choice.gpu.name} has no FP8 tensor cores: {choice.dtype.name} weights are multiplied in "
                          f"BF16 (weight-only), at its BF16 peak."))
    if choice.gpus > 1:
        latency = "an assumed" if spec.allreduce_latency_is_assumption else "a"
        notes.append(Note(f"Tensor parallelism over {choice.gpus} × {choice.gpu.name}: "
                          f"{choice.gpu.interconnect_source} Each all-reduce costs {latency} "
                          f"{spec.allreduce_latency_seconds * 1e6:g} µs plus its transfer; arithmetic, memory traffic "
                          f"and all-reduces are not assumed to overlap."))
    if choice.dtype.bytes_per_weight < rl.SIXTEEN_BIT_BYTES:
        model, dtype = choice.model, choice.dtype
        if dtype.embeddings_in_format:
            notes.append(Note(f"{dtype.name} here stores every weight in {dtype.name}, the embedding table and the "
                              f"output head included; a checkpoint that keeps those at 16 bits holds "
                              f"{fmt.gigabytes(rl.weight_bytes(model, dtype, False), short=True)} of weights, not "
                              f"{fmt.gigabytes(rl.weight_bytes(model, dtype), short=True)}.",
                              f"data/dtypes.yaml ({dtype.id}: embeddings_in_format)"))
        else:
            notes.append(Note(f"{dtype.name} here keeps the embedding table and the output head at 16 bits: "
                              f"{fmt.gigabytes(rl.weight_bytes(model, dtype), short=True)} of weights, not "
                              f"{fmt.gigabytes(rl.weight_bytes(model, dtype, True), short=True)}.",
                              f"data/dtypes.yaml ({dtype.id}: embeddings_in_format)"))
    if not choice.model.tied_embeddings:
        table, weights = rl.input_embedding_bytes(choice.model, choice.dtype), rl.weight_bytes(choice.model,
                                                                                               choice.dtype)
        if choice.embedding_rows:
            notes.append(Note(f"A decode step here gathers only its tokens' rows of the input embedding table: "
                              f"{fmt.gigabytes(table, short=True)} of the weights "
                              f"({fmt.percent(table / weights, short=True)}) is not read each step.",
                              "the storyboard's parameters.embedding_reads: rows"))
        else:
            notes.append(Note(f"A decode step is counted as reading every weight, the whole input embedding table "
                              f"included (the source's convention); a real step gathers only its tokens' rows of it, "
                              f"{fmt.gigabytes(table, short=True)} ({fmt.percent(table / weights, short=True)} of the "
                              f"weights) less.", "the storyboard's parameters.embedding_reads: table"))
    if choice.efficiency:
        notes.append(efficiency_note(choice, catalog))
    if dataset.compared_gpu_is_assumption:
        notes.append(Note(f"The measured timings ({dataset.provider}'s) are compared with "
                          f"{with_article(measured_gpu)}: an assumption, since the provider does not publish its "
                          f"hardware.", f"{dataset.path}: compared_gpu"))
    return notes


def film_kv_tokens(params) -> int:
    """The most KV cache the film's deployment must hold at once: its batch's, its long prompt's or its prompt's."""
    return max(params.batch_size * params.batch_context_tokens, params.long_prompt_tokens, params.prompt_tokens)


def explorer_for(plan: Plan, data_dir: Path = DATA_DIR):
    """The numbers of the film's page, around the plan's deployment: every value a beat speaks of is a stop of its
    slider, and "The maths" starts where the source's maths section does (the film's prompt, one user with nothing
    cached, the measured long prompt in the cache block)."""
    from render.plan.explorer import ANSWER_TOKENS, explore

    params, long_measured = plan.parameters, plan.measured.long.prompt_tokens
    start = {"prompt": params.prompt_tokens, "batch": 1, "context": 0, "cache": long_measured, "answer": ANSWER_TOKENS}
    # Each beat's step opens at the settings its narration speaks of (the page's words say which: script/page.yaml's
    # steps), so its words, formula and readout agree.
    steps = {beat.id: dict(beat.step.opens_at) for beat in plan.beats if beat.step and beat.step.opens_at}
    return explore(load_catalog(data_dir), plan.choice.deployment, tuple(pill.gpu_id for pill in plan.pills),
                   start, steps, film_kv_tokens(params))


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


# The KV cache formats KV_DTYPE= may name: those a data type stores its own cache in.
def kv_formats(catalog: Catalog) -> dict[str, DataType]:
    return {d.id: d for d in catalog.dtypes.values() if d.kv_dtype == d.id}


def resolve_choice(catalog: Catalog, storyboard: Storyboard, request: FilmRequest) -> Choice:
    """The one place a choice left out becomes the storyboard's default."""
    gpu, model, dtype, gpus, kv_dtype = (request.gpu, request.model, request.dtype, request.gpus, request.kv_dtype)
    compare_gpu, measured, efficiency = request.compare_gpu, request.measured, request.efficiency
    defaults = storyboard.defaults
    the_gpu = catalog.gpu(gpu or defaults["gpu"])
    the_model = model_of(catalog, model or defaults["model"])
    the_dtype = catalog.dtype(dtype or defaults["dtype"])
    count = 1 if gpus is None else gpus
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_GPUS:
        raise FilmError(f"GPUS={count}: give a whole number of GPUs from 1 to {MAX_GPUS}")
    kv_is_default = True
    if kv_dtype:
        formats = kv_formats(catalog)
        kv = formats.get(kv_dtype.lower())
        if kv is None:
            raise FilmError(f"KV_DTYPE={kv_dtype}: unknown KV cache format; use one of {', '.join(formats)}")
        kv_is_default = (kv.kv_dtype, kv.kv_bytes) == (the_dtype.kv_dtype, the_dtype.kv_bytes)
        the_dtype = kv_cache_in(the_dtype, kv)
    dataset = measured or defaults["measured"]
    rl.check_gpu_count(Deployment(the_gpu, the_model, the_dtype, count))
    cut = storyboard.cut or storyboard.with_cut(request.cut).cut
    return Choice(
        gpu=the_gpu, model=the_model, dtype=the_dtype, arithmetic=rl.arithmetic_format(the_gpu, the_dtype),
        compare_gpu=choose_compare_gpu(catalog, storyboard, the_gpu, compare_gpu), measured_id=dataset,
        is_default=(the_gpu.id, the_model.id, the_dtype.id, count, kv_is_default, bool(efficiency))
        == (defaults["gpu"], defaults["model"], defaults["dtype"], 1, True, False) and cut is None,
        gpus=count, kv_is_default=kv_is_default, embedding_rows=storyboard.parameters.embedding_rows,
        efficiency=efficiency_of(catalog, efficiency, storyboard.parameters.embedding_rows) if efficiency else None,
        **({"cut": cut.name} if cut else {}),
    )


# What EFFICIENCY= may give by hand: each share of a ceiling, and the fixed wait, with its unit and range.
EFFICIENCY_KEYS = {"compute": "of peak arithmetic", "memory": "of bandwidth", "overhead": "seconds per request",
                   "overlap": "of the shorter of arithmetic and memory traffic hidden under the longer",
                   "decode_overlap": "the same in a step that only decodes",
                   "step_overhead": "seconds every engine step spends besides"}
MAX_OVERHEAD_SECONDS = 60.0
MAX_STEP_OVERHEAD_SECONDS = 1.0  # an engine step that waits a second besides its work is no engine worth a film
MIN_SHARE = 0.01  # the least share of a ceiling EFFICIENCY= may give: every number the film derives stays in range


def efficiency_of(catalog: Catalog, text: str, embedding_rows: bool = False) -> Efficiency:
    """EFFICIENCY=: a measured dataset's id (its fit's shares, overhead and overlap) or
    compute=0.6,memory=0.8[,overhead=0.2][,overlap=0][,decode_overlap=0][,step_overhead=0.002] (shares as fractions
    or percentages; overlap= sets decode's too unless decode_overlap= is given)."""
    text = text.strip()
    if "=" not in text:
        return fitted_efficiency(catalog, text, embedding_rows)
    usage = ("give EFFICIENCY=compute=0.6,memory=0.8 (shares of the ceilings; overhead=0.2 adds seconds per request; "
             "overlap=0 runs a step's arithmetic and memory traffic one after the other, decode_overlap=0 only in "
             "steps that only decode; step_overhead=0.002 adds seconds to every engine step)")
    given: dict[str, float] = {}
    for part in text.split(","):
        key, _, value = (piece.strip() for piece in part.partition("="))
        if key not in EFFICIENCY_KEYS:
            raise FilmError(f"EFFICIENCY={text}: unknown {key!r}; the keys are {', '.join(EFFICIENCY_KEYS)}; {usage}")
        if key in given:
            raise FilmError(f"EFFICIENCY={text}: {key} is given twice; {usage}")
        try:
            number = float(value[:-1]) / 100 if value.endswith("%") and "overhead" not in key else float(value)
        except ValueError:
            raise FilmError(f"EFFICIENCY={text}: {key}={echo(value)} is not a number; {usage}") from None
        if key == "overhead" and not 0 <= number <= MAX_OVERHEAD_SECONDS:
            raise FilmError(f"EFFICIENCY={text}: overhead={value} must be from 0 to {MAX_OVERHEAD_SECONDS:g} seconds")
        if key == "step_overhead" and not 0 <= number <= MAX_STEP_OVERHEAD_SECONDS:
            raise FilmError(f"EFFICIENCY={text}: step_overhead={value} must be from 0 to "
                            f"{MAX_STEP_OVERHEAD_SECONDS:g} seconds")
        if key.endswith("overlap") and not (math.isfinite(number) and 0 <= number <= 1):
            raise FilmError(f"EFFICIENCY={text}: {key}={value} must be from 0 (arithmetic and memory traffic one "
                            f"after the other) to 1 (the shorter wholly hidden under the longer, the roofline's ideal)")
        if key in ("compute", "memory") and not (math.isfinite(number) and MIN_SHARE <= number <= 1):
            raise FilmError(f"EFFICIENCY={text}: {key}={value} must be a share of the ceiling from {MIN_SHARE:g} to 1 "
                            f"(0.6 or 60%): a deployment does not beat its datasheet, and below {MIN_SHARE:.0%} of it "
                            f"no number the film speaks is worth saying")
        given[key] = number
    missing = [key for key in ("compute", "memory") if key not in given]
    if missing:
        raise FilmError(f"EFFICIENCY={text}: {' and '.join(missing)} missing; {usage}")
    return Efficiency(given["compute"], given["memory"], given.get("overhead", 0.0), overlap=given.get("overlap", 1.0),
                      decode_overlap=given.get("decode_overlap"), step_overhead_seconds=given.get("step_overhead", 0.0))


def fitted_efficiency(catalog: Catalog, dataset_id: str, embedding_rows: bool) -> Efficiency:
    """The shares a measured dataset's fit gives against the GPU it is compared with."""
    from render.specs.calibration import calibrate, deployment_of

    if dataset_id not in catalog.measured_ids():
        raise FilmError(f"EFFICIENCY={dataset_id}: no measured dataset of that id in data/measured/ (film list "
                        f"measured), and not compute=…,memory=… either; give one of: "
                        f"{', '.join(catalog.measured_ids())}")
    dataset = catalog.measured(dataset_id)
    deployment = deployment_of(dataset, catalog, embedding_rows=embedding_rows)
    fit = calibrate(dataset, deployment)
    shares = {"compute": (fit.compute_efficiency, "arithmetic"), "memory": (fit.memory_efficiency, "bandwidth")}
    for key, (share, word) in shares.items():
        if share is None:
            why = next((note for note in fit.notes if word in note), "its timings cannot determine it")
            raise FilmError(f"EFFICIENCY={dataset_id}: {dataset.path} does not give the share {EFFICIENCY_KEYS[key]}: "
                            f"{why}. Measure more (film measure), or give the shares: EFFICIENCY=compute=…,memory=…")
        elif share.value < MIN_SHARE:
            raise FilmError(f"EFFICIENCY={dataset_id}: its fit reaches only {fmt.percent(share.value, short=True)} "
                            f"{EFFICIENCY_KEYS[key]} of {deployment.gpu.name}, under the {MIN_SHARE:.0%} a film's "
                            f"numbers are worth speaking at: the endpoint was overloaded, or {dataset.path}'s "
                            f"compared_gpu is not what served it; give EFFICIENCY=compute=…,memory=…")
        elif share.value > 1:
            raise FilmError(f"EFFICIENCY={dataset_id}: its fit reaches {share.value:.0%} {EFFICIENCY_KEYS[key]} of "
                            f"{deployment.gpu.name}: faster than the datasheet, so the GPU it is compared with "
                            f"({dataset.path}: compared_gpu) is not what served it; fix that, or give "
                            f"EFFICIENCY=compute=…,memory=…")
    return Efficiency.fitted(fit, dataset_id)


def efficiency_note(choice: Choice, catalog: Catalog) -> Note:
    """What the expected numbers assume, for the pages and `film plan`."""
    efficiency = choice.efficiency
    shares = efficiency.shares
    overhead = (f", and {fmt.duration(efficiency.overhead_seconds, short=True)} of every first token's wait outside "
                f"prefill" if efficiency.overhead_seconds else "")
    if not efficiency.fitted_from:
        return Note(f"Expected numbers assume {choice.times(choice.gpu.name)} reaches {shares}{overhead}, as given; "
                    f"the ceilings are the datasheet's.",
                    f"EFFICIENCY=compute={efficiency.compute:g},memory={efficiency.memory:g}"
                    + (f",overhead={efficiency.overhead_seconds:g}" if efficiency.overhead_seconds else "")
                    + (f",overlap={efficiency.overlap:g}" if efficiency.overlap != 1 else "")
                    + (f",decode_overlap={efficiency.decode_overlap:g}"
                       if efficiency.decode_overlap is not None else "")
                    + (f",step_overhead={efficiency.step_overhead_seconds:g}" if efficiency.step_overhead_seconds
                       else ""))
    dataset = catalog.measured(efficiency.fitted_from)
    measured_on = catalog.gpu(dataset.compared_gpu)
    carried = ("" if measured_on.id == choice.gpu.id and choice.gpus == 1 else
               f" The shares were measured against {with_article(measured_on)} and are assumed to carry over to "
               f"{choice.times(choice.gpu.name)}.")
    return Note(f"Expected numbers: the fit of {dataset.provider}'s measured timings reaches {shares}{overhead}."
                f"{carried}", f"EFFICIENCY={efficiency.fitted_from} ({dataset.path})")


# The most GPUs a film's deployment may span: tensor parallelism stays inside one server.
MAX_GPUS = 64


def model_of(catalog: Catalog, model: str) -> Model:
    """A catalog id, or the path of a Hugging Face config.json (read, never downloaded)."""
    if model.endswith(".json") or "/" in model or Path(model).is_dir():
        the_model, why = own_identity(model_from_file(Path(model)), catalog.models, display_path(Path(model)))
        if why:
            log.info("%s", why)
        return the_model
    return catalog.model(model)


def resolve_narration(storyboard: Storyboard, voice: str | None, recordings: Path | None) -> NarrationSettings:
    """The storyboard's narration settings, with the command line's voice and recordings folder."""
    settings = storyboard.narration
    chosen = voice or settings.voice
    parse_voice(chosen)  # an unknown engine fails here, before anything is synthesised
    folder = Path(recordings) if recordings is not None else Path(settings.recordings)
    return replace(settings, voice=chosen, recordings=str(folder if folder.is_absolute() else PROJECT_ROOT / folder))


def choose_compare_gpu(catalog: Catalog, storyboard: Storyboard, gpu: Gpu, explicit: str | None) -> Gpu:
    """The GPU the film compares its own with: the storyboard's choice, or its fallback when that is the film's own."""
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


QUANTISATION_LEVERS = ("int8", "int4")  # weight-only formats, largest first: the budget card's lever


def quantisation_lever(catalog: Catalog, dtype: DataType) -> DataType | None:
    """The first weight-only format smaller than the film's own (INT8 for BF16, INT4 for FP8 or INT8), or
    None when the film's weights are already as small as any in the data: then quantising is no lever."""
    return next((catalog.dtype(lever) for lever in QUANTISATION_LEVERS
                 if catalog.dtype(lever).bytes_per_weight < dtype.bytes_per_weight), None)


def check_fits(catalog: Catalog, deployment: Deployment, kv_tokens: int, purpose: str) -> None:
    """The roofline's fit check, plus the choices that would fit, so the user knows the fix."""
    try:
        rl.check_fits(deployment, kv_tokens, purpose)
    except DoesNotFit as error:
        fixes, nowhere = [], ""
        smallest = rl.smallest_gpu_count(deployment, kv_tokens)
        if smallest is not None:
            fixes.append(f"more GPUs: it fits on {smallest} (GPUS={smallest})")
        else:
            nowhere = f"\nIt fits on no count of {deployment.gpu.short_name}s up to {rl.LARGEST_GPU_COUNT}."
        same_count = [g.id for g in catalog.gpus.values() if rl.fits(deployment.on(g), kv_tokens)]
        dtypes = [d.id for d in catalog.dtypes.values()
                  if rl.fits(Deployment(deployment.gpu, deployment.model, kv_cache_in(d, deployment.dtype),
                                        deployment.gpus), kv_tokens)]
        if dtypes:
            fixes.append(f"a smaller data type (DTYPE={' or '.join(dtypes)})")
        if same_count:
            fixes.append(f"a GPU with more memory (GPU={' or '.join(same_count)})")
        fixes.append("a smaller model")
        raise DoesNotFit(f"{error}{nowhere}\nTry {'; or '.join(fixes)}.") from None
