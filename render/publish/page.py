"""`make page`: the film's publishable page, beside the film, with the maths a reader can move.

    build/<film folder>/page/
        index.html      the film (chapters, captions), a summary in the film's numbers, "The maths" (each
                        formula typeset as MathML from the film's own LaTeX, its symbols, a worked example
                        that follows the controls), the controls (prompt, batch, cached-context and answer
                        sliders; GPU and data-type pills), the roofline chart, the transcript, the words
                        you will hear and the sources; readable step by step, a beat a step
        film.mp4, film.vtt, poster.png, stills/<beat>.jpg (and <beat>-<cue>.jpg, a picture it replaces whole)

Every number on it was computed by the roofline module and written by the project's formatter
(render/plan/explorer.py) when the page was built; its script only looks them up. It opens from disk
or any static host and makes no network request. The folder is built aside and swapped in whole.
"""

from __future__ import annotations

import dataclasses
import json
import html
import os
import re
import shutil
from pathlib import Path
from typing import Callable

from latex2mathml.converter import convert as latex_to_mathml

from render import formatting as fmt, formulas, media
from render.errors import FilmError
from render.files import link_or_copy, replace_folder, write_atomic
from render.plan.explorer import (CHART_HEIGHT, CHART_LEFT, CHART_MARGIN, CHART_WIDTH, FLOPS_RANGE, INTENSITY_RANGE,
                                  SLIDERS, Explorer, chart_point)
from render.plan.resolve import explorer_for
from render.plan.types import BUILT_IN_CUES, FilmRequest, Plan
from render.publish import web
from render.publish.review import made_film
from render.publish.under_load import SCHEDULER_COLOURS, load_view
from render.publish.explain import MEASURED, NumberRow, fit_view, number_row, sources_of
from render.publish.mathfont import MATH_FONT, body_font_css, characters_of, math_font_css, page_characters
from render.video.settling import settled_of, settled_time
from render.publish.web import beat_views, captions_url
from scenes import style

TEMPLATE = "page.html"
BODY_FONT_SLOT = "/* the body face */"
STILL_QUALITY = 5  # ffmpeg's JPEG q:v: nine 1080p stills and the poster within the page's 2.5 MB of pictures

# The words you will hear, in the project's own words (the numbers are the film's, on the page beside them).
GLOSSARY = (
    ("Prefill", "The first job: the whole prompt read in one parallel pass, every weight used once for every "
                "token, its keys and values stored as the KV cache. It sets the time to the first token."),
    ("Decode", "The second job: the answer written one token at a time, each step reading every weight again "
               "(and each sequence's KV cache). It sets the tokens per second."),
    ("TTFT", "Time to first token: how long the first word of an answer takes; mostly prefill."),
    ("TPOT", "Time per output token: one decode step, the pace at which the rest of the answer streams."),
    ("KV cache", "The keys and values of every token seen so far, kept so that no token is processed twice; "
                 "each decode step rereads it."),
    ("Arithmetic intensity", "Operations done per byte moved from memory: where a step sits on the roofline."),
    ("Roofline", "Attainable FLOP/s = min(peak, intensity × bandwidth): a slope where memory limits the chip, "
                 "a flat roof where arithmetic does."),
    ("Ridge point", "Peak FLOP/s ÷ bandwidth: the intensity above which a step is compute-bound."),
    ("Batching", "Decoding many users' sequences in one step, so one read of the weights serves them all."),
    ("Tensor parallelism", "Splitting every layer across several GPUs, which then exchange activations "
                           "(all-reduces) twice a layer."),
)

ONLY_WHEN_SPLIT_TERMS = ("Tensor parallelism",)  # said only on a film whose model is split over several GPUs

# What a beat's step (script/page.yaml's steps, the plan's PageStep) may name: a formula of "The maths" ("measured": the
# measured timings' table), a control of The maths or Under load, and a number the page shows (PAGE_NUMBERS, or
# Under load's: load.<name>).
STEP_FORMULAS = ("latency", "prefill", "decode", "roofline", "cache", "measured")
STEP_CONTROLS = ("answer", "prompt", "pills", "batch", "context", "cache", "rate", "scheduler", "slo")
LOAD_READOUTS = ("rate", "scheduler", "ttft", "tpot", "ttft_p50", "ttft_p90", "tpot_p50", "tpot_p90", "throughput",
                 "goodput", "capacity")


