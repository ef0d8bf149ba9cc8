"""Narration: the plan's lines voiced, fitted to the beats' slots and levelled; the timed plan.

For each beat the narration is split into clauses, each clause is synthesised on its own
(cached), trimmed and joined with fixed pauses, so every clause's start and end come from
the audio itself. A cue inside a clause is timed by synthesising the clause's words up to
it. Speech starts at the beat's start plus the lead-in and must end a gap before the next
beat; a beat that is too long is sped up (the engine's own speed control) up to the
storyboard's maximum tempo, and past that it is an error that names the beat and the overrun.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from render import audio
from render.atomic import write_text_atomic
from render.errors import FilmError
from render.formatting import timestamp
from render.plan import Plan, PlannedBeat
from render.pronunciation import spoken_form
from render.speech import RECORDED, SpeechCache, SpeechEngine, get_engine, parse_voice
from render.subtitles import Subtitle, TextUnit, clauses, pack, text_units, to_srt, to_vtt

log = logging.getLogger("film")

RECORDING_SUFFIXES = (".wav", ".flac")
FIT_MARGIN = 1.005  # ask the engine for a little more speed than the arithmetic says


@dataclass(frozen=True)
class TimedClause:
    text: str
    start: float  # seconds into the film
    end: float


@dataclass(frozen=True)
class BeatNarration:
    """A beat's voice: where its speech lies in the film and when each cue is spoken."""

    id: str
    start: float
    end: float
    speech_start: float
    speech_end: float
    tempo: float
    source: str                  # "hibari:heart" or the recording's path
    cues: dict[str, float]       # cue name -> seconds into the film
    clauses: tuple[TimedClause, ...]
    subtitles: tuple[Subtitle, ...]
    latest_end: float            # the speech must end by here (the next beat less the gap)

    @property
    def speech_seconds(self) -> float:
        return self.speech_end - self.speech_start

    @property
    def headroom(self) -> float:
        return self.latest_end - self.speech_end

    def to_dict(self) -> dict:
        return {"speech_start": self.speech_start, "speech_end": self.speech_end, "tempo": self.tempo,
                "voice": self.source, "cue_times": self.cues,
                "clauses": [vars(clause) for clause in self.clauses]}


@dataclass(frozen=True)
class TimedPlan:
    """The plan plus, for each beat, when its speech starts and ends and when its cues are spoken."""

    plan: Plan
    beats: tuple[BeatNarration, ...]
    voice: str

    def beat(self, beat_id: str) -> BeatNarration:
        return next(beat for beat in self.beats if beat.id == beat_id)

    @property
    def subtitles(self) -> list[Subtitle]:
        return [cue for beat in self.beats for cue in beat.subtitles]

    def to_dict(self) -> dict:
        data = self.plan.to_dict()
        data["narration"] = {**data["narration"], "voice": self.voice}
        for beat_data, beat in zip(data["beats"], self.beats):
            beat_data.update(beat.to_dict())
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


@dataclass
class Speech:
    """One beat's speech before it is placed in the film: samples and times from its first sample."""

    samples: np.ndarray
    rate: int
    clause_spans: list[tuple[float, float]]
    offset_times: dict[int, float] = field(default_factory=dict)  # character offset -> seconds

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.rate


