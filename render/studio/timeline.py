"""The studio's timeline of the whole film: the beats as chapters, each cue where it is spoken, the subtitles' text,
and the narration's waveform, all from the timed plan and the track (what the page draws; nothing is typed here)."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from render.plan.types import Plan

WAVEFORM_POINTS = 1000  # peaks across the film: a point every 0.15 s of a 2:34 film, finer than a pixel at 1280 px


def timeline(plan: Plan, track: Path | None) -> dict:
    """Chapters, cues and subtitles in seconds into the film, and the waveform's peaks (0 to 1, empty without a
    track)."""
    return {
        "duration": plan.duration,
        "beats": [{"id": beat.id, "title": beat.title, "start": beat.start, "end": beat.end,
                   "cues": [{"name": name, "at": round(at, 3)} for name, at in
                            sorted((beat.timing.cues if beat.timing else {}).items(), key=lambda item: item[1])]}
                  for beat in plan.beats],
        "subtitles": [{"start": round(cue.start, 3), "end": round(cue.end, 3), "text": " ".join(cue.lines)}
                      for cue in plan.subtitles],
        "peaks": waveform(track, plan.duration) if track is not None else [],
    }


def waveform(track: Path, duration: float, points: int = WAVEFORM_POINTS) -> list[float]:
    """The track's loudest sample in each of `points` equal spans of the film, as a share of the loudest of all."""
    with wave.open(str(track), "rb") as reader:
        width, channels, rate = reader.getsampwidth(), reader.getnchannels(), reader.getframerate()
        frames = reader.readframes(min(reader.getnframes(), int(rate * duration) + rate))
    kinds = {2: np.int16, 4: np.int32}  # (the track is 16-bit; a 32-bit one is read as well)
    if width not in kinds:
        return []
    samples = np.abs(np.frombuffer(frames, kinds[width]).astype(np.float64).reshape(-1, channels).mean(axis=1))
    spans = np.array_split(samples, points) if len(samples) >= points else [samples]
    peaks = np.array([span.max() if len(span) else 0.0 for span in spans])
    loudest = peaks.max() if len(peaks) else 0.0
    return [round(float(peak / loudest), 3) for peak in peaks] if loudest > 0 else [0.0] * len(peaks)
