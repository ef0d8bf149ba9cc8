"""`make page`: the film's publishable page, beside the film, with the maths a reader can move.

    build/<film folder>/page/
        index.html      the film (chapters, captions), a summary in the film's numbers, "The maths" (each
                        formula typeset as MathML from the film's own LaTeX, its symbols, a worked example
                        that follows the controls), the controls (prompt, batch, cached-context and answer
                        sliders; GPU and data-type pills), the roofline chart, the transcript, the words
                        you will hear and the sources; readable step by step, a beat a step
        film.mp4, film.vtt, poster.png, stills/<beat>.jpg

Every number on it was computed by the roofline module and written by the project's formatter
(render/plan/explorer.py) when the page was built; its script only looks them up. It opens from disk
or any static host and makes no network request. The folder is built aside and swapped in whole.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Callable

import jinja2
from latex2mathml.converter import convert as latex_to_mathml

from render import formatting as fmt, formulas, media
from render.files import replace_folder, write_atomic
from render.plan.explorer import CHART_HEIGHT, CHART_MARGIN, CHART_WIDTH, FLOPS_RANGE, INTENSITY_RANGE, Explorer, \
    chart_point
from render.plan.types import Plan
from render.publish.kit import summary
from render.publish.review import link_or_copy, sources_of
from scenes import style

TEMPLATE = Path(__file__).with_name("page.html")
STILL_WIDTH = 640

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

# What each beat's step shows beside its still: its formula and the controls it needs.
STEP_FORMULAS = {"two-waits": "latency", "prefill": "prefill", "decode": "decode", "roofline": "roofline",
                 "batching": "decode", "wasted-money": "prefill", "measured": "latency",
                 "cache-rides-along": "cache", "two-budgets": "latency"}
STEP_CONTROLS = {"two-waits": ("answer",), "prefill": ("prompt",), "decode": ("pills",), "roofline": ("pills",),
                 "batching": ("batch",), "wasted-money": ("pills", "prompt"), "measured": ("prompt",),
                 "cache-rides-along": ("context",), "two-budgets": ("pills", "prompt", "batch")}


def mathml(formula: formulas.Formula) -> str:
    """The formula as MathML, from exactly the LaTeX the film typesets it from, coloured part by part."""
    latex = " ".join(tex if role == formulas.TEXT else rf"{{\color{{{style.ROLE_COLOURS[role]}}}{tex}}}"
                     for tex, role in formula.parts)
    return latex_to_mathml(latex, display="block")


def page_formulas(plan: Plan) -> dict[str, dict]:
    """The four blocks of "The maths" and the latency sum, each with its film formula(s) as MathML."""
    spec = plan.spec
    moe = bool(spec.experts)
    blocks = {
        # "attainable FLOP/s" and its rule are two formulas in the film (one above the other): one line here.
        "roofline": (formulas.Formula(formulas.ATTAINABLE.parts + formulas.ROOFLINE.parts), formulas.RIDGE),
        "prefill": (formulas.PREFILL_WORK,),
        "decode": (formulas.token_time(moe, spec.gpus), formulas.bytes_per_step(moe)),
        "cache": (formulas.CACHE_SHARE,),
        "latency": (formulas.LATENCY,),
    }
    return {name: {"mathml": "".join(mathml(part) for part in parts), "latex": [part.latex for part in parts]}
            for name, parts in blocks.items()}


def compact(explorer: Explorer) -> dict:
    """The explorer as the page's script reads it: each stop a list of values in a fixed field order (named
    once), so the page stays small."""
    def rows(items) -> list:
        return [[getattr(item, name) for name in fields_of(item)] for item in items]

    def fields_of(item) -> list[str]:
        return [field.name for field in dataclasses.fields(item)]

    any_view = next(iter(explorer.deployments.values()))
    views = {}
    for key, view in explorer.deployments.items():
        views[key] = {
            "gpu": view.gpu, "dtype": view.dtype, "label": view.label, "gpuName": view.gpu_name, "peak": view.peak,
            "bandwidth": view.bandwidth,
            "ridge": view.ridge, "weights": view.weights, "kv": view.kv_per_token, "roof": view.roof,
            "ridgePoint": view.ridge_point, "prefill": rows(view.prefill),
            "decode": [rows(row) for row in view.decode], "ridgeBatch": list(view.ridge_batch),
            "answers": [rows(row) for row in view.answers],
        }
    return {
        "default": explorer.default, "gpus": list(explorer.gpus), "dtypes": list(explorer.dtypes),
        "stops": {"prompt": explorer.prompt_stops, "batch": explorer.batch_stops, "context": explorer.context_stops,
                  "answer": explorer.answer_stops},
        "start": explorer.start,
        "fields": {"prefill": fields_of(any_view.prefill[0]), "decode": fields_of(any_view.decode[0][0]),
                   "answer": fields_of(any_view.answers[0][0])},
        "deployments": views,
    }


def chart_axes() -> dict:
    """The chart's decade ticks, placed by the same function as its points."""
    low, high = INTENSITY_RANGE
    x_ticks, decade = [], low
    while decade <= high * 1.001:
        x_ticks.append({"at": chart_point(decade, FLOPS_RANGE[0])[0], "label": fmt.plain(decade)})
        decade *= 10
    y_ticks, decade = [], FLOPS_RANGE[0]
    while decade <= FLOPS_RANGE[1] * 1.001:
        y_ticks.append({"at": chart_point(INTENSITY_RANGE[0], decade)[1], "label": fmt.teraflops(decade, short=True)})
        decade *= 10
    return {"width": CHART_WIDTH, "height": CHART_HEIGHT, "margin": CHART_MARGIN, "x": x_ticks, "y": y_ticks}


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
        stills = {}
        for index, beat in enumerate(plan.beats, 1):
            say(f"page: stills {index}/{len(plan.beats)}")
            cues = sorted((beat.timing.cues if beat.timing else {}).values())
            at = min(max([cue for cue in cues if cue < beat.end - 0.6], default=beat.start) + 0.5, beat.end - 0.4)
            name = f"stills/{beat.id}.jpg"
            media.frame_at(film, at, work / name, width=STILL_WIDTH)
            stills[beat.id] = name
        write_atomic(work / "index.html", render_page(plan, explorer, stills, captions, poster.is_file()))
        replace_folder(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final / "index.html"


def render_page(plan: Plan, explorer: Explorer, stills: dict[str, str], captions: str, has_poster: bool) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE.parent), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    view = explorer.deployments[explorer.default]
    steps = []
    for number, beat in enumerate(plan.beats, 1):
        steps.append({"number": number, "id": beat.id, "title": beat.title, "start": beat.start,
                      "narration": beat.narration, "still": stills.get(beat.id, ""),
                      "formula": STEP_FORMULAS.get(beat.id, "latency"),
                      "controls": " ".join(STEP_CONTROLS.get(beat.id, ()))})
    transcript = [{"title": beat.title, "clock": fmt.timestamp(round(beat.start)),
                   "clauses": [{"text": clause.text, "start": clause.start}
                               for clause in (beat.timing.clauses if beat.timing else ())]}
                  for beat in plan.beats]
    palette = {name.lower(): getattr(style, name) for name in
               ("BACKGROUND", "TEXT", "MUTED", "COMPUTE", "MEMORY", "IDLE", "KV_CACHE", "HIGHLIGHT", "PANEL")}
    return env.get_template(TEMPLATE.name).render(
        title=plan.title, label=plan.choice.long_label, summary=summary(plan), duration=plan.duration,
        beats=plan.beats, steps=steps, transcript=transcript, glossary=GLOSSARY, sources=sources_of(plan).values(),
        notes=plan.notes, formulas=page_formulas(plan), view=view, explorer=explorer, axes=chart_axes(),
        palette=palette, font=style.FONT_PREFERENCE[0], has_poster=has_poster,
        gpu_names={gpu: next(v.gpu for v in explorer.deployments.values() if v.key.startswith(gpu + "/"))
                   for gpu in explorer.gpus},
        dtype_names={v.key.split("/")[2]: v.dtype for v in explorer.deployments.values()},
        data=json.dumps(compact(explorer), separators=(",", ":")),
        captions_url="data:text/vtt;base64," + base64.b64encode(captions.encode("utf-8")).decode("ascii")
        if captions else "")