class Narrator:
    """Voices a plan's beats with one engine (and any recordings), sharing one cache."""

    def __init__(self, plan: Plan, cache_dir: Path):
        self.plan = plan
        self.settings = plan.narration
        self.cache = SpeechCache(cache_dir / "speech")
        engine_name, voice = parse_voice(self.settings["voice"])
        self.all_recorded = engine_name == RECORDED
        # A recorded beat is timed against a synthetic reading of the same words.
        self.engine: SpeechEngine = get_engine("hibari" if self.all_recorded else engine_name,
                                               None if self.all_recorded else voice)
        self.recordings = Path(self.settings["recordings"])
        self.speeches: dict[str, Speech] = {}  # beat id -> its fitted speech, for the track

    @property
    def voice_label(self) -> str:
        return RECORDED if self.all_recorded else self.engine.label

    def recording_for(self, beat: PlannedBeat) -> Path | None:
        for suffix in RECORDING_SUFFIXES:
            path = self.recordings / f"{beat.id}{suffix}"
            if path.is_file():
                return path
        return None

    def narrate(self) -> TimedPlan:
        missing = [beat.id for beat in self.plan.beats if self.recording_for(beat) is None]
        if self.all_recorded and missing:
            raise FilmError(
                f"VOICE=recorded needs a recording of every beat; missing in {self.recordings}: "
                f"{', '.join(f'{beat_id}.wav' for beat_id in missing)} (or .flac)"
            )
        timed = tuple(self.narrate_beat(beat, index) for index, beat in enumerate(self.plan.beats))
        return TimedPlan(self.plan, timed, self.voice_label)

    # -- one beat -----------------------------------------------------------------------------

    def narrate_beat(self, beat: PlannedBeat, index: int) -> BeatNarration:
        settings = self.settings
        speech_start = beat.start + settings["lead_in"]
        latest_end = beat.end - settings["gap"]
        available = latest_end - speech_start
        units = text_units(beat.narration)
        wanted_offsets = sorted({*beat.cues.values(), *(unit.offset for unit in units)})
        recording = self.recording_for(beat)
        if recording is not None:
            speech, tempo = self.fit_recording(beat, recording, available, wanted_offsets)
            source = str(recording)
        else:
            speech, tempo = self.fit_synthetic(beat, available, wanted_offsets)
            source = self.engine.label
        self.speeches[beat.id] = speech

        def film_time(offset: int) -> float:
            return speech_start + speech.offset_times[offset]

        clause_list = clauses(beat.narration)
        timed_clauses = tuple(TimedClause(text, speech_start + start, speech_start + end)
                              for (_, text), (start, end) in zip(clause_list, speech.clause_spans))
        unit_times = []
        for unit in units:
            clause_end = speech_start + speech.clause_spans[unit.clause][1]
            following = [other for other in units if other.clause == unit.clause and other.offset > unit.offset]
            end = film_time(following[0].offset) if following else clause_end
            unit_times.append((unit, film_time(unit.offset), end))
        return BeatNarration(
            id=beat.id, start=beat.start, end=beat.end, speech_start=speech_start,
            speech_end=speech_start + speech.seconds, tempo=tempo, source=source,
            cues={name: film_time(offset) for name, offset in beat.cues.items()},
            clauses=timed_clauses, subtitles=tuple(pack(unit_times)), latest_end=latest_end,
        )

    def fit_synthetic(self, beat: PlannedBeat, available: float, offsets: list[int]) -> tuple[Speech, float]:
        """Synthesise at the voice's own pace; if too long, faster, up to the maximum tempo."""
        max_tempo = self.settings["max_tempo"]
        tempo = 1.0
        speech = self.synthesise(beat, tempo, offsets)
        for _ in range(4):
            if speech.seconds <= available:
                return speech, tempo
            if tempo >= max_tempo:
                break
            tempo = min(max_tempo, tempo * speech.seconds / available * FIT_MARGIN)
            speech = self.synthesise(beat, tempo, offsets)
        if speech.seconds <= available:
            return speech, tempo
        raise self.overrun(beat, speech.seconds, available, tempo)

    def synthesise(self, beat: PlannedBeat, tempo: float, offsets: list[int]) -> Speech:
        rate = self.engine.sample_rate
        pieces, spans, cursor = [], [], 0.0
        clause_list = clauses(beat.narration)
        for number, (offset, text) in enumerate(clause_list):
            clip = audio.fade_edges(audio.trim(self.speak(text, tempo), rate), rate)
            spans.append((cursor, cursor + len(clip) / rate))
            pieces.append(clip)
            cursor += len(clip) / rate
            if number + 1 < len(clause_list):
                pause = self.pause_after(text) / tempo
                pieces.append(np.zeros(int(round(pause * rate)), np.float32))
                cursor += int(round(pause * rate)) / rate
        speech = Speech(np.concatenate(pieces), rate, spans)
        for offset in offsets:
            number = clause_index(clause_list, offset)
            clause_offset, text = clause_list[number]
            start, end = spans[number]
            prefix = text[: offset - clause_offset].rstrip()
            if not prefix:
                speech.offset_times[offset] = start
                continue
            # The words before the cue, spoken alone, last about as long as they do in the clause.
            prefix_seconds = len(audio.trim(self.speak(prefix, tempo), rate)) / rate
            speech.offset_times[offset] = min(start + prefix_seconds, end - 0.05)
        return speech

    def speak(self, written: str, tempo: float) -> np.ndarray:
        return self.cache.speak(self.engine, spoken_form(written, self.plan.pronunciations), tempo)

    def pause_after(self, clause_text: str) -> float:
        return self.settings["clause_pause"] if clause_text.endswith(",") else self.settings["sentence_pause"]

    def fit_recording(self, beat: PlannedBeat, path: Path, available: float, offsets: list[int]) -> tuple[Speech, float]:
        """A recording replaces the voice; its clause times come from matching a synthetic reading."""
        rate = audio.TRACK_RATE
        samples = audio.fade_edges(audio.trim(audio.decode(path, rate), rate), rate)
        if samples.size == 0:
            raise FilmError(f"{path}: the recording of beat {beat.id!r} is silent")
        tempo = 1.0
        if len(samples) / rate > available:
            tempo = len(samples) / rate / available * FIT_MARGIN
            if tempo > self.settings["max_tempo"]:
                raise self.overrun(beat, len(samples) / rate / self.settings["max_tempo"], available,
                                   self.settings["max_tempo"], recording=path)
            samples = audio.trim(audio.time_stretch(samples, rate, tempo), rate)
        reference = self.synthesise(beat, 1.0, offsets)
        return align_to_reference(samples, rate, reference), tempo

    def overrun(self, beat: PlannedBeat, seconds: float, available: float, tempo: float,
                recording: Path | None = None) -> FilmError:
        settings = self.settings
        what = f"its recording ({recording})" if recording else "its speech"
        return FilmError(
            f"beat {beat.id!r} ({beat.location}) does not fit: {what} lasts {seconds:.2f} s at tempo "
            f"{tempo:.2f} (the most allowed is {settings['max_tempo']:.2f}), but its slot leaves "
            f"{available:.2f} s ({beat.duration:g} s less the {settings['lead_in']:g} s lead-in and the "
            f"{settings['gap']:g} s gap): {seconds - available:.2f} s over.\n"
            f"Shorten the beat's narration, or raise narration.max_tempo in the storyboard."
        )


