"""The narration track, its timing and its subtitles, checked on real audio files with ffmpeg."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from render.errors import FilmError
from render.plan.resolve import resolve_plan
from render.plan.types import parse_voice
from render.voice import audio
from render.voice.narration import Narrator, fit_table, make_narration
from render.voice.speech import HibariEngine, PiperEngine, get_engine

from conftest import run_film

TIMESTAMP = r"(\d\d):(\d\d):(\d\d)[,.](\d{3})"


@pytest.fixture(scope="session")
def cache(tmp_path_factory, seed_speech):
    """One speech cache for the whole session, holding the default film's clips (the session film's)."""
    return seed_speech(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def narrated(tmp_path_factory, cache):
    out = tmp_path_factory.mktemp("build")
    return make_narration(resolve_plan(recordings=out / "no-recordings"), out, cache)


def seconds_of(match: tuple[str, ...]) -> float:
    hours, minutes, secs, millis = map(int, match)
    return hours * 3600 + minutes * 60 + secs + millis / 1000


def probe(path: Path) -> dict:
    result = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
                             "stream=codec_name,sample_rate,channels,duration_ts:format=duration",
                             "-of", "default=noprint_wrappers=1", str(path)], capture_output=True, text=True)
    return dict(line.split("=", 1) for line in result.stdout.split())


def speech_intervals(path: Path) -> list[tuple[float, float]]:
    """Where the track is not silent, by ffmpeg's silencedetect."""
    result = subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-i", str(path), "-af",
                             "silencedetect=noise=-45dB:d=0.2", "-f", "null", "-"], capture_output=True, text=True)
    starts = [float(x) for x in re.findall(r"silence_start: ([\d.]+)", result.stderr)]
    ends = [float(x) for x in re.findall(r"silence_end: ([\d.]+)", result.stderr)]
    duration = float(probe(path)["duration"])
    intervals, cursor = [], 0.0
    for start, end in zip(starts, ends + [duration] * (len(starts) - len(ends))):
        if start > cursor:
            intervals.append((cursor, start))
        cursor = end
    if cursor < duration - 0.01:
        intervals.append((cursor, duration))
    return intervals


def test_the_track_lasts_exactly_the_film(narrated):
    info = probe(narrated.track)
    assert info["codec_name"] == "pcm_s16le"
    assert info["sample_rate"] == "48000" and info["channels"] == "1"
    assert int(info["duration_ts"]) == 154 * 48_000  # 154.000 s to the sample


def test_each_beats_speech_lies_inside_its_slot(narrated):
    beats = narrated.plan.beats
    intervals = speech_intervals(narrated.track)
    assert len(intervals) >= len(beats)
    for start, end in intervals:
        owner = [beat for beat in beats if beat.start <= start < beat.end]
        assert owner, f"speech at {start:.2f}s belongs to no beat"
        beat = owner[0]
        assert start >= beat.start + 0.2, f"{beat.id}: speech starts {start:.2f}s, before its lead-in"
        assert end <= beat.end - 0.3 + 0.05, f"{beat.id}: speech runs to {end:.2f}s, into the gap before {beat.end}s"
    for beat in beats:
        assert any(beat.start <= start < beat.end for start, _ in intervals), f"{beat.id} is silent"
        assert beat.timing.speech_start == pytest.approx(beat.start + 0.25)
        assert beat.timing.speech_end <= beat.end - 0.3


def test_the_track_is_levelled(narrated):
    loudness = audio.measure_loudness(narrated.track)
    assert loudness.integrated_lufs == pytest.approx(-16, abs=1.0)
    assert loudness.true_peak_dbtp <= -1.0


def test_beats_are_matched_in_loudness(narrated):
    track = audio.decode(narrated.track)
    levels = []
    for beat in narrated.plan.beats:
        speech = track[beat.timing.speech_start * 1000: beat.timing.speech_end * 1000]
        levels.append(audio.integrated_loudness(speech))
    assert max(levels) - min(levels) < 1.5


