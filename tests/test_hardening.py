"""Crashes, damage and hostile input: a killed run, damaged caches and outputs, a full or read-only
disk, missing tools. Each ends in one message or a rebuilt output, never a traceback or a wrong film."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from render.errors import FilmError
from render.media import probe
from render.plan.resolve import resolve_plan
from render.video.beats import QUALITIES
from render.video.cache import BeatCache
from render.video.finish import check_film
from render.video.scheduler import make_film

from conftest import ROOT, retitled_storyboard, run_film, seeded_cache, seeded_tracks
from test_output import strays


def film_processes(marker: str) -> list[int]:
    """Processes whose command line mentions `marker` (a test's own build folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the workers")
def test_a_run_killed_mid_render_leaves_nothing_that_blocks_the_next(tmp_path, default_tiny_film):
    build = tmp_path / "killed-build"
    (tmp_path / "none").mkdir()
    seeded_cache(build / "cache", default_tiny_film)  # two beats are left to render (measured and the next)
    seeded_tracks(build, default_tiny_film)
    choice = ["--quality", "tiny", "--build", str(build), "--recordings", str(tmp_path / "none"), "--jobs", "2",
              "--storyboard", str(retitled_storyboard(tmp_path, ("Measured",)))]
    main = subprocess.Popen([sys.executable, "-m", "render.cli", "film", *choice], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    finished = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = main.stdout.readline()
        match = re.match(r"\s+rendered (\S+) in", line)
        if match:
            finished.append(match.group(1))
            break
    assert finished, "no beat finished"
    main.send_signal(signal.SIGKILL)
    main.wait()
    for _ in range(50):  # the workers and the progress manager die with the main process
        if not film_processes(str(build)):
            break
        time.sleep(0.1)
    assert film_processes(str(build)) == []
    assert list((build / "cache" / "beats").glob(".rendering-*")), "the killed run left its scratch folder"

    again = run_film("film", *choice)
    assert again.returncode == 0, again.stderr
    assert "another run is writing" not in again.stderr
    assert strays((again.stderr + again.stdout).splitlines()) == []  # (a run that renders: only the project's lines)
    cached = re.search(r"beats: \d+ cached \(([^)]*)\)", again.stdout).group(1).split(", ")
    assert set(finished) <= set(cached)
    assert not list((build / "cache" / "beats").glob(".rendering-*"))
    assert float(probe(build / "preview" / "film.mp4")["format"]["duration"]) == pytest.approx(154, abs=0.2)


@pytest.fixture(scope="module")
def made(tmp_path_factory, default_tiny_film):
    """A build of its own to damage: a copy of the suite's tiny film's (its beats, narration and film)."""
    build = tmp_path_factory.mktemp("damage")
    shutil.copytree(default_tiny_film.build, build, dirs_exist_ok=True)
    plan = resolve_plan(recordings=build / "none")
    return plan, build, make_film(plan, "tiny", build, jobs=2, say=lambda line: None)


def again(made) -> tuple[list[str], object]:
    plan, build, _ = made
    lines: list[str] = []
    return lines, make_film(plan, "tiny", build, jobs=2, say=lines.append)


def test_a_truncated_narration_track_is_levelled_again(made):
    plan, build, first = made
    track = build / "narration.wav"
    good = track.read_bytes()
    with open(track, "r+b") as handle:
        handle.truncate(1000)
    lines, result = again(made)
    assert track.read_bytes() == good
    assert result.reused and not result.rendered  # the same track, so every beat is reused
    assert float(probe(result.film)["streams"][1]["duration"]) == pytest.approx(154, abs=0.1)


def test_a_truncated_film_sound_is_made_again(made):
    """The film's AAC sound is made from the track beside it while the beats render, and copied into the film:
    cut short, it is made again (not trusted), and the film keeps its whole sound."""
    plan, build, first = made
    sound = build / "film-sound.m4a"
    good = sound.read_bytes()
    sound.write_bytes(good[:2000])
    lines, result = again(made)
    assert sound.read_bytes() == good and not result.rendered
    assert float(probe(result.film)["streams"][1]["duration"]) == pytest.approx(154, abs=0.1)


def test_a_damaged_cached_beat_of_the_same_size_is_rendered_again(made):
    plan, build, first = made
    # This film's entry (the copied cache may hold other films' beats too: their tests share the build).
    video = BeatCache(build / "cache").lookup(first.plan, "decode", QUALITIES["tiny"])
    assert video is not None and video.name.startswith("decode-")
    data = bytearray(video.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 4096] = bytes(4096)  # junk in its middle: same size, same packets
    video.write_bytes(bytes(data))
    assert BeatCache(build / "cache").lookup(first.plan, "decode", QUALITIES["tiny"]) is None
    lines, result = again(made)
    assert result.rendered == ["decode"]
    check_film(result.film, plan, QUALITIES["tiny"])


def test_a_truncated_film_is_made_again_not_up_to_date(made):
    plan, build, first = made
    film = build / "preview" / "film.mp4"
    with open(film, "r+b") as handle:
        handle.truncate(film.stat().st_size // 3)
    lines, result = again(made)
    assert not any("up to date" in line for line in lines)
    check_film(result.film, plan, QUALITIES["tiny"])
    assert result.poster.stat().st_size > 1000


def test_damaged_subtitles_are_written_again(made):
    plan, build, first = made
    for path in (build / "film.srt", build / "preview" / "film.vtt"):
        path.write_text("garbage")
    again(made)
    assert (build / "film.srt").read_text().startswith("1\n00:00:00,250 --> ")
    assert (build / "preview" / "film.vtt").read_text().startswith("WEBVTT")


def test_the_film_check_counts_each_streams_real_length_and_decodes_it(made, tmp_path):
    plan, build, first = made
    short = tmp_path / "short.mp4"
    # The container says 154 s, but the pictures stop at 40 s.
    subprocess.run(["ffmpeg", "-v", "error", "-t", "40", "-i", str(first.film), "-i", str(first.film), "-map", "0:v",
                    "-map", "1:a", "-map_chapters", "1", "-c", "copy", "-y", str(short)], check=True,
                    capture_output=True)
    assert float(probe(short)["format"]["duration"]) == pytest.approx(154, abs=0.1)  # the container's claim
    with pytest.raises(FilmError, match=r"failed its check: the video holds \d+ frames"):
        check_film(short, plan, QUALITIES["tiny"])


def video_packet(path: Path, index: int) -> tuple[int, int]:
    """Where the `index`th video packet of an MP4 lies in the file: (byte offset, size)."""
    rows = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pos,size",
                           "-of", "csv=p=0", str(path)], capture_output=True, text=True, check=True).stdout.split()
    size, position = rows[index].split(",")  # ffprobe writes a packet's size before its position
    return int(position), int(size)


def test_the_film_holds_exactly_its_beats_pictures_and_its_joins_decode(made, tmp_path):
    """Each beat is decoded whole when its render makes it; the film is then checked to hold those very packets
    (read, not decoded) and decoded at its joins and in its sound."""
    from render.files import cache_dir
    from render.media import decode_problems
    from render.video.cache import BeatCache

    plan, build, first = made
    q = QUALITIES["tiny"]
    cache = BeatCache(cache_dir(build))
    videos = [cache.lookup(first.plan, beat.id, q) for beat in first.plan.beats]
    assert all(videos)
    check_film(first.film, first.plan, q, videos)
    # One picture changed in the middle of the roofline beat, far from any join: same size, same packets.
    frame = round(first.plan.beat("roofline").start * q.fps) + 20
    position, size = video_packet(first.film, frame)
    damaged = tmp_path / "film.mp4"
    data = bytearray(first.film.read_bytes())
    data[position + size // 2:position + size // 2 + 16] = bytes(16)
    damaged.write_bytes(bytes(data))
    with pytest.raises(FilmError, match=rf"its pictures are not the beats' own: packet {frame} of \d+ differs"):
        check_film(damaged, first.plan, q, videos)
    # The same damage in a beat's own video is what its render's decoding finds.
    beat_video = tmp_path / "roofline.mp4"
    position, size = video_packet(videos[3], 20)
    data = bytearray(videos[3].read_bytes())
    data[position + 8:position + size] = bytes(range(256)) * ((size - 8) // 256) + bytes((size - 8) % 256)
    beat_video.write_bytes(bytes(data))
    assert decode_problems(beat_video) and decode_problems(videos[3]) == []


def mp4_boxes(data: bytes, start: int = 0, end: int | None = None, path: str = ""):
    """The box paths of an MP4 file (enough of ISO BMFF to find edit lists)."""
    end = len(data) if end is None else end
    position = start
    while position + 8 <= end:
        size, kind = int.from_bytes(data[position:position + 4],
                                    "big"), data[position + 4:position + 8].decode("latin1")
        header = 8
        if size == 1:
            size, header = int.from_bytes(data[position + 8:position + 16], "big"), 16
        size = size or end - position
        yield f"{path}/{kind}"
        if kind in ("moov", "trak", "mdia", "minf", "stbl", "edts", "udta"):
            yield from mp4_boxes(data, position + header, position + size, f"{path}/{kind}")
        position += size


def test_the_film_has_no_edit_lists_and_its_sound_is_in_sync(made):
    import numpy as np

    plan, build, first = made
    boxes = list(mp4_boxes(first.film.read_bytes()))
    assert "/moov/trak/mdia/minf/stbl/stsd" in boxes
    assert not [box for box in boxes if box.endswith(("/edts", "/elst"))]

    def samples(path: Path) -> np.ndarray:
        raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-map", "0:a", "-f", "f32le", "-ac", "1",
                              "-ar", "48000", "-"], capture_output=True, check=True).stdout
        return np.frombuffer(raw, np.float32)

    reference, played = samples(build / "narration.wav"), samples(first.film)
    window = slice(48_000 * 14, 48_000 * 20)
    lags = range(-1500, 1501)
    scores = [float(np.dot(reference[window], played[window.start + lag: window.stop + lag])) for lag in lags]
    assert list(lags)[int(np.argmax(scores))] == 0  # not a sample early or late


def tmpfs(path: Path, size: str, read_only: bool = False):
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True).returncode:
        pytest.skip("cannot mount a small file system here (needs root)")
    return path


