"""Reads and validates script/storyboard.yaml: the film's beats, timings and parameters."""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from render.errors import FilmError
from render.files import STORYBOARD_PATH, display_path
from render.formatting import timestamp as format_timestamp
from render.plan.beat_scene import BEAT_ID, scene_of, scene_problem
from render.plan.templating import compile_template
from render.plan.types import DEFAULT_CUT, LoadParameters, NarrationSettings, Parameters, parse_voice
from render.specs.fields import as_float, bounds_of, choices_of, yaml_keys
from render.specs.yamlio import YamlMap, check_fields, kept_while_unchanged, load_yaml
from render.text import echo

TOP_FIELDS = {"film": dict, "defaults": dict, "parameters": dict, "narration": dict, "beats": list}
TOP_OPTIONAL = {"cuts": dict}
CUT_FIELDS = {"after": str, "beats": list}
CUT_OPTIONAL = {"load": dict}
CUT_BEAT_FIELDS = {"id": str, "title": str, "length": (str, int, float), "narration": str}
CUT_BEAT_LENGTH = (5.0, 120.0)  # seconds: a beat, not a pause or a film
CUT_LENGTH = 600.0              # the most a cut adds
FILM_FIELDS = {"title": str, "end": (str, int, float), "source": str, "summary": str}
DEFAULT_FIELDS = {"gpu": str, "model": str, "dtype": str, "measured": str}
BEAT_FIELDS = {"id": str, "title": str, "start": (str, int, float), "narration": str}
BEAT_OPTIONAL = {"captions": dict, "holds": str, "scene": str}  # scene: no longer needed (said once, then ignored)

log = logging.getLogger("film")

MAX_FILM_SECONDS = 3600  # an explainer; the track and every beat's frames are held in memory
TIMESTAMP = re.compile(r"^(?:(\d{1,6}):)?(\d{1,6}):(\d{2}(?:\.\d{1,9})?)$")


@dataclass(frozen=True)
class StoryBeat:
    id: str
    title: str
    start: float
    end: float
    narration: str            # the template, unfilled
    captions: dict[str, str]  # on-screen sentences, templates too
    where: dict[str, str]     # file:line of its "id", "narration" and each caption, for messages
    holds: str | None = None  # a still picture the beat means to end on (the end card), said so


@dataclass(frozen=True)
class Cut:
    """Another cut of the film (the storyboard's cuts.<name>): beats inserted after one of the film's, each as long
    as it says (their starts count from the cut's point); the beats after them move on by as much."""

    name: str
    after: str                        # the beat they follow
    beats: tuple[StoryBeat, ...]
    load: LoadParameters              # the stream of requests its beats simulate (the plan's `load` group)
    where: str                        # file:line of the cut, for messages
    load_where: str = ""              # file:line of its load

    @property
    def length(self) -> float:
        return sum(beat.end - beat.start for beat in self.beats)


@dataclass(frozen=True)
class Storyboard:
    title: str
    end: float
    source: str
    defaults: dict[str, str]
    parameters: Parameters
    narration: NarrationSettings  # recordings as written, relative to the project
    beats: tuple[StoryBeat, ...]
    path: Path
    locations: dict[str, str] = field(default_factory=dict)  # parameter -> file:line
    summary: str = ""  # a template, as a narration is: the film in a sentence, for its page and description
    cuts: dict[str, Cut] = field(default_factory=dict)  # the other cuts it defines, by name
    cut: Cut | None = None  # the cut this storyboard is (with_cut), None: the film as the transcript times it

    def where(self, key: str) -> str:
        return self.locations.get(key, display_path(self.path))

    @property
    def cut_names(self) -> tuple[str, ...]:
        return (DEFAULT_CUT, *self.cuts)

    def with_cut(self, name: str | None) -> Storyboard:
        """The storyboard of a cut: its beats after the one it names, the later beats and the film's end moved on by
        their length. None or 'default': this storyboard, the film as the transcript times it."""
        if self.cut is not None:
            if name == self.cut.name:
                return self
            raise FilmError(f"--cut {echo(name)}: this storyboard is already its {self.cut.name!r} cut")
        if name in (None, DEFAULT_CUT):
            return self
        if name not in self.cuts:
            example = f" (CUT={next(iter(self.cuts))})" if self.cuts else ""
            raise FilmError(f"--cut {echo(name)}: {display_path(self.path)} defines the cuts "
                            f"{', '.join(self.cut_names)}{example}; give one of them")
        cut = self.cuts[name]
        position = [beat.id for beat in self.beats].index(cut.after)
        at, length = self.beats[position].end, cut.length
        inserted = [replace(beat, start=beat.start + at, end=beat.end + at) for beat in cut.beats]
        later = [replace(beat, start=beat.start + length, end=beat.end + length) for beat in self.beats[position + 1:]]
        return replace(self, beats=(*self.beats[:position + 1], *inserted, *later), end=self.end + length, cut=cut)