def clause_index(clause_list: list[tuple[int, str]], offset: int) -> int:
    for number in range(len(clause_list) - 1, -1, -1):
        if clause_list[number][0] <= offset:
            return number
    return 0


def align_to_reference(samples: np.ndarray, rate: int, reference: Speech) -> Speech:
    """Map a synthetic reading's times onto a recording of the same words.

    The reference times are scaled to the recording's length, then each clause boundary is
    moved to the recording's nearest pause (within 0.6 s), where a speaker breathes between
    clauses; times inside a clause move with its boundaries.
    """
    length = len(samples) / rate
    scale = length / reference.seconds
    quiet = audio.pauses(samples, rate)
    boundaries = [0.0]
    for (_, previous_end), (next_start, _) in zip(reference.clause_spans, reference.clause_spans[1:]):
        guess = (previous_end + next_start) / 2 * scale
        nearby = [(abs((a + b) / 2 - guess), a, b) for a, b in quiet if abs((a + b) / 2 - guess) < 0.6]
        boundaries.append(min(nearby)[1:] if nearby else (guess, guess))
    spans = []
    for number, (start, end) in enumerate(reference.clause_spans):
        clause_start = 0.0 if number == 0 else boundaries[number][1]
        clause_end = length if number + 1 == len(reference.clause_spans) else boundaries[number + 1][0]
        spans.append((clause_start, max(clause_start, clause_end)))

    def mapped(seconds: float) -> float:
        for (ref_start, ref_end), (new_start, new_end) in zip(reference.clause_spans, spans):
            if ref_start <= seconds <= ref_end + 1e-9:
                share = 0 if ref_end == ref_start else (seconds - ref_start) / (ref_end - ref_start)
                return new_start + share * (new_end - new_start)
        return min(length, seconds * scale)

    return Speech(samples, rate, spans, {offset: mapped(t) for offset, t in reference.offset_times.items()})


