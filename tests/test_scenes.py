"""The beats as pictures: real renders at a tiny size, their lengths, stills, the sheet, and no typed numbers."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from render import formatting as fmt, media
from render.errors import FilmError
from render.plan.beat_scene import scene_of
from render.plan.resolve import resolve_plan
from render.video import beats
from render.video.cues import cue_problems, cues_waited_for
from render.voice.narration import Narrator, make_narration

from conftest import BEAT_IDS, ROOT, run_film

SCENES = ROOT / "scenes"


@pytest.fixture(scope="module")
def narrated(tmp_path_factory, seed_speech):
    """The default film's narration and timed plan (the scenes' only input), voiced from the session film's clips."""
    build = tmp_path_factory.mktemp("build")
    return make_narration(resolve_plan(recordings=build / "none"), build, seed_speech(build / "cache"))


def video_info(path: Path) -> dict:
    result = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                             "stream=codec_type,nb_read_frames,r_frame_rate,duration", "-of", "json", str(path)],
                            capture_output=True, text=True)
    return {stream["codec_type"]: stream for stream in json.loads(result.stdout)["streams"]}


@pytest.mark.parametrize("beat_id", BEAT_IDS)
def test_every_beat_renders_for_its_exact_slot(default_tiny_film, beat_id, tmp_path):
    """Each beat as the session's tiny film rendered it (in its parts, joined, as `make film` and `make scene`
    render a beat), with its slice of the narration under it as `make scene` adds it."""
    from render.files import cache_dir
    from render.video.cache import BeatCache

    made = default_tiny_film.result
    render, beat = made.renders[beat_id], made.plan.beat(beat_id)
    video = BeatCache(cache_dir(default_tiny_film.build)).lookup(made.plan, beat_id, beats.QUALITIES["tiny"])
    clip = beats.mux_beat_audio(video, default_tiny_film.build / "narration.wav", beat.start, beat.duration,
                                tmp_path / f"{beat_id}.mp4")
    info = video_info(clip)
    fps = beats.QUALITIES["tiny"].fps
    assert info["video"]["r_frame_rate"] == f"{fps}/1"
    assert int(info["video"]["nb_read_frames"]) == round(beat.duration * fps) == render.frames  # exact, to the frame
    assert float(info["audio"]["duration"]) == pytest.approx(beat.duration, abs=0.05)
    assert render.safe_area == (), "drawn outside the 5% safe margin"
    assert render.layout == (), "text over text, or text too small"


@pytest.mark.parametrize("beat_id", BEAT_IDS)
def test_every_beat_renders_for_another_gpu_and_model(other_tiny_film, beat_id):
    from render.files import cache_dir
    from render.video.cache import BeatCache

    made = other_tiny_film.result
    render, beat = made.renders[beat_id], made.plan.beat(beat_id)
    video = BeatCache(cache_dir(other_tiny_film.build)).lookup(made.plan, beat_id, beats.QUALITIES["tiny"])
    assert int(video_info(video)["video"]["nb_read_frames"]) == round(beat.duration * beats.QUALITIES["tiny"].fps) \
        == render.frames
    assert render.safe_area == (), "drawn outside the 5% safe margin"
    assert render.layout == (), "text over text, or text too small"


def test_a_render_reports_the_plan_values_its_scene_read(narrated, tmp_path):
    frames = []
    prefill = beats.render_video(narrated.plan, "prefill", beats.QUALITIES["tiny"], tmp_path / "prefill.mp4",
                                 progress=lambda done, total: frames.append((done, total)))
    assert {"numbers.prefill.ops", "numbers.prefill.seconds", "spec.peak_flops",
            "spec.sm_count"} <= set(prefill.values_read)
    assert not any(path.startswith(("numbers.batch", "measured")) for path in prefill.values_read)
    # Without EFFICIENCY= a scene asks whether there are expected numbers, and reads none.
    assert "expected" in prefill.values_read and not any(path.startswith("expected.") for path in prefill.values_read)
    total = round(narrated.plan.beat("prefill").duration * beats.QUALITIES["tiny"].fps)
    assert frames[-1] == (total, total) and [done for done, _ in frames] == sorted(done for done, _ in frames)


def test_a_still_is_the_frame_at_that_time(narrated, tmp_path):
    """A still is drawn alone (Manim skipping to its frame) and is the full render's frame at that moment."""
    at = 9.0
    still = beats.render_still(narrated.plan, "two-waits", at, "low", tmp_path / "stills")
    assert still.name == "two-waits@9.png"
    full = beats.render_video(narrated.plan, "two-waits", beats.QUALITIES["low"], tmp_path / "full.mp4").video
    frame = media.extract_frame(full, round(at * 15), tmp_path / "frame.png")
    a = np.asarray(Image.open(still).convert("L"), dtype=float)
    b = np.asarray(Image.open(frame).convert("L"), dtype=float)
    assert a.shape == (480, 854)
    assert np.mean(np.abs(a - b)) < 2.0  # the same picture, up to video compression
    earlier = media.extract_frame(full, round(2.0 * 15), tmp_path / "earlier.png")
    assert np.mean(np.abs(a - np.asarray(Image.open(earlier).convert("L"), dtype=float))) > 4.0


@pytest.mark.parametrize("beat_id, at", [("batching", 10.0), ("roofline", 13.33), ("cache-rides-along", 10.67),
                                         ("two-budgets", 12.67), ("prefill", 6.33)])