def check_steps(plan: Plan) -> None:
    """Every beat's step names what the page has: refused at the page's build, with the step's beat, where a name is
    not one (the storyboard's check has already refused a beat without a step)."""
    for beat in plan.beats:
        step, what = beat.step, f"script/page.yaml: steps: beat {beat.id!r}"
        problems = ([f"formula {step.formula!r} is not one of {', '.join(STEP_FORMULAS)}"]
                    if step.formula not in STEP_FORMULAS else [])
        problems += [f"control {control!r} is not one of {', '.join(STEP_CONTROLS)}" for control in step.controls
                     if control not in STEP_CONTROLS]
        problems += [f"readout {name!r} is no number the page shows (see PAGE_NUMBERS in render/publish/page.py, or "
                     f"load.{', load.'.join(LOAD_READOUTS)})" for _, name in step.readout
                     if name not in PAGE_NUMBERS and name.removeprefix("load.") not in LOAD_READOUTS]
        if problems:
            raise FilmError(f"{what}: {problems[0]}")


def measured_waits(plan: Plan) -> list[dict[str, str]]:
    """The measured step's table: each measured first token beside its prompt's prefill at the ceilings of the GPU
    it is compared with, and the rest of the wait, written to the measurement's own decimal places."""
    rows = []
    for prompt in (plan.measured.short, plan.measured.medium, plan.measured.long):
        if prompt is None or prompt.ttft_seconds is None:
            continue
        about = "about " if prompt.ttft_approximate else ""
        measured = fmt.seconds(prompt.ttft_seconds, short=True)
        decimals = len(measured.split()[0].partition(".")[2])
        rest = max(0.0, prompt.ttft_seconds - prompt.ideal_prefill_seconds)
        rows.append({"prompt": f"{prompt.prompt_tokens:,} tokens", "measured": about + measured,
                     "prefill": fmt.duration(prompt.ideal_prefill_seconds, short=True),
                     "rest": f"{about}{rest:.{decimals}f} s"})
    return rows


def measured_elsewhere(plan: Plan) -> str:
    """Where the measured beats' model is not the film's: a line saying so beside their steps ("" where it is)."""
    measured, choice = plan.measured, plan.choice
    if (measured.model.id, measured.precision.id) == (choice.model.id, choice.dtype.id):
        return ""
    return (f"These timings are of {measured.precision.name} {measured.model.name}; the maths beside them is "
            f"{choice.model.name}'s in {choice.dtype.name}.")


def mathml(formula: formulas.Formula, display: str = "block") -> str:
    """The formula as MathML, from exactly the LaTeX the film typesets it from, coloured part by part."""
    latex = " ".join(tex if role == formulas.TEXT else rf"{{\color{{{style.ROLE_COLOURS[role]}}}{tex}}}"
                     for tex, role in formula.parts)
    return latex_to_mathml(latex, display=display)


# Each block's formula again with the controls' numbers in it, as the source page fills its formulas; \fill{name} is a
# number the page's script writes (data-fill), each the same as the words beside it. Each line is shown where its
# condition holds (the page's script decides; "" always): decode's bytes per step is one GPU's share when the model is
# split over several (its W/T and k_T), and a step's time is the bound that binds, its arithmetic at the peak or its
# bytes at the bandwidth, whichever takes longer (each GPU's share, on several).
TIME_OF = {moved: (
    (f"{phase}.compute", (rf"t \approx \frac{{\fill{{{phase}.ops_per_gpu.m}} \times "
                          rf"10^{{\fill{{{phase}.ops_per_gpu.e}}}}}}{{\fill{{peak}}}}",
                          rf"{{}} \approx \fill{{{phase}.arithmetic}}")),
    (f"{phase}.memory", (rf"t \approx \frac{{\fill{{{moved}}}}}{{\fill{{bandwidth}}}}",
                         rf"{{}} \approx \fill{{{phase}.reading}}")))
    for phase, moved in (("prefill", "prefill.bytes"), ("decode", "decode.bytes_per_step"))}
