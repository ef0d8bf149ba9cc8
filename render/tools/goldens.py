"""`make goldens`: the stored stills a test compares every beat's pictures with.

One small still per cue of every beat of the default film, taken just after the cue's change
has landed, rendered at the tests' size and frame rate and kept in tests/goldens/. A picture
that changes fails `make test` until the stills are made again with this command and the new
ones are looked at (they are PNGs: open them, or `git diff` shows which changed).

    film goldens [--out tests/goldens]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from render.files import PROJECT_ROOT, atomic_path, cache_dir
from render.plan.types import Plan

GOLDENS_DIR = PROJECT_ROOT / "tests" / "goldens"
QUALITY = "tiny"            # the tests' render: 854x480 at 3 fps
SIZE = (428, 240)           # stored at half size: enough to see a layout change, small in the repository
SETTLE = 1.0                # seconds after a cue, when its change has landed


def golden_moments(plan: Plan) -> dict[str, list[tuple[str, float]]]:
    """Per beat, (name, seconds into the beat) of each still: one a cue, and the end of its speech."""
    moments = {}
    for beat in plan.beats:
        cues = sorted(beat.timing.cues.items(), key=lambda item: item[1])
        cues.append(("speech-end", beat.timing.speech_end))
        moments[beat.id] = [(name, min(time - beat.start + SETTLE, beat.duration - 0.5)) for name, time in cues]
    return moments


def render_goldens(plan: Plan, out_dir: Path, either_side: int = 0) -> list[Path]:
    """The stills of every beat, at half size, as <beat>--<cue>.png in `out_dir`; with `either_side`, also the
    frames that many before and after each, as <beat>--<cue>~-1.png and ~+1.png (see matching_golden)."""
    from PIL import Image

    from render.video.beats import quality, render_frames

    frame = 1 / quality(QUALITY).fps
    shifts = range(-either_side, either_side + 1)
    written = []
    with tempfile.TemporaryDirectory(prefix="goldens-") as work:
        for beat_id, moments in golden_moments(plan).items():
            last = plan.beat(beat_id).duration - frame
            wanted = [(f"{beat_id}--{name}{f'~{shift:+d}' if shift else ''}.png",
                       min(max(at + shift * frame, 0.0), last)) for name, at in moments for shift in shifts]
            frames = render_frames(plan, beat_id, [at for _, at in wanted], QUALITY, Path(work),
                                   [name for name, _ in wanted])
            for frame_path, (name, _) in zip(frames, wanted):
                with atomic_path(Path(out_dir) / name) as temporary:
                    still = Image.open(frame_path).convert("RGB").resize(SIZE, Image.LANCZOS)
                    still.quantize(colors=64).save(temporary, format="PNG", optimize=True)  # small in the repository
                written.append(Path(out_dir) / name)
    return written


def grey(path: Path):
    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(path).convert("L"), dtype=float)


def golden_difference(stored: Path, rendered: list[Path]) -> float:
    """How far a stored still is from the closest of the frames rendered at its moment and beside it (mean absolute
    difference of grey levels, out of 255). The moment of a change is a cue's time rounded to a frame, and the voice
    on another CPU may speak a few milliseconds longer or shorter: a frame either side is the same picture, a layout
    change differs from all three."""
    import numpy as np

    old = grey(stored)
    return min(float(np.abs(grey(path) - old).mean()) for path in rendered)


def default_timed_plan(build: Path) -> Plan:
    """The default film's timed plan, narrated with the default voice (no recordings)."""
    from render.plan.resolve import resolve_plan
    from render.voice.narration import make_narration

    plan = resolve_plan(recordings=build / "no-recordings")
    return make_narration(plan, build, cache_dir(PROJECT_ROOT / "build")).plan


def make_goldens(out_dir: Path | None = None) -> list[Path]:
    """The default film narrated in a scratch folder, and its stills in `out_dir` (tests/goldens) in place of the
    old ones."""
    out_dir = Path(out_dir or GOLDENS_DIR)
    with tempfile.TemporaryDirectory(prefix="goldens-build-") as build:
        plan = default_timed_plan(Path(build))
        for old in out_dir.glob("*.png"):
            old.unlink()
        return render_goldens(plan, out_dir)