def test_a_still_mid_animation_is_the_films_frame(default_tiny_film, beat_id, at, tmp_path):
    """Mid-move, late in a beat, in a transform from the beat before: the still is the film's frame then,
    nearer to it than to the frames either side (these moments are chosen where the picture moves)."""
    plan = default_tiny_film.result.plan
    fps = beats.QUALITIES["tiny"].fps
    frame = round(plan.beat(beat_id).start * fps) + round(at * fps)
    still = np.asarray(Image.open(beats.render_still(plan, beat_id, at, "tiny", tmp_path)).convert("L"), dtype=float)

    def distance(index: int) -> float:
        film_frame = media.extract_frame(default_tiny_film.result.film, index, tmp_path / f"film-{index}.png")
        difference = still - np.asarray(Image.open(film_frame).convert("L"), dtype=float)
        difference -= np.median(difference)  # the video's colour conversion shifts the picture by a level or two
        return float(np.mean(np.abs(difference)))

    own = distance(frame)
    assert own < 1.0, f"{beat_id} at {at} s differs from the film's frame"
    assert distance(frame - 1) > 2 * own and distance(frame + 1) > 2 * own


def frames_sent_to_the_encoder(monkeypatch) -> list[tuple[str, int]]:
    """Each frame a render hands to the encoder (a hash of its pixels, and how many times it is written)."""
    from manim.scene.scene_file_writer import SceneFileWriter

    sent: list[tuple[str, int]] = []
    write = SceneFileWriter.write_frame

    def keep(writer, frame, repeat: int = 1):
        sent.append((hashlib.sha256(frame.tobytes()).hexdigest(), repeat))
        return write(writer, frame, repeat=repeat)

    monkeypatch.setattr(SceneFileWriter, "write_frame", keep)
    return sent


@pytest.mark.parametrize("beat_id", ["decode", "batching"])
def test_a_play_draws_its_still_objects_once_and_the_frames_are_manims(narrated, beat_id, tmp_path, monkeypatch):
    """Drawn in layers (what a play leaves still, once; what moves, each frame), every frame has exactly the
    pixels Manim's own drawing gives it. These two beats have the most still objects after a moving one."""
    from render.engine.scene import BeatScene

    sent = frames_sent_to_the_encoder(monkeypatch)
    layered = beats.render_video(narrated.plan, beat_id, beats.QUALITIES["tiny"], tmp_path / "layered.mp4")
    drawn_in_layers = list(sent)
    sent.clear()
    monkeypatch.setattr(BeatScene, "draws_only_changes", False)
    whole = beats.render_video(narrated.plan, beat_id, beats.QUALITIES["tiny"], tmp_path / "whole.mp4")
    assert whole.frames_layered == 0 and layered.frames_layered > 0.4 * layered.frames
    assert len(drawn_in_layers) == len(sent)
    different = [index for index, (one, other) in enumerate(zip(drawn_in_layers, sent)) if one != other]
    assert not different, f"frames {different[:10]} differ from Manim's"


def test_a_beat_rendered_in_parts_is_the_beat_rendered_whole(narrated, tmp_path, monkeypatch):
    """The film renders each beat in parts (a process each, where there are cores) and joins them without
    re-encoding: the joined beat has every frame, and each is the whole render's, to within the rounding of
    a play skipped to its end (an edge's anti-aliasing, a level or two)."""
    from manim.scene.scene_file_writer import SceneFileWriter

    pictures: list[np.ndarray] = []
    write = SceneFileWriter.write_frame

    def keep(writer, frame, repeat: int = 1):
        pictures.extend([frame[:, :, :3].astype(np.int16)] * repeat)
        return write(writer, frame, repeat=repeat)

    monkeypatch.setattr(SceneFileWriter, "write_frame", keep)
    q = beats.QUALITIES["tiny"]
    whole = beats.render_video(narrated.plan, "batching", q, tmp_path / "whole.mp4")
    whole_pictures = list(pictures)
    pictures.clear()
    assert beats.part_bounds(whole.frames) == [(0, whole.frames)]  # (too few frames at 3 fps to pay for a second part)
    assert len(beats.part_bounds(beats.PARTS * beats.MIN_PART_FRAMES)) == beats.PARTS == 2
    parts = beats.part_bounds(whole.frames, beats.PARTS)
    assert len(parts) == 2 and parts[0][0] == 0 and parts[-1][1] == whole.frames
    joined = beats.join_parts("batching", [beats.render_video(narrated.plan, "batching", q,
                                                              tmp_path / f".joined.part{index}.mp4", part=bounds)
                                           for index, bounds in enumerate(parts)], tmp_path / "joined.mp4")
    assert joined.frames == whole.frames == media.frame_count(joined.video) == len(pictures)
    assert set(joined.values_read) == set(whole.values_read) and joined.layout == whole.layout == ()
    for index, (one, other) in enumerate(zip(whole_pictures, pictures)):
        difference = np.abs(one - other)
        assert difference.max() <= 3 and np.count_nonzero(difference.max(axis=2)) < 50, f"frame {index} differs"
    assert not list(tmp_path.glob(".joined.part*"))  # the parts are gone once joined


def decoded_frames(path: Path) -> list[np.ndarray]:
    """Each frame's YUV planes, as decoded (one array: Y, then U and V)."""
    import av

    with av.open(str(path)) as container:
        return [frame.to_ndarray() for frame in container.decode(video=0)]


def as_yuv(pixels: np.ndarray) -> np.ndarray:
    """RGBA pixels converted as the encoder converts them (one array: Y, then U and V)."""
    import av

    return av.VideoFrame.from_ndarray(pixels, format="rgba").reformat(format="yuv420p", threads=1).to_ndarray()


