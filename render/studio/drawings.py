"""The studio's drawing processes and the problems they report: each task (a beat's stills, its clip) in a process
forked from the studio's warm process (render/studio/warm.py: Manim, the engine and the scenes loaded, each beat drawn
once), at most `jobs` at once, each result left in a file; and a problem named by the file and line it comes from."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import re
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from render.errors import FilmError
from render.files import PROJECT_ROOT, resolved
from render.plan.types import Plan
from render.studio.warm import WarmProcess
from render.video import beats


@dataclass
class Problem:
    """Something an update could not get past, as the page shows it."""
    message: str
    file: str = ""
    line: int | None = None
    beat: str = ""


def problem_from_error(error: BaseException, beat: str = "") -> Problem:
    """A problem naming the file and line it comes from: the deepest frame in the project's scenes (or, failing
    that, in the project), else what the error's message names."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [frame for frame in frames if resolved(frame.filename).is_relative_to(PROJECT_ROOT / "scenes")] \
        or [frame for frame in frames if project_file(frame.filename)]
    message = str(error) if isinstance(error, FilmError) else f"{type(error).__name__}: {error}"
    if isinstance(error, SyntaxError) and error.filename:  # (raised by an import: the frames are importlib's)
        where = Path(error.filename)
        name = os.path.relpath(where, PROJECT_ROOT) if where.is_absolute() else str(where)
        return Problem(f"SyntaxError: {error.msg}", name, error.lineno, beat)
    if ours and not isinstance(error, FilmError):
        where = ours[-1]
        return Problem(message, os.path.relpath(where.filename, PROJECT_ROOT), where.lineno, beat)
    return Problem(message, *place_named(message), beat=beat)


PROJECT_FOLDERS = ("scenes", "render", "script", "data", "tests")  # not .venv/ (the libraries), build/ or a cache


def project_file(filename: str) -> bool:
    """Whether a frame's file is one of the project's own (a library installed in .venv/ is not)."""
    path = resolved(filename)
    return any(path.is_relative_to(PROJECT_ROOT / folder) for folder in PROJECT_FOLDERS) \
        and "site-packages" not in path.parts


def place_named(message: str) -> tuple[str, int | None]:
    """The file (and line) a message names: 'script/storyboard.yaml, line 12: …' or 'data/gpus.yaml: …'."""
    found = re.search(r"([\w./-]+\.(?:yaml|yml|py|json))(?:[,:]\s*line\s+(\d+)|:(\d+))?", message)
    if not found:
        return "", None
    line = found.group(2) or found.group(3)
    return found.group(1), int(line) if line else None


# -- in the drawing processes (forked from the warm process: render/studio/warm.py) ---------------------


def draw_stills(plan_json: str, beat_id: str, times: list[float], names: list[str], quality: str, folder: str,
                cache: str) -> dict:
    try:
        plan = Plan.from_json(plan_json)
        paths = beats.render_frames(plan, beat_id, times, quality, Path(folder), names, cache=Path(cache))
        return {"stills": [path.name for path in paths]}
    except BaseException as error:  # noqa: BLE001 - shown on the page: the studio goes on
        return {"problem": asdict(problem_from_error(error, beat_id))}


def draw_clip(plan_json: str, beat_id: str, quality: str, out: str, cache: str) -> dict:
    try:
        plan = Plan.from_json(plan_json)
        render = beats.render_video(plan, beat_id, beats.quality(quality), Path(out), cache=Path(cache))
        return {"render": render}
    except BaseException as error:  # noqa: BLE001 - shown on the page
        return {"problem": asdict(problem_from_error(error, beat_id))}


def drawing_context():
    """The fork server the warm process comes from: it has Manim imported already (a second saved), and the
    handlers its preloads leave (Ctrl-C left to the studio) go to every process it forks."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["render.studio.ignore_ctrl_c", "manim", "render.video.beats"])
    return context


RESULTS = itertools.count(1)  # each drawing's result file a name of its own, whichever warm process draws it


class Drawings:
    """At most `jobs` drawings at once, one task each, each forked from the studio's warm process
    (render/studio/warm.py) and its result left in a file. No queue or lock is shared with them, so stopping one
    mid-task (Ctrl-C, newer edits) leaves nothing behind to drain."""

    def __init__(self, jobs: int, scratch: Path, warm: WarmProcess):
        self.jobs, self.scratch, self.warm = jobs, scratch, warm
        self.waiting: deque = deque()
        self.running: dict = {}  # tag -> (its key, its result file)

    def submit(self, key, task: Callable[..., dict], *args) -> None:
        self.waiting.append((key, task, args))

    def __bool__(self) -> bool:
        return bool(self.waiting or self.running)

    def start_more(self) -> None:
        while self.waiting and len(self.running) < self.jobs:
            key, task, args = self.waiting.popleft()
            result = self.scratch / f".drawing-{os.getpid()}-{next(RESULTS)}.pickle"  # (never a name used before)
            result.unlink(missing_ok=True)
            self.running[self.warm.draw(task, args, result)] = (key, result)

    def finished(self, timeout: float) -> list[tuple[object, dict]]:
        """(key, result) of each task that ended within `timeout` seconds."""
        self.start_more()
        found = []
        for tag, code in self.warm.ended(timeout):
            if tag not in self.running:
                continue  # (a drawing of an earlier update, stopped)
            key, result = self.running.pop(tag)
            try:
                found.append((key, pickle.loads(result.read_bytes())))
            except (OSError, pickle.UnpicklingError, EOFError):
                said = "the warm drawing process ended" if code is None else f"exit code {code}"
                found.append((key, {"problem": asdict(Problem(
                    f"the drawing process ended ({said}) before it finished"))}))
            result.unlink(missing_ok=True)
        self.start_more()
        return found

    def stop(self) -> None:
        """Stop the drawings under way (newer edits), and wait for them to end."""
        self.warm.stop(list(self.running))
        self.forget()

    def forget(self) -> None:
        """Nothing more to draw, and nothing kept of the drawings under way (stopped, or ended with the warm
        process)."""
        self.waiting.clear()
        for _, result in self.running.values():
            result.unlink(missing_ok=True)
        self.running.clear()
