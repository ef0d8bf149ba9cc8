"""Narration: the plan's lines voiced, fitted to the beats' slots and levelled; the timed plan.

For each beat the narration is split into clauses, each clause is synthesised on its own
(cached), trimmed and joined with fixed pauses, so every clause's start and end come from
the audio itself. A cue inside a clause is timed by synthesising the clause's words up to
it. Speech starts at the beat's start plus the lead-in and must end a gap before the next
beat; a beat that is too long is sped up (the engine's own speed control, measured) by at most
the storyboard's maximum tempo, and past that it is an error that names the beat and the overrun.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from pydub import AudioSegment

from render import media
from render.errors import FilmError, SpeechOverrun
from render.files import file_kind, write_atomic
from render.formatting import timestamp
from render.plan.types import RECORDED, Beat, BeatTiming, Plan, TimedClause
from render.specs.pronunciations import spoken_form
from render.voice import audio
from render.voice.speech import SpeechCache, SpeechEngine, get_engine
from render.voice.track import FILM_SOUND, Levelling, Speech, encode_film_sound, level_once
from render.voice.subtitles import (TextUnit, TimedUnit, caption_problems, clauses, cue_groups, pack, reading_pauses,
                                    text_units, to_srt, to_vtt)

log = logging.getLogger("film")

RECORDING_SUFFIXES = (".wav", ".flac")
FIT_MARGIN = 1.005  # ask the engine for a little more speed than the arithmetic says
FIT_ROUNDS = 8       # speed settings tried after the voice's own pace
MIN_SPEED_STEP = 0.005
FIT_CLOSE = 0.99     # a try within 1% of the target length is taken at once
MAX_ENGINE_SPEED = 2.0  # the fastest setting asked of an engine (its speech shortens less than the setting)
MAX_RECORDING_BYTES = 256 * 2**20  # a beat is a minute at most: even 24-bit 96 kHz stereo is under 40 MiB


@dataclass(frozen=True)
class Narration:
    """What voicing a plan returns: the timed plan, each beat's fitted speech, and the cache's work."""

    plan: Plan                    # the same plan, each beat with its timing
    speeches: dict[str, Speech]   # beat id -> its fitted speech, for the track
    voice: str                    # "hibari:heart", "piper:joe" or "recorded"
    synthesised: int
    reused: int
    repaired: int


class Narrator:
    """Voices a plan's beats with one engine (and any recordings), sharing one cache."""

    def __init__(self, plan: Plan, cache_dir: Path):
        self.plan = plan
        self.settings = plan.narration
        self.cache = SpeechCache(cache_dir / "speech")
        self.all_recorded = self.settings.engine == RECORDED
        # A recorded beat is timed against a synthetic reading of the same words.
        self.engine: SpeechEngine = get_engine("hibari" if self.all_recorded else self.settings.engine,
                                               None if self.all_recorded else self.settings.engine_voice)
        self.recordings = Path(self.settings.recordings)

    @property
    def voice_label(self) -> str:
        return RECORDED if self.all_recorded else self.engine.label

    def recording_for(self, beat: Beat) -> Path | None:
        for suffix in RECORDING_SUFFIXES:
            path = self.recordings / f"{beat.id}{suffix}"
            kind = file_kind(path)
            if kind is not None or path.is_symlink() and not path.exists():
                raise FilmError(f"{path}: is {kind or 'a link to nothing'}, not a recording; put the beat's "
                                f"{suffix[1:].upper()} file there, or remove it to use the voice")
            if path.is_file():
                if path.stat().st_size > MAX_RECORDING_BYTES:
                    raise FilmError(f"{path}: {path.stat().st_size / 2**20:,.0f} MiB is far more than a beat's "
                                    f"recording (at most {MAX_RECORDING_BYTES // 2**20} MiB); is it the right file?")
                return path
        return None

    def narrate(self, on_beat: Callable[[str, BeatTiming], None] | None = None) -> Narration:
        """Every beat voiced and timed, in order; `on_beat(beat id, its timing)` as each is (a film's beats can
        start rendering while the next are voiced)."""
        missing = [beat.id for beat in self.plan.beats if self.recording_for(beat) is None]
        if self.all_recorded and missing:
            raise FilmError(
                f"VOICE=recorded needs a recording of every beat; missing in {self.recordings}: "
                f"{', '.join(f'{beat_id}.wav' for beat_id in missing)} (or .flac)"
            )
        timings, speeches = {}, {}
        for beat in self.plan.beats:
            timings[beat.id], speeches[beat.id] = self.narrate_beat(beat)
            if on_beat is not None:
                on_beat(beat.id, timings[beat.id])
        stats = self.cache.stats
        return Narration(self.plan.timed(timings), speeches, self.voice_label, stats.synthesised, stats.reused,
                         stats.repaired)

    def timed_slice(self, beat_id: str) -> Plan:
        """The plan's slice for one beat (`Plan.slice_for`) with that beat's speech timing: all a picture of the
        beat needs, without timing the others."""
        beat = self.plan.beat(beat_id)
        timing, _ = self.narrate_beat(beat)
        part = self.plan.slice_for(beat.id)
        return replace(part, beats=tuple(replace(other, timing=timing) if other.id == beat.id else other
                                         for other in part.beats))

    # -- one beat -----------------------------------------------------------------------------

    def narrate_beat(self, beat: Beat) -> tuple[BeatTiming, Speech]:
        settings = self.settings
        speech_start = beat.start + settings.lead_in
        latest_end = beat.end - settings.gap
        available = latest_end - speech_start
        units = text_units(beat.narration)
        wanted_offsets = sorted({*beat.cue_offsets.values(), *(unit.offset for unit in units)})
        recording = self.recording_for(beat)
        if recording is not None:
            speech, tempo = self.fit_recording(beat, recording, available, wanted_offsets)
            source = str(recording)
        else:
            speech, tempo = self.fit_synthetic(beat, available, wanted_offsets)
            source = self.engine.label

        # Where a caption would go by too fast to read, the voice's pause before the next one grows (out of the
        # beat's time after its speech); a recording keeps its speaker's timing.
        clause_list = clauses(beat.narration)
        for _ in range(3 if recording is None else 0):  # a pause moved to a quiet moment can move a cue: look again
            pauses = reading_pauses(cue_groups(timed_units(units, speech, speech_start)),
                                    latest_end - speech_start - speech.seconds)
            if not pauses:
                break
            speech = with_pauses(speech, pauses)
        timed_clauses = tuple(TimedClause(text, speech_start + start, speech_start + end)
                              for (_, text), (start, end) in zip(clause_list, speech.clause_spans))
        timing = BeatTiming(
            speech_start=speech_start, speech_end=speech_start + speech.seconds, latest_end=latest_end,
            tempo=tempo, voice=source,
            cues={name: speech_start + speech.offset_times[offset] for name, offset in beat.cue_offsets.items()},
            clauses=timed_clauses, subtitles=tuple(pack(timed_units(units, speech, speech_start), until=beat.end)),
        )
        for problem in caption_problems(list(timing.subtitles), beat.end):
            log.warning("%s: a caption too fast to read (the beat has no time to spare after its speech): %s",
                        beat.id, problem)
        return timing, speech

    def fit_synthetic(self, beat: Beat, available: float, offsets: list[int]) -> tuple[Speech, float]:
        """Synthesise at the voice's own pace; if too long, speed it up, by at most `max_tempo`.

        The tempo is the true speed-up, the natural length over the fitted one, as for a recording.
        The engine's speed setting is not one: hibari's 1.10 shortens a clause by about 3%, its 1.20
        by 10%. So the setting is found by measuring (each try aims along the line through the two
        nearest, inside the bracket of too long and too short), and accepted when the speech fits its
        slot without being sped up past the maximum; should no setting land there, the natural speech
        is time-stretched (ffmpeg's atempo) by exactly what the slot needs."""
        max_tempo = self.settings.max_tempo
        natural = self.synthesise(beat, 1.0, offsets)
        if natural.seconds <= available:
            return natural, 1.0
        shortest = natural.seconds / max_tempo
        if shortest > available:
            raise self.overrun(beat, shortest, available, max_tempo)
        target = max(available / FIT_MARGIN, (shortest + available) / 2)
        too_slow, too_fast = (1.0, natural.seconds), None    # (speed setting, length) either side
        fitting: list[Speech] = []                            # tries that fit without passing the maximum
        speed = min(natural.seconds / target, MAX_ENGINE_SPEED)
        for _ in range(FIT_ROUNDS):
            speech = self.synthesise(beat, speed, offsets)
            if shortest <= speech.seconds <= available:
                fitting.append(speech)
                if speech.seconds >= target * FIT_CLOSE:
                    break
            if speech.seconds > available:
                too_slow = (speed, speech.seconds)
            else:
                too_fast = (speed, speech.seconds)
            speed = next_speed(too_slow, too_fast, target)
            if speed is None:
                break
        # The least sped-up try that fits; else exactly what the slot needs, stretched.
        speech = max(fitting, key=lambda fit: fit.seconds) if fitting else stretched(natural, natural.seconds / target)
        return speech, natural.seconds / speech.seconds

    def synthesise(self, beat: Beat, tempo: float, offsets: list[int]) -> Speech:
        """The beat's clauses, each trimmed to its speech, joined with the storyboard's pauses."""
        rate = self.engine.sample_rate
        pieces, spans, cursor = [], [], 0.0
        clause_list = clauses(beat.narration)
        for number, (_, text) in enumerate(clause_list):
            clip = audio.fade_edges(audio.trim(self.speak(text, tempo)))
            spans.append((cursor, cursor + audio.seconds_of(clip)))
            pieces.append(clip)
            cursor += audio.seconds_of(clip)
            if number + 1 < len(clause_list):
                pause = audio.silence(self.pause_after(text) / tempo, rate)
                pieces.append(pause)
                cursor += audio.seconds_of(pause)
        speech = Speech(audio.join(pieces, rate), spans)
        for offset in offsets:
            number = clause_index(clause_list, offset)
            clause_offset, text = clause_list[number]
            start, end = spans[number]
            prefix = text[: offset - clause_offset].rstrip()
            if not prefix:
                speech.offset_times[offset] = start
                continue
            # The words before the cue, spoken alone, last about as long as they do in the clause.
            prefix_seconds = audio.seconds_of(audio.trim(self.speak(prefix, tempo)))
            speech.offset_times[offset] = min(start + prefix_seconds, end - 0.05)
        return speech

    def speak(self, written: str, tempo: float) -> AudioSegment:
        samples = self.cache.speak(self.engine, spoken_form(written, self.plan.pronunciations), tempo)
        return audio.segment(samples, self.engine.sample_rate)

    def pause_after(self, clause_text: str) -> float:
        return self.settings.clause_pause if clause_text.endswith(",") else self.settings.sentence_pause

    def fit_recording(self, beat: Beat, path: Path, available: float, offsets: list[int]) -> tuple[Speech, float]:
        """A recording replaces the voice; its clause times come from matching a synthetic reading."""
        clip = audio.fade_edges(audio.trim(audio.decode(path, audio.TRACK_RATE)))
        if len(clip) == 0:
            raise FilmError(f"{path}: the recording of beat {beat.id!r} is silent")
        tempo = 1.0
        length = audio.seconds_of(clip)
        if length > available:
            tempo = length / available * FIT_MARGIN
            if tempo > self.settings.max_tempo:
                raise self.overrun(beat, length / self.settings.max_tempo, available, self.settings.max_tempo,
                                   recording=path)
            clip = audio.trim(audio.time_stretch(clip, tempo))
        reference = self.synthesise(beat, 1.0, offsets)
        return align_to_reference(clip, reference), tempo

    def overrun(self, beat: Beat, seconds: float, available: float, tempo: float,
                recording: Path | None = None) -> SpeechOverrun:
        settings = self.settings
        what = f"its recording ({recording})" if recording else "its speech"
        return SpeechOverrun(
            f"beat {beat.id!r} ({beat.location}) does not fit: {what} lasts {seconds:.2f} s at tempo "
            f"{tempo:.2f} (the most allowed is {settings.max_tempo:.2f}), but its slot leaves "
            f"{available:.2f} s ({beat.duration:g} s less the {settings.lead_in:g} s lead-in and the "
            f"{settings.gap:g} s gap): {seconds - available:.2f} s over.\n"
            f"Shorten the beat's narration, or raise narration.max_tempo in the storyboard.",
            beat.id, seconds, tempo, available,
        )


