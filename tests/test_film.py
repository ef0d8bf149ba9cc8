"""`make film` end to end at a tiny size: the file, its streams and chapters, the cache, atomicity, other choices."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from render.errors import FilmError
from render.media import probe
from render.plan.resolve import resolve_plan
from render.plan.types import Plan
from render.video import finish as film_module
from render.video.scheduler import make_film

from conftest import OTHER_CHOICE, copied, run_film, seeded_cache


@pytest.fixture(scope="module")
def own_film(default_tiny_film, tmp_path_factory):
    """The suite's tiny film in this module's own build folder: the tests here make other films beside it, which no
    other module sees."""
    return copied(default_tiny_film, tmp_path_factory)


@pytest.fixture(scope="module")
def build(own_film):
    return own_film.build


@pytest.fixture(scope="module")
def first(own_film):
    return own_film.result, own_film.lines


def test_the_film_has_its_streams_length_and_chapters(first, build):
    result, lines = first
    assert result.film == build / "preview" / "film.mp4"  # a preview never lands where the film goes
    info = probe(result.film)
    kinds = {stream["codec_type"]: stream for stream in info["streams"] if stream["codec_type"] in ("video", "audio")}
    assert kinds["video"]["codec_name"] == "h264" and kinds["video"]["pix_fmt"] == "yuv420p"
    assert kinds["video"]["r_frame_rate"] == "3/1" and kinds["video"]["width"] == 854
    assert kinds["audio"]["codec_name"] == "aac" and kinds["audio"]["sample_rate"] == "48000"
    assert float(info["format"]["duration"]) == pytest.approx(154.0, abs=0.2)
    assert [chapter["tags"]["title"] for chapter in info["chapters"]] == [
        "Two waits", "Prefill", "Decode", "The roofline", "Batching", "Wasted money", "Measured",
        "The cache rides along", "Two budgets"]
    assert info["chapters"][1]["start_time"] == "14.000000"
    tags = info["format"]["tags"]
    assert tags["title"] == "Prefill vs decode" and "H100 SXM" in tags["comment"] and tags["model"] == "Llama 3.1 8B"
    assert result.srt.exists() and result.vtt.exists() and result.poster.exists()
    assert "rendering 9 at tiny" in lines[0]


def test_video_and_audio_stay_in_sync(first):
    """The narration starts each beat's lead-in after the beat's first frame: check one beat by its silence."""
    result, _ = first
    out = subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-ss", "33", "-t", "2", "-i", str(result.film),
                          "-af", "silencedetect=noise=-45dB:d=0.1", "-f", "null", "-"], capture_output=True, text=True)
    end = float(re.search(r"silence_end: ([\d.]+)", out.stderr).group(1))
    assert end == pytest.approx(0.25, abs=0.08)  # the decode beat's speech starts 0.25 s into its slot


def test_a_second_run_reuses_every_beat(first, build):
    lines = []
    again = make_film(resolve_plan(recordings=build / "none"), "tiny", build, jobs=2, say=lines.append)
    assert again.rendered == [] and len(again.reused) == 9
    assert "nothing to render" in lines[0] and "film: up to date" in lines[1]


def test_changing_one_beats_narration_rerenders_only_that_beat(first, build, storyboard_copy):
    path = storyboard_copy("So treat them as [[budgets]]two budgets:",
                           "So treat them as [[budgets]]two separate budgets:")
    plan = resolve_plan(storyboard_path=path, recordings=build / "none")
    result = make_film(plan, "tiny", build, jobs=2, say=lambda line: None)
    assert result.rendered == ["two-budgets"]
    assert "two separate budgets" in result.srt.read_text().replace("\n", " ")


def test_changing_one_number_rerenders_only_the_beats_that_show_it(first, build, storyboard_copy):
    # 255 cached tokens per user instead of 256: the batching beat and the budget card show its numbers.
    path = storyboard_copy("batch_context_tokens: 256", "batch_context_tokens: 255")
    plan = resolve_plan(storyboard_path=path, recordings=build / "none")
    result = make_film(plan, "tiny", build, jobs=2, say=lambda line: None)
    assert sorted(result.rendered) == ["batching", "two-budgets"]


def test_an_interrupted_run_leaves_the_earlier_film_intact(first, build, monkeypatch):
    result, _ = first
    before = result.film.read_bytes()
    real = film_module.media.run

    def interrupted(stream, what, *rest, **kwargs):
        if what == "joining the beats into the film":
            Path(stream.get_args()[-1]).write_bytes(b"half a film")  # ffmpeg had written part of it
            raise KeyboardInterrupt
        return real(stream, what, *rest, **kwargs)

    monkeypatch.setattr(film_module.media, "run", interrupted)
    (result.film.parent / ".film.mp4.key").unlink()
    with pytest.raises(KeyboardInterrupt):
        make_film(resolve_plan(recordings=build / "none"), "tiny", build, jobs=2, say=lambda line: None)
    assert result.film.read_bytes() == before
    assert not list(result.film.parent.glob(".film.*tmp*"))


def test_two_runs_on_one_output_are_kept_apart_and_a_dead_holder_is_taken_over(first, build):
    folder = build / "preview"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"handle = open({str(folder / '.film.lock')!r}, 'a+')\n"
        "fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "handle.seek(0); handle.truncate(); handle.write(f'pid {os.getpid()}'); handle.flush()\n"
        "print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FilmError, match=rf"another run is writing .*preview \(pid {holder.pid}\)"):
            make_film(resolve_plan(recordings=build / "none"), "tiny", build, jobs=1, say=lambda line: None)
    finally:
        holder.kill()
        holder.wait()
    # The holder died without unlocking (SIGKILL): its lock went with it, and the next run proceeds.
    result = make_film(resolve_plan(recordings=build / "none"), "tiny", build, jobs=1, say=lambda line: None)
    assert result.film.exists() and (folder / ".film.lock").read_text().startswith(f"pid {os.getpid()}: ")


@pytest.fixture(scope="module")
def other(build, other_tiny_film):
    """Another choice's film made in the default film's build, from the beats the session's other film rendered
    (their cache entries copied beside the default film's: each is verified before use)."""
    seeded_cache(build / "cache", other_tiny_film)  # (its speech too: the other film is joined, not voiced again)
    plan = resolve_plan(**OTHER_CHOICE, recordings=build / "none")
    return make_film(plan, "tiny", build, jobs=2, say=lambda line: None)


def test_another_choice_lands_in_its_own_folder(first, other, build):
    default_srt = first[0].srt.read_text()
    result = other
    assert result.film == build / "a100-sxm-80gb-llama-3.1-70b-int8" / "preview" / "film.mp4"
    assert result.rendered == [] and len(result.reused) == 9  # the session's other film's beats
    srt = result.srt.read_text().replace("\n", " ")
    assert "an A100's 312 teraflops" in srt and "an H100's 989 teraflops" in default_srt.replace("\n", " ")
    assert first[0].film.exists()  # the default film untouched
    assert [c["tags"]["title"] for c in probe(result.film)["chapters"]][0] == "Two waits"


def test_an_impossible_choice_fails_before_anything_renders(tmp_path):
    result = run_film("film", "--gpu", "rtx-4090", "--model", "llama-3.1-70b", "--quality", "tiny",
                      "--build", str(tmp_path))
    assert result.returncode == 1 and "does not fit on one GeForce RTX 4090" in result.stderr
    assert not any(tmp_path.iterdir())


def timed_plan_of(result) -> Plan:
    folder = result.film.parent.parent  # <choice folder>/preview/film.mp4
    return Plan.from_json((folder / "timed-plan.json").read_text())


def frame(film: Path, index: int) -> np.ndarray:
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(film), "-vf", f"select=eq(n\\,{index})", "-vsync", "0",
                          "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"], capture_output=True,
                         check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(480, 854).astype(float)


