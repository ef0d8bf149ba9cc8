"""Manim's segment encoder (`VideoSegmentEncoder`) as the renderer uses it: every member of its that is not public
is read here and only here, each one listed in render/engine/internals.py's PATCHED, and the two of Manim's own
that the renderer moves on (the next frame's time, whether the segment is closed) are set through its `install`.

What the renderer keeps for a segment of its own (the picture a padded frame is copied into, a held picture's
repeats, the frames since the last key frame, the stream's skip frames) is not set on Manim's object at all: it
lives in a table beside it (`state`), gone with the encoder.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from fractions import Fraction

from render.engine.internals import install


@dataclass
class SegmentState:
    """The renderer's own bookkeeping for one of Manim's segment encoders."""

    picture: object = None           # an RGBA picture a padded frame is copied into (PyAV's VideoFrame)
    rows: object = None              # its pixels as rows of the frame's width
    held: tuple | None = None        # a held picture, converted, and how many repeats are still to write
    since_key: int = 0               # frames since the last key frame
    skip_frames: object = None       # the stream's frames that repeat the one before (h264.SkipFrames)
    skip_frames_known: bool = False  # whether skip_frames was looked for (None where the stream has none)


_states: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def state(encoder) -> SegmentState:
    """The renderer's bookkeeping for `encoder` (made at first use)."""
    found = _states.get(encoder)
    if found is None:
        found = _states[encoder] = SegmentState()
    return found


def validate(encoder, pixels, repeat: int) -> None:
    """Manim's own check of a frame handed to it (its shape and type)."""
    encoder._validate_frame(pixels, repeat)


def codec_context(encoder):
    """The stream's codec context (PyAV's): its size, pixel format, threads and x264's options."""
    return encoder._stream.codec_context


def stream(encoder):
    return encoder._stream


def packets_of(encoder, frame) -> list:
    """x264's packets for `frame` (None: whatever it still holds, drained)."""
    return encoder._stream.encode(frame)


def mux(encoder, packet) -> None:
    encoder._container.mux(packet)


def mark_closed(encoder) -> None:
    """The segment marked closed, as Manim's own finish marks it (before its last frames are written)."""
    install(encoder, "_closed", True)


def close_file(encoder) -> None:
    encoder._container.close()


def is_closed(encoder) -> bool:
    return encoder._closed


def failure(encoder, operation: str, error: BaseException) -> Exception:
    """The error Manim raises for a failed encode or finish (naming the segment)."""
    return encoder._operation_error(operation, error)


def at_start(encoder) -> bool:
    """Whether nothing has been encoded into the segment yet."""
    return encoder._next_pts == 0


def next_time(encoder) -> int:
    """The next frame's time in the segment's frames, Manim's counter moved on past it."""
    pts = encoder._next_pts
    install(encoder, "_next_pts", pts + 1)
    return pts


def time_base(encoder) -> Fraction:
    rate = encoder.spec.frame_rate
    return Fraction(rate.denominator, rate.numerator)
