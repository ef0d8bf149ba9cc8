"""Audio plumbing: ffmpeg for decoding, time-stretching and loudness; numpy for the rest."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from render.errors import FilmError

TRACK_RATE = 48_000
LEVELLING_VERSION = 1  # bump when level_track's processing changes


def ffmpeg() -> str:
    path = shutil.which("ffmpeg")
    if path is None:
        raise FilmError("ffmpeg is not installed; run `make setup` (as root it installs it with apt-get), "
                        "or: sudo apt-get install ffmpeg")
    return path


def run_ffmpeg(args: list[str], input_bytes: bytes | None = None, what: str = "ffmpeg") -> subprocess.CompletedProcess:
    result = subprocess.run([ffmpeg(), "-hide_banner", "-nostdin", *args], input=input_bytes,
                            capture_output=True, check=False)
    if result.returncode != 0:
        tail = result.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise FilmError(f"{what} failed (ffmpeg exit {result.returncode}): {' / '.join(tail)}")
    return result


def decode(path: Path, rate: int = TRACK_RATE) -> np.ndarray:
    """Any audio file ffmpeg reads -> mono float32 at `rate`."""
    result = run_ffmpeg(["-i", str(path), "-ac", "1", "-ar", str(rate), "-f", "f32le", "-"],
                        what=f"decoding {path}")
    return np.frombuffer(result.stdout, dtype="<f4").astype(np.float32)


def resample(audio: np.ndarray, from_rate: int, to_rate: int = TRACK_RATE) -> np.ndarray:
    if from_rate == to_rate:
        return audio.astype(np.float32)
    from scipy.signal import resample_poly

    ratio = Fraction(to_rate, from_rate)
    return resample_poly(audio, ratio.numerator, ratio.denominator).astype(np.float32)


def time_stretch(audio: np.ndarray, rate: int, tempo: float) -> np.ndarray:
    """Faster by `tempo` without changing pitch (ffmpeg's atempo), for voices with no speed control."""
    if abs(tempo - 1) < 1e-6:
        return audio
    result = run_ffmpeg(["-f", "f32le", "-ar", str(rate), "-ac", "1", "-i", "-", "-af", f"atempo={tempo:.6f}",
                         "-f", "f32le", "-"], audio.astype("<f4").tobytes(), what="time-stretching a recording")
    return np.frombuffer(result.stdout, dtype="<f4").astype(np.float32)


def frame_levels(audio: np.ndarray, rate: int, frame_seconds: float = 0.01) -> np.ndarray:
    """RMS level of each 10 ms frame, in dBFS."""
    frame = max(1, int(rate * frame_seconds))
    usable = audio[: len(audio) // frame * frame].reshape(-1, frame)
    rms = np.sqrt(np.mean(usable.astype(np.float64) ** 2, axis=1))
    return 20 * np.log10(np.maximum(rms, 1e-10))


def speech_span(audio: np.ndarray, rate: int, threshold_db: float = -45.0, pad: float = 0.03) -> tuple[int, int]:
    """First and last sample of speech (frames above the threshold), with a little padding."""
    levels = frame_levels(audio, rate)
    loud = np.nonzero(levels > threshold_db)[0]
    if loud.size == 0:
        return 0, 0
    frame = int(rate * 0.01)
    start = max(0, loud[0] * frame - int(pad * rate))
    end = min(len(audio), (loud[-1] + 1) * frame + int(pad * rate))
    return start, end


def trim(audio: np.ndarray, rate: int) -> np.ndarray:
    start, end = speech_span(audio, rate)
    return audio[start:end]


def fade_edges(audio: np.ndarray, rate: int, seconds: float = 0.005) -> np.ndarray:
    """A few milliseconds of fade at each end, so a clip cut from its silence never clicks."""
    ramp = min(len(audio) // 2, int(rate * seconds))
    if ramp == 0:
        return audio
    shaped = audio.copy()
    window = np.linspace(0, 1, ramp, dtype=np.float32)
    shaped[:ramp] *= window
    shaped[-ramp:] *= window[::-1]
    return shaped


def pauses(audio: np.ndarray, rate: int, minimum: float = 0.12, threshold_db: float = -40.0) -> list[tuple[float, float]]:
    """(start, end) seconds of each quiet stretch at least `minimum` long."""
    quiet = frame_levels(audio, rate) <= threshold_db
    found, run_start = [], None
    for index, is_quiet in enumerate([*quiet, False]):
        if is_quiet and run_start is None:
            run_start = index
        elif not is_quiet and run_start is not None:
            if (index - run_start) * 0.01 >= minimum:
                found.append((run_start * 0.01, index * 0.01))
            run_start = None
    return found


def integrated_loudness(audio: np.ndarray, rate: int) -> float:
    """ITU-R BS.1770 integrated loudness (LUFS) of a clip; -inf for silence."""
    import pyloudnorm

    if len(audio) < int(0.4 * rate):  # shorter than one gating block
        audio = np.pad(audio, (0, int(0.4 * rate) - len(audio)))
    return float(pyloudnorm.Meter(rate).integrated_loudness(audio.astype(np.float64)))


def level_track(audio: np.ndarray, out_path: Path, lufs: float, true_peak: float, rate: int = TRACK_RATE) -> None:
    """Two-pass ffmpeg loudnorm (linear gain) to `lufs` with true peak below `true_peak`, 16-bit WAV.

    The output keeps the input's exact length, written to a temporary file and renamed.
    """
    raw = audio.astype("<f4").tobytes()
    source = ["-f", "f32le", "-ar", str(rate), "-ac", "1", "-i", "-"]
    # Aim half a dB under the ceiling: the 16-bit quantisation and resampling can add a little.
    target = f"I={lufs}:TP={true_peak - 0.5}:LRA=20"
    first = run_ffmpeg([*source, "-af", f"loudnorm={target}:print_format=json", "-f", "null", "-"], raw,
                       what="measuring the narration's loudness")
    measured = json.loads(re.search(r"\{[^{}]*\"input_i\"[^{}]*\}", first.stderr.decode()).group(0))
    chain = (f"loudnorm={target}:measured_I={measured['input_i']}:measured_TP={measured['input_tp']}:"
             f"measured_LRA={measured['input_lra']}:measured_thresh={measured['input_thresh']}:"
             f"offset={measured['target_offset']}:linear=true,aresample={rate},aformat=channel_layouts=mono,"
             f"apad=whole_len={len(audio)},atrim=end_sample={len(audio)}")
    temporary = out_path.with_name(f".{out_path.name}.tmp.wav")
    try:
        run_ffmpeg([*source, "-af", chain, "-ar", str(rate), "-c:a", "pcm_s16le", "-y", str(temporary)], raw,
                   what="levelling the narration")
        temporary.replace(out_path)
    finally:
        temporary.unlink(missing_ok=True)


@dataclass(frozen=True)
class Loudness:
    integrated_lufs: float
    true_peak_dbtp: float


def measure_loudness(path: Path) -> Loudness:
    """ffmpeg's EBU R128 meter: integrated loudness and true peak of a file."""
    result = run_ffmpeg(["-i", str(path), "-af", "ebur128=peak=true", "-f", "null", "-"],
                        what=f"measuring {path}")
    text = result.stderr.decode(errors="replace")
    summary = text[text.rfind("Summary:"):]
    integrated = float(re.search(r"I:\s+(-?[\d.]+|-inf) LUFS", summary).group(1))
    peak = re.search(r"Peak:\s+(-?[\d.]+|-inf) dBFS", summary).group(1)
    return Loudness(integrated, -math.inf if peak == "-inf" else float(peak))