@pytest.mark.parametrize("which", ["first", "other"])
def test_every_cut_carries_what_its_beats_share(request, which):
    """Across every cut the picture goes on: beat k's last frame is beat k+1's first, never an empty frame (where
    two beats share only an object or two, those stay while the rest fades, and the next beat starts from them)."""
    made = request.getfixturevalue(which)
    result = made[0] if which == "first" else made
    plan, fps = timed_plan_of(result), 3
    for before, after in zip(plan.beats, plan.beats[1:]):
        boundary = round(after.start * fps)
        last, first_frame = frame(result.film, boundary - 1), frame(result.film, boundary)
        drawn = [int((np.abs(picture - np.median(picture)) > 24).sum()) for picture in (last, first_frame)]
        assert min(drawn) > 500, f"{before.id} -> {after.id}: an empty frame at the cut ({drawn} pixels drawn)"
        assert np.abs(last - first_frame).mean() < 3.0, f"{before.id} -> {after.id}: the picture jumps at the cut"


def test_every_cut_carries_for_a_mixture_of_experts_on_two_gpus(tmp_path, default_tiny_film):
    """A third deployment (its long prompt's bar split three ways, its wall in experts and shares): each beat's last
    frame, drawn alone, is the next beat's first."""
    from PIL import Image

    from render.video.beats import QUALITIES, render_frames
    from render.voice.narration import Narrator

    cache = seeded_cache(tmp_path / "cache", default_tiny_film)  # (its speech and typesetting, much of it shared)
    plan = Narrator(resolve_plan(gpu="h100-sxm", gpus=2, model="mixtral-8x7b", recordings=tmp_path / "none"),
                    cache).narrate().plan
    fps = QUALITIES["tiny"].fps
    ends = {}  # each beat's first and last frames, drawn alone, from one play of the beat
    for beat in plan.beats:
        last = (round(beat.duration * fps) - 1) / fps
        stills = render_frames(plan, beat.id, [0.0, last], "tiny", tmp_path / beat.id, cache=cache)
        ends[beat.id] = [np.asarray(Image.open(still).convert("L"), dtype=float) for still in stills]

    for before, after in zip(plan.beats, plan.beats[1:]):
        last, first_frame = ends[before.id][1], ends[after.id][0]
        assert int((np.abs(first_frame - np.median(first_frame)) > 24).sum()) > 500, f"{after.id} starts empty"
        assert np.abs(last - first_frame).mean() < 2.0, f"{before.id} -> {after.id}: the picture jumps at the cut"


