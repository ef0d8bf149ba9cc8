"""The files a beat's pictures depend on (render/code.py reads, parses and follows them): its scene module and every
project module it imports, with the engine that draws any beat and every module that patches Manim, and the installed
releases of the libraries it draws and encodes with.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

from render.code import RACY_NS, file_states, module_name, walked, walked_files
from render.files import PROJECT_ROOT, write_atomic


@functools.cache
def drawn_roots(module: str) -> tuple[str, ...]:
    """A beat's scene module, with the engine that draws any beat (render/video/beats.py) and every module that
    installs one of the renderer's patches on Manim, PyAV or svgelements (render/engine/internals.py)."""
    from render.engine.internals import PATCHED

    return (module, "render.engine.scene", "render.video.beats", "render.engine.internals",
            *(module_name(PROJECT_ROOT / patch.where) for patch in PATCHED))


def scene_sources(module: str) -> list[Path]:
    """The files a beat's pictures depend on: its scene module and every project module it imports, followed through
    scenes/ and render/ alike, with the engine that draws any beat (render/video/beats.py) and every module that
    installs one of the renderer's patches on Manim, PyAV or svgelements (render/engine/internals.py), and what those
    import."""
    return list(walked_files(drawn_roots(module))[1])


def every_scenes_sources(modules) -> list[Path]:
    """scene_sources of several beats' scene modules at once, in one walk (the cue check: every module they import
    parses, else one message naming the file and line)."""
    return list(walked_files(tuple(sorted({root for module in modules for root in drawn_roots(module)})))[1])


def sources_digest(module: str) -> str:
    """A digest of the names and bytes of the files a beat's pictures depend on (scene_sources)."""
    return walked(drawn_roots(module))[2]


@functools.cache
def library_versions() -> str:
    """The installed releases a beat's pictures depend on: Manim, the Cairo and Pango it draws with (the Python
    bindings and the C libraries they load), PyAV and the FFmpeg libraries it encodes with, svgelements, and the
    ffmpeg command's own version (it joins and holds a beat's frames). Asked of the libraries once, then kept
    (build/cache/memo/libraries/) with the state of every file they were read from, and asked again when one of those
    changes: each shared library the process had loaded, the folders the packages are installed in (an install or
    upgrade changes them) and the ffmpeg command. Asking imports PyAV and runs ffmpeg: 0.3 s of every still."""
    import sys

    from render import media, memo

    name = memo.key_of("libraries", Path(__file__).read_bytes(), sys.executable)
    record = memo.MEMO_DIR / "libraries" / f"{name}.json"
    try:
        kept = json.loads(record.read_bytes())
        if kept["states"] and file_states([Path(name) for name in kept["files"]]) == tuple(map(tuple, kept["states"])):
            return kept["versions"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    versions = asked_versions()
    installed = [Path(folder) for folder in sys.path if folder and Path(folder).is_dir()]  # (their dist-info)
    files = sorted({*loaded_libraries(), *installed, *[found for found in [media.ffmpeg_command()] if found]})
    states = file_states(files)
    if files and states and max(max(state[2], state[3]) for state in states) <= time.time_ns() - RACY_NS:
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(record, json.dumps({"files": [str(path) for path in files], "states": states,
                                             "versions": versions}))
        except OSError:
            pass  # (a read-only or full build folder: asked again next time)
    return versions


def loaded_libraries() -> list[Path]:
    """The shared libraries this process has loaded (Linux's /proc/self/maps; elsewhere none, so nothing is kept)."""
    try:
        lines = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    return [Path(name) for name in {line.split(None, 5)[-1] for line in lines if len(line.split(None, 5)) == 6}
            if name.startswith("/") and ".so" in Path(name).name]


def asked_versions() -> str:
    """library_versions, asked of the installed packages, the libraries they load and the ffmpeg command."""
    import importlib.metadata

    from render import media

    versions = {}
    for package in ("manim", "pycairo", "manimpango", "av", "svgelements", "ffmpeg-python"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "absent"
    try:
        import av
        import cairo
        import manimpango

        versions["cairo library"] = cairo.cairo_version_string()
        versions["pango library"] = manimpango.pango_version()
        versions["ffmpeg libraries (PyAV)"] = str(getattr(av, "ffmpeg_version_info", None)
                                                  or sorted(av.library_versions.items()))
    except ImportError as error:  # (the internals check names a missing library; the key only records it)
        versions["import"] = str(error)
    versions["ffmpeg command"] = media.ffmpeg_version()
    return json.dumps(versions, sort_keys=True)