def next_speed(too_slow: tuple[float, float], too_fast: tuple[float, float] | None, target: float) -> float | None:
    """The next speed setting to try: along the line through the nearest tries either side of the
    target length (above the slow one alone when nothing was too fast yet); None when the two are
    closer than the smallest step."""
    slow_speed, slow_seconds = too_slow
    if too_fast is None:
        if slow_speed >= MAX_ENGINE_SPEED:
            return None
        # Proportionally, but never less than a step faster: speech shortens less than the setting.
        return min(MAX_ENGINE_SPEED, max(slow_speed * slow_seconds / target, slow_speed + 4 * MIN_SPEED_STEP))
    fast_speed, fast_seconds = too_fast
    if fast_speed - slow_speed < MIN_SPEED_STEP:
        return None
    guess = slow_speed + (slow_seconds - target) * (fast_speed - slow_speed) / (slow_seconds - fast_seconds)
    inside = slow_speed + MIN_SPEED_STEP / 2 < guess < fast_speed - MIN_SPEED_STEP / 2
    return guess if inside else (slow_speed + fast_speed) / 2


def timed_units(units: list[TextUnit], speech: Speech, speech_start: float) -> list[TimedUnit]:
    """Each subtitle unit with the film times its words start and end (a clause's last unit ends with it)."""
    timed = []
    for unit in units:
        following = [other for other in units if other.clause == unit.clause and other.offset > unit.offset]
        end = speech.offset_times[following[0].offset] if following else speech.clause_spans[unit.clause][1]
        timed.append((unit, speech_start + speech.offset_times[unit.offset], speech_start + end))
    return timed