def content_centres(film: Path, plan: Plan) -> dict[str, float]:
    """Each beat's content centre: the horizontal centre of mass of what is drawn (each pixel weighted by how far it
    is from the background), averaged over the beat's frames, as a signed share of the width from the middle."""
    return {beat: centre for beat, (centre, _) in content_spread(film, plan).items()}


def content_spread(film: Path, plan: Plan) -> dict[str, tuple[float, float]]:
    """Each beat's content centre (content_centres) and the share of the width its drawing spans (from its leftmost
    to its rightmost drawn column, a pixel 24 grey levels or more from the background), each averaged over the beat's
    frames at the tests' size (854 x 480, 3 a second)."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(film), "-f", "rawvideo", "-pix_fmt", "gray", "-"],
                         capture_output=True, check=True).stdout
    frames = np.frombuffer(raw, np.uint8).reshape(-1, 480, 854).astype(float)
    background = np.median(frames[:, :4, :4])
    columns = np.arange(854) / 854 - 0.5
    found = {}
    for beat in plan.beats:
        centres, spans = [], []
        for picture in frames[round(beat.start * 3):round(beat.end * 3)]:
            distance = np.abs(picture - background)
            weight = distance.sum(axis=0)
            if weight.sum() > 1000:
                centres.append((weight * columns).sum() / weight.sum())
                drawn = np.flatnonzero(distance.max(axis=0) >= 24)
                spans.append((drawn[-1] - drawn[0]) / 854 if len(drawn) else 0.0)
        found[beat.id] = (float(np.mean(centres)), float(np.mean(spans)))
    return found


@pytest.mark.parametrize("which", ["first", "other"])
def test_every_beat_is_balanced_about_the_middle(request, which):
    """Each beat's content centre (titles included) lies within 6% of the width from the frame's middle."""
    made = request.getfixturevalue(which)
    result = made[0] if which == "first" else made
    centres = content_centres(result.film, timed_plan_of(result))
    assert {beat: round(centre, 3) for beat, centre in centres.items() if abs(centre) > 0.06} == {}


def test_the_film_never_stands_still_but_for_its_end_card(first):
    result, _ = first
    plan = timed_plan_of(result)
    out = subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-i", str(result.film), "-vf",
                          "freezedetect=n=0.0005:d=3", "-map", "0:v", "-f", "null", "-"], capture_output=True,
                          text=True)
    starts = [float(value) for value in re.findall(r"freeze_start: ([\d.]+)", out.stderr)]
    holding = [beat for beat in plan.beats if beat.holds]
    assert [beat.id for beat in holding] == ["two-budgets"]
    allowed_from = holding[0].timing.speech_end
    assert all(start >= allowed_from for start in starts), f"still stretches of 3 s or more at {starts}"