def test_frames_reach_the_encoder_through_kept_buffers_and_holds_are_encoded_once(narrated, tmp_path, monkeypatch):
    """Manim's frames, handed to its encoder through a few kept buffers (not a new 8 MB array and two PyAV
    copies per frame at 1080p), make the same pictures as Manim's own hand-over: every frame of a move
    decodes to exactly Manim's; a still hold's picture is encoded once (at a finer quality) and each repeat
    is a frame that skips every macroblock, decoding to exactly the frame before it, and the hold ends at
    least as close to the drawn pixels as x264's repeats brought it. The buffers are reused, and one the
    renderer keeps (its background) is never handed back."""
    from contextlib import nullcontext

    from manim.scene.scene_file_writer import SceneFileWriter

    from render.video import frames

    sent, held_pixels = [], {}
    write = SceneFileWriter.write_frame

    def keep(writer, frame, repeat: int = 1):
        if repeat > 1:
            held_pixels[len(sent)] = as_yuv(frame).astype(float)
        sent.append((hashlib.sha256(frame.tobytes()).hexdigest(), repeat))
        return write(writer, frame, repeat=repeat)

    monkeypatch.setattr(SceneFileWriter, "write_frame", keep)
    made, pictures, writes = {}, {}, {}
    for name, handing in (("manims", lambda held_crf: nullcontext()), ("kept", frames.kept_frame_buffers)):
        sent.clear()
        held_pixels.clear()
        monkeypatch.setattr(beats, "kept_frame_buffers", handing)
        made[name] = beats.render_video(narrated.plan, "two-budgets", beats.QUALITIES["tiny"], tmp_path / f"{name}.mp4")
        pictures[name], writes[name] = decoded_frames(made[name].video), list(sent)
    assert writes["kept"] == writes["manims"]  # the same pixels drawn, handed over the same way
    assert made["kept"].frames == made["manims"].frames == len(pictures["kept"]) == len(pictures["manims"]) > 10
    held, repeats, moving = [], [], []  # frame numbers: a hold's first frame, its repeats, a move's frames
    for _, repeat in writes["kept"]:
        start = len(held) + len(repeats) + len(moving)
        if repeat == 1:
            moving.append(start)
        else:
            held.append(start)
            repeats += range(start + 1, start + repeat)
    assert len(repeats) > 0.2 * made["kept"].frames and moving  # the end card's hold, most of the beat's last 4 s
    kept, manims = pictures["kept"], pictures["manims"]
    assert all(np.array_equal(kept[index], manims[index]) for index in moving)
    assert all(np.array_equal(kept[index], kept[index - 1]) for index in repeats)

    # Each hold's last frame against the pixels drawn, in YUV (squared error, as PSNR counts it): no worse.
    holds = [(number, start + writes["kept"][number][1] - 1) for number, start in
             zip((number for number, (_, repeat) in enumerate(writes["kept"]) if repeat > 1), held)]

    def error(video: list[np.ndarray]) -> float:
        return sum(float(np.mean((video[last].astype(float) - held_pixels[number]) ** 2)) for number, last in holds)

    assert error(kept) <= error(manims)
    packets = media.probe(made["kept"].video, count_packets=None)["streams"][0]
    assert int(packets["nb_read_packets"]) == made["kept"].frames

    from manim import Square, tempconfig
    from manim.renderer.cairo_renderer import CairoRenderer

    with tempconfig({"pixel_width": 64, "pixel_height": 36}), frames.kept_frame_buffers(beats.HELD_CRF):
        renderer = CairoRenderer()
        renderer.camera.capture_mobjects([Square()])
        kept = renderer.get_frame()  # as Manim keeps its background: never written, never handed back
        written = renderer.get_frame()
        assert kept is not written and np.array_equal(kept, renderer.camera.pixel_array)


def test_an_updater_that_moves_an_object_it_does_not_own_is_named(narrated, tmp_path):
    """The background of still objects is right only while they stay still: an updater on one object that
    moves another is a scene's mistake, named, not a picture with the old one left in it."""
    from manim import DOWN, LEFT, RIGHT, UP, Square, tempconfig

    from render.engine.scene import BeatScene

    class Meddling(BeatScene):
        def build(self):
            mover, bystander = Square().shift(LEFT * 3), Square().shift(RIGHT * 3)
            self.add(mover, bystander)  # the bystander comes after the mover: drawn once, as still
            mover.add_updater(lambda square, dt: bystander.shift(UP * dt))
            self.play(mover.animate.shift(DOWN), run_time=1)

    settings = {"pixel_width": 854, "pixel_height": 480, "frame_rate": 3, "media_dir": str(tmp_path),
                "disable_caching": True, "write_to_movie": False, "verbosity": "WARNING", "progress_bar": "none"}
    with tempconfig(settings), pytest.raises(FilmError, match=r"beat 'two-waits': a Square changed during a "
                                                             r"play although nothing animates it"):
        Meddling(narrated.plan, "two-waits").render()


def test_typeset_text_and_formulas_are_kept_for_the_next_render_and_checked(narrated, tmp_path):
    """What a render typeset (LaTeX, Pango) is kept in the build's cache; a damaged entry is made again."""
    cache = tmp_path / "cache"
    first = beats.render_frames(narrated.plan, "prefill", [6.0], "tiny", tmp_path / "a", cache=cache)[0]
    kept = {kind: sorted((cache / "typeset" / kind).glob("*.svg")) for kind in ("tex", "texts")}
    assert kept["tex"] and kept["texts"], kept  # the prefill beat typesets a formula and writes text
    damaged = kept["texts"][0]
    damaged.write_bytes(damaged.read_bytes()[:40])  # cut short, as a killed copy would leave it
    again = beats.render_frames(narrated.plan, "prefill", [6.0], "tiny", tmp_path / "b", cache=cache)[0]
    assert damaged.read_bytes().rstrip().endswith(b"</svg>")  # whole again
    assert np.array_equal(np.asarray(Image.open(first)), np.asarray(Image.open(again)))