FILLED = {
    "roofline": (("", (r"\text{ridge}", r"{} = \frac{\fill{peak}}{\fill{bandwidth}}", r"{} \approx \fill{ridge}")),),
    "prefill": (("", (r"2PN + 2LdN^2", r"{} = 2 \times \fill{P.m} \times 10^{\fill{P.e}} \times \fill{N}",
                      r"{} + 2 \times \fill{L} \times \fill{d} \times \fill{N}^2",
                      r"{} \approx \fill{prefill.ops.m} \times 10^{\fill{prefill.ops.e}}")),
                *TIME_OF["prefill.bytes"]),
    "decode": (("gpus.one", (r"W + B\,C\,k", r"{} = \fill{decode.weights} + \fill{B} \times \fill{C} \times \fill{kT}",
                             r"{} = \fill{decode.bytes_per_step}")),
               ("gpus.many", (r"\frac{W}{T} + B\,C\,k_T",
                              r"{} = \fill{decode.weights} + \fill{B} \times \fill{C} \times \fill{kT}",
                              r"{} = \fill{decode.bytes_per_step}")),
               *TIME_OF["decode.bytes_per_step"]),
    "cache": (("", (r"\frac{C\,k}{W}",
                    r"{} = \frac{\fill{cache.tokens} \times \fill{kBytes}}{\fill{W.m} \times 10^{\fill{W.e}}}",
                    r"{} \approx \fill{cacheToWeights}")),),
    # (a one-token answer is its first token alone: no sum to round, so no "= 34 ms ≈ 34 ms")
    "measured": (),  # (its numbers are the measurements', in a table beside it)
    "latency": (("answer.one", (r"\text{TTFT} + (n-1) \cdot \text{TPOT}", r"{} = \fill{answer.latency}")),
                ("answer.many", (r"\text{TTFT} + (n-1) \cdot \text{TPOT}", r"{} = \fill{answer.terms}",
                                 r"{} \approx \fill{answer.latency}"))),
}
FILL = re.compile(r"\\fill\{([\w.]+)\}")
NUMBER = re.compile(r"[\d.,]+")
LEADING_RELATION = re.compile(r"<mrow /><mo>(&#x0003D;|&#x02248;|&#x0002B;)</mo>")  # =, ≈, + after {}


def filled(pieces: tuple[str, ...], shown: dict[str, str]) -> str:
    """A FILLED formula as a line of MathML pieces (a narrow screen wraps between them), each \\fill{name} a number
    (<mn>) or a measure with its unit (<mtext>) that the page's script sets (data-fill=name), written at the film's
    own settings to begin with."""

    def slot(match: re.Match) -> str:
        name = match.group(1)
        value = shown[name]
        tag = "mn" if NUMBER.fullmatch(value) else "mtext"
        return f'<{tag} data-fill="{name}">{html.escape(value)}</{tag}>'

    def piece_of(latex: str) -> str:
        mathml = latex_to_mathml(r"\displaystyle " + FILL.sub(lambda match: rf"\text{{@{match.group(1)}@}}", latex),
                                 display="inline")
        # A piece begins with its relation ("= 18 GB"), which MathML would set as a prefix, without space after it (the
        # space before it is the one between the pieces)
        mathml = LEADING_RELATION.sub(r'<mrow /><mo lspace="0" rspace="0">\1</mo><mspace width="0.2778em"/>', mathml)
        return re.sub(r"<mtext>@([\w.]+)@</mtext>", slot, mathml)

    return '<p class="line">' + " ".join(piece_of(piece) for piece in pieces) + "</p>"


def filled_at_start(explorer: Explorer) -> dict[str, str]:
    """Every \\fill name as the page first shows it (its script computes the same names for every stop)."""
    view, start = explorer.deployments[explorer.default], explorer.start
    numbers = shown_at_start(explorer)
    prefill = view.prefill[start["prompt"]]
    answer = view.answers[start["prompt"]][start["answer"]]
    first, step, unit = answer.terms.split("|")
    answers = explorer.answer_stops[start["answer"]]
    terms = f"{first} {unit}" if answers == 1 else f"{first} {unit} + {answers - 1:,} × {step} {unit}"
    decode = view.decode[start["batch"]][start["context"]]
    scientific = {"P": view.parameters, "W": view.weight_bytes, "prefill.ops": prefill.ops_scientific,
                  "prefill.ops_per_gpu": prefill.ops_per_gpu, "decode.ops_per_gpu": decode.ops_per_gpu}
    return {**numbers, "N": f"{explorer.prompt_stops[start['prompt']]:,}",
            "B": f"{explorer.batch_stops[start['batch']]:,}", "C": f"{explorer.context_stops[start['context']]:,}",
            "cache.tokens": f"{explorer.context_stops[start['cache']]:,}",
            "L": view.layers, "d": view.attention_width, "kT": view.kv_per_gpu, "kBytes": view.kv_bytes,
            "answer.terms": terms,
            **{f"{name}.{part}": value.split("|")[index] for name, value in scientific.items()
               for index, part in enumerate("me")}}


