"""On a Dask worker: one beat rendered from its slice of the timed plan, returned as bytes.

A worker shares no folder with the client: the task receives the plan slice as JSON, renders
into a scratch folder of its own, and returns the video's bytes with what the render found. The
client stores them in its beat cache. A worker whose code differs from the client's would fill
that cache with pictures the client's key does not describe, so the task refuses to run there.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from render import __version__
from render.errors import FilmError
from render.files import PROJECT_ROOT
from render.plan.types import Plan
from render.video import beats

PROGRESS_TOPIC = "film-beat-progress"
PROGRESS_EVERY = 2.0  # seconds between a task's progress events


@dataclass(frozen=True)
class RenderedBeat:
    """What a worker sends back: the beat's video and what its render found."""

    beat_id: str
    video: bytes
    frames: int
    values_read: tuple[str, ...]
    safe_area: tuple[str, ...]
    layout: tuple[str, ...]
    seconds: float      # the render itself
    started: float      # wall clock on the worker (time.time()), for the scheduler's overhead
    finished: float
    worker: str


@functools.lru_cache(maxsize=1)
def installation() -> str:
    """This installation, as the client and every worker must share it: the project's version, a
    digest of the code that draws (render/ and scenes/), and Manim's version."""
    digest = hashlib.sha256()
    for folder in ("render", "scenes"):
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            digest.update(path.relative_to(PROJECT_ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return (f"prefill-decode-film {__version__} (code {digest.hexdigest()[:12]}, "
            f"manim {importlib.metadata.version('manim')})")


# Manim's configuration belongs to the whole process: a worker started with several threads
# renders its beats one after another.
_ONE_RENDER_AT_A_TIME = threading.Lock()


def render_beat_task(plan_slice: str, beat_id: str, quality_name: str, client_installation: str) -> RenderedBeat:
    """Render one beat's pictures on this worker and return them."""
    from distributed import get_worker

    worker = get_worker()
    here = installation()
    if here != client_installation:
        raise FilmError(f"worker {worker.address} runs {here}, but the client runs {client_installation}: "
                        f"install the same version of the project on every worker, then restart them")
    started = time.time()
    plan = Plan.from_json(plan_slice, f"beat {beat_id!r}'s slice of the timed plan")
    key = worker.get_current_task()
    last_report = 0.0

    def report(frames: int, total: int) -> None:
        nonlocal last_report
        if time.monotonic() - last_report >= PROGRESS_EVERY or frames == total:
            last_report = time.monotonic()
            worker.log_event(PROGRESS_TOPIC, {"key": key, "frames": frames, "total": total})

    with _ONE_RENDER_AT_A_TIME, tempfile.TemporaryDirectory(prefix=f"film-{beat_id}-") as scratch:
        # Its parts one after another, joined as `make film` joins them: the same file as it makes.
        render = beats.render_beat_video(plan, beat_id, beats.quality(quality_name),
                                         Path(scratch) / f"{beat_id}.mp4", progress=report)
        video = render.video.read_bytes()
    return RenderedBeat(beat_id, video, render.frames, render.values_read, render.safe_area, render.layout,
                        render.seconds, started, time.time(), worker.address)


def empty_task(number: int) -> int:
    """Nothing to do: what a task costs the scheduler, measured by `make bench`."""
    return number
