"""`make review`: a page to check a finished film in a browser, opened from disk with no network.

    build/<film folder>/review/
        index.html      the player (WebVTT captions, chapters), the transcript, each beat's stills at
                        its cues with its narration and numbers, the numbers table (value, formula,
                        inputs, sources) and links to the other films under build/
        film.mp4, film.vtt, stills/<beat>--<cue>.jpg

Stills are frames of the finished film at each cue (not drawn again). The folder is built aside
and swapped in whole, so a failed review leaves the previous one as it was.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import ffmpeg
import jinja2

from render import formatting as fmt, media
from render.errors import FilmError
from render.files import BUILD_DIR, replace_folder, write_atomic
from render.plan.tracking import value_at
from render.plan.types import Plan
from render.publish.explain import EXPLANATIONS, Explanation
from render.specs.yamlio import display_path

TEMPLATE = Path(__file__).with_name("review.html")
STILL_WIDTH = 480
STILL_DELAY = 0.5  # seconds after a cue: what the voice names has appeared


@dataclass
class Still:
    beat: str
    cue: str
    at: float
    file: str           # relative to the review folder
    alt: str
    missing: str = ""   # why it could not be taken, shown on the page


@dataclass
class NumberRow:
    path: str
    meaning: str
    value: str          # as the film writes it
    exact: str          # every digit
    formula: str
    inputs: list[tuple[str, str]]
    sources: list[Source]
    beats: list[str] = field(default_factory=list)


def film_to_review(folder: Path, choice_args: str, purpose: str = "to review") -> Path:
    """The film a review (or a page) is of: the film in its folder, else its preview."""
    for candidate in (folder / "film.mp4", folder / "preview" / "film.mp4"):
        if candidate.is_file():
            return candidate
    raise FilmError(f"no film {purpose} in {display_path(folder)} yet: run `make film{choice_args}` "
                    f"(or `make preview{choice_args}`) first")


def make_review(plan: Plan, film: Path, shown: dict[str, list[str]], build_dir: Path = BUILD_DIR,
                say: Callable[[str], None] = print) -> Path:
    """Build the review folder beside `film` from the timed plan; returns its index.html."""
    folder = film.parent
    vtt = folder / "film.vtt"
    final = folder / "review"
    work = folder / f".review.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    (work / "stills").mkdir(parents=True)
    try:
        link_or_copy(film, work / "film.mp4")
        captions_missing = not vtt.is_file()
        if not captions_missing:
            link_or_copy(vtt, work / "film.vtt")
        stills = take_stills(plan, film, work, say)
        page = render_page(plan, stills, number_rows(plan, shown), variants(folder, final, build_dir),
                           captions_missing, vtt.read_text(encoding="utf-8") if not captions_missing else "")
        write_atomic(work / "index.html", page)
        replace_folder(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final / "index.html"


def link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def take_stills(plan: Plan, film: Path, work: Path, say: Callable[[str], None]) -> list[Still]:
    wanted = []
    for beat in plan.beats:
        cues = sorted((beat.timing.cues if beat.timing else {}).items(), key=lambda item: item[1])
        for cue, at in cues:
            if cue in ("end",):
                continue
            at = min(at + STILL_DELAY, beat.end - 0.1)
            name = f"stills/{beat.id}--{cue}.jpg"
            wanted.append(Still(beat.id, cue, at, name, f"{beat.title} at {fmt.timestamp(round(at, 1))}, "
                                                         f"when the voice reaches '{cue}'"))
    for index, still in enumerate(wanted, 1):
        say(f"review: stills {index}/{len(wanted)}")
        try:
            media.run(ffmpeg.input(str(film), ss=f"{still.at:.3f}")
                      .output(str(work / still.file), vframes=1, vf=f"scale={STILL_WIDTH}:-2", **{"q:v": 4})
                      .overwrite_output(), f"taking the still of {still.beat} at {still.cue}")
        except FilmError as error:
            still.missing = str(error)
        if not (work / still.file).is_file() and not still.missing:
            still.missing = "the film has no frame there"
    return wanted


def number_rows(plan: Plan, shown: dict[str, list[str]]) -> list[NumberRow]:
    """Every number a beat speaks or shows, with where it comes from."""
    beats_of: dict[str, list[str]] = {}
    for beat_id, paths in shown.items():
        for path in paths:
            beats_of.setdefault(path, []).append(beat_id)
    rows, sources = [], sources_of(plan)
    for path in sorted(beats_of, key=lambda p: (p.split(".")[0] != "spec", p)):
        value = value_at(plan, path)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        explanation = EXPLANATIONS.get(path) or Explanation("", "", (), ())
        rows.append(NumberRow(
            path, explanation.meaning, written(value, explanation.unit, path), exact(value), explanation.formula,
            [(name, written(value_at(plan, name), EXPLANATIONS[name].unit if name in EXPLANATIONS else "", name))
             for name in explanation.inputs],
            [sources[kind] for kind in explanation.sources], beats_of[path]))
    return rows


READABLE = {
    "FLOP/s": lambda v: fmt.teraflops(v, short=True), "bytes/s": lambda v: fmt.bandwidth(v, short=True),
    "seconds": lambda v: fmt.duration(v, short=True), "tokens/s": lambda v: fmt.tokens_per_second(v, short=True),
    "operations/byte": lambda v: fmt.ops_per_byte(v, short=True),
    "operations": lambda v: f"{fmt.large(v)} operations", "parameters": lambda v: f"{fmt.large(v)} parameters",
    "bytes": lambda v: fmt.gigabytes(v, short=True) if v >= 1e8 else f"{fmt.count(v)} bytes",
    "tokens": lambda v: f"{fmt.count(v)} tokens", "users": lambda v: f"{fmt.count(v)} users",
    "experts": lambda v: f"{fmt.approx(v)} experts",
}


def written(value, unit: str, path: str = "") -> str:
    """A value as the film writes it ('989 TFLOP/s', '34 ms', '13%', '3.2×')."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if unit in READABLE:
        return READABLE[unit](value)
    if path.endswith(("_fraction", "_utilisation", "slowdown", "kv_ratio")):
        return fmt.percent(value, short=True)
    if path.endswith(("_ratio", "_speedup", "speedup")):
        return fmt.times(value, short=True)
    return fmt.plain(fmt.significant(value, 3))


