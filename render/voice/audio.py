"""Audio: pydub assembles the narration, ffmpeg (through ffmpeg-python) decodes, stretches and
levels it, pyloudnorm measures loudness, scipy resamples.

Why each library: pydub is the design card's library for cutting and joining speech (silence
detection, silences, concatenation, fades, overlaying a beat onto the track); ffmpeg does what
needs a real DSP (pitch-preserving atempo, EBU R128 two-pass loudnorm, decoding any file);
pyloudnorm is a tested ITU-R BS.1770 meter for matching beats; scipy's polyphase resampler is
far cleaner than pydub's linear one when a 22.05 or 24 kHz voice goes to the film's 48 kHz.
Speech is held as 32-bit integer segments, so nothing is lost between the float voices and
the 16-bit track.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import ffmpeg
import numpy as np
from pydub import AudioSegment
from pydub.silence import detect_nonsilent, detect_silence

from render import media
from render.files import atomic_path

TRACK_RATE = 48_000
LEVELLING_VERSION = 2  # bump when level_track's processing changes
SAMPLE_WIDTH = 4       # bytes: 32-bit integer samples
FULL_SCALE = 2**31 - 1
FRAME_MS = 10          # silence detection looks at 10 ms frames


# -- between the voices' float samples and pydub ---------------------------------------------------


def segment(samples: np.ndarray, rate: int) -> AudioSegment:
    """Mono float samples in [-1, 1] as a 32-bit pydub segment."""
    scaled = np.clip(np.asarray(samples, dtype=np.float64), -1.0, 1.0) * FULL_SCALE
    return AudioSegment(np.round(scaled).astype("<i4").tobytes(), frame_rate=rate, sample_width=SAMPLE_WIDTH,
                        channels=1)


def samples_of(clip: AudioSegment) -> np.ndarray:
    """A segment's samples as mono float32 in [-1, 1]."""
    clip = clip.set_sample_width(SAMPLE_WIDTH).set_channels(1)
    return (np.frombuffer(clip.raw_data, dtype="<i4") / FULL_SCALE).astype(np.float32)


def seconds_of(clip: AudioSegment) -> float:
    """A segment's exact length (pydub's len() rounds to whole milliseconds)."""
    return int(clip.frame_count()) / clip.frame_rate


def silence(seconds: float, rate: int) -> AudioSegment:
    """Exactly round(seconds x rate) frames of silence."""
    frames = int(round(seconds * rate))
    return AudioSegment(b"\0" * (frames * SAMPLE_WIDTH), frame_rate=rate, sample_width=SAMPLE_WIDTH, channels=1)


def join(pieces: list[AudioSegment], rate: int) -> AudioSegment:
    result = silence(0, rate)
    for piece in pieces:
        result += piece
    return result


# -- cutting speech ----------------------------------------------------------------------------------


def quietest_near(clip: AudioSegment, seconds: float, within: float = 0.08, window: float = 0.005) -> float:
    """The middle of the quietest `window` within `within` seconds of `seconds`: where a cut between two words
    falls in their gap, not inside a sound (an estimated word start can be off by a syllable's part)."""
    samples, rate = samples_of(clip), clip.frame_rate
    step = max(1, int(window * rate))
    first, last = max(0, int((seconds - within) * rate)), min(len(samples) - step, int((seconds + within) * rate))
    if last <= first:
        return seconds
    energy = [float(np.sum(np.square(samples[start:start + step]))) for start in range(first, last, step)]
    return (first + int(np.argmin(energy)) * step + step / 2) / rate


@functools.lru_cache(maxsize=400)  # (by the clip's samples: the studio trims the film's clauses after every save;
                                   # about 150 of them and the words before each cue, some 100 MB at most)
def trim(clip: AudioSegment, threshold_db: float = -45.0, pad: float = 0.03) -> AudioSegment:
    """The speech in a clip, from its first to its last sound above the threshold, with a little padding."""
    spans = detect_nonsilent(clip, min_silence_len=FRAME_MS, silence_thresh=threshold_db, seek_step=FRAME_MS)
    if not spans:
        return clip[:0]
    start = max(0, spans[0][0] - int(pad * 1000))
    end = min(len(clip), spans[-1][1] + int(pad * 1000))
    return clip[start:end]