def page_formulas(plan: Plan) -> dict[str, dict]:
    """The four blocks of "The maths" and the latency sum, each with its film formula(s) as MathML: a line of
    formulas, or a tuple of formulas set inline, which a narrow screen wraps between them."""
    spec = plan.spec
    moe = bool(spec.experts)
    blocks = {
        # "attainable FLOP/s" and its rule are two formulas in the film (one above the other): one line here,
        # which a phone breaks before the "=".
        "roofline": ((formulas.ATTAINABLE, formulas.ROOFLINE), formulas.RIDGE),
        "prefill": (formulas.PREFILL_WORK,),
        "decode": (formulas.token_time(moe, spec.gpus), formulas.bytes_per_step(moe)),
        "cache": (formulas.CACHE_SHARE,),
        "latency": (formulas.LATENCY,),
        "measured": (formulas.MEASURED_WAIT,),
    }

    def line(part) -> str:
        if isinstance(part, tuple):
            return '<p class="line">' + " ".join(mathml(each, "inline") for each in part) + "</p>"
        return mathml(part)

    def latex(part) -> str:
        return " ".join(each.latex for each in part) if isinstance(part, tuple) else part.latex

    return {name: {"mathml": "".join(line(part) for part in parts), "latex": [latex(part) for part in parts]}
            for name, parts in blocks.items()}


def compact(explorer: Explorer) -> dict:
    """The explorer as the page's script reads it: each stop a list of values in a fixed field order (named
    once), each text written once in `strings` and sent as its index there ("memory", "5.4 ms" recur thousands of
    times), so the page stays small."""
    strings: dict[str, int] = {}

    def interned(value):
        return strings.setdefault(value, len(strings)) if isinstance(value, str) else value

    def rows(items) -> list:
        return [[interned(getattr(item, name)) for name in sent_fields(item)] for item in items]

    any_view = next(iter(explorer.deployments.values()))
    views = {}
    for key, view in explorer.deployments.items():
        views[key] = {
            "gpu": view.gpu, "dtype": view.dtype, "label": view.label, "gpuName": view.gpu_name, "peak": view.peak,
            "bandwidth": view.bandwidth,
            "ridge": view.ridge, "weights": view.weights, "kv": view.kv_per_token, "memory": view.memory,
            "gpus": view.gpus, "params": view.parameters, "layers": view.layers, "width": view.attention_width,
            "kvBytes": view.kv_bytes, "weightBytes": view.weight_bytes, "kvPerGpu": view.kv_per_gpu,
            "roof": view.roof,
            "ridgePoint": view.ridge_point, "prefill": rows(view.prefill),
            "decode": [rows(row) for row in view.decode], "ridgeBatch": list(view.ridge_batch),
            "cacheToWeights": list(view.cache_to_weights), "cacheBytes": list(view.cache_bytes),
            "answers": [rows(row) for row in view.answers],
        }
    return {
        "default": explorer.default, "gpus": list(explorer.gpus), "dtypes": list(explorer.dtypes),
        "stops": {slider: explorer.stops_of(slider) for slider in SLIDERS},
        "start": explorer.start,
        "fields": {"prefill": sent_fields(any_view.prefill[0]), "decode": sent_fields(any_view.decode[0][0]),
                   "answer": sent_fields(any_view.answers[0][0])},
        "deployments": views,
        "strings": list(strings),
    }


