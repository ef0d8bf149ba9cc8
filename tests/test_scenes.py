"""The beats as pictures: real renders at a tiny size, their lengths, stills, the sheet, and no typed numbers."""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from render import beats, formatting as fmt
from render.narration import make_narration
from render.plan import BEAT_IDS, resolve_plan

from conftest import ROOT, run_film

SCENES = ROOT / "scenes"


@pytest.fixture(scope="module")
def narrated(tmp_path_factory):
    """The default film's narration and timed plan (the scenes' only input)."""
    build = tmp_path_factory.mktemp("build")
    return make_narration(resolve_plan(recordings=build / "none"), build, build / "cache")


@pytest.fixture(scope="module")
def other_choice(tmp_path_factory):
    build = tmp_path_factory.mktemp("other")
    plan = resolve_plan(gpu="a100-sxm-80gb", model="llama-3.1-70b", dtype="int8", recordings=build / "none")
    return make_narration(plan, build, build / "cache")


def video_info(path: Path) -> dict:
    result = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                             "stream=codec_type,nb_read_frames,r_frame_rate,duration", "-of", "json", str(path)],
                            capture_output=True, text=True)
    return {stream["codec_type"]: stream for stream in json.loads(result.stdout)["streams"]}


@pytest.mark.parametrize("beat_id", BEAT_IDS)
def test_every_beat_renders_for_its_exact_slot(narrated, beat_id, tmp_path):
    path = beats.render_beat(narrated.timed_plan_path, narrated.track, beat_id, "tiny", tmp_path)
    beat = narrated.timed_plan.beat(beat_id)
    info = video_info(path)
    fps = beats.QUALITIES["tiny"].fps
    assert info["video"]["r_frame_rate"] == f"{fps}/1"
    assert int(info["video"]["nb_read_frames"]) == round((beat.end - beat.start) * fps)  # exact, to the frame
    assert float(info["audio"]["duration"]) == pytest.approx(beat.end - beat.start, abs=0.05)
    assert beats.SAFE_AREA_REPORT[beat_id] == [], "drawn outside the 5% safe margin"


@pytest.mark.parametrize("beat_id", BEAT_IDS)
def test_every_beat_renders_for_another_gpu_and_model(other_choice, beat_id, tmp_path):
    video = beats.render_video(json.loads(other_choice.timed_plan_path.read_text()), beat_id,
                               beats.QUALITIES["tiny"], tmp_path / f"{beat_id}.mp4")
    beat = other_choice.timed_plan.beat(beat_id)
    assert int(video_info(video)["video"]["nb_read_frames"]) == round((beat.end - beat.start) * beats.QUALITIES["tiny"].fps)
    assert beats.SAFE_AREA_REPORT[beat_id] == [], "drawn outside the 5% safe margin"


def test_a_still_is_the_frame_at_that_time(narrated, tmp_path):
    """The still (rendered at 10 fps) matches the full render's frame (15 fps) at the same moment."""
    at = 9.0
    still = beats.render_still(narrated.timed_plan_path, "two-waits", at, "low", tmp_path / "stills")
    assert still.name == "two-waits@9.png"
    full = beats.render_video(json.loads(narrated.timed_plan_path.read_text()), "two-waits",
                              beats.QUALITIES["low"], tmp_path / "full.mp4")
    frame = tmp_path / "frame.png"
    beats.extract_frame(full, round(at * 15), frame)
    a = np.asarray(Image.open(still).convert("L"), dtype=float)
    b = np.asarray(Image.open(frame).convert("L"), dtype=float)
    assert a.shape == (480, 854)
    assert np.mean(np.abs(a - b)) < 2.0  # the same picture, up to video compression
    earlier = tmp_path / "earlier.png"
    beats.extract_frame(full, round(2.0 * 15), earlier)
    assert np.mean(np.abs(a - np.asarray(Image.open(earlier).convert("L"), dtype=float))) > 4.0