def test_a_full_disk_and_a_read_only_build_folder_give_one_message(tmp_path):
    full = tmpfs(tmp_path / "full", "600k")
    read_only = tmpfs(tmp_path / "read-only", "1m", read_only=True)
    (tmp_path / "none").mkdir()
    try:
        for build, expected in ((full, "No space left on device"), (read_only, "Read-only file system")):
            result = run_film("narration", "--build", str(build), "--recordings", str(tmp_path / "none"))
            assert result.returncode == 1, result.stdout
            assert expected in result.stderr and "Traceback" not in result.stderr
            assert len(result.stderr.strip().splitlines()) <= 3, result.stderr
    finally:
        for mount in (full, read_only):
            subprocess.run(["umount", str(mount)], capture_output=True)


def test_missing_tools_are_named_before_any_work(tmp_path):
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ffmpeg").symlink_to(shutil.which("ffmpeg"))  # ffmpeg, but no ffprobe
    env = {**os.environ, "PATH": str(tools)}
    (tmp_path / "none").mkdir()
    result = subprocess.run([sys.executable, "-m", "render.cli", "narration", "--build", str(tmp_path / "build"),
                             "--recordings", str(tmp_path / "none")], cwd=ROOT, capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 1 and "ffprobe is not installed" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "build" / "cache").exists()  # nothing was synthesised first