def beat_picture_time(beat, settled: dict[str, float]) -> float:
    """When a beat's step shows it: its picture once the last thing it set moving has ended (as the render recorded),
    else half a second after its last cue, before its closing fade. A beat that ends on a still picture (the end card)
    is shown before it: its own picture, as its last spoken cue left it."""
    if beat.holds:
        settled = {cue: moment for cue, moment in settled.items() if cue not in BUILT_IN_CUES}
    if settled:
        return min(settled_time(beat, max(settled.values())), beat.end - 0.4)
    cues = sorted(at for cue, at in (beat.timing.cues if beat.timing else {}).items()
                  if not (beat.holds and cue in BUILT_IN_CUES))
    return min(max([cue for cue in cues if cue < beat.end - 0.6], default=beat.start) + 0.5, beat.end - 0.4)


def earlier_picture_time(beat, settled: dict[str, float], cue: str) -> float | None:
    """When the picture before `cue` is whole: once the last thing set moving before that cue has ended (as the render
    recorded), else just before the cue; None where the beat has no such cue."""
    cues = beat.timing.cues if beat.timing else {}
    if cue not in cues:
        return None
    earlier = [moment for name, moment in settled.items() if name in cues and cues[name] < cues[cue]]
    at = cues[cue] - 0.1
    return min(settled_time(beat, max(earlier)), at) if earlier else at


def beat_pictures(beat, settled: dict[str, float]) -> list[tuple[str, float]]:
    """The stills a beat's step shows, each (its name, its film time): the picture it replaces, if any, then its own."""
    cue = beat.step.earlier_picture if beat.step else None  # (a beat whose picture is replaced whole midway)
    earlier = earlier_picture_time(beat, settled, cue) if cue else None
    return ([(f"stills/{beat.id}-{cue}.jpg", earlier)] if earlier is not None else []) + \
        [(f"stills/{beat.id}.jpg", beat_picture_time(beat, settled))]


def tick_label(decade: float) -> str:
    """An axis decade as the film's charts write it: 0.1, 1, 10, 100, 1k, 10k, 100k, 1M."""
    if decade >= 1e6:
        return f"{decade / 1e6:g}M"
    return f"{decade / 1e3:g}k" if decade >= 1e3 else fmt.plain(decade)


def chart_axes() -> dict:
    """The chart's decade ticks, placed by the same function as its points, each also as its share of the plot (u
    across, v up: the page's script lays the chart out again, narrower, where the wide one's type would be small)."""
    low, high = INTENSITY_RANGE
    left, right = chart_point(low, FLOPS_RANGE[0])[0], chart_point(high, FLOPS_RANGE[0])[0]
    bottom, top = chart_point(low, FLOPS_RANGE[0])[1], chart_point(low, FLOPS_RANGE[1])[1]
    x_ticks, decade = [], low
    while decade <= high * 1.001:
        at = chart_point(decade, FLOPS_RANGE[0])[0]
        x_ticks.append({"at": at, "u": round((at - left) / (right - left), 4), "label": tick_label(decade)})
        decade *= 10
    y_ticks, decade = [], FLOPS_RANGE[0]
    while decade <= FLOPS_RANGE[1] * 1.001:
        at = chart_point(INTENSITY_RANGE[0], decade)[1]
        y_ticks.append({"at": at, "v": round((bottom - at) / (bottom - top), 4), "label": tick_label(decade / 1e12)})
        decade *= 10
    return {"width": CHART_WIDTH, "height": CHART_HEIGHT, "margin": CHART_MARGIN, "left": CHART_LEFT, "x": x_ticks,
            "y": y_ticks}


def page_of_film(plan: Plan, folder: Path, request: FilmRequest, build_dir: Path,
                 say: Callable[[str], None] = print) -> Path:
    """`make page`: the page of the film made for this choice (else its preview); returns its index.html."""
    film, timed = made_film(plan, folder, request, build_dir, "to make a page of")
    return write_page(timed, film, say)


def write_page(plan: Plan, film: Path, say: Callable[[str], None] = print) -> Path:
    """The page beside `film`, the explorer's grid made from the plan."""
    return make_page(plan, explorer_for(plan), film, say)


