"""The qualities a beat renders at, and how its video is encoded: what the renderer, its cache and the film all key
on (a module of its own, so the cache reads it without the renderer)."""

from __future__ import annotations

from dataclasses import dataclass

from render.errors import FilmError


@dataclass(frozen=True)
class Quality:
    name: str
    width: int
    height: int
    fps: int


QUALITIES = {
    # Tests: review size (text lays out differently at very small sizes) at a low frame rate.
    "tiny": Quality("tiny", 854, 480, 3),
    "low": Quality("low", 854, 480, 15),        # review
    "medium": Quality("medium", 1280, 720, 30),
    "high": Quality("high", 1920, 1080, 60),    # the film
}

# x264 as measured against a lossless render of the film's own frames (its first beat and its batching, 1080p60, one
# thread; SSIM / PSNR, encoder CPU-seconds for those 30 s): ultrafast at CRF 28 scores 0.99964 / 56.0 dB and
# 0.99864 / 51.0 dB for 10.5 s, where superfast at CRF 23 (the choice before) scored 0.99944 / 52.5 dB and
# 0.99834 / 49.0 dB for 16.4 s, and Manim's default (medium, CRF 23) 0.99932 and 0.99832 for about 32 s: a
# third less CPU than superfast, at 1.7 times its bytes (the film: 20 MB -> 36 MB). veryfast scored lower
# (0.99646 on batching). One thread: with x264's sliced threads the same frames now and then encoded to
# different bytes, and a film made twice (or on another machine) must be the same file.
# x264's "stitchable": every segment's picture parameter set the same whatever its CRF (x264 would write the CRF
# in it), so a held picture's segment (HELD_CRF) joins the others under the one set an MP4 declares.
ENCODER = {"threads": "1", "preset": "ultrafast", "crf": "28", "x264-params": "stitchable=1"}
# A still hold's picture is encoded once and repeated by frames that skip every macroblock (frames.py), where
# x264 spent a whole frame's work on each repeat, refining the picture a little each time. So the held picture
# is encoded finer, at the CRF that leaves every hold at least as close to the drawn pixels as the refinement
# did. Measured (PSNR of each hold's last frame against its drawn pixels in YUV, x264 repeating -> one picture at
# CRF 24 / 22): its last beat at 1080p60 52.5 -> 53.7 / 55.6 dB, at the tests' tiny size 52.9 -> 51.4 / 53.3 dB,
# decode at 480p15 51.9 -> 50.4 / 52.3 dB. The last beat at 1080p60 against a lossless render, all frames: SSIM
# 0.99885 -> 0.99913, PSNR 50.7 -> 52.0 dB, 3.55 -> 3.57 MB; its render 35 -> 27 CPU-seconds.
HELD_CRF = "22"


def quality(name: str) -> Quality:
    if name not in QUALITIES:
        raise FilmError(f"unknown quality {name!r}; use one of: {', '.join(QUALITIES)}")
    return QUALITIES[name]
