"""The cues each scene waits for, read from its source, against the cues its beat marks.

A scene waits for a cue by name (`self.at("ops", ...)`, `until="two-jobs"`); the storyboard marks
it in the narration (`[[ops]]`). Both must agree, or a render would stop halfway (a cue the
storyboard no longer marks) or a marked moment would silently show nothing (a cue no scene
uses). Reading the classes' source lets `make plan` check this before anything renders.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from render.errors import FilmError
from render.files import PROJECT_ROOT, STORYBOARD_PATH
from render.plan.resolve import resolve_plan
from render.plan.beat_scene import SceneLocation, scene_of
from render.plan.types import BUILT_IN_CUES, FilmRequest, Plan
from render.code import source_bytes, source_tree
from render.memo import key_of, remembered
from render.video.sources import every_scenes_sources

CUE_METHODS = {"at", "hold_until", "cue", "seconds_until", "repeat_until"}
CUE_CODE = Path(__file__).read_bytes()  # (the cue lines' memo key: this file's way of reading them)


def cues_waited_for(entry: SceneLocation) -> frozenset[str]:
    """Every cue name the beat's class names: the first argument of at/hold_until/cue/seconds_until/repeat_until,
    and until=. Read from the file as it is now (parsed again when it changes: the studio checks an edited scene's
    cues again)."""
    return frozenset(cue_lines(entry))


def cue_lines(entry: SceneLocation) -> dict[str, int]:
    """Each cue name the beat's class names (cues_waited_for), with the first line of its file that names it: worked
    out again only when the file's bytes change (render/memo.py; the same file parsed or unreadable says so)."""
    path = PROJECT_ROOT / entry.path
    data = source_bytes(path)
    found = json.loads(remembered("cue-lines", key_of("cue-lines", CUE_CODE, entry.name, data),
                                  lambda: json.dumps(class_cue_lines(path, entry.name)).encode()))
    if found is None:
        raise FilmError(f"{entry.path} has no class {entry.name}, which draws beat {entry.beat!r} (a beat's class "
                        f"is the CamelCase of its id)")
    return found


def class_cue_lines(path: Path, name: str) -> dict[str, int] | None:
    """cue_lines, read from the parsed file (None: it has no class `name`)."""
    tree = source_tree(path)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    if name not in classes:
        return None
    lines: dict[str, int] = {}
    for node in ast.walk(classes[name]):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        named = []
        if node.func.attr in CUE_METHODS and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            named.append(node.args[0].value)
        named += [keyword.value.value for keyword in node.keywords
                  if keyword.arg == "until" and isinstance(keyword.value, ast.Constant)]
        for cue in named:
            lines[cue] = min(lines.get(cue, node.lineno), node.lineno)
    return lines


def cue_problems(plan: Plan) -> list[str]:
    problems = []
    entries = [scene_of(beat.id) for beat in plan.beats]
    every_scenes_sources(entry.module for entry in entries)  # each module they import parses (else: where not)
    for entry in entries:
        beat = plan.beat(entry.beat)
        used, marked = cue_lines(entry), set(beat.cue_offsets)
        for name in sorted(set(used) - marked - set(BUILT_IN_CUES)):  # (named where the scene waits for it)
            problems.append(f"{entry.path}:{used[name]}: beat {beat.id!r}: its scene ({entry.name}) waits for "
                            f"cue [[{name}]], which the narration ({beat.location}) does not mark")
        for name in sorted(marked - set(used)):
            problems.append(f"{beat.location}: beat {beat.id!r} marks cue [[{name}]], which its scene "
                            f"({entry.path}, {entry.name}) never uses")
    return problems


def check_cues(plan: Plan) -> None:
    """Refuse a plan whose cues and scenes disagree, before anything renders."""
    problems = cue_problems(plan)
    if problems:
        raise FilmError("\n".join(problems) + "\nMark each cue a scene waits for with [[name]] before its word, "
                        "and use or remove every marked cue.")


def film_plan(request: FilmRequest, storyboard_path: Path = STORYBOARD_PATH) -> Plan:
    """The plan of the film `request` asks for, ready to voice and draw: resolved, and refused before anything is
    voiced or drawn if its scenes and storyboard disagree on their cues (what every command renders from)."""
    if request.recordings is not None and not request.recordings.is_dir():
        raise FilmError(f"--recordings {request.recordings}: no such folder; give the folder that holds "
                        f"<beat-id>.wav or .flac recordings")
    plan = resolve_plan(request, storyboard_path=storyboard_path)
    check_cues(plan)
    return plan