def test_a_still_outside_its_beat_is_refused(narrated, tmp_path):
    from render.errors import FilmError
    with pytest.raises(FilmError, match=r"AT=20 is outside beat 'two-waits', which lasts 14 s"):
        beats.render_still(narrated.timed_plan_path, "two-waits", 20, "tiny", tmp_path)
    with pytest.raises(FilmError, match="unknown beat 'prefil'; the beats are: two-waits, prefill"):
        beats.render_still(narrated.timed_plan_path, "prefil", 1, "tiny", tmp_path)
    with pytest.raises(FilmError, match="unknown quality 'ultra'"):
        beats.quality("ultra")


def test_the_contact_sheet_builds(narrated, tmp_path):
    sheet = beats.make_sheet(narrated.timed_plan_path, "tiny", tmp_path / "sheet.png")
    image = Image.open(sheet)
    width, height = beats.QUALITIES["tiny"].width, beats.QUALITIES["tiny"].height
    assert image.width > 3 * width and image.height > 9 * height
    # Nine rows of three frames, none of them blank.
    pixels = np.asarray(image.convert("L"), dtype=float)
    row_height = image.height / 9
    for row in range(9):
        band = pixels[int(row * row_height): int((row + 1) * row_height)]
        assert band.std() > 5, f"row {row} looks empty"


def headline_values() -> tuple[set[float], set[str]]:
    """The plan's headline numbers, as numbers and as the strings the formatter writes them."""
    plan = resolve_plan()
    n = plan.numbers
    numbers = {989, 295, 209, 2000, 32000, 11000, 11775, 156, 136, 417, 153, 164, 131072, 3.35, 4.8, 5.4, 0.74,
               2.1, 16.06, 8.03, 33.5}
    assert round(n["ridge_ops_per_byte"]) == 295 and round(n["decode_tokens_per_second"]) == 209  # the set is the plan's
    texts = {
        fmt.teraflops(n["peak_flops"], short=True), fmt.bandwidth(n["memory_bandwidth"], short=True),
        fmt.gigabytes(n["weight_bytes"], short=True), fmt.milliseconds(n["decode_step_seconds"], short=True),
        fmt.milliseconds(n["prefill_seconds"], short=True), fmt.count(n["prefill_tokens"]),
        fmt.count(n["long_prompt_tokens"]), fmt.round_down(n["batch_tokens_per_second"]),
        fmt.integer(n["decode_tokens_per_second"]), fmt.integer(n["ridge_ops_per_byte"]),
        fmt.large(n["prefill_ops"]), fmt.gigabytes(n["measured_long_kv_bytes"], short=True),
        "989", "3.35", "295", "209", "4.8", "16 GB", "2,000", "32,000", "11,000", "156", "136", "417",
    }
    return numbers, texts


def test_scenes_type_no_number_the_plan_provides():
    numbers, texts = headline_values()
    offences = []
    for path in sorted(SCENES.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                    and not isinstance(node.value, bool) and any(abs(node.value - v) < 1e-9 for v in numbers):
                offences.append(f"{path.name}:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for text in texts:
                    if re.search(rf"(?<![\w.,]){re.escape(text)}(?![\w]|[.,]\d)", node.value):
                        offences.append(f"{path.name}:{node.lineno}: {text!r} in {node.value!r}")
    assert not offences, "numbers typed into scenes:\n" + "\n".join(offences)


def test_scenes_read_no_yaml_and_compute_no_physics():
    """Scenes import the formatter and their own helpers, never the data, the storyboard or the roofline."""
    forbidden = {"yaml", "json", "render.roofline", "render.plan", "render.catalog", "render.storyboard",
                 "render.narration"}
    for path in SCENES.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not imported & forbidden, f"{path.name} imports {imported & forbidden}"
        calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        assert "open" not in calls, f"{path.name} opens files"


def test_make_scene_and_still_from_the_command_line(tmp_path):
    result = run_film("still", "--beat", "decode", "--at", "5.5", "--quality", "tiny", "--build", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("stills/decode@5.5.png")
    assert (tmp_path / "stills" / "decode@5.5.png").exists()
    bad = run_film("scene", "--beat", "prefil", "--quality", "tiny", "--build", str(tmp_path))
    assert bad.returncode == 1 and "unknown beat 'prefil'" in bad.stderr and "Traceback" not in bad.stderr