def test_cues_are_spoken_in_order_inside_their_beat(narrated):
    for beat in narrated.plan.beats:
        timing = beat.timing
        assert set(timing.cues) == set(beat.cue_offsets)
        times = [timing.cues[name] for name in sorted(beat.cue_offsets, key=beat.cue_offsets.get)]
        assert times == sorted(times), beat.id
        assert all(timing.speech_start <= t < timing.speech_end for t in times), beat.id
    prefill = narrated.plan.beat("prefill").timing
    # "2,000 tokens of Llama 3.1 8B is [33 trillion operations]": well after the clause starts.
    assert prefill.cues["ops"] - prefill.cues["tokens"] > 1.5


def parse_srt(text: str) -> list[tuple[float, float, list[str]]]:
    cues = []
    for number, block in enumerate(text.strip().split("\n\n"), 1):
        lines = block.split("\n")
        assert lines[0] == str(number)
        times = re.fullmatch(rf"{TIMESTAMP} --> {TIMESTAMP}", lines[1])
        assert times, lines[1]
        cues.append((seconds_of(times.groups()[:4]), seconds_of(times.groups()[4:]), lines[2:]))
    return cues


def test_subtitles_parse_fit_and_cover_every_beat(narrated):
    cues = parse_srt(narrated.srt.read_text())
    previous_end = 0.0
    for start, end, lines in cues:
        assert previous_end <= start < end <= 154.0
        assert 1 <= len(lines) <= 2 and all(len(line) <= 42 for line in lines), lines
        previous_end = end
    for beat in narrated.plan.beats:
        inside = [" ".join(lines) for start, end, lines in cues if beat.start <= start < beat.end]
        assert " ".join(inside) == beat.narration  # every word, in the written form, in order
    assert "KV cache" in narrated.srt.read_text() and "H100's" in narrated.srt.read_text()


def test_subtitles_are_timed_by_their_own_words(narrated):
    """A cue's times are its clauses' times from the audio, not a share of the beat."""
    cues = parse_srt(narrated.srt.read_text())
    beat = narrated.plan.beat("wasted-money")
    clause_starts = {round(clause.start, 3) for clause in beat.timing.clauses}
    starts = [start for start, _, _ in cues if beat.start <= start < beat.end]
    assert round(starts[0], 3) in clause_starts
    cue_times = list(beat.timing.cues.values())
    late = [start for start in starts
            if round(start, 3) not in clause_starts and not any(abs(start - t) < 0.002 for t in cue_times)]
    assert late == [], (late, sorted(clause_starts), cue_times)


def test_every_caption_can_be_read(narrated):
    """At most 17 characters a second (spaces count), a second at least, and within its beat: a cue holds into the
    pause after its words, and where that is too short the pause before the next cue grows, out of the beat's time
    after its speech (the voice really pauses there: the track is quiet)."""
    from render.voice import audio

    cues = parse_srt(narrated.srt.read_text())
    for start, end, lines in cues:
        text = " ".join(lines)
        assert len(text) / (end - start) <= 17.0 + 0.02 and end - start >= 0.999, (text, start, end)  # SRT's ms
        beat = next(beat for beat in narrated.plan.beats if beat.start <= start < beat.end)
        assert end <= beat.end + 0.001, text
    # Holding into the pauses alone would leave "decode does one operation per byte it moves" at 18.5 a second:
    # the voice breathes before "and sits low ...", the next cue.
    after = next(start for start, _, lines in cues if " ".join(lines).startswith("and sits low on the roofline"))
    quiet = audio.pauses(audio.decode(narrated.track))
    assert any(b - a >= 0.3 and a - 0.3 <= after <= b + 0.3 for a, b in quiet)


def test_webvtt_matches_the_srt(narrated):
    vtt = narrated.vtt.read_text()
    assert vtt.startswith("WEBVTT")
    srt_times = re.findall(rf"{TIMESTAMP} --> {TIMESTAMP}", narrated.srt.read_text())
    vtt_times = re.findall(rf"{TIMESTAMP} --> {TIMESTAMP}", vtt)
    assert srt_times == vtt_times and len(srt_times) > 20


def test_the_timed_plan_is_written_and_reads_back_typed(narrated):
    import json
    from render.plan.types import Plan
    data = json.loads(narrated.timed_plan_path.read_text())
    timing = data["beats"][1]["timing"]
    assert {"speech_start", "speech_end", "tempo", "voice", "cues", "clauses", "subtitles"} <= set(timing)
    assert timing["cues"]["ops"] == narrated.plan.beat("prefill").timing.cues["ops"]
    again = Plan.from_json(narrated.timed_plan_path.read_text())
    assert again == narrated.plan and again.is_timed


