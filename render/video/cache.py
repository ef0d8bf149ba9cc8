"""The beat cache: when a beat's pictures can be reused, and when they must be rendered again.

A beat's video is stored under build/cache/beats/ by two keys:

    base key    everything the scene's code and its own beat decide: the scene module and every
                project module it imports (scenes/ and render/, followed through), the engine and
                the renderer's patches, the beat's words, cues and their times, the quality, and
                the releases of Manim, Cairo, Pango, PyAV, svgelements and ffmpeg
    values key  the values of the plan the scene read the last time it rendered
                (recorded by render/plan/tracking.py: "numbers.prefill.ops", "choice.gpu.name", ...)

So a beat re-renders when its code, its narration or its timing changes, or when one of the
numbers it shows changes, and not when a number only another beat shows changes. A hit is
verified, not trusted: the stored video must have the size and checksum recorded when it
was stored, or it is rendered again.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from render import media
from render.files import move, write_atomic
from render.plan import codec
from render.plan.beat_scene import scene_of
from render.plan.tracking import value_at
from render.plan.types import Plan
from render.video.quality import ENCODER, HELD_CRF, Quality
from render.video.sources import library_versions, sources_digest

log = logging.getLogger("film")

CACHE_FORMAT = 4


def beat_slice(plan: Plan, beat_id: str) -> dict:
    """The beat's own part of the timed plan: its words, cues and when they are spoken, and its
    neighbours (a beat may start from its predecessor's last picture, or end on its own)."""
    beat = plan.beat(beat_id)
    timing = beat.timing
    ids = [other.id for other in plan.beats]
    position = ids.index(beat_id)
    neighbours = {"previous": plan.beats[position - 1].title if position else None, "previous_id": ids[position - 1]
                  if position else None, "next_id": ids[position + 1] if position + 1 < len(ids) else None}
    return {"beat": codec.to_data({"id": beat.id, "title": beat.title, "start": beat.start, "end": beat.end,
                                   "narration": beat.narration, "captions": beat.captions,
                                   "cue_offsets": beat.cue_offsets, "holds": beat.holds}),
            "timing": {"speech_start": timing.speech_start, "speech_end": timing.speech_end, "cues": timing.cues},
            "neighbours": neighbours}


def base_key(plan: Plan, beat_id: str, q: Quality) -> str:
    digest = hashlib.sha256(sources_digest(scene_of(beat_id).module).encode())
    digest.update(json.dumps(beat_slice(plan, beat_id), sort_keys=True).encode())
    digest.update(f"{q}:{library_versions()}:{CACHE_FORMAT}:{sorted(ENCODER.items())}:{HELD_CRF}".encode())
    return digest.hexdigest()[:24]


def values_key(plan: Plan, paths: list[str]) -> str:
    """A hash of the values at the paths a scene read."""
    values = {path: value_at(plan, path) for path in paths}
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


def recorded_packets(video: Path) -> list[str]:
    """A beat video's packet digests (media.packet_hashes): as recorded when the cache stored it (a lookup checks
    the file is still those bytes), or read from the file where nothing is recorded beside it."""
    try:
        packets = json.loads(Path(video).with_suffix(".json").read_text())["packets"]
        if isinstance(packets, list):
            return packets
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return media.packet_hashes(video)


@dataclass(frozen=True)
class CacheEntry:
    video: Path
    meta: Path


class KeyedByReads:
    """A folder of what beats' scenes made, under two keys: <beat>-<base>.json lists the plan values the scene read
    when it last ran; <beat>-<base>-<values>.* is what it made from those values."""

    SUBFOLDER = ""

    def __init__(self, folder: Path):
        self.folder = Path(folder) / self.SUBFOLDER
        self.folder.mkdir(parents=True, exist_ok=True)

    def reads_path(self, plan: Plan, beat_id: str, q: Quality) -> Path:
        return self.folder / f"{beat_id}-{base_key(plan, beat_id, q)}.json"

    def known_reads(self, plan: Plan, beat_id: str, q: Quality) -> list[str] | None:
        """The plan paths the beat's scene read when it last ran; None when it has not."""
        try:
            reads = json.loads(self.reads_path(plan, beat_id, q).read_text())["values_read"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return list(reads) if isinstance(reads, list) and all(isinstance(path, str) for path in reads) else None

    def stem(self, plan: Plan, beat_id: str, q: Quality, values_read: list[str]) -> str:
        return f"{beat_id}-{base_key(plan, beat_id, q)}-{values_key(plan, values_read)}"

    def keep_reads(self, plan: Plan, beat_id: str, q: Quality, values_read: list[str]) -> None:
        """Written last: until it is, what it names is a miss."""
        write_atomic(self.reads_path(plan, beat_id, q), json.dumps({"values_read": list(values_read)}))


class BeatCache(KeyedByReads):
    """build/cache/beats/: <beat>-<base>.json lists the values the scene read; <beat>-<base>-<values>.mp4
    is the video, with <beat>-<base>-<values>.json holding its size, checksum and packets' digests."""

    SUBFOLDER = "beats"

    def values_read(self, plan: Plan, beat_id: str, q: Quality) -> list[str]:
        """The plan paths the beat's scene read when it last rendered (none known: empty)."""
        return self.known_reads(plan, beat_id, q) or []

    def key(self, plan: Plan, beat_id: str, q: Quality) -> str:
        """The beat's cache key as far as it is known: <beat>-<base>-<values> once its scene's reads
        are recorded, <beat>-<base> before its first render."""
        reads = self.known_reads(plan, beat_id, q)
        if reads is None:
            return f"{beat_id}-{base_key(plan, beat_id, q)}"
        return self.entry(plan, beat_id, q, reads).video.stem

    def entry(self, plan: Plan, beat_id: str, q: Quality, values_read: list[str]) -> CacheEntry:
        stem = self.stem(plan, beat_id, q, values_read)
        return CacheEntry(self.folder / f"{stem}.mp4", self.folder / f"{stem}.json")

    def lookup(self, plan: Plan, beat_id: str, q: Quality) -> Path | None:
        """The cached video of this beat, if there is one and it is whole."""
        values_read = self.known_reads(plan, beat_id, q)
        if values_read is None:
            return None
        entry = self.entry(plan, beat_id, q, values_read)
        try:
            recorded = json.loads(entry.meta.read_text())
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not entry.video.exists():
            return None
        data = entry.video.read_bytes()
        if len(data) != recorded.get("size") or hashlib.sha256(data).hexdigest() != recorded.get("sha256") \
                or not isinstance(recorded.get("packets"), list):
            log.warning("cached %s is damaged; rendering it again", entry.video.name)
            return None
        return entry.video

    def settled(self, plan: Plan, beat_id: str, q: Quality) -> dict[str, float]:
        """When each cue's picture settles in the cached video (seconds into the beat), as its render recorded;
        empty when unknown."""
        values_read = self.known_reads(plan, beat_id, q)
        if values_read is None:
            return {}
        try:
            settled = json.loads(self.entry(plan, beat_id, q, values_read).meta.read_text())["settled"]
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        if not isinstance(settled, dict):
            return {}
        return {cue: float(at) for cue, at in settled.items()
                if isinstance(cue, str) and isinstance(at, (int, float)) and not isinstance(at, bool)}

    def store(self, plan: Plan, beat_id: str, q: Quality, rendered: Path | bytes, values_read: list[str],
              settled: dict[str, float] | None = None) -> Path:
        """Put a fresh render into the cache (a file is moved in; a worker's bytes are written
        atomically): the video, then what vouches for it (and when its cues' pictures settle), then the reads."""
        entry = self.entry(plan, beat_id, q, values_read)
        if isinstance(rendered, bytes):
            data = rendered
            write_atomic(entry.video, data)
        else:
            data = rendered.read_bytes()
            move(rendered, entry.video)
        write_atomic(entry.meta, json.dumps({"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                                             "packets": media.packet_hashes(entry.video),
                                             "settled": dict(settled or {})}))
        self.keep_reads(plan, beat_id, q, values_read)
        return entry.video


class LintMemo(KeyedByReads):
    """build/cache/lint/: a beat's layout findings, <beat>-<base>-<values>.json, under the beat cache's keys. A
    choice whose beat has the same code, words and times, and the same values where its scene looked, lays out
    the same: it is not linted again."""

    SUBFOLDER = "lint"

    def findings_path(self, plan: Plan, beat_id: str, q: Quality, values_read: list[str]) -> Path:
        return self.folder / f"{self.stem(plan, beat_id, q, values_read)}.json"

    def found(self, plan: Plan, beat_id: str, q: Quality) -> tuple[str, ...] | None:
        """The findings kept for this beat of this plan, if any are (and whole)."""
        reads = self.known_reads(plan, beat_id, q)
        if reads is None:
            return None
        try:
            problems = json.loads(self.findings_path(plan, beat_id, q, reads).read_text())["problems"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not (isinstance(problems, list) and all(isinstance(problem, str) for problem in problems)):
            return None
        return tuple(problems)

    def keep(self, plan: Plan, beat_id: str, q: Quality, values_read: list[str], problems: tuple[str, ...]) -> None:
        """The findings, then the reads that name them (each written whole)."""
        write_atomic(self.findings_path(plan, beat_id, q, values_read), json.dumps({"problems": list(problems)}))
        self.keep_reads(plan, beat_id, q, values_read)


class StillCache(KeyedByReads):
    """build/cache/stills/: `make still`'s frames under the beat cache's keys and the frame's number: <beat>-<base>@
    <frame>.json lists the values the scene read up to that frame (a still's render stops there), <beat>-<base>-
    <values>@<frame>.png is the frame, and its .json holds the PNG's size and checksum. A look at a beat whose code,
    words, times and the values its scene read are unchanged is the picture drawn before (checked against its record,
    else drawn again), without starting Manim."""

    SUBFOLDER = "stills"

    def frame_reads_path(self, plan: Plan, beat_id: str, q: Quality, frame: int) -> Path:
        return self.folder / f"{beat_id}-{base_key(plan, beat_id, q)}@{frame}.json"

    def entry(self, plan: Plan, beat_id: str, q: Quality, values_read: list[str], frame: int) -> CacheEntry:
        stem = f"{self.stem(plan, beat_id, q, values_read)}@{frame}"
        return CacheEntry(self.folder / f"{stem}.png", self.folder / f"{stem}.png.json")

    def lookup(self, plan: Plan, beat_id: str, q: Quality, frame: int) -> bytes | None:
        """The kept frame's PNG bytes, if it is kept and whole."""
        try:
            values_read = json.loads(self.frame_reads_path(plan, beat_id, q, frame).read_text())["values_read"]
            if not (isinstance(values_read, list) and all(isinstance(path, str) for path in values_read)):
                return None
            entry = self.entry(plan, beat_id, q, values_read, frame)
            recorded = json.loads(entry.meta.read_text())
            data = entry.video.read_bytes()
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not isinstance(recorded, dict) or len(data) != recorded.get("size") \
                or hashlib.sha256(data).hexdigest() != recorded.get("sha256"):
            return None
        return data

    def store(self, plan: Plan, beat_id: str, q: Quality, frame: int, data: bytes, values_read: list[str]) -> None:
        """The frame, then what vouches for it, then the reads that name it (each written whole)."""
        entry = self.entry(plan, beat_id, q, values_read, frame)
        write_atomic(entry.video, data)
        write_atomic(entry.meta, json.dumps({"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}))
        write_atomic(self.frame_reads_path(plan, beat_id, q, frame), json.dumps({"values_read": list(values_read)}))