def with_pauses(speech: Speech, pauses: dict[int, float]) -> Speech:
    """The speech with `pauses[offset]` seconds of silence before the word at that character offset (in the
    pause before it when it starts a clause, else in the quietest moment near its start), its later words,
    clauses and cues moved on."""
    if not pauses:
        return speech
    cut_at = {offset: audio.quietest_near(speech.clip, speech.offset_times[offset]) for offset in pauses}
    cuts = sorted((cut_at[offset], seconds) for offset, seconds in pauses.items())
    rate, pieces, cursor = speech.clip.frame_rate, [], 0
    for at, seconds in cuts:
        cut = int(round(at * rate))
        pieces += [speech.clip.get_sample_slice(cursor, cut), audio.silence(seconds, rate)]
        cursor = cut
    pieces.append(speech.clip.get_sample_slice(cursor, None))

    def moved(time: float, at_start: bool) -> float:
        return time + sum(seconds for cut, seconds in cuts if cut < time or (at_start and cut == time))

    return Speech(audio.join(pieces, rate),
                  [(moved(start, True), moved(end, False)) for start, end in speech.clause_spans],
                  {offset: moved(max(seconds, cut_at.get(offset, seconds)), True)  # a paused word starts after it
                   for offset, seconds in speech.offset_times.items()})