def test_a_texts_svg_is_read_to_the_shapes_manim_parses_from_it(tmp_path, monkeypatch):
    """Pango's SVG of a text (glyphs placed with `use`) is read by the shapes' own reader: every outline's
    points and colours exactly as Manim's parse of the same file makes them; a formula's SVG is Manim's."""
    from manim import MathTex, Text, tempconfig
    from manim.mobject.svg import svg_mobject

    from render.video import shapes
    from render.video.beats import typesetting_dirs
    from scenes.style import FONT

    monkeypatch.setattr(svg_mobject, "SVG_HASH_TO_MOB_MAP", {})  # nothing parsed before in this process counts
    monkeypatch.setattr(shapes, "written", set())
    read_by_us = []
    glyphs = shapes.glyph_shapes
    monkeypatch.setattr(shapes, "glyph_shapes", lambda *args: read_by_us.append(1) or glyphs(*args))

    words = [("Prefill vs decode", "BOLD"), ("33.4 trillion", "BOLD"), ("8× B200 · DeepSeek-V3 · BF16", "NORMAL"),
             ("tokens per second, per user", "NORMAL"), ("1,234 ms", "BOLD")]
    with tempconfig({"media_dir": str(tmp_path), **typesetting_dirs(None)}):
        manims = [Text(text, font=FONT, weight=weight, use_svg_cache=False) for text, weight in words]
        read = []
        with shapes.kept_shapes(tmp_path / "cache"):
            for (text, weight), manim in zip(words, manims):
                assert shapes.placed_glyphs(Path(manim.file_name)) is not None, text
                read.append(Text(text, font=FONT, weight=weight, use_svg_cache=True))
        formula = MathTex(r"T = \max\left(\frac{W}{B}, \frac{F}{P}\right)")
    assert shapes.placed_glyphs(Path(formula.file_name)) is None and len(read_by_us) == len(words)
    for manim, ours in zip(manims, read):
        assert len(manim.submobjects) == len(ours.submobjects) > 5
        for one, other in zip(manim.family_members_with_points(), ours.family_members_with_points()):
            for attribute in ("points", "fill_rgbas", "stroke_rgbas", "stroke_width"):
                assert np.array_equal(getattr(one, attribute), getattr(other, attribute)), (manim.text, attribute)


def test_parsed_shapes_are_kept_for_the_next_render_and_checked(narrated, tmp_path, monkeypatch):
    """The shapes Manim parses from text and formula SVGs are kept: the next render parses none, and the
    same pixels come out; a damaged entry is parsed again and kept whole."""
    import svgelements
    from manim.mobject.svg import svg_mobject

    from render.video import shapes

    parsed = []  # a formula's SVG is parsed by svgelements, a text's by the shapes' own reader of Pango's SVG
    parse, glyphs = svgelements.SVG.parse, shapes.glyph_shapes
    monkeypatch.setattr(svgelements.SVG, "parse", lambda *args, **kwargs: parsed.append(1) or parse(*args, **kwargs))
    monkeypatch.setattr(shapes, "glyph_shapes", lambda *args: parsed.append(1) or glyphs(*args))
    from render.engine import scene

    cache = tmp_path / "cache"
    scene.MADE_ONCE.clear()  # (words this worker made for an earlier test: as a new process, it makes them here)
    first = beats.render_frames(narrated.plan, "prefill", [6.0], "tiny", tmp_path / "a", cache=cache)[0]
    kept = sorted((cache / "typeset" / "shapes").glob("*.shape"))
    assert len(kept) > 10  # its title, labels and formula at least (parsed here, or by an earlier render)

    def still_again(folder: str) -> np.ndarray:
        """As a new process renders it: Manim's own cache of this process's shapes emptied, and the words it made."""
        svg_mobject.SVG_HASH_TO_MOB_MAP.clear()
        scene.MADE_ONCE.clear()
        shapes.written.clear()
        parsed.clear()
        return np.asarray(Image.open(beats.render_frames(narrated.plan, "prefill", [6.0], "tiny", tmp_path / folder,
                                                         cache=cache)[0]))

    assert np.array_equal(still_again("b"), np.asarray(Image.open(first))) and not parsed
    kept[0].write_bytes(kept[0].read_bytes()[:-100])  # cut short
    kept[1].write_bytes(b"\0" * kept[1].stat().st_size)  # the right size, nothing in it
    assert np.array_equal(still_again("c"), np.asarray(Image.open(first))) and len(parsed) == 2
    assert np.array_equal(still_again("d"), np.asarray(Image.open(first))) and not parsed


def test_a_family_is_listed_as_manim_lists_it():
    """Families listed in one pass (render/engine/families.py) are Manim's lists: its order, a part held twice
    listed once (where Manim keeps it), a part that holds its own ancestor not followed back."""
    from manim import Circle, Square, VGroup

    from render.engine import families

    a, b, c = Square(), Circle(), Square()
    shared = VGroup(a, VGroup(b, a), c)
    looped = VGroup(Square(), VGroup(Circle()))
    looped.submobjects[1].submobjects.append(looped)
    for group in (shared, VGroup(shared, b, VGroup(shared)), looped, VGroup(), Square()):
        assert families.get_family(group) == families.manims_get_family(group)
    assert families.get_family(shared) == [shared, shared.submobjects[1], b, a, c]  # `a` where it is last
    from manim import Mobject

    families.install()  # (as every scene's setup does)
    assert Mobject.get_family is families.get_family