def parse_timestamp(value: str | int | float, where: str, what: str) -> float:
    """'1:07' or '0:01:07' or a number of seconds -> seconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # YAML 1.1 reads an unquoted 2:34 as the base-60 integer 154, which is already seconds.
        seconds = as_float(value)
    else:
        match = TIMESTAMP.match(str(value).strip())
        if not match:
            raise FilmError(f"{where}: {what}: {echo(value)} is not a timestamp; write minutes:seconds, e.g. \"1:07\"")
        hours, minutes, secs = match.groups()
        if float(secs) >= 60:
            raise FilmError(f"{where}: {what}: {echo(value)} has {secs} seconds; seconds must be below 60")
        seconds = int(hours or 0) * 3600 + int(minutes) * 60 + float(secs)
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_FILM_SECONDS):
        raise FilmError(f"{where}: {what}: {echo(value)} is not a time in an explainer film; write one from "
                        f"0:00 to {MAX_FILM_SECONDS // 60}:00")
    return seconds


@kept_while_unchanged(lambda path=STORYBOARD_PATH: [path])
def load_storyboard(path: Path = STORYBOARD_PATH) -> Storyboard:
    path = Path(path)
    document = load_yaml(path, "a storyboard (script/storyboard.yaml is the film's)")
    name = display_path(path)
    if not isinstance(document, YamlMap):
        raise FilmError(f"{name}: expected a mapping with film, defaults, parameters and beats")
    check_fields(document, "the storyboard", TOP_FIELDS, TOP_OPTIONAL)
    film, defaults, parameters = document["film"], document["defaults"], document["parameters"]
    check_fields(film, "film", FILM_FIELDS)
    check_fields(defaults, "defaults", DEFAULT_FIELDS)
    check_parameters(parameters)
    narration = document["narration"]
    check_fields(narration, "narration", *yaml_keys(NarrationSettings))
    check_narration(narration)
    try:
        parse_voice(narration["voice"])
    except FilmError as error:
        raise error.with_prefix(f"{narration.where('voice')}: narration: ") from None
    film_end = parse_timestamp(film["end"], film.where("end"), "film end")
    compile_template(film["summary"], film.where("summary"), "film summary")
    beats = story_beats(document, film_end)
    cuts = {name: story_cut(name, cut, beats) for name, cut in (document.get("cuts") or {}).items()}

    locations = {key: parameters.where(key) for key in parameters}
    locations.update({f"defaults.{key}": defaults.where(key) for key in defaults})
    locations.update({f"narration.{key}": narration.where(key) for key in narration})
    locations["film.summary"] = film.where("summary")
    return Storyboard(film["title"], film_end, film["source"], dict(defaults),
                      Parameters(**{**parameters, "roofline_pills": tuple(parameters["roofline_pills"])}),
                      NarrationSettings(**{key: float(value) if key not in ("voice", "recordings") else value
                                           for key, value in narration.items()}),
                      tuple(beats), path, locations, film["summary"], cuts)


def story_cut(name: str, cut: YamlMap, film_beats: list[StoryBeat]) -> Cut:
    """cuts.<name>: where its beats go, their lengths (5 s to 2 min each, at most 10 min in all), their templates
    checked as the film's are, their ids unique in the film; its load's fields within their ranges."""
    label = f"cut {echo(name, 60)}"
    if name == DEFAULT_CUT or not BEAT_ID.fullmatch(str(name)):
        raise FilmError(f"{cut.where() if isinstance(cut, YamlMap) else 'cuts'}: {label}: a cut's name is lower-case "
                        f"words joined by hyphens (extended), and not {DEFAULT_CUT!r} (the film as timed)")
    check_fields(cut, label, CUT_FIELDS, CUT_OPTIONAL)
    ids = [beat.id for beat in film_beats]
    if cut["after"] not in ids or cut["after"] == ids[-1]:
        raise FilmError(f"{cut.where('after')}: {label}: after must name one of the film's beats but its last "
                        f"({', '.join(ids[:-1])}), not {echo(cut['after'])}")
    if not cut["beats"]:
        raise FilmError(f"{cut.where('beats')}: {label} has no beats")
    beats, start = [], 0.0
    for index, beat in enumerate(cut["beats"]):
        beat_label = f"{label} beat {echo(beat.get('id', index + 1), 60)}" if isinstance(beat, dict) else \
            f"{label} beat {index + 1}"
        check_fields(beat, beat_label, CUT_BEAT_FIELDS, {"captions": dict})
        if beat["id"] in ids:
            raise FilmError(f"{beat.where('id')}: {beat_label}: the film already has a beat {beat['id']!r}; give "
                            f"the cut's beat an id of its own")
        ids.append(beat["id"])
        check_scene(beat, beat_label)
        length = parse_timestamp(beat["length"], beat.where("length"), f"{beat_label} length")
        low, high = CUT_BEAT_LENGTH
        if not low <= length <= high:
            raise FilmError(f"{beat.where('length')}: {beat_label}: length {echo(beat['length'])} is "
                            f"{length:g} seconds; give a beat from {low:g} to {high:g} seconds")
        compile_template(beat["narration"], beat.where("narration"), f"{beat_label} narration")
        captions = beat.get("captions") or {}
        for caption, template in captions.items():
            compile_template(str(template), captions.where(caption), f"{beat_label} caption {caption!r}")
        where = {"id": beat.where("id"), "narration": beat.where("narration"),
                 **{key: captions.where(key) for key in captions}}
        beats.append(StoryBeat(beat["id"], beat["title"], start, start + length, beat["narration"],
                               {key: str(value) for key, value in captions.items()}, where))
        start += length
    if start > CUT_LENGTH:
        raise FilmError(f"{cut.where('beats')}: {label} adds {start:g} seconds; a cut adds at most "
                        f"{CUT_LENGTH:g}")
    load, load_where = LoadParameters(), cut.where()
    if "load" in cut:  # (each field left out is film load's default)
        load_map, load_where = cut["load"], cut.where("load")
        check_fields(load_map, f"{label} load", *yaml_keys(LoadParameters))
        for key, (low, high, unit) in bounds_of(LoadParameters).items():
            if key in load_map and (load_map[key] is None or not low <= load_map[key] <= high):
                raise FilmError(f"{load_map.where(key)}: {label} load: {key} must be from {low:,} to {high:,}"
                                f"{' ' + unit if unit else ''}, not {echo(load_map[key])}")
        load = LoadParameters(**load_map)
    return Cut(name, cut["after"], tuple(beats), load, cut.where("after"), load_where)


def check_parameters(parameters: YamlMap) -> None:
    """The film's parameters: known fields, each within its range, the roofline's pills GPU ids."""
    check_fields(parameters, "parameters", *yaml_keys(Parameters))
    if parameters.get("embedding_reads") not in (None, *choices_of(Parameters, "embedding_reads")):
        raise FilmError(f"{parameters.where('embedding_reads')}: parameters: embedding_reads must be table (a step "
                        f"reads every weight, the source's convention) or rows (only its tokens' rows of the input "
                        f"embedding table), not {echo(parameters['embedding_reads'])}")
    if not all(isinstance(pill, str) for pill in parameters["roofline_pills"]):
        raise FilmError(f"{parameters.where('roofline_pills')}: parameters: roofline_pills should be a list of "
                        f"GPU ids, e.g. [a100-sxm-80gb, rtx-4090]")
    for key, (low, high, _unit) in bounds_of(Parameters).items():
        value = parameters[key]
        if not low <= value <= high:
            written = f"{value:,}" if abs(value) < 1e18 else echo(value)  # (a 400-digit number, clipped)
            raise FilmError(f"{parameters.where(key)}: parameters: {key} must be from {low:,} to {high:,}, "
                            f"not {written}")


def story_beats(document: YamlMap, film_end: float) -> list[StoryBeat]:
    """The beats, each checked (its fields, a unique id, its templates), in time order within the film; each ends
    where the next starts, the last at the film's end."""
    beats_list = document["beats"]
    if not beats_list:
        raise FilmError(f"{document.where('beats')}: the storyboard has no beats")
    raw = []
    seen: dict[str, str] = {}
    for index, beat in enumerate(beats_list):
        label = f"beat {echo(beat.get('id', index + 1), 60)}" if isinstance(beat, dict) else f"beat {index + 1}"
        check_fields(beat, label, BEAT_FIELDS, BEAT_OPTIONAL)
        if beat["id"] in seen:
            raise FilmError(f"{beat.where('id')}: {label} is defined twice (first at {seen[beat['id']]})")
        seen[beat["id"]] = beat.where("id")
        check_scene(beat, label)
        start = parse_timestamp(beat["start"], beat.where("start"), f"{label} start")
        compile_template(beat["narration"], beat.where("narration"), f"{label} narration")
        captions = beat.get("captions") or {}
        for caption, template in captions.items():
            if not isinstance(template, str):
                raise FilmError(f"{captions.where(caption)}: {label}: caption {echo(caption)} should be text")
            compile_template(template, captions.where(caption), f"{label} caption {caption!r}")
        raw.append((beat, label, start, dict(captions)))
    scene_lines_said([beat for beat, *_ in raw if "scene" in beat])
    check_beat_order(raw, film_end, document["film"])
    beats = []
    for position, (beat, _label, start, captions) in enumerate(raw):
        end = raw[position + 1][2] if position + 1 < len(raw) else film_end
        where = {"id": beat.where("id"), "narration": beat.where("narration")}
        where.update({name: beat["captions"].where(name) for name in captions})
        beats.append(StoryBeat(beat["id"], beat["title"], start, end, beat["narration"],
                               captions, where, beat.get("holds")))
    return beats