def test_a_second_run_synthesises_nothing(narrated, tmp_path, cache):
    again = make_narration(resolve_plan(recordings=tmp_path / "none"), tmp_path, cache)
    assert again.synthesised == 0 and again.reused > 30


def test_a_damaged_cache_entry_is_regenerated(tmp_path, seed_speech):
    seed_speech(tmp_path)
    plan = resolve_plan(recordings=tmp_path / "none")
    first = Narrator(plan, tmp_path).narrate()
    entries = sorted((tmp_path / "speech").glob("*.npy"))
    entries[0].write_bytes(entries[0].read_bytes()[:-1000])          # truncated: wrong length
    entries[1].write_bytes(b"not audio at all")                       # unreadable
    repaired = Narrator(plan, tmp_path).narrate()
    assert repaired.repaired == 2 and repaired.synthesised == 2
    for beat_id, speech in first.speeches.items():
        assert speech.clip.raw_data == repaired.speeches[beat_id].clip.raw_data
    third = Narrator(plan, tmp_path).narrate()
    assert third.repaired == 0 and third.synthesised == 0


def write_recording(path: Path, text: str, silence: float = 0.6) -> float:
    """A recording made with the piper voice, with silence around it, at CD rate; returns its speech length."""
    engine = get_engine("piper")
    speech = audio.segment(engine.synthesize(text, 1.0), engine.sample_rate)
    padding = audio.silence(silence, engine.sample_rate)
    audio.resample(padding + speech + padding, 44_100).set_sample_width(2).export(path, format="wav")
    return audio.seconds_of(audio.trim(speech))


def test_a_recording_overrides_its_beat(tmp_path, cache):
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    plan = resolve_plan(recordings=recordings)
    length = write_recording(recordings / "two-budgets.wav", plan.beat("two-budgets").narration)
    result = make_narration(plan, tmp_path / "out", cache)
    beat = result.plan.beat("two-budgets")
    timing = beat.timing
    assert timing.voice.endswith("two-budgets.wav")
    assert timing.speech_seconds == pytest.approx(length, abs=0.1)
    assert result.plan.beat("decode").timing.voice == "hibari:heart"
    assert all(timing.speech_start <= t < timing.speech_end for t in timing.cues.values())
    intervals = [i for i in speech_intervals(result.track) if beat.start <= i[0] < beat.end]
    assert intervals[0][0] == pytest.approx(timing.speech_start, abs=0.1)
    assert intervals[-1][1] == pytest.approx(timing.speech_end, abs=0.1)
    loudness = audio.measure_loudness(result.track)
    assert loudness.integrated_lufs == pytest.approx(-16, abs=1.0) and loudness.true_peak_dbtp <= -1.0


def test_a_flac_recording_that_is_too_long_is_sped_up(tmp_path, cache):
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    plan = resolve_plan(recordings=recordings)
    beat = plan.beat("cache-rides-along")
    # Said slowly enough to last 15 s, it overruns the 14.45 s its slot leaves; atempo brings it in.
    engine = get_engine("piper")
    speech = audio.trim(audio.segment(engine.synthesize(beat.narration, 1.0), engine.sample_rate))
    slow = audio.time_stretch(speech, audio.seconds_of(speech) / 15.0)
    slow.set_sample_width(2).export(recordings / "cache-rides-along.flac", format="flac")
    timing = Narrator(plan, cache).narrate().plan.beat(beat.id).timing
    assert timing.voice.endswith(".flac")
    assert 1.0 < timing.tempo <= 1.10 and timing.speech_end <= timing.latest_end


def test_voice_recorded_needs_every_beat(tmp_path, cache):
    plan = resolve_plan(voice="recorded", recordings=tmp_path)
    with pytest.raises(FilmError, match="VOICE=recorded needs a recording of every beat; missing in .*two-waits.wav"):
        make_narration(plan, tmp_path / "out", cache)


