"""The narration's track: each beat's speech (Speech: its clip and clause times) at its place in one film-long
track, the beats matched in loudness, levelled to the storyboard's loudness (EBU R128), and the film's AAC sound
made from it; each made once for the same speeches (a key file beside it), and made at once or on a thread of its own
while the film's beats render."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydub import AudioSegment

from render import media
from render.files import record_made, up_to_date
from render.plan.types import Plan
from render.voice import audio

log = logging.getLogger("film")

# Beats are matched in loudness this far under the target, so no peak clips before the
# track is levelled to the target as a whole.
MATCHING_HEADROOM_DB = 10.0

FILM_SOUND = "film-sound.m4a"
FILM_SOUND_BITRATE = "192k"


@dataclass
class Speech:
    """One beat's speech before it is placed in the film, and times from its first sample."""

    clip: AudioSegment
    clause_spans: list[tuple[float, float]]
    offset_times: dict[int, float] = field(default_factory=dict)  # character offset -> seconds

    @property
    def seconds(self) -> float:
        return audio.seconds_of(self.clip)


class Levelling:
    """The track being assembled and levelled: at once, or (`start`) on a thread of its own while a film's beats
    render. A daemon thread, so Ctrl-C never waits for it (its ffmpeg dies with the process, and the track is
    written whole or not at all). Started only once the render workers are forked: a process forked while
    another thread holds a lock would start with that lock held for good."""

    def __init__(self, work: Callable[[], None]):
        self.work = work
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        self.done = False

    def start(self) -> None:
        if self.thread is None and not self.done:
            self.thread = threading.Thread(target=self._run, daemon=True, name="levelling")
            self.thread.start()

    def _run(self) -> None:
        try:
            self.work()
        except BaseException as error:  # noqa: BLE001 - handed to whoever waits for the track
            self.error = error
        self.done = True

    def wait(self) -> None:
        """The track made: waited for if it is being made on its thread, made here if it was never started."""
        if self.thread is not None:
            while self.thread.is_alive():  # in steps: a Ctrl-C another thread received is acted on at the next
                self.thread.join(0.25)
        elif not self.done:
            self.work()
            self.done = True
        if self.error is not None:
            raise self.error


def level_once(plan: Plan, speeches: dict[str, Speech], out_path: Path, lufs: float, true_peak: float) -> None:
    """Assemble and level the track unless the same speeches, at the same places, were levelled into
    `out_path` already (a rerun, or a look at a beat, changes nothing and costs a hash of the speeches)."""
    recipe = hashlib.sha256(f"{lufs}:{true_peak}:{audio.LEVELLING_VERSION}:{MATCHING_HEADROOM_DB}:{plan.duration!r}"
                            .encode())
    for beat in plan.beats:
        clip = speeches[beat.id].clip
        recipe.update(f"{beat.id}:{beat.timing.speech_start!r}:{clip.frame_rate}:{clip.sample_width}:".encode())
        recipe.update(hashlib.sha256(clip.raw_data).digest())
    key_file = out_path.with_name(f".{out_path.name}.key")
    if up_to_date(out_path, key_file, recipe.hexdigest()):
        log.info("%s is up to date", out_path.name)
        return
    key_file.unlink(missing_ok=True)
    audio.level_track(assemble_track(plan, speeches), out_path, lufs, true_peak)
    record_made(out_path, key_file, recipe.hexdigest())


def encode_film_sound(track: Path, out_path: Path, duration: float) -> None:
    """The film's AAC sound from the levelled track, unless made from this very track already."""
    track_key = track.with_name(f".{track.name}.key")
    recipe = hashlib.sha256(f"{FILM_SOUND_BITRATE}:{duration!r}:".encode() + track_key.read_bytes()).hexdigest()
    key_file = out_path.with_name(f".{out_path.name}.key")
    if up_to_date(out_path, key_file, recipe):
        return
    key_file.unlink(missing_ok=True)
    media.encode_sound(track, out_path, duration, FILM_SOUND_BITRATE)
    record_made(out_path, key_file, recipe)


def assemble_track(plan: Plan, speeches: dict[str, Speech]) -> AudioSegment:
    """The film-long track at 48 kHz, each beat's speech at its place, beats matched in loudness."""
    rate = audio.TRACK_RATE
    track = audio.silence(plan.duration, rate)
    target = plan.narration.loudness_lufs - MATCHING_HEADROOM_DB
    for beat in plan.beats:
        speech = audio.resample(speeches[beat.id].clip, rate)
        loudness = audio.integrated_loudness(speech)
        if loudness > -70:
            speech = speech.apply_gain(target - loudness)
        track = track.overlay(speech, position=beat.timing.speech_start * 1000)
    return track
