"""On a Dask worker: one part of a beat drawn from its slice of the timed plan, returned as bytes.

A worker shares no folder with the client: the task receives the part (with the plan slice as JSON),
draws it into a scratch folder of its own, and returns the video's bytes with what the render found.
The client joins a beat's parts and stores the beat in its beat cache. A worker whose code differs
from the client's would fill that cache with pictures the client's key does not describe, so the
task refuses to run there.
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
from render.video import beats
from render.video.runner import Part, draw_part

PROGRESS_TOPIC = "film-beat-progress"


@dataclass(frozen=True)
class RenderedPart:
    """What a worker sends back: the part's render (its video's path is the worker's) and the video's bytes."""

    render: beats.BeatRender
    video: bytes
    on_worker: float    # seconds the task took there
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
# renders its parts one after another.
_ONE_RENDER_AT_A_TIME = threading.Lock()


def render_part_task(part: Part, client_installation: str) -> RenderedPart:
    """Draw one part of a beat on this worker and return it."""
    from distributed import get_worker

    started = time.perf_counter()
    worker = get_worker()
    here = installation()
    if here != client_installation:
        raise FilmError(f"worker {worker.address} runs {here}, but the client runs {client_installation}: "
                        f"install the same version of the project on every worker, then restart them")
    key = worker.get_current_task()

    class Progress:  # what the local runner's queue is to its processes: frames drawn, as events
        @staticmethod
        def put(report: tuple[str, int]) -> None:
            worker.log_event(PROGRESS_TOPIC, {"key": key, "frames": report[1]})

    # What this worker typesets is kept for its next parts (a beat's other part, the titles every beat shows),
    # in the worker's own folder, which Dask removes with the worker.
    kept = Path(worker.local_directory) / "film-typesetting"
    with _ONE_RENDER_AT_A_TIME, tempfile.TemporaryDirectory(prefix=f"film-{part.beat_id}-") as scratch:
        render = draw_part(part, str(Path(scratch) / f"{part.beat_id}.mp4"), str(kept), Progress)
        video = render.video.read_bytes()
    return RenderedPart(render, video, time.perf_counter() - started, worker.address)


def empty_task(number: int) -> int:
    """Nothing to do: what a task costs the scheduler, measured by `make bench`."""
    return number