def test_a_tight_slot_is_fitted_with_tempo(storyboard_copy, tmp_path, cache):
    # The roofline beat loses two and a half seconds of its slot; its speech must speed up.
    path = storyboard_copy('start: "1:07"', 'start: "1:04.50"')
    plan = resolve_plan(storyboard_path=path, recordings=tmp_path / "none")
    timed = Narrator(plan, cache).narrate().plan
    timing = timed.beat("roofline").timing
    assert 1.0 < timing.tempo <= 1.10
    assert timing.speech_end <= timing.latest_end
    assert f"{timing.tempo:.3f}" in fit_table(timed)


def test_the_tempo_is_the_true_speed_up_found_by_measuring(tmp_path, cache):
    # DeepSeek-V3 on four MI300Xs says the most in its decode beat: about 5% too long at the voice's own
    # pace. The engine's speed 1.05 would shorten it by about 1%, so the setting is found by measuring, and
    # the tempo reported is what the speech was sped up by.
    plan = resolve_plan(gpu="mi300x", model="deepseek-v3", dtype="fp8", gpus=4, recordings=tmp_path / "none")
    narrator = Narrator(plan, cache)
    beat = plan.beat("decode")
    timing = narrator.narrate().plan.beat("decode").timing
    natural = narrator.synthesise(beat, 1.0, []).seconds
    fitted = timing.speech_end - timing.speech_start
    assert natural > timing.latest_end - timing.speech_start      # it needs speeding up
    assert 1.0 < timing.tempo <= plan.narration.max_tempo
    assert timing.tempo == pytest.approx(natural / fitted, rel=1e-3)
    assert timing.speech_end <= timing.latest_end


def test_an_overlong_beat_names_the_beat_and_the_overrun(storyboard_copy, tmp_path, cache):
    # Ten seconds for the roofline's 38 words: plausible on paper, too long once spoken even at tempo 1.10.
    path = storyboard_copy('start: "1:07"', 'start: "1:02"')
    plan = resolve_plan(storyboard_path=path, recordings=tmp_path / "none")
    with pytest.raises(FilmError) as error:
        make_narration(plan, tmp_path, cache)
    message = str(error.value)
    assert re.search(r"beat 'roofline' \(.*storyboard.yaml:\d+\) does not fit: its speech lasts [\d.]+ s "
                     r"at tempo 1.10", message)
    assert "its slot leaves 9.45 s (10 s less the 0.25 s lead-in and the 0.3 s gap)" in message
    assert re.search(r": [\d.]+ s over\.", message) and "raise narration.max_tempo" in message


def test_a_beat_with_far_too_many_words_is_refused_before_any_synthesis(storyboard_copy, tmp_path):
    path = storyboard_copy('start: "1:07"', 'start: "0:59"')  # seven seconds for 38 words
    with pytest.raises(FilmError) as error:
        resolve_plan(storyboard_path=path, recordings=tmp_path / "none")
    message = str(error.value)
    assert re.search(r"storyboard.yaml:\d+: beat 'roofline' has 38 words, but its slot leaves 6.45 s", message)
    assert "no voice says more than about 28 words" in message
    many = storyboard_copy("So treat them as [[budgets]]two budgets:", "So treat them as [[budgets]]two budgets:"
                           + " and so on" * 100)
    with pytest.raises(FilmError, match="beat 'two-budgets' has 331 words"):
        resolve_plan(storyboard_path=many, recordings=tmp_path / "none")
    huge = storyboard_copy("So treat them as [[budgets]]two budgets:", "So treat them as [[budgets]]two budgets:"
                           + " and so on" * 100_000)
    with pytest.raises(FilmError, match="beat 'two-budgets' narration: fills to more than 20,000 characters; a "
                                        "beat's narration or caption is a sentence or two"):
        resolve_plan(storyboard_path=huge, recordings=tmp_path / "none")


def test_a_failed_run_leaves_the_earlier_track_intact(narrated, storyboard_copy, tmp_path, cache):
    before = {path: path.read_bytes() for path in (narrated.track, narrated.srt, narrated.timed_plan_path)}
    plan = resolve_plan(storyboard_path=storyboard_copy('start: "1:07"', 'start: "1:02"'), recordings=tmp_path / "none")
    with pytest.raises(FilmError):
        make_narration(plan, narrated.track.parent, cache)
    assert {path: path.read_bytes() for path in before} == before


# -- engines and pronunciation -----------------------------------------------------------------

@pytest.fixture(scope="module")
def hibari():
    return get_engine("hibari")