def stretched(speech: Speech, tempo: float) -> Speech:
    """The same speech faster by `tempo` (pitch kept), its clause and cue times scaled with it."""
    clip = audio.time_stretch(speech.clip, tempo)
    scale = audio.seconds_of(clip) / speech.seconds
    return Speech(clip, [(start * scale, end * scale) for start, end in speech.clause_spans],
                  {offset: seconds * scale for offset, seconds in speech.offset_times.items()})


def clause_index(clause_list: list[tuple[int, str]], offset: int) -> int:
    for number in range(len(clause_list) - 1, -1, -1):
        if clause_list[number][0] <= offset:
            return number
    return 0


def align_to_reference(clip: AudioSegment, reference: Speech) -> Speech:
    """Map a synthetic reading's times onto a recording of the same words.

    The reference times are scaled to the recording's length, then each clause boundary is
    moved to the recording's nearest pause (within 0.6 s), where a speaker breathes between
    clauses; times inside a clause move with its boundaries.
    """
    length = audio.seconds_of(clip)
    scale = length / reference.seconds
    quiet = audio.pauses(clip)
    boundaries = [(0.0, 0.0)]
    for (_, previous_end), (next_start, _) in zip(reference.clause_spans, reference.clause_spans[1:]):
        guess = (previous_end + next_start) / 2 * scale
        nearby = [(abs((a + b) / 2 - guess), a, b) for a, b in quiet if abs((a + b) / 2 - guess) < 0.6]
        boundaries.append(min(nearby)[1:] if nearby else (guess, guess))
    spans = []
    for number in range(len(reference.clause_spans)):
        clause_start = 0.0 if number == 0 else boundaries[number][1]
        clause_end = length if number + 1 == len(reference.clause_spans) else boundaries[number + 1][0]
        spans.append((clause_start, max(clause_start, clause_end)))

    def mapped(seconds: float) -> float:
        for (ref_start, ref_end), (new_start, new_end) in zip(reference.clause_spans, spans):
            if ref_start <= seconds <= ref_end + 1e-9:
                share = 0 if ref_end == ref_start else (seconds - ref_start) / (ref_end - ref_start)
                return new_start + share * (new_end - new_start)
        return min(length, seconds * scale)

    return Speech(clip, spans, {offset: mapped(t) for offset, t in reference.offset_times.items()})