def scene_lines_said(named: list) -> None:
    """A beat is drawn by the module its id names: a storyboard's 'scene:' lines are said once, for every beat."""
    if named:
        example, more = scene_of(named[0]["id"]), len(named) - 1
        others = f" (and {more} more beat{'s' * (more > 1)})" if more else ""
        log.warning(f"{named[0].where('scene')}{others}: 'scene:' is no longer needed: a beat is drawn by the class "
                    f"its id names ({example.beat!r}: {example.name} in {example.path}); delete the line")


def check_beat_order(raw: list, film_end: float, film: YamlMap) -> None:
    """The first beat starts at 0:00, each after the one before, every one before the film's end."""
    previous_start, previous_label = None, None
    for beat, label, start, _ in raw:
        if previous_start is None and start != 0:
            raise FilmError(f"{beat.where('start')}: {label} is the first beat and must start at 0:00, "
                            f"not {beat['start']}")
        if previous_start is not None and start <= previous_start:
            raise FilmError(
                f"{beat.where('start')}: {label} starts at {beat['start']}, not after {previous_label} "
                f"({format_timestamp(previous_start)}); beats must be in time order"
            )
        if start >= film_end:
            raise FilmError(
                f"{beat.where('start')}: {label} starts at {beat['start']}, at or past the film's end "
                f"({film['end']}, {film.where('end')})"
            )
        previous_start, previous_label = start, label


def check_scene(beat: YamlMap, label: str) -> None:
    """The beat's id names a module of scenes/ and a class in it (render/plan/beat_scene.py)."""
    if not BEAT_ID.fullmatch(beat["id"]):
        raise FilmError(f"{beat.where('id')}: {label}: an id is lower-case words joined by hyphens "
                        f"('my-new-beat'), at most 60 characters: it names the module that draws the beat")
    problem = scene_problem(beat["id"])
    if problem:
        raise FilmError(f"{beat.where('id')}: {label} has no scene: {problem}")


def check_narration(narration: YamlMap) -> None:
    """Settings that would make fitting meaningless."""
    for key, (low, high, _unit) in bounds_of(NarrationSettings).items():
        if not low <= narration[key] <= high:
            raise FilmError(f"{narration.where(key)}: narration: {key} must be between {low} and {high}, "
                            f"not {echo(narration[key])}")