def spoken(text: str) -> str:
    from render.specs.pronunciations import spoken_form
    return spoken_form(text, resolve_plan().pronunciations)


@pytest.mark.parametrize("written, expected_spoken, expected_phonemes", [
    ("an A100's teraflops", "an A-one-hundred's teraflops", "ɐn ˌAwˈʌn"),   # the letter A, not the article
    ("at an H100's 989 teraflops", "at an H one hundred's 989 teraflops", "ˈAʧ wˈʌn hˈʌndɹədz"),
    ("3.35 TB/s", "3.35 terabytes a second", "tˈɛɹəbˌIts ɐ sˈɛkənd"),
    ("989 TFLOP/s", "989 teraflops", "tˈɛɹəflˌɑps"),
    ("the KV cache", "the K V cache", "kˈA vˈi kˈæʃ"),
    ("BF16 Llama 3.1 8B", "B F sixteen Llama three point one eight B", "bˈi ˈɛf sˌɪkstˈin"),
    ("an 8B model", "an eight B model", "ˈAt bˈi"),
    ("Qwen2.5 7B", "Kwen two point five seven B", "kwˈɛn"),
])
def test_pronunciation_traps(hibari, written, expected_spoken, expected_phonemes):
    assert spoken(written) == expected_spoken
    assert expected_phonemes in hibari.phonemize(spoken(written))


def test_no_beat_is_read_with_symbols_or_spelled_units(hibari):
    """Every beat's spoken text, for several GPU x model choices, phonemizes to words only."""
    from render.specs.pronunciations import spoken_form
    for choice in [{}, {"gpu": "a100-sxm-80gb", "model": "llama-3.1-70b", "dtype": "int8"},
                   {"gpu": "l40s", "model": "qwen2.5-7b"}, {"gpu": "mi300x", "model": "mistral-7b-v0.3"}]:
        plan = resolve_plan(**choice)
        for beat in plan.beats:
            phonemes = hibari.phonemize(spoken_form(beat.narration, plan.pronunciations))
            assert not re.search(r"[0-9/%$]", phonemes), (choice, beat.id, phonemes)
            assert "tˌibˈi ˈɛs" not in phonemes  # "TB/s" spelled as letters


def test_the_piper_engine_speaks_from_its_packaged_voice():
    engine = PiperEngine()
    clip = engine.synthesize("Prefill and decode.", 1.0)
    assert engine.sample_rate == 22_050 and 0.5 < len(clip) / engine.sample_rate < 3
    faster = engine.synthesize("Prefill and decode.", 1.25)
    assert len(faster) < len(clip)


def test_voices_that_would_download_are_refused():
    with pytest.raises(FilmError, match="hibari's voice 'emma' is not inside the package"):
        HibariEngine("emma")
    with pytest.raises(FilmError, match="unknown voice 'espeak'; use one of: hibari, piper, recorded"):
        parse_voice("espeak")


def test_make_narration_from_the_command_line(tmp_path, seed_speech):
    """The default narration's clips come from the session's tiny film, so the first run times and assembles, the
    second finds nothing to do, and another GPU's synthesises its own."""
    seed_speech(tmp_path / "cache")
    (tmp_path / "none").mkdir()
    result = run_film("narration", "--build", str(tmp_path), "--recordings", str(tmp_path / "none"))
    assert result.returncode == 0, result.stderr
    assert "two-waits" in result.stdout and "headroom" in result.stdout
    assert (tmp_path / "narration.wav").exists() and (tmp_path / "film.vtt").exists()
    again = run_film("narration", "--build", str(tmp_path), "--recordings", str(tmp_path / "none"))
    assert "0 clips synthesised" in again.stdout and "nothing to synthesise" in again.stdout
    other = run_film("narration", "--gpu", "a100-sxm-80gb", "--build", str(tmp_path), "--recordings", str(tmp_path))
    assert other.returncode == 0, other.stderr
    assert re.search(r"speech cache: [1-9]\d* clips synthesised, [1-9]\d* reused", other.stdout), other.stdout
    srt = (tmp_path / "a100-sxm-80gb-llama-3.1-8b-bf16" / "film.srt").read_text()
    assert "an A100's 312 teraflops" in srt.replace("\n", " ")
