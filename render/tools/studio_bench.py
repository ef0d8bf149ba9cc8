"""make bench's studio edits (issue 45): how long an edit takes to reach the studio's page, warm.

A studio is started on a copy of the project (its build cache a copy of this build's: speech, typesetting, beats) at
its own quality, and left to draw its first look. Then each kind of edit is saved five times, each time a value not
saved before (nothing it draws is in a cache), as an editor saves (written beside and renamed):

    scene       a scene's spacing (a number in a beat's scene): the beat's pictures change, not its speech
    data        the H100's SM count (data/gpus.yaml): the chip drawn in three beats, not a word spoken
    narration   a word of the last beat's narration: voiced again, its cue's still and the clip drawn again

Each is timed from the save (the file renamed into place) to the moment the page is told: the first new still of
the beat the edit is about (the touched cue's, where it touched one), and that beat's new clip. The page hears the
same events (server-sent), so this is the picture on the page, less the fetch of a PNG from 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from render.files import BENCH_SCRIPT_PATH, PROJECT_ROOT, copy_project, write_atomic

QUALITY = "low"  # the studio's own
STILL_GOALS = {"scene": 0.8, "data": 0.8, "narration": 1.2}  # seconds from the save (issue 45)
CLIP_GOAL = 0.5  # the clip, after the still, within this share of the beat's length


@dataclass(frozen=True)
class Edit:
    kind: str
    file: str
    beat: str     # the beat whose still and clip are timed
    was: str      # the text replaced (each edit replaces the one before it)
    values: tuple[str, ...]
    cue: str | None = None  # the cue whose still comes first (the one the edit touches), if it touches one


@dataclass(frozen=True)
class FilmBench:
    """What make bench times on a film (script/bench.yaml, beside its storyboard): `make still` and `make scene` on one
    beat (its still `still_at` seconds in), and the studio's saves of each kind."""

    still_beat: str
    still_at: float
    edits: tuple[Edit, ...]


def film_bench(plan, path: Path = BENCH_SCRIPT_PATH) -> FilmBench:
    """The film's bench script, each beat it names one of the plan's and each kind of edit one the studio times."""
    from render.errors import FilmError
    from render.specs.yamlio import check_fields, load_yaml

    document = load_yaml(path, "what make bench times on the film")
    check_fields(document, "the film's bench", {"still": dict, "studio_edits": list})
    check_fields(document["still"], "the bench's still", {"beat": str, "at": (int, float)})
    beats = {beat.id for beat in plan.beats}
    edits = []
    for entry in document["studio_edits"]:
        check_fields(entry, "a studio edit", {"kind": str, "file": str, "beat": str, "was": str, "values": list},
                     {"cue": str})
        if entry["kind"] not in STILL_GOALS:
            raise FilmError(f"{entry.where('kind')}: a studio edit's kind is one of {', '.join(STILL_GOALS)}")
        edits.append(Edit(entry["kind"], entry["file"], entry["beat"], entry["was"],
                          tuple(str(value) for value in entry["values"]), entry.get("cue")))
    for where, beat in [(document["still"].where("beat"), document["still"]["beat"]),
                        *((entry.where("beat"), entry["beat"]) for entry in document["studio_edits"])]:
        if beat not in beats:
            raise FilmError(f"{where}: beat {beat!r} is not one of the film's: {', '.join(sorted(beats))}")
    return FilmBench(document["still"]["beat"], float(document["still"]["at"]), tuple(edits))


class Events:
    """The studio's server-sent events, each with the moment it arrived."""

    def __init__(self, address: str):
        self.queue: queue.Queue = queue.Queue()
        self.stream = urllib.request.urlopen(address + "events", timeout=600)  # noqa: S310 - the studio's own address
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        kind = None
        for raw in self.stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind:
                self.queue.put((time.monotonic(), kind, json.loads(line[6:])))

    def until(self, test, timeout: float) -> tuple[float, dict]:
        """The first event for which test(kind, data) holds: (when it came, its data)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                when, kind, data = self.queue.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit(f"bench: the studio said nothing of the kind within {timeout:.0f} s") from None
            if test(kind, data):
                return when, data


def save(path: Path, old: str, new: str) -> float:
    """An editor's save: written beside and renamed (render.files.write_atomic). The moment it is in place."""
    text = path.read_text()
    if old not in text:
        raise SystemExit(f"bench: {path} no longer holds {old!r}: the studio bench's edits need updating")
    write_atomic(path, text.replace(old, new, 1))
    return time.monotonic()


