"""What the studio shows and how an edit reaches it: resolve, narrate, tell which beats changed, draw them.

One update, after a save: the storyboard and data are resolved again (a bad file is a problem shown on the
page, and the last good pictures stay, marked stale); the narration is voiced again where its words changed
(cached by words, as for the film); each beat's key is compared with the one it was last drawn with, in its
three parts (the scene's code, the beat's words and timing, the plan values its scene read), and the beats
whose key changed are drawn again: their stills at every cue first, then their clip with the narration. The
drawing happens in fresh processes each update, so an edited scene is imported anew; clips go through the
build's beat cache, the one `make film` and `make preview` use.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from render import formatting as fmt
from render.errors import FilmError
from render.plan.beat_scene import scene_of
from render.plan.tracking import value_at
from render.plan.types import Plan
from render.publish.review import still_times
from render.video import beats
from render.video.cache import BeatCache, beat_slice, values_key
from render.video.sources import sources_digest
from render.studio import choosing
from render.studio.timeline import timeline
from render.studio.drawings import Drawings, Problem, draw_clip, draw_stills, drawing_context, problem_from_error
from render.studio.warm import WarmProcess

@dataclass
class BeatPanel:
    """One beat as the studio's page shows it: its panel (the scenes see a beat as render.engine.scene.BeatView)."""
    id: str
    title: str
    clock: str
    narration: str
    cues: list[dict] = field(default_factory=list)       # {name, at (s into the beat), clause}
    stills: list[dict] = field(default_factory=list)     # {cue, url}
    clip: str = ""
    numbers: list[dict] = field(default_factory=list)    # {path, value, meaning}
    status: str = "waiting"                              # waiting, drawing stills, drawing the clip, ready
    stale: bool = False                                  # what it shows is older than the files
    why: str = ""                                        # why it was last drawn again
    timing: dict = field(default_factory=dict)           # seconds from the save: {"still": …, "clip": …}
    findings: list[str] = field(default_factory=list)    # the layout lint's and the safe area's findings
    problem: dict | None = None                          # its scene failed: {message, file, line}


def key_parts(plan: Plan, beat_id: str, reads: list[str] | None) -> dict[str, str]:
    """The parts of a beat's cache key, each a short digest: what a change to each would mean. `reads`: the
    plan values its scene read when it was last drawn (None: never)."""
    return {"the scene's code": sources_digest(scene_of(beat_id).module)[:12],
            "its words or their timing": hashlib.sha256(json.dumps(beat_slice(plan, beat_id), sort_keys=True)
                                               .encode()).hexdigest()[:12],
            "the numbers it shows": values_key(plan, reads) if reads is not None else "not drawn yet"}


def why_drawn(before: dict[str, str] | None, now: dict[str, str]) -> str:
    if before is None:
        return "first look"
    changed = [name for name in now if before.get(name) != now[name]]
    return " and ".join(changed) + " changed" if changed else ""


# -- the studio ---------------------------------------------------------------------------------------------


