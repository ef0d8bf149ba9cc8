"""When each beat's picture settles after each of its cues: the frame from which everything the scene set moving
for the cue (a count-up, a swap, a bar's growth) has ended, ambient motion and holds aside. The scenes record it as
they render (BeatScene.moments); the beat cache keeps it with each video; beside each film, settled.json holds it for
every beat, and the poster and the pages' stills are taken there, never inside a count-up or a swap.
"""

from __future__ import annotations

import json
from pathlib import Path

SETTLED_FILE = "settled.json"  # beside a film: {beat: {cue: seconds into the beat}}
SEEK_EARLY = 0.004  # seconds: a seek lands on the first frame at or after its time, so aim a little before the frame


def settled_time(beat, moment: float) -> float:
    """The film time to seek to for the frame `moment` seconds into `beat` (that frame, not the next)."""
    return max(beat.start, beat.start + moment - SEEK_EARLY)


def settled_of(film: Path) -> dict[str, dict[str, float]]:
    """What the film's render recorded of when each beat's cues settle (settled.json beside it; empty if none)."""
    try:
        found = json.loads((Path(film).parent / SETTLED_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {beat: {cue: float(at) for cue, at in cues.items()
                   if isinstance(cue, str) and isinstance(at, (int, float)) and not isinstance(at, bool)}
            for beat, cues in found.items() if isinstance(cues, dict)}
