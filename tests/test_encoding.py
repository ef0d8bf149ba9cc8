"""A held picture's repeats as skip frames: real x264 streams, decoded by ffmpeg, with Manim's own segment encoder."""

from __future__ import annotations

import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from render.video import beats, frames, h264

ULTRAFAST = beats.ENCODER


def picture(width: int, height: int, seed: int) -> np.ndarray:
    """An opaque RGBA picture with detail in it (noise in a box), different for each seed."""
    pixels = np.zeros((height, width, 4), np.uint8)
    pixels[..., 3] = 255
    box = np.random.default_rng(seed).integers(0, 255, (height // 2, width // 3, 3), dtype=np.uint8)
    pixels[height // 4: height // 4 + box.shape[0], width // 3: width // 3 + box.shape[1], :3] = box
    return pixels


def decoded(path: Path) -> tuple[list[np.ndarray], str]:
    """Every frame's YUV planes, and what ffmpeg reports while decoding the file (nothing when it is whole)."""
    report = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", str(path), "-f", "null", "-"],
                            capture_output=True, text=True).stderr
    with av.open(str(path)) as container:
        return [frame.to_ndarray() for frame in container.decode(video=0)], report


@pytest.mark.parametrize("width, height", [(1920, 1080), (854, 480), (64, 36)])
def test_skip_frames_repeat_x264s_picture_exactly(tmp_path, width, height):
    """One picture encoded by x264, then 200 made skip frames (past frame_num's wrap at 16): the file decodes
    without a complaint, to 201 frames each exactly the first, in a few bytes each."""
    path = tmp_path / "held.mp4"
    with av.open(str(path), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=60, options=ULTRAFAST)
        stream.pix_fmt, stream.width, stream.height = "yuv420p", width, height
        frame = av.VideoFrame.from_ndarray(picture(width, height, 1), format="rgba")
        frame.pts, frame.time_base = 0, Fraction(1, 60)
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
        skips = h264.SkipFrames.for_stream(stream.codec_context.extradata)
        assert skips is not None and skips.parameters.macroblocks == -(-width // 16) * -(-height // 16)
        for number in range(1, 201):
            packet = av.Packet(skips.frame(number))
            packet.pts = packet.dts = number
            packet.time_base, packet.stream = Fraction(1, 60), stream
            container.mux(packet)
            assert packet.size < 40
    pictures, report = decoded(path)
    assert report == ""
    assert len(pictures) == 201 and all(np.array_equal(one, pictures[0]) for one in pictures)


def test_a_stream_the_frames_are_not_written_for_is_refused():
    """CABAC (x264's default preset) and a header that is not H.264's: no skip frames; the repeats go to x264."""
    for options in ({"threads": "1", "preset": "medium"}, {"threads": "1", "preset": "ultrafast", "bf": "2"}):
        with av.open("/dev/null", "w", format="mp4") as container:
            stream = container.add_stream("libx264", rate=60, options=options)
            stream.pix_fmt, stream.width, stream.height = "yuv420p", 64, 36
            frame = av.VideoFrame.from_ndarray(picture(64, 36, 1), format="rgba")
            frame.pts, frame.time_base = 0, Fraction(1, 60)
            list(stream.encode(frame))
            assert h264.SkipFrames.for_stream(stream.codec_context.extradata) is None
    assert h264.SkipFrames.for_stream(b"") is None and h264.SkipFrames.for_stream(b"\x00\x00\x00\x01\x09\xf0") is None


def test_exp_golomb_codes_and_emulation_prevention_round_trip():
    bits = h264.BitWriter()
    values = [0, 1, 2, 7, 8, 255, 8160, 2 ** 20]
    for value in values:
        bits.ue(value)
        bits.se(-value)
    escaped = h264.escape(bits.rbsp() + b"\x00\x00\x01\x00\x00\x00")
    assert b"\x00\x00\x01" not in escaped and b"\x00\x00\x00" not in escaped
    reader = h264.BitReader(h264.unescape(escaped))
    assert [(reader.ue(), reader.se()) for _ in values] == [(value, -value) for value in values]


def segment(tmp_path: Path, writes: list[tuple[int, int]], held_crf: str | None = "22") -> Path:
    """A segment written by Manim's encoder as a render writes it (with frames.py's hand-over): each write is
    (seed of its picture, how many times it is written)."""
    from manim._config.video_encoder import VideoEncoderSpec
    from manim.scene.video_segment_encoder import VideoSegmentEncoder

    spec = VideoEncoderSpec("mp4", "libx264", "yuv420p", 64, 36, Fraction(15), tuple(beats.ENCODER.items()))
    path = tmp_path / f"segment-{len(list(tmp_path.iterdir()))}.mp4"
    with frames.kept_frame_buffers(held_crf):
        encoder = VideoSegmentEncoder(target=path, spec=spec)
        for seed, repeat in writes:
            encoder.write_frame(picture(64, 36, seed), repeat=repeat)
        encoder.finish()
    return path


def test_manims_encoder_writes_a_hold_once_and_its_repeats_as_skip_frames(tmp_path):
    """A wait's segment (one picture written 30 times): one x264 frame and 29 skip frames, decoding to the same
    picture, finer than x264's own at the film's CRF; a segment of moves is x264's alone."""
    held = segment(tmp_path, [(1, 30)])
    pictures, report = decoded(held)
    assert report == "" and len(pictures) == 30 and all(np.array_equal(one, pictures[0]) for one in pictures)
    with av.open(str(held)) as container:
        sizes = [packet.size for packet in container.demux(video=0) if packet.size]
    assert len(sizes) == 30 and max(sizes[1:]) < 40 < sizes[0]
    coarse = segment(tmp_path, [(1, 30)], held_crf=None)  # the film's CRF for the held picture too
    source = av.VideoFrame.from_ndarray(picture(64, 36, 1), format="rgba").reformat(format="yuv420p", threads=1)
    error = {name: np.mean((decoded(path)[0][0].astype(float) - source.to_ndarray()) ** 2)
             for name, path in (("held", held), ("coarse", coarse))}
    assert error["held"] < error["coarse"]
    moves = segment(tmp_path, [(seed, 1) for seed in range(8)])
    with av.open(str(moves)) as container:
        assert min(packet.size for packet in container.demux(video=0) if packet.size) > 40

    def parameter_sets(path: Path) -> bytes:
        with av.open(str(path)) as container:
            return bytes(container.streams.video[0].codec_context.extradata)

    # One picture parameter set for both, whatever their CRF: an MP4 declares one for the whole beat.
    assert parameter_sets(held) == parameter_sets(moves) == parameter_sets(coarse)


def test_a_frame_after_a_hold_in_the_same_segment_has_x264_encode_the_repeats(tmp_path):
    """Should another frame follow a held picture in its segment, x264 encodes the repeats after all (its
    frame numbers would otherwise disagree with the skip frames'), and every frame is where it belongs."""
    path = segment(tmp_path, [(1, 5), (2, 1), (3, 4)])
    pictures, report = decoded(path)
    assert report == "" and len(pictures) == 10
    assert all(np.array_equal(pictures[index], pictures[6]) for index in range(7, 10))  # the last hold: skips
    assert not np.array_equal(pictures[4], pictures[5]) and not np.array_equal(pictures[5], pictures[6])
    sources = [av.VideoFrame.from_ndarray(picture(64, 36, seed), format="rgba").reformat(format="yuv420p", threads=1)
               .to_ndarray().astype(float) for seed in (1, 2, 3)]
    for index, seed in enumerate([0] * 5 + [1] + [2] * 4):  # each frame nearest its own picture
        errors = [np.mean((pictures[index].astype(float) - source) ** 2) for source in sources]
        assert int(np.argmin(errors)) == seed, f"frame {index}"


def test_frames_lent_from_the_pool_encode_as_manims_own_hand_over(tmp_path):
    """At a width whose rows need no padding (1080p's, or 128 pixels), the renderer's copy of each frame is made
    into a picture the encoder converts as it is: the file is Manim's own, byte for byte, for moving frames."""
    from contextlib import nullcontext

    from manim import RIGHT, Square, tempconfig
    from manim._config.video_encoder import VideoEncoderSpec
    from manim.renderer.cairo_renderer import CairoRenderer
    from manim.scene.video_segment_encoder import VideoSegmentEncoder

    spec = VideoEncoderSpec("mp4", "libx264", "yuv420p", 128, 72, Fraction(15), tuple(beats.ENCODER.items()))

    def made(name: str, handing) -> bytes:
        with tempconfig({"pixel_width": 128, "pixel_height": 72}), handing:
            renderer = CairoRenderer()
            encoder = VideoSegmentEncoder(target=tmp_path / f"{name}.mp4", spec=spec)
            lent = set()
            for step in range(12):
                renderer.camera.reset()
                renderer.camera.capture_mobjects([Square(fill_opacity=1).shift(RIGHT * step * 0.4)])
                frame = renderer.get_frame()
                lent.add(frame.ctypes.data)
                encoder.write_frame(frame)
            encoder.finish()
        return (tmp_path / f"{name}.mp4").read_bytes(), len(lent)

    kept, pictures = made("kept", frames.kept_frame_buffers(beats.HELD_CRF))
    manims, _ = made("manims", nullcontext())
    assert kept == manims and pictures == 1  # each picture given back once converted, and lent again