def test_a_still_outside_its_beat_is_refused(narrated, tmp_path):
    with pytest.raises(FilmError, match=r"AT=20 is outside beat 'two-waits', which lasts 14 s"):
        beats.render_still(narrated.plan, "two-waits", 20, "tiny", tmp_path)
    with pytest.raises(FilmError, match="unknown beat 'prefil'; the beats are: two-waits, prefill"):
        beats.render_still(narrated.plan, "prefil", 1, "tiny", tmp_path)
    with pytest.raises(FilmError, match="unknown quality 'ultra'"):
        beats.quality("ultra")


def test_an_unknown_cue_names_the_beat_the_cue_and_the_known_cues(narrated):
    from scenes import scene_class
    scene = scene_class("prefill")(narrated.plan, "prefill")
    with pytest.raises(FilmError) as error:
        scene.at("flood")
    message = str(error.value)
    assert "beat 'prefill': its scene waits for cue 'flood', which the storyboard does not mark" in message
    assert "one-pass, tokens, ops, peak, time, busy, speech-start, speech-end, end" in message
    assert "storyboard.yaml:" in message
    assert scene.cue("speech-end") == pytest.approx(narrated.plan.beat("prefill").timing.speech_end - 14.0)


def test_the_plan_is_read_only_and_typos_fail_in_a_scene(narrated):
    from scenes import scene_class
    scene = scene_class("decode")(narrated.plan, "decode")
    with pytest.raises(AttributeError):
        scene.plan.numbers.decode.step_secs  # noqa: B018
    with pytest.raises(AttributeError):
        scene.plan.spec = None
    assert scene.plan.numbers.decode.step_seconds == narrated.plan.numbers.decode.step_seconds
    assert scene.reads == {"numbers.decode.step_seconds"}


def test_the_contact_sheet_builds(narrated, tmp_path):
    sheet = beats.make_sheet(narrated.plan, "tiny", tmp_path / "sheet.png")
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
    n, spec = plan.numbers, plan.spec
    numbers = {989, 295, 209, 2000, 32000, 11000, 11775, 156, 136, 417, 153, 164, 131072, 3.35, 4.8, 5.4, 0.74,
               2.1, 16.06, 8.03, 33.5}
    assert round(spec.ridge_ops_per_byte) == 295 and round(n.decode.tokens_per_second) == 209  # the set is the plan's
    texts = {
        fmt.teraflops(spec.peak_flops, short=True), fmt.bandwidth(spec.memory_bandwidth, short=True),
        fmt.gigabytes(spec.weight_bytes, short=True), fmt.milliseconds(n.decode.step_seconds, short=True),
        fmt.milliseconds(n.prefill.seconds, short=True), fmt.count(n.prefill.tokens),
        fmt.count(n.long_prompt.tokens), fmt.round_down(n.batch.tokens_per_second),
        fmt.integer(n.decode.tokens_per_second), fmt.integer(spec.ridge_ops_per_byte),
        fmt.large(n.prefill.ops), fmt.gigabytes(plan.measured.long_kv_bytes, short=True),
        "989", "3.35", "295", "209", "4.8", "16 GB", "2,000", "32,000", "11,000", "156", "136", "417",
    }
    return numbers, texts


def test_scenes_type_no_number_the_plan_provides():
    numbers, texts = headline_values()
    offences = []
    for path in sorted(SCENES.rglob("*.py")):
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
    """Scenes import the formatter, the film's formulas (LaTeX, written once for the film and its page), the
    plan's types and their own helpers; never the data, the storyboard, the roofline, the resolve step or the
    voice."""
    allowed_render = {"render.errors", "render.formatting", "render.formulas", "render.plan.types",
                      "render.plan.tracking", "render.plan.beat_scene",
                      "render.engine.scene", "render.engine.cuts"}  # (the authoring API, never its plumbing)
    for path in SCENES.rglob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not imported & {"yaml", "json"}, f"{path.name} imports {imported & {'yaml', 'json'}}"
        from_render = {module for module in imported if module == "render" or module.startswith("render.")}
        assert from_render <= allowed_render | {"render"}, f"{path.name} imports {from_render - allowed_render}"
        if "render" in from_render:  # `from render import formatting, formulas` only
            names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                     and node.module == "render" for alias in node.names}
            assert names <= {"formatting", "formulas"}, f"{path.name} imports {names} from render"
        calls = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func,
                                                                                                      ast.Name)}
        assert "open" not in calls, f"{path.name} opens files"


def test_every_cue_a_scene_waits_for_is_in_its_beat_and_every_beat_cue_is_used():
    assert cue_problems(resolve_plan()) == []
    # at(), until= and cue()
    assert cues_waited_for(scene_of("two-waits")) >= {"paste", "stream", "two-jobs", "speech-end"}