# -- the whole track --------------------------------------------------------------------------

@dataclass(frozen=True)
class NarrationResult:
    timed_plan: TimedPlan
    track: Path
    srt: Path
    vtt: Path
    timed_plan_path: Path
    synthesised: int
    reused: int
    repaired: int
    seconds: float


def make_narration(plan: Plan, out_dir: Path, cache_dir: Path) -> NarrationResult:
    """Voice every beat, build the levelled track, the subtitles and the timed plan."""
    started = time.perf_counter()
    narrator = Narrator(plan, cache_dir)
    timed = narrator.narrate()
    track = assemble_track(plan, timed, narrator.speeches)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: out_dir / name for name in ("narration.wav", "film.srt", "film.vtt", "timed-plan.json")}
    level_once(track, paths["narration.wav"], plan.narration["loudness_lufs"], plan.narration["true_peak_dbtp"])
    write_text_atomic(paths["film.srt"], to_srt(timed.subtitles))
    write_text_atomic(paths["film.vtt"], to_vtt(timed.subtitles, plan.title))
    write_text_atomic(paths["timed-plan.json"], timed.to_json() + "\n")
    stats = narrator.cache.stats
    return NarrationResult(timed, paths["narration.wav"], paths["film.srt"], paths["film.vtt"],
                           paths["timed-plan.json"], stats.synthesised, stats.reused, stats.repaired,
                           time.perf_counter() - started)


def level_once(track: np.ndarray, out_path: Path, lufs: float, true_peak: float) -> None:
    """Level the track unless the same track was levelled into `out_path` already (a no-op rerun)."""
    recipe = hashlib.sha256(track.tobytes())
    recipe.update(f"{lufs}:{true_peak}:{audio.LEVELLING_VERSION}".encode())
    key_file = out_path.with_name(f".{out_path.name}.key")
    if out_path.exists() and key_file.exists() and key_file.read_text() == recipe.hexdigest():
        log.info("%s is up to date", out_path.name)
        return
    key_file.unlink(missing_ok=True)
    audio.level_track(track, out_path, lufs, true_peak)
    write_text_atomic(key_file, recipe.hexdigest())


def assemble_track(plan: Plan, timed: TimedPlan, speeches: dict[str, Speech]) -> np.ndarray:
    """The film-long track at 48 kHz, each beat's speech at its place, beats matched in loudness."""
    rate = audio.TRACK_RATE
    track = np.zeros(int(round(plan.duration * rate)), np.float32)
    target = plan.narration["loudness_lufs"]
    for beat in timed.beats:
        speech = audio.resample(speeches[beat.id].samples, speeches[beat.id].rate, rate)
        loudness = audio.integrated_loudness(speech, rate)
        if np.isfinite(loudness):
            speech = speech * np.float32(10 ** ((target - loudness) / 20))
        start = int(round(beat.speech_start * rate))
        end = min(len(track), start + len(speech))
        track[start:end] += speech[: end - start]
    return track


def fit_table(timed: TimedPlan) -> str:
    """Each beat's slot, speech length, headroom and tempo."""
    rows = [f"{'beat':<19}{'slot':>13}{'speech':>9}{'headroom':>10}{'tempo':>7}  voice"]
    for beat in timed.beats:
        slot = f"{timestamp(beat.start)}-{timestamp(beat.end)}"
        tempo = "-" if abs(beat.tempo - 1) < 1e-9 else f"{beat.tempo:.3f}"
        rows.append(f"{beat.id:<19}{slot:>13}{beat.speech_seconds:>8.2f}s{beat.headroom:>9.2f}s{tempo:>7}  {beat.source}")
    return "\n".join(rows)




__all__ = ["BeatNarration", "TimedPlan", "make_narration", "fit_table", "TextUnit"]