def studio_edits(folder: Path, cache: Path, plan) -> dict:
    """Five edits of each kind in a warm studio: each one's seconds from the save to its still and to its clip, and
    the medians against the goals (see the module's note). `cache`: a build cache to start from; `plan`: the film's
    (its beats' lengths)."""
    shutil.rmtree(folder, ignore_errors=True)
    project = copy_project(folder, cache)
    process = subprocess.Popen([sys.executable, "-m", "render.cli", "studio", "--quality", QUALITY, "--build",
                                str(project / "build")], cwd=project, env={**os.environ, "PYTHONPATH": str(project)},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        address = None
        while address is None:
            line = process.stdout.readline()
            if not line:
                raise SystemExit("bench: the studio ended before it served its page")
            found = re.search(r"studio: (http://127\.0\.0\.1:\d+/)", line)
            address = found and found.group(1)
        threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()  # (its lines drained)
        events = Events(address)
        started = time.monotonic()
        events.until(lambda kind, data: kind == "update" and not data.get("busy") and "(start)" in data.get("edited",
                     ()), 1800)
        results: dict = {"first look seconds": round(time.monotonic() - started, 1), "edits": {}}
        for edit in film_bench(plan).edits:
            figure = results["edits"][edit.kind] = one_kind(project, events, edit)
            after = [clip - still for still, clip in zip(figure["still seconds"], figure["clip seconds"])]
            figure.update({"still goal": STILL_GOALS[edit.kind], "beat": edit.beat,
                           "clip after still median": round(statistics.median(after), 2),
                           "clip goal": round(CLIP_GOAL * plan.beat(edit.beat).duration, 2)})
        return results
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def new_still(edit: Edit, seen: set[str]):
    """An event that shows a still of the edit's beat drawn again (at its touched cue, where it touches one) and not
    seen before."""
    def test(kind: str, data: dict) -> bool:
        return kind == "beat" and data["id"] == edit.beat and any(
            still["url"] not in seen and still.get("before") and edit.cue in (None, still["cue"])
            for still in data["stills"])
    return test


def one_kind(project: Path, events: Events, edit: Edit) -> dict:
    stills, clips, phases = [], [], []
    was, seen = edit.was, set()
    for value in edit.values:
        saved = save(project / edit.file, was, value)
        was = value
        when, data = events.until(new_still(edit, seen), 600)
        stills.append(when - saved)
        seen |= {still["url"] for still in data["stills"]}
        when, data = events.until(lambda kind, data: kind == "beat" and data["id"] == edit.beat and data["status"]
                                  == "ready", 600)
        clips.append(when - saved)
        seen |= {still["url"] for still in data["stills"]}
        _, update = events.until(lambda kind, data: kind == "update" and not data.get("busy"), 600)  # (all done)
        phases.append({**update.get("phases", {}), "still": data["timing"].get("still")})
    return {"still seconds": [round(value, 2) for value in stills],
            "studio's phases": phases,  # seconds from the moment the studio saw the save: resolved, voiced, still
            "clip seconds": [round(value, 2) for value in clips],
            "still median": round(statistics.median(stills), 2), "clip median": round(statistics.median(clips), 2)}

if __name__ == "__main__":  # (alone: python -m render.tools.studio_bench FOLDER)
    from render.plan.resolve import resolve_plan

    print(json.dumps(studio_edits(Path(sys.argv[1]), PROJECT_ROOT / "build" / "cache", resolve_plan()), indent=1))