def test_cues_that_disagree_with_the_scenes_are_refused_before_rendering(storyboard_copy, tmp_path):
    removed = storyboard_copy("[[ops]]{{ prefill.ops|large }}", "{{ prefill.ops|large }}")
    result = run_film("plan", "--storyboard", str(removed))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    line = next(number for number, text in enumerate((ROOT / "scenes" / "prefill.py").read_text().splitlines(), 1)
                if '"ops"' in text)
    assert f"scenes/prefill.py:{line}: beat 'prefill': its scene (Prefill) waits for cue [[ops]], which the " \
           "narration (" in result.stderr
    bogus = storyboard_copy("[[drip]]a drip", "[[bogus]]a drip")
    result = run_film("still", "--beat", "decode", "--at", "1", "--storyboard", str(bogus), "--build",
                      str(tmp_path / "build"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "beat 'decode' marks cue [[bogus]], which its scene (scenes/decode.py, Decode) never uses" \
        in result.stderr
    assert "waits for cue [[drip]]" in result.stderr and not (tmp_path / "build").exists()


def test_no_beat_imports_another():
    """Issue 56, step 3: what a beat hands the next is built by the shared pictures (scenes/pictures/), so a beat's
    module imports shared pictures and the engine, never another beat's module (whose every edit would otherwise
    render it again)."""
    beat_modules = {scene_of(beat).module for beat in BEAT_IDS}
    for beat in BEAT_IDS:
        tree = ast.parse((ROOT / scene_of(beat).path).read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not imported & (beat_modules - {scene_of(beat).module}), (beat, imported & beat_modules)
    for path in (ROOT / "scenes" / "pictures").glob("*.py"):  # nor does a shared picture
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not imported & beat_modules, (path.name, imported & beat_modules)


def test_every_beat_is_drawn_by_the_class_its_id_names_and_every_scene_class_draws_a_beat():
    """Issue 56, step 2: no registry. Beat `cache-rides-along` is class CacheRidesAlong in scenes/cache_rides_along.py;
    every BeatScene subclass in scenes/ is one beat's, in that beat's module."""
    from scenes import scene_class
    from render.engine.scene import BeatScene

    from render.plan.storyboard import load_storyboard

    drawn = set()
    cut_beats = [beat.id for cut in load_storyboard().cuts.values() for beat in cut.beats]  # (CUT=extended's)
    for beat in (*BEAT_IDS, *cut_beats):
        scene = scene_of(beat)
        assert issubclass(scene_class(beat), BeatScene) and scene_class(beat).__name__ == scene.name, beat
        drawn.add((scene.path, scene.name))
    assert scene_of("cache-rides-along").path == "scenes/cache_rides_along.py"
    for path in SCENES.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(getattr(base, "id", "") == "BeatScene" for base in node.bases):
                assert (f"scenes/{path.name}", node.name) in drawn, f"{node.name} draws no beat"


def test_make_scene_and_still_from_the_command_line(tmp_path, seed_speech):
    seed_speech(tmp_path / "cache")
    result = run_film("still", "--beat", "decode", "--at", "5.5", "--quality", "tiny", "--build", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("stills/decode@5.5.png")
    # A still times its own beat only (the plan's slice for it): the same picture as from the whole timed plan.
    timed = Narrator(resolve_plan(), tmp_path / "cache").narrate().plan
    whole = beats.render_still(timed, "decode", 5.5, "tiny", tmp_path / "from-the-whole-plan")
    still = tmp_path / "stills" / "decode@5.5.png"
    drawn = still.read_bytes()
    assert np.array_equal(np.asarray(Image.open(whole)), np.asarray(Image.open(still)))
    # Asked again with nothing changed: the kept frame (build/cache/stills/), checked against its record, else drawn.
    (kept,) = (tmp_path / "cache" / "stills").glob("decode-*@*.png")
    assert kept.read_bytes() == drawn
    marked = Image.open(whole).copy()
    marked.putpixel((0, 0), (255, 0, 255))
    marked.save(kept)  # (another picture, vouched for by its record: served as kept, which shows a hit is used)
    record = kept.with_suffix(".png.json")
    data = kept.read_bytes()
    record.write_text(json.dumps({"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}))
    assert run_film("still", "--beat", "decode", "--at", "5.5", "--quality", "tiny", "--build", str(tmp_path)) \
        .returncode == 0 and still.read_bytes() == kept.read_bytes() != drawn
    kept.write_bytes(data[:100] + bytes(len(data) - 100))  # (damaged, its size kept: its checksum no longer matches)
    assert run_film("still", "--beat", "decode", "--at", "5.5", "--quality", "tiny", "--build", str(tmp_path)) \
        .returncode == 0 and still.read_bytes() == drawn == kept.read_bytes()
    bad = run_film("scene", "--beat", "prefil", "--quality", "tiny", "--build", str(tmp_path))
    assert bad.returncode == 1 and "unknown beat 'prefil'" in bad.stderr and "Traceback" not in bad.stderr


def test_the_pictures_match_the_goldens(narrated, tmp_path):
    """One still a cue of every beat, against the stored ones; `make goldens` makes them again. Each is compared with
    the frame at its moment and those either side (render/tools/goldens.py's golden_difference)."""
    from render.tools.goldens import GOLDENS_DIR, golden_difference, render_goldens

    rendered: dict[str, list[Path]] = {}
    for path in render_goldens(narrated.plan, tmp_path, either_side=1):
        rendered.setdefault(path.name.split("~")[0].removesuffix(".png") + ".png", []).append(path)
    stored = {path.name: path for path in GOLDENS_DIR.glob("*.png")}
    assert sorted(rendered) == sorted(stored), "the cues changed: run make goldens and look at the new stills"
    changed = []
    for name, paths in sorted(rendered.items()):
        assert len(paths) == 3, (name, paths)
        difference = golden_difference(stored[name], paths)
        if difference > 3.0:
            changed.append(f"{name}: {difference:.1f}")
    assert not changed, ("pictures changed (mean difference out of 255): " + ", ".join(changed)
                         + "; if that is intended, run make goldens and look at the new stills")


def drawn(*mobjects) -> np.ndarray:
    """The mobjects drawn by Manim's camera at the current frame size, in grey."""
    from manim import Camera

    camera = Camera()
    camera.capture_mobjects(mobjects)
    return np.asarray(camera.get_image().convert("L"), dtype=float)


def morph_halfway(morph, animation_class) -> np.ndarray:
    """The middle frame of a text morph, played again from copies of the objects the beat played it with."""
    from manim import FadeTransform

    fade = {"stretch": morph.stretch, "dim_to_match": morph.dim_to_match} if animation_class is FadeTransform else {}
    animation = animation_class(morph.start.copy(), morph.end.copy(), **fade)
    animation.begin()
    animation.interpolate(0.5)
    return drawn(animation.mobject)


def whole_words_halfway(morph) -> np.ndarray:
    """What a cross-fade of whole words shows halfway: each of the two texts whole, at half its opacity, halfway
    between where it stands and where the other stands (and halfway between their sizes)."""
    pictures = []
    for words, other in ((morph.start, morph.end), (morph.end, morph.start)):
        there = words.copy().replace(other, stretch=morph.stretch, dim_to_match=morph.dim_to_match)
        halfway = words.copy()
        for shape, moved in zip(halfway.family_members_with_points(), there.family_members_with_points()):
            shape.points = (shape.points + moved.points) / 2
            for colours in (shape.fill_rgbas, shape.stroke_rgbas, shape.background_stroke_rgbas):
                colours[:, 3] *= 0.5
        pictures.append(halfway)
    return drawn(*pictures)


def test_words_change_whole_never_as_broken_letters(narrated):
    """Every change of words the film plays (a title becoming the next beat's, a counter becoming its term in the
    formula it came from) is drawn at its middle frame, at the tests' size, from the objects the beat played it with:
    it shows the two texts whole, each at half opacity halfway to the other, and nothing else. Manim's Transform
    between different words (which the layout lint refuses in every beat) fails this check: halfway, its letters
    are outlines pulled between unrelated glyphs ("3 3 t…lion")."""
    from manim import FadeTransform, Transform, tempconfig

    cache = narrated.timed_plan_path.parent / "cache"  # the module's typesetting, shared
    played = {beat_id: beats.played_through(narrated.plan, beat_id, cache).text_morphs for beat_id in BEAT_IDS}
    assert {beat for beat, morphs in played.items() if morphs} >= {"prefill", "decode", "roofline", "batching",
                                                                   "cache-rides-along"}
    quality = beats.QUALITIES["tiny"]
    with tempconfig({"pixel_width": quality.width, "pixel_height": quality.height}):
        for beat_id, morphs in played.items():
            for morph in morphs:
                expected = whole_words_halfway(morph)
                ink = (expected - expected.min()).mean()
                difference = np.abs(morph_halfway(morph, FadeTransform) - expected).mean() / ink
                assert difference < 0.02, f"{beat_id}: frame {morph.first_frame} is not a cross-fade of whole words"
        # The check sees broken letters: the prefill's counter of operations morphed glyph by glyph into its term.
        counter = played["prefill"][0]
        expected = whole_words_halfway(counter)
        assert np.abs(morph_halfway(counter, Transform) - expected).mean() / (expected - expected.min()).mean() > 0.5


def test_a_mixture_of_experts_wall_lights_only_the_experts_a_read_touches():
    from scenes.figures.chip import Chip, WeightsWall

    plan = resolve_plan(model="mixtral-8x7b", gpus=2)
    wall = WeightsWall("", shares=plan.spec.gpus, experts=plan.spec.experts)
    assert len(wall.tiles) == 8 and len(wall.dividers) == 1

    def lit(experts: float) -> set[int]:
        read = wall.sweep(experts=experts)
        return {id(animation.mobject) for animation in read.animations[1:]}

    one_token = lit(plan.numbers.decode.experts_read)      # two of eight
    assert len(one_token) == 2
    assert lit(plan.numbers.decode.experts_read) != one_token  # the next token picks others
    assert len(lit(plan.numbers.batch.experts_read)) == 8    # 64 users wake them all
    deepseek = resolve_plan(model="deepseek-v3", gpu="h200-sxm", gpus=8, dtype="fp8")
    many = WeightsWall("", experts=deepseek.spec.experts)
    assert len(many.sweep(experts=deepseek.numbers.decode.experts_read).animations) == 1 + 8
    assert len(many.sweep(experts=deepseek.numbers.batch.experts_read).animations) == 1 + 222
    chips = Chip(132, count=4)
    assert len(chips.chips) == 4 and len(chips.package) == 4
    chips.light_now(0.5)
    lit_per_chip = [sum(core.get_fill_color().to_hex().lower() != Chip.idle_color.lower() for core in chip[1])
                    for chip in chips.chips]
    assert len(set(lit_per_chip)) == 1 and lit_per_chip[0] == round(0.5 * chips.per_chip)


def colour_share(image: np.ndarray, colour: str, tolerance: float = 40) -> float:
    """The share of an RGB image's pixels within `tolerance` of a #rrggbb colour."""
    wanted = np.array([int(colour[index:index + 2], 16) for index in (1, 3, 5)], dtype=float)
    return float((np.abs(image.astype(float) - wanted).max(axis=2) < tolerance).mean())


def test_a_measured_sweep_replaces_the_roofline_chart_in_the_batching_beat(data_copy, narrated, tmp_path):
    """A dataset with a concurrency sweep: its points beside the roofline's curve where the roofline chart
    was (no flat orange roof there any more), laid out cleanly, and the measured beats still fit."""
    from scenes.style import COMPUTE, HIGHLIGHT, MEMORY
    from test_measure import sweep_dataset

    data = data_copy("gpus.yaml")
    sweep_dataset(data, cache="cached", reasoning=30)
    build = tmp_path / "build"
    plan = Narrator(resolve_plan(data_dir=data, measured="swept", recordings=build / "none"),
                    build / "cache").narrate().plan
    assert {beat: beats.lint_beat(plan, beat) for beat in ("batching", "measured", "cache-rides-along")} == \
        {"batching": (), "measured": (), "cache-rides-along": ()}

    def before_the_fade(timed) -> float:  # the beat's last picture, just before its closing fade begins
        from render.engine.scene import BeatView
        return BeatView.of(timed, "batching").cues["end"] - 0.2

    stills = {name: np.asarray(Image.open(beats.render_still(timed, "batching", before_the_fade(timed), "low",
                                                             tmp_path / name)).convert("RGB"))
              for name, timed in (("swept", plan), ("default", narrated.plan))}
    chart = {name: image[: image.shape[0] * 2 // 3, image.shape[1] // 2:] for name, image in stills.items()}
    shares = {(name, colour): colour_share(image, colour) for name, image in chart.items()
              for colour in (COMPUTE, MEMORY, HIGHLIGHT)}
    def roof_rows(image: np.ndarray) -> int:  # rows with a long orange run: a flat roof (not text's edges)
        wanted = np.array([int(COMPUTE[index:index + 2], 16) for index in (1, 3, 5)], dtype=float)
        orange = np.abs(image.astype(float) - wanted).max(axis=2) < 40
        return int((orange.sum(axis=1) >= 0.1 * image.shape[1]).sum())

    assert roof_rows(chart["default"]) >= 1 and roof_rows(chart["swept"]) == 0, shares
    assert shares["swept", MEMORY] > 0.001, shares                                    # the predicted curve
    points = sorted(dots(chart["swept"], HIGHLIGHT), key=lambda point: point[1])     # the measured points,
    assert len(points) == 3 and [row for row, _ in points] == sorted((row for row, _ in points), reverse=True)
    assert len(dots(chart["default"], HIGHLIGHT)) != 3                                # rising left to right


def dots(image: np.ndarray, colour: str) -> list[tuple[float, float]]:
    """Centres of the filled round blobs of a colour (a chart's points, not the letters of a label)."""
    from scipy import ndimage

    wanted = np.array([int(colour[index:index + 2], 16) for index in (1, 3, 5)], dtype=float)
    mask = np.abs(image.astype(float) - wanted).max(axis=2) < 40
    labels, count = ndimage.label(mask)
    found = []
    for index, box in enumerate(ndimage.find_objects(labels), start=1):
        height, width = box[0].stop - box[0].start, box[1].stop - box[1].start
        filled = (labels[box] == index).sum() / (height * width)
        if 6 <= height <= 30 and abs(height - width) <= 2 and filled > 0.6:
            found.append(((box[0].start + box[0].stop) / 2, (box[1].start + box[1].stop) / 2))
    return found


def test_a_film_of_expected_numbers_shows_them_and_the_reached_roof(narrated, seed_speech, tmp_path):
    """EFFICIENCY=: the decode beat reads the expected figures and the shares, and the roofline beat's last picture has
    the reached roof, dashed, under the datasheet's: more of the slope's and the roof's colours than the film of
    ceilings, in the same chart."""
    from render.engine.scene import BeatView
    from scenes.style import COMPUTE, MEMORY

    cache = seed_speech(tmp_path / "cache")
    plan = Narrator(resolve_plan(efficiency="openrouter-coreweave-llama-3.1-8b-bf16", recordings=tmp_path / "none"),
                    cache).narrate().plan
    decode = beats.render_video(plan, "decode", beats.QUALITIES["tiny"], tmp_path / "decode.mp4")
    assert {"expected.decode.tokens_per_second", "expected.decode.step_seconds", "choice.efficiency.memory",
            "numbers.decode.tokens_per_second"} <= set(decode.values_read)

    def chart(timed) -> np.ndarray:  # the roofline's chart just before the beat's closing fade, its GPU back home
        at = BeatView.of(timed, "roofline").cues["end"] - 0.2
        image = np.asarray(Image.open(beats.render_still(timed, "roofline", at, "low", tmp_path / str(id(timed))))
                           .convert("RGB"))
        return image[image.shape[0] // 6: image.shape[0] * 5 // 6, : image.shape[1] * 3 // 5]

    expected, ceilings = chart(plan), chart(narrated.plan)
    # Columns where a line of the colour runs twice a few pixels apart: the dashed slope under the slope (the film of
    # ceilings has only its labels' letters), and the dashed roof under the roof.
    assert doubled_columns(expected, MEMORY) > 2 * doubled_columns(ceilings, MEMORY)
    assert doubled_columns(expected, COMPUTE) > doubled_columns(ceilings, COMPUTE) + 10


def doubled_columns(image: np.ndarray, colour: str, gap: int = 12) -> int:
    """Columns in which the colour appears in two runs at most `gap` pixels apart (two lines, one under the other)."""
    wanted = np.array([int(colour[index:index + 2], 16) for index in (1, 3, 5)], dtype=float)
    mask = np.abs(image.astype(float) - wanted).max(axis=2) < 40
    found = 0
    for column in mask.T:
        rows = np.nonzero(column)[0]
        steps = np.diff(rows)
        found += bool(((steps > 1) & (steps <= gap)).any())
    return found