@dataclass(frozen=True)
class NarrationResult:
    plan: Plan            # the timed plan
    voice: str
    track: Path           # levelled once `track_ready()` returns (and the film's sound, with film_sound, made)
    srt: Path
    vtt: Path
    timed_plan_path: Path
    synthesised: int
    reused: int
    repaired: int
    seconds: float
    levelling: Levelling

    @property
    def cache_line(self) -> str:
        """What the speech cache did: clips synthesised, reused and regenerated."""
        line = (f"speech cache: {self.synthesised} clips synthesised, {self.reused} reused"
                + (f", {self.repaired} damaged ones regenerated" if self.repaired else ""))
        return line if self.synthesised else f"{line}: nothing to synthesise"

    def track_ready(self) -> Path:
        """The levelled track, waited for (and its failure raised) if it is still being made."""
        self.levelling.wait()
        return self.track

    @property
    def film_sound(self) -> Path:
        """The film's sound (AAC), made from the track with it (make_narration's `film_sound`)."""
        return self.track.with_name(FILM_SOUND)


def make_narration(plan: Plan, out_dir: Path, cache_dir: Path, level_later: bool = False,
                   film_sound: bool = False, on_beat: Callable[[str, BeatTiming],
                                                               None] | None = None) -> NarrationResult:
    """Voice every beat, build the subtitles, the timed plan and the levelled track (with `level_later`, when
    `levelling.start()` puts it on a thread, or `track_ready()` asks for it); with `film_sound`, the film's
    AAC sound from the track too, on the same thread (the film only copies it in). `on_beat`: see Narrator.narrate."""
    started = time.perf_counter()
    media.require_tools()
    narration = Narrator(plan, cache_dir).narrate(on_beat)
    timed = narration.plan
    paths = {name: Path(out_dir) / name for name in ("narration.wav", "film.srt", "film.vtt", "timed-plan.json")}
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_atomic(paths["film.srt"], to_srt(timed.subtitles))
    write_atomic(paths["film.vtt"], to_vtt(timed.subtitles, plan.title))
    write_atomic(paths["timed-plan.json"], timed.to_json() + "\n")
    def level() -> None:
        level_once(timed, narration.speeches, paths["narration.wav"], plan.narration.loudness_lufs,
                   plan.narration.true_peak_dbtp)
        if film_sound:
            encode_film_sound(paths["narration.wav"], Path(out_dir) / FILM_SOUND, timed.duration)

    levelling = Levelling(level)
    if not level_later:
        levelling.wait()
    return NarrationResult(timed, narration.voice, paths["narration.wav"], paths["film.srt"], paths["film.vtt"],
                           paths["timed-plan.json"], narration.synthesised, narration.reused, narration.repaired,
                           time.perf_counter() - started, levelling)


def fit_table(plan: Plan) -> str:
    """Each beat's slot, speech length, headroom and tempo."""
    rows = [f"{'beat':<19}{'slot':>13}{'speech':>9}{'headroom':>10}{'tempo':>7}  voice"]
    for beat in plan.beats:
        timing = beat.timing
        slot = f"{timestamp(beat.start)}-{timestamp(beat.end)}"
        tempo = "-" if abs(timing.tempo - 1) < 1e-9 else f"{timing.tempo:.3f}"
        rows.append(f"{beat.id:<19}{slot:>13}{timing.speech_seconds:>8.2f}s{timing.headroom:>9.2f}s{tempo:>7}  "
                    f"{timing.voice}")
    return "\n".join(rows)