def make_page(plan: Plan, explorer: Explorer, film: Path, say: Callable[[str], None] = print) -> Path:
    """Build page/ beside `film` from the timed plan and the explorer's numbers; returns its index.html."""
    folder = film.parent
    final, work = folder / "page", folder / f".page.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "stills").mkdir(parents=True)
    try:
        link_or_copy(film, work / "film.mp4")
        vtt = folder / "film.vtt"
        captions = vtt.read_text(encoding="utf-8") if vtt.is_file() else ""
        if captions:
            link_or_copy(vtt, work / "film.vtt")
        poster = folder / "poster.png"
        if poster.is_file():
            link_or_copy(poster, work / "poster.png")
        stills: dict[str, list[tuple[str, str]]] = {}
        settled = settled_of(film)
        for index, beat in enumerate(plan.beats, 1):
            say(f"page: stills {index}/{len(plan.beats)}")
            for name, at in beat_pictures(beat, settled.get(beat.id, {})):
                media.frame_at(film, at, work / name, jpeg_quality=STILL_QUALITY)  # the film's own resolution
                stills.setdefault(beat.id, []).append((name, fmt.timestamp(round(at))))
        still_size = (0, 0)
        if stills:
            from PIL import Image

            with Image.open(work / next(iter(stills.values()))[0][0]) as first:
                still_size = first.size
        write_atomic(work / "index.html", render_page(plan, explorer, stills, captions, poster.is_file(), still_size))
        replace_folder(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final / "index.html"


# Each number the page shows (its data-show name) and the row of render/plan/meaning.py that says what it means.
PAGE_NUMBERS = {
    "peak": "spec.peak_flops", "bandwidth": "spec.memory_bandwidth", "ridge": "spec.ridge_ops_per_byte",
    "weights": "spec.weight_bytes", "kv": "spec.kv_bytes_per_token",
    "prefill.ops": "numbers.prefill.ops", "prefill.ttft": "numbers.prefill.seconds",
    "prefill.ops_per_byte": "numbers.prefill.ops_per_byte", "prefill.attention_share": "page.prefill.attention_share",
    "answer.tpot": "page.prefill.tpot", "prefill.bytes": "numbers.prefill.bytes",
    "prefill.arithmetic": "page.prefill.arithmetic", "decode.arithmetic": "page.decode.arithmetic",
    "decode.reading": "page.decode.reading",
    "decode.weights": "page.decode.weights", "decode.cache": "page.decode.cache",
    "decode.bytes_per_step": "page.decode.bytes_per_step", "decode.step": "numbers.decode.step_seconds",
    "decode.tokens_per_second": "numbers.decode.tokens_per_second",
    "decode.ops_per_byte": "numbers.decode.ops_per_byte",
    "ridgeBatch": "page.ridge_batch",
    "cacheToWeights": "page.cache_to_weights", "cache.bytes": "page.cache.bytes",
    "cache.tokens_per_second": "page.cache.tokens_per_second", "cache.batch": "page.cache.batch",
    "cache.share": "page.cache.share",
    "answer.latency": "page.answer.latency", "answer.decoding_share": "page.answer.decoding_share",
}


def shown_at_start(explorer: Explorer) -> dict[str, str]:
    """Every number of PAGE_NUMBERS as the page first shows it: the film's deployment at the controls' first
    positions (the film's own settings)."""
    view, start = explorer.deployments[explorer.default], explorer.start
    prefill = view.prefill[start["prompt"]]
    decode = view.decode[start["batch"]][start["context"]]
    answer = view.answers[start["prompt"]][start["answer"]]
    cached, alone = view.decode[start["batch"]][start["cache"]], view.decode[0][start["cache"]]  # (batch 1 first)
    values = {"peak": view.peak, "bandwidth": view.bandwidth, "ridge": view.ridge, "weights": view.weights,
              "kv": view.kv_per_token, "ridgeBatch": view.ridge_batch[start["context"]],
              "cacheToWeights": view.cache_to_weights[start["cache"]], "cache.bytes": view.cache_bytes[start["cache"]],
              "cache.tokens_per_second": alone.tokens_per_second, "cache.batch": cached.cache,
              "cache.share": cached.cache_share}
    for group, stop in (("prefill", prefill), ("decode", decode), ("answer", answer)):
        values.update({f"{group}.{name}": getattr(stop, name) for name in fields_of(stop)})
    _, step, unit = answer.terms.split("|")
    values["answer.tpot"] = f"{step} {unit}"  # (as the latency's sum writes it)
    return values


def fields_of(item) -> list[str]:
    return [field.name for field in dataclasses.fields(item)]


# What the page need not be sent of a stop: the control's own value (it has the stops) and whether it fits (`unfit`
# is empty when it does), about 75 kB of the data.
NOT_SENT = {"tokens", "batch", "context", "fits"}


def sent_fields(item) -> list[str]:
    return [name for name in fields_of(item) if name not in NOT_SENT]


def number_rows(plan: Plan, explorer: Explorer) -> list[NumberRow]:
    values = shown_at_start(explorer)
    return [number_row(plan, path, values[name], written_as=values[name], public=True)
            for name, path in PAGE_NUMBERS.items()]


def render_page(plan: Plan, explorer: Explorer, stills: dict[str, list[tuple[str, str]]], captions: str,
                has_poster: bool,
                still_size: tuple[int, int] = (1920, 1080)) -> str:
    beats = beat_views(plan)
    formulas_shown = page_formulas(plan)
    start = filled_at_start(explorer)
    for name, block in formulas_shown.items():
        block["filled"] = [(condition, filled(latex, start)) for condition, latex in FILLED[name]]
    # (the script writes any digits into the filled formulas)
    lines = [mathml for block in formulas_shown.values()
             for mathml in (block["mathml"], *(line for _, line in block["filled"]))]
    formula_characters = "".join(characters_of(mathml) for mathml in lines) + "0123456789,.×≈+="
    check_steps(plan)
    views = {beat.id: beat.step for beat in plan.beats}
    steps = []
    for number, beat in enumerate(beats, 1):
        view = views[beat["id"]]
        steps.append({"number": number, "id": beat["id"], "title": beat["title"], "start": beat["start"],
                      "clock": beat["clock"], "narration": beat["narration"], "stills": stills.get(beat["id"], []),
                      "formula": view.formula, "controls": " ".join(view.controls), "readout": view.readout,
                      "says_whose_timings": view.says_whose_timings,
                      "settings": json.dumps({**explorer.start, **explorer.steps.get(beat["id"], {})})})
    rows = number_rows(plan, explorer)
    load = load_view(plan)
    # Only what this page uses: the sources its rows cite (and the measured timings its fit shows), the words it says.
    cited = {source.kind for row in rows for source in row.sources} | {MEASURED}
    glossary = [(term, meaning) for term, meaning in GLOSSARY
                if term not in ONLY_WHEN_SPLIT_TERMS or plan.choice.gpus > 1]
    page = web.render(
        TEMPLATE, still_size=still_size, math_font=math_font_css(formula_characters), math_face=MATH_FONT,
        body_font=BODY_FONT_SLOT,
        title=plan.title, label=plan.choice.long_label, summary=plan.summary, prose=plan.prose,
        moe=bool(plan.spec.experts), duration=plan.duration,
        beats=beats, steps=steps, transcript=beats, glossary=glossary,
        sources=[source for kind, source in sources_of(plan, public=True).items() if kind in cited],
        notes=plan.notes, formulas=formulas_shown, explorer=explorer, axes=chart_axes(), has_poster=has_poster,
        rows=rows,
        gpu_names={gpu: next(v.gpu for v in explorer.deployments.values() if v.key.startswith(gpu + "/"))
                   for gpu in explorer.gpus},
        dtype_names={v.key.split("/")[2]: v.dtype for v in explorer.deployments.values()},
        data=web.script_json(compact(explorer)), captions_url=captions_url(captions),
        load=load, scheduler_colours=SCHEDULER_COLOURS,
        load_data=web.script_json({**load, "schedulers": [  # (its curves are drawn in the markup)
            {key: value for key, value in scheduler.items() if key != "points"}
            for scheduler in load.get("schedulers", ())]}),
        fit=fit_view(plan.measured.fit, plan.measured.gpu.short_name, plan.measured.ceiling_tokens_per_second,
                     public=True),
        dataset=plan.measured.dataset, measured_waits=measured_waits(plan), measured_gpu=plan.measured.gpu.name,
        measured_elsewhere=measured_elsewhere(plan))
    # The body face, cut to every character the page can show (its script's numbers and words among them)
    return page.replace(BODY_FONT_SLOT, body_font_css(page_characters(page.replace(BODY_FONT_SLOT, ""))), 1)
