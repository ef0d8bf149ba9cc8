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

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import ffmpeg

from render import formatting as fmt, media
from render.errors import FilmError
from render.files import BUILD_DIR, cache_dir, display_path, link_or_copy, replace_folder, write_atomic
from render.plan.tracking import value_at
from render.plan.types import FilmRequest, Plan
from render.publish import web
from render.publish.explain import NumberRow, fit_view, number_row, sources_of
from render.publish.web import beat_views, captions_url
from render.video.settling import settled_of, settled_time

TEMPLATE = "review.html"
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


def film_to_review(folder: Path, choice_args: str, purpose: str = "to review") -> Path:
    """The film a review (or a page) is of: the film in its folder, else its preview."""
    for candidate in (folder / "film.mp4", folder / "preview" / "film.mp4"):
        if candidate.is_file():
            return candidate
    raise FilmError(f"no film {purpose} in {display_path(folder)} yet: run `make film{choice_args}` "
                    f"(or `make preview{choice_args}`) first")


def made_film(plan: Plan, folder: Path, request: FilmRequest, build_dir: Path,
              purpose: str = "to review") -> tuple[Path, Plan]:
    """The film made for this plan (else its preview) and the timed plan it was made from (the narration's cache
    answers: nothing is voiced again)."""
    from render.voice.narration import make_narration

    film = film_to_review(folder, request.make_variables, purpose)
    return film, make_narration(plan, folder, cache_dir(build_dir)).plan


def review_film(plan: Plan, folder: Path, request: FilmRequest, build_dir: Path = BUILD_DIR,
                say: Callable[[str], None] = print) -> Path:
    """`make review`: the review page of the film made for this choice; returns its index.html."""
    film, timed = made_film(plan, folder, request, build_dir)
    return make_review(timed, film, shown_numbers(timed, film), build_dir, say)


def shown_numbers(plan: Plan, film: Path) -> dict[str, list[str]]:
    """Each beat's numbers: those its scene showed (the render's shown.json beside the film) and those its words
    speak of. A damaged shown.json leaves the narration's alone."""
    shown_file = film.parent / "shown.json"
    try:
        shown = json.loads(shown_file.read_text()) if shown_file.is_file() else {}
    except ValueError:
        shown = {}
    return {beat.id: sorted({*shown.get(beat.id, []), *beat.reads}) for beat in plan.beats}


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


def still_times(beat, settled: dict[str, float] | None = None) -> list[tuple[str, float, float]]:
    """(cue, its film time, the still's film time) of each cue of a beat, in order: the review page's stills and
    the studio's are taken then. Where the render recorded when the cue's picture settles (`settled`: seconds into
    the beat), there: every count-up and swap it started has ended; else STILL_DELAY after the cue."""
    cues = sorted((beat.timing.cues if beat.timing else {}).items(), key=lambda item: item[1])
    times, landed = [], 0.0  # (seconds into the beat by which everything set moving so far has ended)
    for cue, at in cues:
        if cue == "end":
            continue
        if settled:
            # A cue that starts nothing itself (one an animation runs until) shows the picture as it is then, once
            # what earlier cues set moving has ended.
            moment = settled.get(cue, max(at - beat.start, landed))
            landed = max(landed, moment)
            still = settled_time(beat, moment)
        else:
            still = at + STILL_DELAY
        times.append((cue, at, min(still, beat.end - 0.1)))
    return times


def take_stills(plan: Plan, film: Path, work: Path, say: Callable[[str], None]) -> list[Still]:
    wanted = []
    settled = settled_of(film)
    for beat in plan.beats:
        for cue, _, at in still_times(beat, settled.get(beat.id)):
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
    rows = []
    for path in sorted(beats_of, key=lambda p: (p.split(".")[0] != "spec", p)):
        value = value_at(plan, path)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.append(number_row(plan, path, value, beats=beats_of[path]))
    return rows


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
    beats = [{**beat, "stills": [still for still in stills if still.beat == beat["id"]],
              "numbers": [row for row in rows if beat["id"] in row.beats]} for beat in beat_views(plan)]
    return web.render(
        TEMPLATE, title=plan.title, label=plan.choice.long_label, duration=plan.duration, beats=beats, rows=rows,
        others=others, notes=plan.notes, captions_missing=captions_missing, sources=sources_of(plan).values(),
        papers=plan.prose.papers,
        captions_url=captions_url(vtt), dataset=plan.measured.dataset, fit=fit_view(plan.measured.fit,
                                                                                    plan.measured.gpu.short_name,
                                                                      plan.measured.ceiling_tokens_per_second))