def exact(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) or float(value).is_integer() else f"{value:.6g}"


@dataclass(frozen=True)
class Source:
    kind: str
    label: str    # short: "H100 SXM datasheet"
    text: str     # the data's whole citation
    url: str      # its first link, if it has one


def sources_of(plan: Plan) -> dict[str, Source]:
    """Where each kind of input comes from, as data/ and the storyboard cite it."""
    choice, dataset = plan.choice, plan.measured.dataset
    cited = {
        "gpu": (f"{choice.gpu.name} datasheet", choice.gpu.source),
        "compare_gpu": (f"{choice.compare_gpu.name} datasheet", choice.compare_gpu.source),
        "interconnect": (f"{choice.gpu.name} interconnect", choice.gpu.interconnect_source),
        "model": (f"{choice.model.name} config", choice.model.source),
        "dtype": (f"{choice.dtype.name} format", choice.dtype.source),
        "storyboard": ("the storyboard", "script/storyboard.yaml: the film's parameters (prompt lengths, batch)"),
        "measured": (f"measured: {dataset.provider}", f"{dataset.path}: {dataset.source}"
                     + (f" (measured {dataset.measured_on})" if dataset.measured_on else "")),
    }
    found = {}
    for kind, (label, text) in cited.items():
        text = " ".join(text.split())
        link = URL.search(text)
        found[kind] = Source(kind, label, text, link.group(0).rstrip(".,;)") if link else "")
    return found


URL = re.compile(r"https?://[^\s,;]+")


def variants(folder: Path, final: Path, build_dir: Path) -> list[dict]:
    """Every other film under build/, linked relative to this review."""
    found = []
    for film in sorted(build_dir.glob("**/film.mp4")):
        parts = film.relative_to(build_dir).parts
        if film.parent == folder or any(part in ("review", "cache") or part.startswith(".") for part in parts):
            continue  # this film, copies inside review pages, the cache, scratch folders (a review being built)
        review = film.parent / "review" / "index.html"
        target = review if review.is_file() else film
        found.append({"name": display_path(film.parent), "href": os.path.relpath(target, final),
                      "has_review": review.is_file()})
    return found


def render_page(plan: Plan, stills: list[Still], rows: list[NumberRow], others: list[dict],
                captions_missing: bool, vtt: str) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE.parent), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    beats = []
    for beat in plan.beats:
        timing = beat.timing
        beats.append({
            "id": beat.id, "title": beat.title, "start": beat.start, "end": beat.end,
            "clock": fmt.timestamp(round(beat.start)), "narration": beat.narration,
            "clauses": [{"text": clause.text, "start": clause.start, "clock": fmt.timestamp(round(clause.start, 1))}
                        for clause in (timing.clauses if timing else ())],
            "stills": [still for still in stills if still.beat == beat.id],
            "numbers": [row for row in rows if beat.id in row.beats],
        })
    return env.get_template(TEMPLATE.name).render(
        title=plan.title, label=plan.choice.long_label, duration=plan.duration, beats=beats, rows=rows,
        others=others, notes=plan.notes, captions_missing=captions_missing, sources=sources_of(plan).values(),
        # Inline: a page opened from disk may not fetch film.vtt beside it (file: URLs are their own origin).
        captions_url="data:text/vtt;base64," + base64.b64encode(vtt.encode("utf-8")).decode("ascii"),
        dataset=plan.measured.dataset)
