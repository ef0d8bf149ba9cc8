"""ffmpeg, through ffmpeg-python: every command is built as a graph, run with one error
message when it fails, and every file is probed with ffprobe's JSON.

Both the voice stage (decoding, time-stretching and levelling audio) and the video stage
(muxing, joining, frames, posters) use it, so it sits beside them rather than in either.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ffmpeg

from render.errors import FilmError
from render.files import atomic_path

QUIET = ("-hide_banner", "-nostdin")
# The AAC encoder's priming: its first frame of output is this many samples of encoder delay.
# The film carries no MP4 edit list (YouTube's delivery guidance asks for none), so the sound is
# moved this much earlier before encoding instead, and stays in sync (a test measures it).
AAC_PRIMING_SAMPLES = 1024
MP4_FLAGS = "+faststart+use_metadata_tags+negative_cts_offsets"  # negative offsets: B-frames need no edit list


def require(program: str = "ffmpeg") -> str:
    path = shutil.which(program)
    if path is None:
        raise FilmError(f"{program} is not installed; run `make setup` (as root it installs it with apt-get), "
                        f"or: sudo apt-get install ffmpeg")
    return path


def ffmpeg_command() -> Path | None:
    """Where the ffmpeg command is (None: not installed)."""
    found = shutil.which("ffmpeg")
    return Path(found) if found else None


@functools.cache
def ffmpeg_version() -> str:
    """The ffmpeg command's first line of -version ('ffmpeg version 5.1.9-0+deb12u1 …'), or 'absent'."""
    path = shutil.which("ffmpeg")
    if path is None:
        return "absent"
    try:
        found = subprocess.run([path, "-version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "absent"
    return found.splitlines()[0] if found else "no version"


def require_tools() -> None:
    """Both programs, checked before any work that needs them begins."""
    require("ffmpeg")
    require("ffprobe")


def aac_output(video, sound, path: Path, duration: float, extra=(), **options):
    """`video` (copied) and `sound` (AAC at 48 kHz), with any `extra` streams, into an MP4 of
    exactly `duration` with no edit list."""
    shifted = sound.filter("atrim", start_sample=AAC_PRIMING_SAMPLES).filter("apad")
    return ffmpeg.output(video, shifted, *extra, str(path), vcodec="copy", acodec="aac", ar=48000,
                         t=f"{duration:.6f}", use_editlist=0, movflags=MP4_FLAGS, **options)


def encode_sound(track: Path, out_path: Path, duration: float, bitrate: str) -> Path:
    """A track as the film's sound: AAC at 48 kHz in an MP4 of exactly `duration` with no edit list, shifted as
    aac_output shifts it, so a film can take its packets as they are; atomically."""
    sound = ffmpeg.input(str(track))["a"].filter("atrim", start_sample=AAC_PRIMING_SAMPLES).filter("apad")
    with atomic_path(out_path) as temporary:
        run(ffmpeg.output(sound, str(temporary), acodec="aac", ar=48000, audio_bitrate=bitrate, t=f"{duration:.6f}",
                          use_editlist=0, movflags=MP4_FLAGS, format="mp4"), f"encoding {out_path.name}")
    return out_path


def packet_digests(path: Path) -> dict[str, list[str]]:
    """An MD5 of each packet's bytes, in order, for each kind of stream ("video", "audio"), read without decoding
    (in this process, by PyAV: the digests ffmpeg's framehash muxer gives, without a program to start)."""
    import av

    digests: dict[str, list[str]] = {}
    try:
        with av.open(str(path)) as container:
            for packet in container.demux():
                if packet.size:  # (the demuxer's empty flushing packets)
                    digests.setdefault(packet.stream.type, []).append(hashlib.md5(bytes(packet)).hexdigest())
    except (av.error.FFmpegError, OSError) as error:
        raise FilmError(f"reading {Path(path).name}'s packets failed: {error}") from None
    return digests


def packet_hashes(path: Path) -> list[str]:
    """An MD5 of each video packet's bytes, in order (packet_digests)."""
    return packet_digests(path).get("video", [])


def concat_list(videos: list[Path], path: Path) -> Path:
    """ffmpeg's concat list of the videos, in order, at `path`."""
    path.write_text("".join(f"file '{Path(video).resolve()}'\n" for video in videos))
    return path


def join_pictures(videos: list[Path], out_path: Path) -> Path:
    """The videos' pictures one after another in one file, not re-encoded, checked to hold exactly their
    packets in order; atomically."""
    listing = concat_list(videos, out_path.with_name(f".{out_path.name}.concat.txt"))
    try:
        with atomic_path(out_path) as temporary:
            run(ffmpeg.input(str(listing), format="concat", safe=0).output(
                str(temporary), map="0:v", c="copy").overwrite_output(),
                f"joining the parts of {out_path.name}")
            if packet_hashes(temporary) != [digest for video in videos for digest in packet_hashes(video)]:
                raise FilmError(f"joining the parts of {out_path.name} did not keep their pictures whole")
    finally:
        listing.unlink(missing_ok=True)
    return out_path


def decode_problems(path: Path, windows: list[tuple[float, float]] | None = None) -> list[str]:
    """What ffmpeg reports as broken when it decodes the file (nothing for a whole one): every frame of every
    stream, or with `windows` ((start, seconds) each) the sound whole and the pictures only there, each window
    decoded from the keyframe before it."""
    def problems(stream, what: str) -> list[str]:
        try:
            _, report = run(stream.global_args("-xerror", "-v", "error"), what)
        except FilmError as error:
            return [str(error)]
        return report.decode(errors="replace").strip().splitlines()[:3]

    if windows is None:
        return problems(ffmpeg.input(str(path)).output("-", format="null", threads=2), f"decoding {path.name}")
    checks = [(ffmpeg.input(str(path))["a"].output("-", format="null"), f"decoding {path.name}'s sound")]
    checks += [(ffmpeg.input(str(path), ss=f"{max(0.0, start):.3f}", t=f"{seconds:.3f}")["v"]
                .output("-", format="null", threads=2), f"decoding {path.name} at {start:.2f} s")
               for start, seconds in windows]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # each an ffmpeg of its own, side by side
        found = [line for lines in pool.map(lambda check: problems(*check), checks) for line in lines]
    return found[:3]


def run(stream, what: str, input_bytes: bytes | None = None) -> tuple[bytes, bytes]:
    """Run an ffmpeg-python graph; return (stdout, stderr). A failure says what was being done
    and ffmpeg's last lines, never a traceback. ffmpeg dies with the process that started it, however
    that process dies (kill -9 included), instead of writing on as an orphan."""
    args = stream.global_args(*QUIET).overwrite_output().compile(cmd=require())
    # In a render worker (which leaves Ctrl-C to the run's main process) ffmpeg gets a process group of its own:
    # the terminal's Ctrl-C reaches the whole group, and ffmpeg, which stops on SIGINT, would fail the part the
    # main process is about to keep or discard itself.
    group = 0 if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else None
    process = subprocess.Popen(args, stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=die_with_parent,
                               process_group=group)
    try:
        out, err = process.communicate(input_bytes)
    except BaseException:  # Ctrl-C while it runs: it does not outlive the wait
        process.kill()
        process.wait()
        raise
    if process.returncode:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise FilmError(f"{what} failed (ffmpeg): {' / '.join(tail)}")
    return out, err


try:  # looked up once here: a child between fork and exec should only make the call
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _PRCTL = None
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child process (a render worker, ffmpeg): have Linux kill it when its parent dies, even by
    SIGKILL, so no orphan keeps rendering or writing files. A no-op where the kernel cannot."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def probe(path: Path, **options) -> dict:
    """ffprobe's JSON: format, streams and chapters (options add, e.g. count_packets=None)."""
    require("ffprobe")
    try:
        return ffmpeg.probe(str(path), show_chapters=None, **options)
    except ffmpeg.Error as error:
        message = (error.stderr or b"").decode(errors="replace").strip()
        raise FilmError(f"{path} cannot be read: {message}") from None


def frame_count(path: Path) -> int:
    """Video frames in a file, counted from its packets; -1 when it cannot be read."""
    try:
        streams = probe(path, select_streams="v", count_packets=None)["streams"]
        return int(streams[0]["nb_read_packets"])
    except (FilmError, KeyError, IndexError, ValueError):
        return -1


def extract_frame(video: Path, frame_index: int, out_path: Path) -> Path:
    """One frame of a video as a PNG, written atomically."""
    with atomic_path(out_path) as temporary:
        run(ffmpeg.input(str(video)).filter("select", f"eq(n,{frame_index})")
            .output(str(temporary), vsync=0, vframes=1), f"extracting frame {frame_index} of {video.name}")
        if temporary.stat().st_size == 0:
            raise FilmError(f"{video} has no frame {frame_index}")
    return out_path


def frame_at(video: Path, seconds: float, out_path: Path, width: int | None = None, jpeg_quality: int = 4) -> Path:
    """The frame shown `seconds` into a video, as a PNG or JPEG (scaled to `width`; a JPEG at ffmpeg's `q:v`, 2 best
    to 31), written atomically."""
    scale = {"vf": f"scale={width}:-2"} if width else {}
    if Path(out_path).suffix.lower() in (".jpg", ".jpeg"):
        scale["q:v"] = jpeg_quality
    with atomic_path(out_path) as temporary:
        run(ffmpeg.input(str(video), ss=f"{seconds:.3f}").output(str(temporary), vframes=1, **scale),
            f"extracting the frame at {seconds:.2f} s of {video.name}")
    return out_path