class Studio:
    """The studio's state, and the updates that change it. `publish(kind, data)` tells the page."""

    def __init__(self, make_plan: Callable[[dict], Plan], narrate: Callable[[Plan], object], folder: Path,
                 cache_folder: Path, quality: str, focus: str | None, publish: Callable[[str, object], None],
                 jobs: int = 2):
        self.make_plan, self.narrate = make_plan, narrate
        self.folder, self.cache_folder = Path(folder), Path(cache_folder)
        self.quality = beats.quality(quality)
        self.focus, self.publish, self.jobs = focus, publish, jobs
        self.cache = BeatCache(self.cache_folder)
        self.views: dict[str, BeatPanel] = {}
        self.drawn_with: dict[str, dict[str, str]] = {}  # beat -> the key parts its pictures were drawn with
        self.reads: dict[str, list[str]] = {}             # beat -> the plan values its scene read then
        self.touched: dict[str, str | None] = {}          # beat -> the first cue whose words or time an edit changed
        self.problem: Problem | None = None
        self.asked: dict[str, object] = {}  # the deployment chosen on the page (empty: the command line's)
        self.choice: dict[str, object] = {}  # the deployment drawn, as the page's form shows it
        self.timeline: dict = {}  # the whole film's chapters, cues, subtitles and waveform (render/studio/timeline.py)
        self.last_update: dict = {}
        self.version = 0
        self.interrupted = threading.Event()  # set when newer edits wait: the update stops at its next step
        self.drawings: Drawings | None = None
        self.warm: WarmProcess | None = None  # the process each drawing is forked from (render/studio/warm.py)
        self.warmed = False                   # whether it was asked to draw each beat once, for warmth
        self.options: dict = {}               # the catalog's choices, as last loaded (kept while data/ is bad)
        (self.folder / "media").mkdir(parents=True, exist_ok=True)

    # What the page asks for when it opens.
    def state(self) -> dict:
        """Never raises: with a data file that does not load, the page gets the options it had (none, if it never
        had any) and the problem, named as an open page is shown it."""
        problem = self.problem
        try:
            self.options = choosing.options()
        except FilmError as error:
            problem = problem or problem_from_error(error)
        return {"beats": [asdict(view) for view in self.views.values()],
                "problem": problem and asdict(problem),
                "update": self.last_update, "choice": self.choice, "options": self.options,
                "timeline": self.timeline}

    def choose(self, data: object) -> dict[str, object]:
        """The page chose a deployment: checked (a bad value refused with one message), then drawn by the next
        update, which the caller starts; the update under way stops at its next step."""
        self.asked = choosing.asked_choice(data)
        self.interrupted.set()
        return self.asked

    def update(self, edited: list[str], saved_at: float) -> None:
        """Bring the page up to date with the files (see the module's note). Nothing a save holds ends the studio:
        whatever goes wrong (a syntax error, a template error, a link loop, an unreadable file) is a problem on the
        page, with its file and line, the last good pictures kept and marked stale until a good save."""
        try:
            self._update(edited, saved_at)
        except Exception as error:  # noqa: BLE001 - shown on the page; the studio goes on
            self.stop_drawing()
            self.fail(problem_from_error(error))

    def _update(self, edited: list[str], saved_at: float) -> None:
        self.publish("update", {"busy": True, "edited": edited})
        phases = {}
        plan = self.make_plan(self.asked)
        phases["resolve"] = round(time.monotonic() - saved_at, 2)
        if plan.choice.long_label != self.choice.get("label"):  # a deployment chosen on the page, or in the files
            self.choice = choosing.choice_of(plan)
            self.publish("choice", self.choice)
        narration = self.narrate(plan)
        phases["voice"] = round(time.monotonic() - saved_at, 2)
        timed = narration.plan
        self.show_timeline(timed, None)  # at once; with the waveform once the track is levelled
        if self.problem is not None:
            self.problem = None
            self.publish("problem", None)
        shown = [beat for beat in timed.beats if self.focus in (None, beat.id)]
        parts = {beat.id: key_parts(timed, beat.id, self.reads_of(timed, beat.id)) for beat in shown}
        changed = []
        for beat in shown:
            before = self.views.get(beat.id)
            view = self.view_of(timed, beat.id)
            self.touched[beat.id] = touched_cue(before.cues if before else [], view.cues)
            why = why_drawn(self.drawn_with.get(beat.id), parts[beat.id]) or ("its last drawing failed"
                                                                             if view.problem else "")
            if why:
                view.why, view.status, view.stale = why, "waiting", bool(view.stills or view.clip)
                changed.append(beat.id)
            else:  # as drawn (a broken file mended as it was): not stale after all
                view.stale = False
            self.views[beat.id] = view
            self.publish("beat", asdict(view))
        # The beats whose words changed first (an edit of the narration, or of a number it speaks), then in film order.
        changed.sort(key=lambda beat_id: self.drawn_with.get(beat_id, {}).get("its words or their timing")
                     == parts[beat_id]["its words or their timing"])
        for gone in set(self.views) - {beat.id for beat in shown}:
            del self.views[gone]
        if changed:
            self.draw(timed, narration, changed, saved_at)
        if not self.interrupted.is_set():
            self.show_timeline(timed, narration.track_ready())
        self.last_update = {"edited": edited, "drawn": changed, "seconds": round(time.monotonic() - saved_at, 2),
                            "why": {beat_id: self.views[beat_id].why for beat_id in changed if beat_id in self.views},
                            "interrupted": self.interrupted.is_set(), "phases": phases}
        self.publish("update", {"busy": False, **self.last_update})

    def show_timeline(self, plan: Plan, track: Path | None) -> None:
        made = timeline(plan, track)
        if made != self.timeline:
            self.timeline = made
            self.publish("timeline", made)

    def fail(self, problem: Problem) -> None:
        self.problem = problem
        for view in self.views.values():
            if view.stills or view.clip:
                view.stale = True
                self.publish("beat", asdict(view))
        self.publish("problem", asdict(problem))
        self.last_update = {"problem": asdict(problem)}
        self.publish("update", {"busy": False, **self.last_update})

    def view_of(self, plan: Plan, beat_id: str) -> BeatPanel:
        """The beat's view with this plan's words, cues and numbers (its pictures as they were)."""
        beat = plan.beat(beat_id)
        old = self.views.get(beat_id)
        view = BeatPanel(beat.id, beat.title, fmt.timestamp(round(beat.start)), beat.narration,
                        self.cues_of(plan, beat_id))
        if old is not None:
            for name in ("stills", "clip", "status", "stale", "why", "timing", "findings", "problem"):
                setattr(view, name, getattr(old, name))
        view.numbers = self.numbers_of(plan, beat_id)
        return view

    def cues_of(self, plan: Plan, beat_id: str) -> list[dict]:
        """Each cue, the moment its still is taken (once its picture has settled, where a render of the beat as it
        is now recorded when: review.still_times) and the words then."""
        beat = plan.beat(beat_id)
        settled = self.cache.settled(plan, beat_id, self.quality)
        return [{"name": cue, "at": round(still - beat.start, 2), "clause": clause_at(beat, at)}
                for cue, at, still in still_times(beat, settled)]

    def reads_of(self, plan: Plan, beat_id: str) -> list[str] | None:
        """What the beat's scene read when last drawn: here, or (its code and words as they are) by any render."""
        return self.reads.get(beat_id) or self.cache.known_reads(plan, beat_id, self.quality)

    def numbers_of(self, plan: Plan, beat_id: str) -> list[dict]:
        from render.publish.explain import number_row

        rows = []
        for path in self.reads_of(plan, beat_id) or []:
            value = value_at(plan, path)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                row = number_row(plan, path, value)
                rows.append({"path": path, "value": row.value, "meaning": row.meaning})
        return rows

    def draw(self, plan: Plan, narration, changed: list[str], saved_at: float) -> None:
        """The changed beats' pictures, each published when it is ready: first one still of each (the cue the edit
        touched, else its first), alone on the cores; then, beat by beat, its other stills and its clip, and the
        track's levelling."""
        plan_json = plan.to_json()
        self.drawings = drawings = Drawings(self.jobs, self.folder / "media", self.warm_process())
        if not self.warmed:  # (between its drawings, each beat's last still, for what a drawing leaves loaded)
            self.warmed = True
            self.warm.warm(plan_json, [(view.id, view.cues[-1]["at"]) for view in self.views.values() if view.cues],
                           self.quality.name, self.cache_folder)
        self.version += 1
        version = self.version
        try:
            stills_left: dict[str, int] = {}
            first, rest = self.stills_in_order(changed)
            for beat_id, cues in first:
                self.submit_stills(drawings, plan_json, beat_id, cues, str(version), stills_left)
            then, rest_ids = True, {beat_id for beat_id, _ in rest}  # the rest: sent once the first are drawn
            unvoiced: list[tuple[str, dict]] = []  # clips drawn before the track is levelled: joined to it then
            finished: dict[str, set[str]] = {beat_id: set() for beat_id in changed}
            while (drawings or unvoiced or then) and not self.interrupted.is_set():
                if then and not drawings:  # each beat's other stills, then its clip, beat by beat
                    then = False
                    others = dict(rest)
                    for beat_id in changed:
                        if beat_id in others:
                            self.submit_stills(drawings, plan_json, beat_id, others[beat_id], str(version),
                                               stills_left)
                        unvoiced += self.submit_clips(drawings, plan, plan_json, [beat_id], version)
                    narration.levelling.start()
                if drawings:
                    done = drawings.finished(timeout=0.2)
                else:
                    done = []
                    if narration.levelling.thread is not None:
                        narration.levelling.thread.join(0.2)
                for (beat_id, kind, cues), result in done:
                    if kind == "clip":
                        unvoiced.append((beat_id, result))
                        continue
                    stills_left[beat_id] -= 1
                    if not stills_left[beat_id] and not (then and beat_id in rest_ids):
                        finished[beat_id].add(kind)
                    self.finish(plan, narration, beat_id, kind, result, cues, finished[beat_id], saved_at, version)
                while unvoiced and narration.levelling.done:
                    self.voice_clip(plan, narration, drawings, plan_json, *unvoiced.pop(0), finished, saved_at, version,
                                    stills_left)
        finally:
            self.stop_drawing()

    def submit_clips(self, drawings: Drawings, plan: Plan, plan_json: str, changed: list[str],
                     version: int) -> list[tuple[str, dict]]:
        """Each changed beat's clip to a drawing process; those the beat cache has already, returned."""
        cached = []
        for beat_id in changed:
            if self.cache.lookup(plan, beat_id, self.quality) is None:
                out = self.folder / "media" / f".{beat_id}-{version}.video.mp4"
                drawings.submit((beat_id, "clip", []), draw_clip, plan_json, beat_id, self.quality.name, str(out),
                                str(self.cache_folder))
            else:
                cached.append((beat_id, {}))
        return cached

    def voice_clip(self, plan: Plan, narration, drawings: Drawings, plan_json: str, beat_id: str, result: dict,
                   finished: dict[str, set[str]], saved_at: float, version: int, stills_left: dict[str, int]) -> None:
        """A beat's clip joined to the levelled track. Its render recorded when each cue's picture settles: stills
        taken before that was known (an edited beat) are taken again there, before the beat is ready."""
        finished[beat_id].add("clip")
        view = self.views[beat_id]
        before = {cue["name"]: cue["at"] for cue in view.cues}
        # (not ready until it is known whether its stills are taken again: shown below, once)
        self.finish(plan, narration, beat_id, "clip", result, [], finished[beat_id], saved_at, version, show=False)
        moved = [cue for cue in self.cues_of(plan, beat_id) if before.get(cue["name"]) != cue["at"]]
        if moved and "problem" not in result:
            view.cues = [next((m for m in moved if m["name"] == cue["name"]), cue) for cue in view.cues]
            self.submit_stills(drawings, plan_json, beat_id, moved, f"{version}-settled", stills_left)
            finished[beat_id].discard("stills")
        if "problem" not in result:
            self.show(view, finished[beat_id])

    def stills_in_order(self, changed: list[str]) -> tuple[list, list]:
        """Each changed beat shown as drawing its stills, and the cues to draw: one of each beat first (the cue its
        edit touched, else its first), then the others."""
        first, rest = [], []
        for beat_id in changed:
            view = self.views[beat_id]
            view.status, view.timing = "drawing stills", {}
            self.publish("beat", asdict(view))
            touched = [cue for cue in view.cues if cue["name"] == self.touched.get(beat_id)] or view.cues[:1]
            if touched:
                first.append((beat_id, touched))
            others = [cue for cue in view.cues if cue not in touched]
            if others:
                rest.append((beat_id, others))
        return first, rest

    def submit_stills(self, drawings: Drawings, plan_json: str, beat_id: str, cues: list[dict], suffix: str,
                      stills_left: dict[str, int]) -> None:
        """A beat's stills at `cues` to a drawing process (their files named by beat, cue and `suffix`)."""
        names = [f"{beat_id}--{cue['name']}-{suffix}.png" for cue in cues]
        drawings.submit((beat_id, "stills", cues), draw_stills, plan_json, beat_id, [cue["at"] for cue in cues],
                        names, self.quality.name, str(self.folder / "media"), str(self.cache_folder))
        stills_left[beat_id] = stills_left.get(beat_id, 0) + 1

    def finish(self, plan: Plan, narration, beat_id: str, kind: str, result: dict, cues: list[dict],
               finished: set[str], saved_at: float, version: int, show: bool = True) -> None:
        """Show what a drawing process made of a beat (`kind`: stills, at `cues`, or its clip; `finished`: what
        of the beat is all done this update; `show`: publish its panel now, else the caller does)."""
        view = self.views[beat_id]
        if "problem" in result:
            view.problem, view.status = result["problem"], "failed"
            view.stale = bool(view.stills or view.clip)
            self.publish("beat", asdict(view))
            return
        if kind == "stills":
            made = {cue["name"]: f"media/{name}" for cue, name in zip(cues, result["stills"])}
            view.stills = self.replaced_stills(view, made, version)
            if "still" not in view.timing:  # the first of its stills (the cue the edit touched, if it touched one)
                view.timing = {**view.timing, "still": round(time.monotonic() - saved_at, 2)}
            view.problem = None
        else:
            if "render" in result:
                render = result["render"]
                self.cache.store(plan, beat_id, self.quality, render.video, list(render.values_read),
                                 dict(render.settled))
                view.findings = findings_of(render)
            video = self.cache.lookup(plan, beat_id, self.quality)
            clip = self.folder / "media" / f"{beat_id}-{version}.mp4"
            beat = plan.beat(beat_id)
            beats.mux_beat_audio(video, narration.track_ready(), beat.start, beat.duration, clip)
            self.remove_media({view.clip} - {""})
            view.clip = f"media/{clip.name}"
            view.timing = {**view.timing, "clip": round(time.monotonic() - saved_at, 2)}
            view.numbers = self.numbers_of(plan, beat_id)
            self.reads[beat_id] = self.cache.values_read(plan, beat_id, self.quality)
            self.drawn_with[beat_id] = key_parts(plan, beat_id, self.reads[beat_id])
        if show:
            self.show(view, finished)

    def replaced_stills(self, view: BeatPanel, made: dict[str, str], version: int) -> list[dict]:
        """The beat's stills with those just `made` in place, each new one with the still it replaces as its
        `before` (the page shows them side by side): the picture before this update's edit, not one this update drew
        a moment earlier (a still taken again where its picture settles keeps the first one's before)."""
        kept = {still["cue"]: still for still in view.stills}
        stills, gone = [], set()
        for name in [cue["name"] for cue in view.cues]:
            old = kept.get(name)
            if name not in made:
                stills += [old] if old else []
                continue
            before = ""
            if old:
                this_update = old["url"].endswith((f"-{version}.png", f"-{version}-settled.png"))
                before = old.get("before", "") if this_update else old["url"]
                gone |= {old["url"]} if this_update else {old.get("before", "")}
            stills.append({"cue": name, "url": made[name], "before": before})
        self.remove_media(gone - {"", *(still.get("before", "") for still in stills)})
        return stills

    def show(self, view: BeatPanel, finished: set[str]) -> None:
        """Publish a beat's panel, its status from what of it is all done this update."""
        if finished >= {"stills", "clip"}:
            view.status, view.stale = "ready", False
        else:
            view.status = "drawing the clip" if "stills" in finished else "drawing stills"
        self.publish("beat", asdict(view))

    def remove_media(self, urls: set[str]) -> None:
        for url in urls:
            (self.folder / url).unlink(missing_ok=True)

    def warm_process(self) -> WarmProcess:
        """The warm process, started again if it ended."""
        if self.warm is None or not self.warm.alive():
            if self.warm is not None:
                self.warm.close()
            self.warm, self.warmed = WarmProcess(drawing_context(), self.folder / "media"), False
        return self.warm

    def close(self) -> None:
        """The warm process ended, and the drawings with it (the studio is stopping: nothing waits for them)."""
        drawings, self.drawings = self.drawings, None
        if self.warm is not None:
            self.warm.close()
        if drawings is not None:
            drawings.forget()

    def stop_drawing(self) -> None:
        """The drawing processes gone: stopped if they are still at work (Ctrl-C, or newer edits)."""
        drawings, self.drawings = self.drawings, None
        if drawings is not None:
            drawings.stop()


def touched_cue(before: list[dict], now: list[dict]) -> str | None:
    """The first cue whose clause or time differs from before (None: none does, or the beat is new)."""
    if not before:
        return None
    earlier = {cue["name"]: (cue["clause"], cue["at"]) for cue in before}
    return next((cue["name"] for cue in now if earlier.get(cue["name"]) != (cue["clause"], cue["at"])), None)


def clause_at(beat, at: float) -> str:
    """The words being spoken at film time `at`."""
    clauses = beat.timing.clauses if beat.timing else ()
    spoken = [clause for clause in clauses if clause.start <= at + 1e-6]
    return spoken[-1].text if spoken else ""


def findings_of(render) -> list[str]:
    """A render's layout and safe-area findings, each after the scene's line that played it, where known."""
    places = dict(render.places)
    found = [(finding, finding) for finding in render.layout]
    found += [(finding, f"outside the safe area: {finding}") for finding in render.safe_area]
    return [f"{places[finding]}: {said}" if finding in places else said for finding, said in found]
