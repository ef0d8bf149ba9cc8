"""The files a beat's pictures depend on (render/code.py reads, parses and follows them): its scene module and every
project module it imports, with the engine that draws any beat and every module that patches Manim, and the installed
releases of the libraries it draws and encodes with.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from render.code import module_name, walked
from render.files import PROJECT_ROOT


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
    return list(walked(drawn_roots(module))[1])


def sources_digest(module: str) -> str:
    """A digest of the names and bytes of the files a beat's pictures depend on (scene_sources)."""
    return walked(drawn_roots(module))[2]


@functools.cache
def library_versions() -> str:
    """The installed releases a beat's pictures depend on: Manim, the Cairo and Pango it draws with (the Python
    bindings and the C libraries they load), PyAV and the FFmpeg libraries it encodes with, svgelements, and the
    ffmpeg command's own version (it joins and holds a beat's frames)."""
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