def fade_edges(clip: AudioSegment, milliseconds: int = 5) -> AudioSegment:
    """A few milliseconds of fade at each end, so a clip cut from its silence never clicks."""
    ramp = min(milliseconds, len(clip) // 2)
    return clip.fade_in(ramp).fade_out(ramp) if ramp else clip


def pauses(clip: AudioSegment, minimum: float = 0.12, threshold_db: float = -40.0) -> list[tuple[float, float]]:
    """(start, end) seconds of each quiet stretch at least `minimum` long."""
    quiet = detect_silence(clip, min_silence_len=int(minimum * 1000), silence_thresh=threshold_db,
                           seek_step=FRAME_MS)
    return [(start / 1000, end / 1000) for start, end in quiet]


def resample(clip: AudioSegment, rate: int = TRACK_RATE) -> AudioSegment:
    """To `rate` with scipy's polyphase filter (pydub's own converter is linear and audibly duller)."""
    if clip.frame_rate == rate:
        return clip
    from scipy.signal import resample_poly

    ratio = Fraction(rate, clip.frame_rate)
    return segment(resample_poly(samples_of(clip), ratio.numerator, ratio.denominator), rate)


def integrated_loudness(clip: AudioSegment) -> float:
    """ITU-R BS.1770 integrated loudness (LUFS) of a clip; -inf for silence."""
    import pyloudnorm

    rate = clip.frame_rate
    values = samples_of(clip).astype(np.float64)
    if len(values) < int(0.4 * rate):  # shorter than one gating block
        values = np.pad(values, (0, int(0.4 * rate) - len(values)))
    return float(pyloudnorm.Meter(rate).integrated_loudness(values))


# -- ffmpeg ----------------------------------------------------------------------------------------


def raw_input(rate: int):
    """ffmpeg reading 32-bit mono samples from stdin."""
    return ffmpeg.input("pipe:", format="s32le", ar=rate, ac=1)


def decode(path: Path, rate: int = TRACK_RATE) -> AudioSegment:
    """Any audio file ffmpeg reads, as mono at `rate`."""
    out, _ = media.run(ffmpeg.input(str(path)).output("pipe:", format="s32le", ac=1, ar=rate),
                       f"decoding {path}")
    return AudioSegment(out, frame_rate=rate, sample_width=SAMPLE_WIDTH, channels=1)


def time_stretch(clip: AudioSegment, tempo: float) -> AudioSegment:
    """Faster by `tempo` without changing pitch (ffmpeg's atempo), for voices with no speed control."""
    if abs(tempo - 1) < 1e-6:
        return clip
    rate = clip.frame_rate
    out, _ = media.run(raw_input(rate).filter("atempo", f"{tempo:.6f}").output("pipe:", format="s32le"),
                       "time-stretching a recording", clip.set_sample_width(SAMPLE_WIDTH).raw_data)
    return AudioSegment(out, frame_rate=rate, sample_width=SAMPLE_WIDTH, channels=1)


def level_track(track: AudioSegment, out_path: Path, lufs: float, true_peak: float) -> None:
    """Two-pass ffmpeg loudnorm (linear gain) to `lufs` with true peak below `true_peak`, as 16-bit WAV.

    The output keeps the input's exact length and is written atomically.
    """
    rate, raw = track.frame_rate, track.set_sample_width(SAMPLE_WIDTH).raw_data
    frames = int(track.frame_count())
    # Aim half a dB under the ceiling: the 16-bit quantisation and resampling can add a little.
    target = {"I": lufs, "TP": true_peak - 0.5, "LRA": 20}
    _, report = media.run(raw_input(rate).filter("loudnorm", print_format="json", **target).output("-", format="null"),
                          "measuring the narration's loudness", raw)
    measured = json.loads(re.search(r"\{[^{}]*\"input_i\"[^{}]*\}", report.decode()).group(0))
    levelled = (raw_input(rate)
                .filter("loudnorm", measured_I=measured["input_i"], measured_TP=measured["input_tp"],
                        measured_LRA=measured["input_lra"], measured_thresh=measured["input_thresh"],
                        offset=measured["target_offset"], linear="true", **target)
                .filter("aresample", rate)
                .filter("aformat", channel_layouts="mono")
                .filter("apad", whole_len=frames)
                .filter("atrim", end_sample=frames))
    with atomic_path(out_path) as temporary:
        media.run(levelled.output(str(temporary), ar=rate, acodec="pcm_s16le"), "levelling the narration", raw)


@dataclass(frozen=True)
class Loudness:
    integrated_lufs: float
    true_peak_dbtp: float


def measure_loudness(path: Path) -> Loudness:
    """ffmpeg's EBU R128 meter: integrated loudness and true peak of a file."""
    _, report = media.run(ffmpeg.input(str(path)).filter("ebur128", peak="true").output("-", format="null"),
                          f"measuring {path}")
    text = report.decode(errors="replace")
    summary = text[text.rfind("Summary:"):]
    integrated = float(re.search(r"I:\s+(-?[\d.]+|-inf) LUFS", summary).group(1))
    peak = re.search(r"Peak:\s+(-?[\d.]+|-inf) dBFS", summary).group(1)
    return Loudness(integrated, -math.inf if peak == "-inf" else float(peak))
